"""``attnviz bench --learn``: the Learn mode's targets in figures. Each step opened from its link
in headless Chromium (a fresh page each time, and again by Next from the step before), timed from
navigation or click until its lab is drawn and its tasks are answered; and the recurrent
comparison (step 1) of each task through the HTTP API, start to done. Figures only, never
asserted."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from attnviz.bench.harness import BROWSER_ARGS, Server, request

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

# The guide shows the step, its lab holds no request in flight, and its tasks have an answer
# newer than ``checks`` (and, for a toy step loaded anew, a trace newer than ``traces``).
READY = """([id, traces, checks, toy]) => {
  const root = document.documentElement, guide = document.getElementById('learn-guide');
  return guide.dataset.ready === '1' && guide.dataset.step === id && root.dataset.pending === '0'
    && +(root.dataset.checks || 0) > checks && (!toy || +(root.dataset.traces || 0) > traces);
}"""
COUNTS = """() => [+(document.documentElement.dataset.traces || 0),
  +(document.documentElement.dataset.checks || 0)]"""


@dataclass
class StepRow:
    n: int
    id: str
    lab: str
    link_s: list[float] = field(default_factory=list)  # a fresh page on #learn/n, to answered
    next_s: float | None = None  # Next from the step before, to answered


@dataclass
class ComparisonRow:
    task: str
    seconds: float
    state: str
    claims_held: int
    claims: int


class LearnFigures(NamedTuple):
    """What ``run`` measured: each step's times, and each task's comparison (empty: not asked)."""

    steps: list[StepRow]
    comparisons: list[ComparisonRow]


def run(
    chromium: str = "/usr/bin/chromium",
    opens: int = 2,
    comparisons: bool = True,
    browser: Browser | None = None,
    first: int | None = None,
) -> LearnFigures:
    """Serve the app, walk the path (its ``first`` steps, or all) in ``browser`` (or a
    Chromium of its own), then run each task's comparison."""
    with Server([]) as server:
        base = f"http://127.0.0.1:{server.port}"
        _, _, raw = request(server.port, "GET", "/api/learn")
        steps = json.loads(raw)["steps"][:first]
        rows = [StepRow(s["n"], s["id"], s["lab"]) for s in steps]
        if browser is not None:
            _walk(browser, base, steps, rows, opens)
        else:
            from playwright.sync_api import sync_playwright

            with sync_playwright() as pw:
                own = pw.chromium.launch(executable_path=chromium, headless=True, args=BROWSER_ARGS)
                try:
                    _walk(own, base, steps, rows, opens)
                finally:
                    own.close()
        done = [_comparison(server.port, t) for t in _tasks(server.port)] if comparisons else []
    return LearnFigures(rows, done)


def _walk(browser: Browser, base: str, steps: list[dict], rows: list[StepRow], opens: int) -> None:
    for _ in range(opens):
        for step, row in zip(steps, rows, strict=True):
            row.link_s.append(_open_link(browser, base, step))
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        page.goto(f"{base}/#learn/1")
        page.wait_for_function(READY, arg=[steps[0]["id"], 0, 0, False], timeout=60_000)
        for step, row in zip(steps[1:], rows[1:], strict=True):
            row.next_s = _by_next(page, step)
    finally:
        page.close()


def _open_link(browser: Browser, base: str, step: dict) -> float:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        page.goto(f"{base}/#learn/{step['n']}")
        page.wait_for_function(
            READY, arg=[step["id"], 0, 0, step["lab"] == "toy"], polling=10, timeout=60_000
        )
        # The page's own clock, from navigation on.
        return round(page.evaluate("performance.now()") / 1000, 2)
    finally:
        page.close()


def _by_next(page: Page, step: dict) -> float:
    traces, checks = page.evaluate(COUNTS)
    t0 = time.perf_counter()
    page.locator("#learn-guide [data-role=next]").click()
    page.wait_for_function(
        READY, arg=[step["id"], traces, checks, step["lab"] == "toy"], polling=10, timeout=60_000
    )
    return round(time.perf_counter() - t0, 2)


def _tasks(port: int) -> list[str]:
    _, _, raw = request(port, "GET", "/api/recurrent/options")
    return [t["name"] for t in json.loads(raw)["tasks"]]


def _comparison(port: int, task: str) -> ComparisonRow:
    t0 = time.perf_counter()
    status, _, raw = request(port, "POST", "/api/recurrent", {"task": task, "seed": 0})
    if status != 202:
        raise RuntimeError(f"POST /api/recurrent: {status} {raw[:200]!r}")
    run_id = json.loads(raw)["id"]
    while True:
        _, _, raw = request(port, "GET", f"/api/recurrent/{run_id}")
        state = json.loads(raw)
        if state["state"] != "running":
            break
        time.sleep(0.25)
    claims = state.get("claims") or []
    return ComparisonRow(
        task,
        round(time.perf_counter() - t0, 1),
        state["state"],
        sum(c["holds"] for c in claims),
        len(claims),
    )


def table(result: LearnFigures) -> str:
    rows, done = result
    lines = [
        "attnviz bench --learn: each Learn step opened in headless Chromium (1280 x 800), until "
        "its lab is drawn and its tasks answered: from its link in a fresh page (the page's "
        "clock from navigation), and by Next from the step before",
        "",
        "| step | lab | from its link | by Next |",
        "| --- | --- | --- | ---: |",
    ]
    for r in rows:
        link = ", ".join(f"{s:.2f} s" for s in r.link_s)
        after = "" if r.next_s is None else f"{r.next_s:.2f} s"
        lines.append(f"| {r.n} {r.id} | {r.lab} | {link} | {after} |")
    if done:
        lines += [
            "",
            "The recurrent comparison (step 1), seed 0, through the HTTP API, start to done:",
            "",
            "| task | time | state | claims held |",
            "| --- | ---: | --- | ---: |",
        ]
        for c in done:
            lines.append(
                f"| {c.task} | {c.seconds:.1f} s | {c.state} | {c.claims_held} of {c.claims} |"
            )
    return "\n".join(lines)


def as_json(result: LearnFigures) -> str:
    rows, done = result
    return json.dumps(
        {"steps": [asdict(r) for r in rows], "comparisons": [asdict(c) for c in done]}
    )
