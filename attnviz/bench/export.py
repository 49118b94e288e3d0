"""``attnviz bench --export``: the one-file export of a text, at each length, in figures: its
size, the time to build it, and how soon headless Chromium draws every view from ``file://``
with every request outside the file refused. Figures only, never asserted."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnviz.bench.harness import BROWSER_ARGS, text_of

if TYPE_CHECKING:
    from playwright.sync_api import Browser

    from attnviz.python.trace import Trace

DRAWN = "document.documentElement.dataset.traces === '1'"


@dataclass(frozen=True)
class ExportRow:
    tokens: int
    bytes: int
    build_s: float
    drawn_s: list[float]  # navigation to every view drawn, each opening


def run(
    tokens: Sequence[int] = (128, 512),
    chromium: str = "/usr/bin/chromium",
    opens: int = 3,
    browser: Browser | None = None,
) -> list[ExportRow]:
    """MiniLM's trace of a text of each length, exported with the defaults, then opened
    ``opens`` times (a fresh browser context each), in ``browser`` or a Chromium of its own."""
    from playwright.sync_api import sync_playwright

    if browser is not None:
        return _run(tokens, browser, opens)
    with sync_playwright() as pw:
        own = pw.chromium.launch(executable_path=chromium, headless=True, args=BROWSER_ARGS)
        try:
            return _run(tokens, own, opens)
        finally:
            own.close()


def _run(tokens: Sequence[int], browser: Browser, opens: int) -> list[ExportRow]:
    import attnviz
    from attnviz.pretrained.registry import BUILTIN_NAME

    first = attnviz.trace(model=BUILTIN_NAME, text="warm up", fields="thumbs", thumb=16)
    tokenizer = _tokenizer(first)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in tokens:
            text = text_of(tokenizer, n)
            t0 = time.perf_counter()
            trace = attnviz.trace(model=BUILTIN_NAME, text=text, fields="thumbs", thumb=16)
            path = trace.save_html(Path(tmp) / f"trace-{n}.html")
            build = time.perf_counter() - t0
            drawn = []
            for _ in range(opens):
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                context.route(
                    "**/*",
                    lambda r: (
                        r.continue_()
                        if r.request.url.startswith(("file:", "blob:", "data:"))
                        else r.abort()
                    ),
                )
                page = context.new_page()
                page.goto(path.as_uri())
                # offline/page.js marks every view drawn; asked every 10 ms, the page's clock
                # then read (from navigation on).
                page.wait_for_function(DRAWN, polling=10, timeout=60_000)
                drawn.append(round(page.evaluate("performance.now()") / 1000, 2))
                context.close()
            rows.append(ExportRow(n, path.stat().st_size, round(build, 2), drawn))
    return rows


def _tokenizer(trace: Trace) -> Any:
    """The tokenizer of the model that made ``trace`` (the process's trace service has it)."""
    from attnviz.python.local import trace_service

    model = trace_service().registry.get(trace.meta["model"])
    return model.tokenizer


def table(rows: list[ExportRow]) -> str:
    lines = [
        "attnviz bench --export: all-MiniLM-L6-v2's trace of a text as one HTML file (the "
        "default budget), opened from file:// in headless Chromium with every other request "
        "refused, 1280 x 800",
        "",
        "| tokens | file | built in | navigation to every view drawn |",
        "| ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        opens = ", ".join(f"{s:.2f} s" for s in r.drawn_s)
        lines.append(f"| {r.tokens:,} | {r.bytes:,} bytes | {r.build_s:.2f} s | {opens} |")
    return "\n".join(lines)


def as_json(rows: list[ExportRow]) -> str:
    import json

    return json.dumps([asdict(r) for r in rows])
