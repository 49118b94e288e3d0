"""A busy server, as a person sees it: the page says "busy, retrying in N s", waits out the
server's Retry-After, tries again by itself, and draws once there is room."""

from __future__ import annotations

import re
import threading

import httpx
import pytest

from attnviz.app import create_app
from attnviz.pretrained.registry import BUILTIN_NAME
from attnviz.settings import Settings
from tests.browser.helpers import open_sentence, screenshot, traces_drawn, wait_for_trace
from tests.support.servers import served
from tests.support.waits import until


@pytest.fixture
def crowded(minilm_dir):
    """A server that lets one request wait (for up to a minute), and two requests that fill it:
    one computing until the test opens the gate, one waiting behind it. The gate is the one
    thing added to the real server: its trace service holds requests whose text starts with
    "HOLD" until the test says."""
    app = create_app(Settings(device="cpu", max_queue=1, max_wait_s=60))
    traces = app.state.traces
    respond = traces._respond
    gate = threading.Event()

    def held(req, *args):
        if getattr(req, "text", "").startswith("HOLD"):
            assert gate.wait(60)
        return respond(req, *args)

    traces._respond = held
    with served(app) as url:

        def hold(k: int) -> int:
            body = {"model": BUILTIN_NAME, "text": f"HOLD {k}"}
            return httpx.post(f"{url}/api/trace?fields=entropy_mean", json=body, timeout=90)

        crowd = [threading.Thread(target=hold, args=(k,), daemon=True) for k in range(2)]
        yield url, crowd, gate, traces.admission
        gate.set()
        for t in crowd:
            t.join(timeout=60)


def test_the_page_waits_out_a_busy_server_and_draws(page, console, crowded):
    url, crowd, gate, admission = crowded
    # Chromium logs each refused request; they are expected here.
    console.allow(r"status of 503 \(Service Unavailable\)")
    open_sentence(page, url)
    before = traces_drawn(page)
    for t in crowd:
        t.start()
    until(lambda: admission.waiting, lambda n: n >= 1, "the crowd's second request waiting", 0.02)
    assert admission.waiting == 1  # one computing (held), one waiting: the queue is full
    page.fill("#s-text", "A sentence typed while the server is full")
    page.wait_for_function("() => document.documentElement.dataset.busy === '1'")
    status = page.locator("#status").inner_text()
    assert re.fullmatch(r"busy, retrying in \d+ s", status), status
    screenshot(page, "busy.png")
    # The page tries again by itself after Retry-After, and is refused again.
    until(lambda: admission.stats.refused, lambda n: n >= 2, "the page's retry refused")
    assert traces_drawn(page) == before  # nothing drawn yet: still waiting for room
    gate.set()
    for t in crowd:
        t.join(timeout=60)
    wait_for_trace(page, before)
    assert page.evaluate("document.documentElement.dataset.busy") == "0"
    assert page.locator("#error").is_hidden()
    assert "tokens" in page.locator("#status").inner_text()
