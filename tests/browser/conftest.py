"""Browser tests: the real app under uvicorn on a free port, driven by Debian's Chromium.

One server and one browser for the whole session; a fresh context (and page) per test. Every
test collects console errors and page errors; the `page` fixture fails the test if any arrived
that the test did not explicitly allow (see ``Console.allow``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page

from attnviz.app import create_app
from tests.browser.helpers import OPEN_MORE, TIMEOUT_MS, VIEWPORT
from tests.support.servers import served

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def live_server(settings) -> Iterator[str]:
    """The app from create_app (the default model and the tiny GPT-2, on the CPU), served by
    uvicorn in a background thread on a free port."""
    with served(create_app(settings)) as url:
        yield url


@pytest.fixture(scope="session")
def api(live_server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server, timeout=60) as client:
        yield client


@pytest.fixture(scope="session")
def presets(api) -> dict:
    return api.get("/api/presets").json()


class Console:
    """Console errors ("text [source url]") and page errors of one page, and the patterns of
    the ones a test expects and allows."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.allowed: list[re.Pattern] = []

    def allow(self, pattern: str) -> None:
        self.allowed.append(re.compile(pattern))

    def unexpected(self) -> list[str]:
        return [e for e in self.errors if not any(p.search(e) for p in self.allowed)]


@pytest.fixture
def console() -> Console:
    return Console()


@pytest.fixture
def page(browser, console) -> Iterator[Page]:
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(OPEN_MORE)  # every card of sentence mode, as a returning reader

    # Offline by design: any request that leaves this machine is refused and fails the test.
    def outside(route) -> None:
        console.errors.append(f"request to another host: {route.request.url}")
        route.abort()

    context.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"), outside)
    p = context.new_page()

    def on_console(message) -> None:
        # Plotly reports what it could not draw as console.trace("WARN: ..."): a bug of ours.
        if message.type == "error" or message.text.startswith("WARN:"):
            url = (message.location or {}).get("url", "")
            console.errors.append(f"{message.text} [{url}]")

    p.on("console", on_console)
    p.on("pageerror", lambda e: console.errors.append(f"pageerror: {e}"))
    yield p
    context.close()
    assert console.unexpected() == [], "console or page errors"
