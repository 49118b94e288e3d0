from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.ndif import NdifServer

if TYPE_CHECKING:
    from playwright.sync_api import Browser

    from attnviz.settings import Settings

# What the fixtures need (torch, the app, Playwright) is imported in them: pytest-xdist's
# controller, which runs no test, then starts its workers at once.

TINY_GPT2 = "tiny-gpt2"

# No test writes into the real user data folder (ATTNVIZ_DATA_DIR's default): every app built in
# this session, and every server process a test starts (it inherits the environment), keeps its
# generated secret here instead. Set before any test module builds a Settings.
TEST_DATA_DIR = tempfile.mkdtemp(prefix="attnviz-test-data-")
os.environ["ATTNVIZ_DATA_DIR"] = TEST_DATA_DIR
# And where ATTNVIZ_DATA_DIR's default points (platformdirs' user_data_dir reads XDG_DATA_HOME
# first): a server process started with the ATTNVIZ_* variables left out (as the tests that
# start `attnviz serve` with a clean environment do) or a tool that sets its own still writes
# under this session's temporary folder, never into ~/.local/share/attnviz, where a server of
# the user's (with other code) may keep its runs.
TEST_XDG_DATA_HOME = os.path.join(TEST_DATA_DIR, "xdg-data")
os.environ["XDG_DATA_HOME"] = TEST_XDG_DATA_HOME
# Every trace answer's meta is checked against its schema before it is sent (schemas/trace_meta.py):
# in the apps the tests build and the servers they start (which inherit the environment).
os.environ["ATTNVIZ_CHECK_META"] = "1"


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path_factory, monkeypatch) -> None:
    """Each test's apps and servers keep their runs (and secret) in a data directory of its
    own, so that no test reads back another's stored runs (services.store)."""
    monkeypatch.setenv("ATTNVIZ_DATA_DIR", str(tmp_path_factory.mktemp("data")))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(TEST_DATA_DIR, ignore_errors=True)
    if _NDIF_STOPPING is not None:
        _NDIF_STOPPING.join()
    if _NDIF is not None:
        _NDIF.stop()  # again: a session that ended before its last test marked ndif


# The self-hosted NDIF of the tests marked ``ndif`` (tests/support/ndif.py): started as soon as
# they are collected, so that its build and start overlap the rest of the suite; by pytest
# itself, or under pytest-xdist by the controller once a worker has said it collected one
# (``wanted`` in the run folder the session's processes share: NDIF_RUN, which lists them).
# Stopped as soon as the last of them has ended: idle, its Ray and NDIF services take about a
# tenth of a core (measured 2026-12-07), which the rest of the suite would lose until its end.
NDIF_RUN = "ATTNVIZ_NDIF_TEST_RUN"
_NDIF: NdifServer | None = None  # the one this process started
_NDIF_LEFT: set[str] | None = None  # the tests marked ndif that have not ended yet
_NDIF_STOPPING: threading.Thread | None = None


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # pytest itself, or xdist's controller
        os.environ[NDIF_RUN] = tempfile.mkdtemp(prefix="attnviz-ndif-run-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and _NDIF is None:
        shutil.rmtree(os.environ.pop(NDIF_RUN, ""), ignore_errors=True)


def _ndif_run() -> Path:
    return Path(os.environ[NDIF_RUN])


def _start_ndif() -> None:
    global _NDIF
    if _NDIF is None:
        _NDIF = NdifServer(_ndif_run())


@pytest.hookimpl(tryfirst=True)  # before an xdist worker tells the controller it has collected
def pytest_collection_finish(session: pytest.Session) -> None:
    global _NDIF_LEFT
    wanted = [i.nodeid for i in session.items if i.get_closest_marker("ndif")]
    if not wanted or os.environ.get("ATTNVIZ_NDIF_TEST_HOST"):
        return
    if hasattr(session.config, "workerinput"):
        mine = _ndif_run() / f"wanted.{os.getpid()}"  # whole when the controller reads it
        mine.write_text("\n".join(wanted))
        mine.replace(_ndif_run() / "wanted")
    else:
        _NDIF_LEFT = set(wanted)
        _start_ndif()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids) -> None:
    """On xdist's controller, when a worker has collected: start the NDIF if it asked for it."""
    global _NDIF_LEFT
    wanted = _ndif_run() / "wanted"
    if wanted.exists():
        if _NDIF_LEFT is None:
            _NDIF_LEFT = set(wanted.read_text().split("\n"))
        _start_ndif()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """In the process that started the NDIF (a worker's reports reach xdist's controller too):
    once every test marked ndif has ended, stop it, in a thread of its own (``ray stop`` takes
    seconds, and the controller hands out the next tests meanwhile)."""
    global _NDIF_STOPPING
    if _NDIF is None or not _NDIF_LEFT or report.when != "teardown":
        return
    _NDIF_LEFT.discard(report.nodeid)
    if not _NDIF_LEFT:
        _NDIF_STOPPING = threading.Thread(target=_NDIF.stop, name="ndif-stop")
        _NDIF_STOPPING.start()


