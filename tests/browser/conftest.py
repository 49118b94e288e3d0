"""Browser tests: the real app under uvicorn on a free port, driven by Debian's Chromium.

One server and one browser for the whole session, and two browser contexts per worker for the
tests' `page`s (sentence mode's cards as a newcomer has them, and every card behind "More views"
open for the modules marked ``more_views``): each test gets a new page in one, as a newcomer (no
cookie, nothing stored, no permission: what a visitor leaves is cleared after each test), and
the context's HTTP cache and compiled scripts carry over from test to test (a first page loads
in about 0.9 s and 1.4 s of the machine's CPU, where a new context takes 1.3 s and 2.0 s:
docs/contributing.md). A test that needs another person opens a context of its own
(`fresh_page`). Every test collects
console errors and page errors; the `page` fixture fails the test if any arrived that the test
did not explicitly allow (see ``Console.allow``).
"""

from __future__ import annotations

import re
import typing
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Request, Route

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
    # Every page in one renderer process, kept between tests: a page opened then takes 1.0 s
    # of the machine's CPU, not 1.3 s in a process of its own (30 of the browser tests in 60 s,
    # not 67). Each page is still a newcomer's: its own document, scripts' context, storage.
    "--renderer-process-limit=1",
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


# Offline by design: a request that would leave this machine is refused and fails the test.
OUTSIDE = re.compile(r"^https?://(?!127\.0\.0\.1[:/])")


def more_views(node: pytest.Item) -> bool:
    """Whether a test opens sentence mode with every card behind "More views" shown (its module
    says so with ``pytestmark = pytest.mark.more_views``: the modules of those cards, and the
    ones that check every card: axe, contrast, layout, the export's plan). The other tests see
    the cards a newcomer sees: drawing the six cards takes a sentence-mode page 0.85 s of the
    renderer's CPU where its first screen alone takes 0.41 s (and each query redraws them)."""
    return node.get_closest_marker("more_views") is not None


def tests_context(
    browser: Browser, console: typing.Callable[[], Console], *, more: bool
) -> BrowserContext:
    """A context as the tests' pages have it: their viewport, downloads, time limit, with
    ``more`` every card of sentence mode open (as a returning reader who opened them), a
    request to another host refused and written to ``console()``'s errors."""
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    context.set_default_timeout(TIMEOUT_MS)
    if more:
        context.add_init_script(OPEN_MORE)

    def outside(route: Route) -> None:
        console().errors.append(f"request to another host: {route.request.url}")
        route.abort()

    context.route(OUTSIDE, outside)
    return context


def watched(p: Page, console: Console) -> Page:
    """``p`` with its console errors and page errors written to ``console``."""

    def on_console(message) -> None:
        # Plotly reports what it could not draw as console.trace("WARN: ..."): a bug of ours.
        if message.type == "error" or message.text.startswith("WARN:"):
            url = (message.location or {}).get("url", "")
            console.errors.append(f"{message.text} [{url}]")

    p.on("console", on_console)
    p.on("pageerror", lambda e: console.errors.append(f"pageerror: {e}"))
    return p


class Visits:
    """The worker's one context for the tests' pages, the console of the test now using it, and
    the origins its pages went to (whose storage is cleared after the test). A blank page stays
    open between tests: a context left with no page loses what it had cached (a next page then
    takes 1.05 s and 1.8 s of CPU where it takes 0.9 s and 1.4 s)."""

    def __init__(self, browser: Browser, *, more: bool) -> None:
        self.console = Console()
        self.origins: set[str] = set()
        self.context = tests_context(browser, lambda: self.console, more=more)
        self.context.on("request", self.request)
        self.keeper = self.context.new_page()

    def request(self, request: Request) -> None:
        if request.is_navigation_request():
            url = urlsplit(request.url)
            if url.scheme in ("http", "https"):
                self.origins.add(f"{url.scheme}://{url.netloc}")

    def forget(self) -> None:
        """Everything a visitor leaves: the pages (tabs), the storage of every origin they went
        to, cookies, permissions. The HTTP cache stays (as a browser keeps it)."""
        context = self.context
        for p in context.pages:
            if p is not self.keeper:
                p.close()
        cdp = context.new_cdp_session(self.keeper)
        for origin in sorted(self.origins):
            cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
        cdp.detach()
        context.clear_cookies()
        context.clear_permissions()
        self.origins.clear()


class Contexts:
    """The worker's two contexts for the tests' pages, made when first asked: sentence mode's
    cards as a newcomer has them, and every card open (``more_views``)."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.made: dict[bool, Visits] = {}

    def __call__(self, more: bool) -> Visits:
        if more not in self.made:
            self.made[more] = Visits(self.browser, more=more)
        return self.made[more]


@pytest.fixture(scope="session")
def visits(browser: Browser) -> Iterator[Contexts]:
    contexts = Contexts(browser)
    yield contexts
    for visits in contexts.made.values():
        visits.context.close()


@pytest.fixture
def page(visits: Contexts, console: Console, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A new page, as a newcomer's (see the module's docstring)."""
    shared = visits(more_views(request.node))
    shared.console = console
    try:
        yield watched(shared.context.new_page(), console)
    finally:
        shared.forget()
    assert console.unexpected() == [], "console or page errors"


@pytest.fixture
def cold_page(browser: Browser, console: Console, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A page in a context of its own, which has cached nothing: a first visit's requests."""
    context = tests_context(browser, lambda: console, more=more_views(request.node))
    try:
        yield watched(context.new_page(), console)
    finally:
        context.close()
    assert console.unexpected() == [], "console or page errors"
