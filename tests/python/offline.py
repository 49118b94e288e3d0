"""Opening a saved file (or a notebook's saved output) in Chromium from file://, with every
request that is not file:, blob: or data: refused, and reading what its views drew."""

from __future__ import annotations

import base64
import gzip
import json
import re
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, Page

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: F401  (one browser set-up)
from tests.browser.helpers import VIEWPORT

LOCAL = re.compile(r"^(file|blob|data):")


@contextmanager
def opened(
    browser: Browser, path: Path, scripts: Sequence[Path] = ()
) -> Iterator[tuple[Page, list[str]]]:
    """``path`` in a fresh context: console errors, page errors and every refused request are
    collected in the list (a test asserts it is empty). ``scripts``: run in the page before its
    own (a test's tool, such as axe-core)."""
    context = browser.new_context(viewport=VIEWPORT)
    for script in scripts:
        context.add_init_script(path=str(script))
    context.set_default_timeout(60_000)
    errors: list[str] = []

    def route(r) -> None:
        if LOCAL.match(r.request.url):
            r.continue_()
        else:
            errors.append(f"request outside the file: {r.request.url}")
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    try:
        page.goto(path.resolve().as_uri())
        yield page, errors
    finally:
        context.close()


DRAWN = """(root) => {
  const q = (s) => root.querySelector(s);
  const plot = q('#traj-view .js-plotly-plot');
  return {
    cells: root.querySelectorAll('#mv-grid button.mv-cell').length,
    large: Boolean(q('#mv-large canvas')) && q('#mv-large .hc').__heat !== undefined,
    headLines: root.querySelectorAll('#head-view svg line, #head-view svg path').length,
    qk: (q('#qk-view')?.textContent || '').length,
    qkUnavailable: Boolean(q('#qk-view .qk-unavailable')),
    traj: plot ? plot.data.length : 0,
    hidden: [...root.querySelectorAll('section.card[hidden]')].map((e) => e.id).sort(),
    error: q('#error')?.hidden ? '' : (q('#error')?.textContent || ''),
  };
}"""


def drawn(page: Page, frame_root: str = "document") -> dict:
    """What each view drew (counts), and the error line."""
    return page.evaluate(f"() => ({DRAWN})({frame_root}.documentElement)")


# Every id an ARIA reference or a label's ``for`` names, that is not in the document.
DANGLING = """() => [...document.querySelectorAll(
    '[aria-labelledby], [aria-describedby], [aria-controls], label[for]')].flatMap((e) =>
  ['aria-labelledby', 'aria-describedby', 'aria-controls', 'for'].flatMap((a) =>
    (e.getAttribute(a) || '').split(/\\s+/).filter((id) => id && !document.getElementById(id))
      .map((id) => `${e.id || e.tagName.toLowerCase()} ${a}=${id}`)))"""


def wait_drawn(page: Page) -> None:
    page.wait_for_function("document.documentElement.dataset.traces === '1'")


def parts_of(html: str) -> list[dict]:
    """The index of the parts a file holds (their query parameters)."""
    blob = re.search(r'id="attnviz-parts">([^<]*)<', html)
    assert blob
    raw = gzip.decompress(base64.b64decode(blob.group(1)))
    (n,) = struct.unpack("<I", raw[:4])
    return [p["params"] for p in json.loads(raw[4 : 4 + n])]