@pytest.fixture(scope="session")
def ndif_server() -> NdifServer | None:
    """The suite's self-hosted NDIF (None when ATTNVIZ_NDIF_TEST_HOST names one instead)."""
    if _NDIF is not None:
        return _NDIF
    if (_ndif_run() / "wanted").exists():  # an xdist worker's: the controller started it
        return NdifServer.attach(_ndif_run())
    return None


@pytest.fixture(scope="session")
def ndif_host(ndif_server) -> str:
    """The URL of the NDIF deployment the round trip runs against."""
    given = os.environ.get("ATTNVIZ_NDIF_TEST_HOST")
    if given:
        return given
    assert ndif_server is not None, "no test marked ndif was collected"
    return ndif_server.host()


@pytest.fixture(scope="session")
def default_induction_run():
    """Train mode's default induction run (2 layers x 4 heads, 800 steps: about 10 s), once per
    worker that runs a test reading it."""
    from attnviz.training.trainer import train

    return train()


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The default model's folder; its wheel is part of the README's set-up, so it must be here."""
    from attnviz.pretrained.registry import BUILTIN_INSTALL, builtin_dir

    folder = builtin_dir()
    assert folder is not None, f"the default model is not installed: {BUILTIN_INSTALL}"
    return folder


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory) -> Path:
    """A small random GPT-2 checkpoint with its own byte-level BPE tokenizer, made once."""
    from tests.support.checkpoints import make_tiny_gpt2

    return make_tiny_gpt2(tmp_path_factory.mktemp("models") / TINY_GPT2)


@pytest.fixture(scope="session")
def settings(tiny_gpt2_dir) -> Settings:
    """The default model plus the tiny GPT-2, on the CPU."""
    from attnviz.settings import Settings

    return Settings(device="cpu", models=str(tiny_gpt2_dir))


@pytest.fixture(scope="session")
def app(settings):
    from attnviz.app import create_app

    return create_app(settings)


@pytest.fixture(scope="session")
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as c:
        yield c


@pytest.fixture
def apple_request() -> dict:
    from attnviz.presets import APPLE_AXES, APPLE_TOKENS, APPLE_X

    return {"tokens": list(APPLE_TOKENS), "axes": list(APPLE_AXES), "embeddings": APPLE_X}


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One headless Chromium (Debian's, never downloaded) for every test that drives one: the
    browser tests and the Python API's exported files. One per session: Playwright's sync API
    runs an event loop that a second instance in the same thread would meet."""
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that drives Chromium (through the browser fixture, or the page fixture on it)
    is marked ``browser``, so that the quick loop can leave them out (``-m "not browser"``).
    They run first, then the other tests marked ``slow``, then the quick ones, each file's in
    its order: the longest tests handed out first, meant to let the two workers of ``make test``
    end on short ones. Measured over three fresh-clone runs, it did not shorten the workers'
    idle time (about 86 s, against 88 s before; docs/contributing.md, "Where the suite's time
    goes"): the order is kept, as it costs nothing, but it is not a measured gain."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)

    def tier(item: pytest.Item) -> int:
        return (
            0 if item.get_closest_marker("browser") else 1 if item.get_closest_marker("slow") else 2
        )

    items.sort(key=tier)  # stable
