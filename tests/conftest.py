from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, sync_playwright

from attnviz.presets import APPLE_AXES, APPLE_TOKENS, APPLE_X
from attnviz.pretrained.registry import BUILTIN_INSTALL, builtin_dir
from attnviz.settings import Settings
from tests.support.checkpoints import make_tiny_gpt2
from tests.support.ndif import NdifServer

TINY_GPT2 = "tiny-gpt2"

# No test writes into the real user data folder (ATTNVIZ_DATA_DIR's default): every app built in
# this session, and every server process a test starts (it inherits the environment), keeps its
# generated secret here instead. Set before any test module builds a Settings.
TEST_DATA_DIR = tempfile.mkdtemp(prefix="attnviz-test-data-")
os.environ["ATTNVIZ_DATA_DIR"] = TEST_DATA_DIR


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path_factory, monkeypatch) -> None:
    """Each test's apps and servers keep their runs (and secret) in a data directory of its
    own, so that no test reads back another's stored runs (services.store)."""
    monkeypatch.setenv("ATTNVIZ_DATA_DIR", str(tmp_path_factory.mktemp("data")))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(TEST_DATA_DIR, ignore_errors=True)
    if _NDIF is not None:
        _NDIF.stop()


# The self-hosted NDIF of the tests marked ``ndif`` (tests/support/ndif.py): started as soon as
# they are collected, so that its build and start overlap the rest of the suite.
_NDIF: NdifServer | None = None


def pytest_collection_finish(session: pytest.Session) -> None:
    global _NDIF
    wanted = any(item.get_closest_marker("ndif") for item in session.items)
    if wanted and not os.environ.get("ATTNVIZ_NDIF_TEST_HOST") and _NDIF is None:
        _NDIF = NdifServer()


@pytest.fixture(scope="session")
def ndif_server() -> NdifServer | None:
    """The suite's self-hosted NDIF (None when ATTNVIZ_NDIF_TEST_HOST names one instead)."""
    return _NDIF


@pytest.fixture(scope="session")
def ndif_host(ndif_server) -> str:
    """The URL of the NDIF deployment the round trip runs against."""
    given = os.environ.get("ATTNVIZ_NDIF_TEST_HOST")
    if given:
        return given
    assert ndif_server is not None, "no test marked ndif was collected"
    return ndif_server.host()


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The default model's folder; its wheel is part of the README's set-up, so it must be here."""
    folder = builtin_dir()
    assert folder is not None, f"the default model is not installed: {BUILTIN_INSTALL}"
    return folder


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory) -> Path:
    """A small random GPT-2 checkpoint with its own byte-level BPE tokenizer, made once."""
    return make_tiny_gpt2(tmp_path_factory.mktemp("models") / TINY_GPT2)


@pytest.fixture(scope="session")
def settings(tiny_gpt2_dir) -> Settings:
    """The default model plus the tiny GPT-2, on the CPU."""
    return Settings(device="cpu", models=str(tiny_gpt2_dir))


@pytest.fixture(scope="session")
def app(settings):
    from attnviz.app import create_app

    return create_app(settings)


@pytest.fixture(scope="session")
def client(app):
    with TestClient(app) as c:
        yield c


@pytest.fixture
def apple_request() -> dict:
    return {"tokens": list(APPLE_TOKENS), "axes": list(APPLE_AXES), "embeddings": APPLE_X}


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One headless Chromium (Debian's, never downloaded) for every test that drives one: the
    browser tests and the Python API's exported files. One per session: Playwright's sync API
    runs an event loop that a second instance in the same thread would meet."""
    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that drives Chromium (through the browser fixture, or the page fixture on it)
    is marked ``browser``, so that the quick loop can leave them out (``-m "not browser"``)."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
