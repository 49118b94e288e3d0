"""Helpers for the browser tests: waiting for traces, reading plots and the table, an oracle."""

from __future__ import annotations

import base64
import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page

from tests.support.oracles import f32  # noqa: F401  (re-exported for the browser tests)

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# The screenshots of ``shoot`` at two widths, for a person to look at: taken when ATTNVIZ_SHOTS=1
# (`make shots`), not in every run. No assertion reads them, and each pair costs about 3 s (the
# page resized to 480 px and back, and the views' redraws waited for).
SHOTS_WANTED = os.environ.get("ATTNVIZ_SHOTS") == "1"
# Sentence mode's cards behind "More views" (core/feeds.js SENTENCE_MORE; test_more_views checks
# the page has these). The `page` fixture of a module marked `more_views` opens them all, as a
# reader who had opened them, so that a test of a card finds it; the others see a newcomer's.
MORE_VIEWS = ["qk", "knock", "traj", "atlas", "comp", "corpus"]
OPEN_MORE = (
    "try { if (localStorage.getItem('attnviz.sentence.more') === null) "
    f"localStorage.setItem('attnviz.sentence.more', '{json.dumps(MORE_VIEWS)}'); }} catch (e) {{}}"
)
VIEWPORT = {"width": 1280, "height": 800}
TIMEOUT_MS = 30_000


# Mount a card of a given width at the top of the page and import the page's API client
# (window.__api) and a view module (window.__module), for tests of one view on its own. The
# view's data comes from the compact form, as the page gets it (window.__api.fetchTrace).
MOUNT_VIEW = """async ({width, hostId, module}) => {
  if (!document.querySelector('link[href*="views.css"]')) {
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = '/static/css/views.css';
    document.head.append(link);
    await new Promise((ok) => { link.onload = ok; });
  }
  const host = document.createElement('section');
  host.className = 'card';
  host.id = hostId;
  host.style.cssText = `width: ${width}px; margin: 1rem;`;
  document.body.prepend(host);
  window.__api = await import('/static/js/core/api.js');
  window.__module = await import(module);
  return true;
}"""


def mount_view(page: Page, url: str, host_id: str, module: str, width: int = 840) -> None:
    page.goto(url)
    page.wait_for_function("() => window.Plotly")
    page.evaluate(MOUNT_VIEW, {"width": width, "hostId": host_id, "module": module})


@contextmanager
def fresh_page(browser: Browser) -> Iterator[tuple[Page, list[str]]]:
    """A page in a new browser context (as another person opening a link), and its errors."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield page, errors
    finally:
        context.close()


# A tiny induction run, trained through the page's own fetch (the page's visitor owns it): its
# id once it is done.
TRAIN_TINY = """async () => {
  const r = await fetch('/api/train', {method: 'POST', headers: {'content-type': 'application/json'},
    body: JSON.stringify({task: 'induction', arch: {layers: 2, heads: 2, d_model: 16}, opt: {steps: 20}})});
  const id = (await r.json()).id;
  for (;;) {
    const run = await (await fetch(`/api/train/${id}`)).json();
    if (run.state === 'done') return id;
    await new Promise((ok) => setTimeout(ok, 200));
  }
}"""


def traces_drawn(page: Page) -> int:
    return int(page.evaluate("document.documentElement.dataset.traces || '0'"))


def wait_for_trace(page: Page, after: int) -> None:
    """Wait until a trace newer than number `after` is drawn and nothing is pending."""
    page.wait_for_function(
        "n => +(document.documentElement.dataset.traces || 0) > n"
        " && document.documentElement.dataset.pending === '0'",
        arg=after,
    )


def why_drawn(page: Page) -> int:
    """How many times the Why this score card has been drawn (it asks for its part after the
    views are drawn, so it may change the page's height later than they do)."""
    return int(page.evaluate("+(document.querySelector('#why-view').dataset.drawn || 0)"))


def wait_why_drawn(page: Page, after: int) -> None:
    page.wait_for_function(
        "n => +(document.querySelector('#why-view').dataset.drawn || 0) > n", arg=after
    )


def open_app(page: Page, url: str) -> None:
    """The toy lab opened and its first trace drawn: every plot (its token vectors in 3-D as
    the still picture, ``rotate`` for the live scene)."""
    page.goto(url)
    wait_for_trace(page, 0)
    for plot in ("scores-plot", "weights-plot", "vectors-plot", "distances-plot"):
        page.wait_for_function(
            "id => { const el = document.getElementById(id);"
            " return el.dataset.deferred || el.querySelector('.main-svg') }",
            arg=plot,
        )


def drawn(page: Page, selector: str) -> None:
    """The plot at ``selector`` drawn: a 3-D plot out of view (``data-deferred``,
    core/plotly.js) is brought into view, and its scene waited for."""
    page.wait_for_selector(selector, state="attached")
    page.evaluate(
        "s => { const el = document.querySelector(s);"
        " if (el.dataset.deferred) el.scrollIntoView({ block: 'center' }) }",
        selector,
    )
    page.wait_for_function(
        "s => { const el = document.querySelector(s); return !el.dataset.deferred && el.data }",
        arg=selector,
    )


def plot_data(page: Page, plot_id: str) -> list[dict]:
    """The `.data` Plotly keeps on a plot element (typed arrays become lists), once drawn."""
    drawn(page, f"#{plot_id}")
    return page.evaluate(
        "id => JSON.parse(JSON.stringify(document.getElementById(id).data))", plot_id
    )


def plot_layout(page: Page, plot_id: str) -> dict:
    drawn(page, f"#{plot_id}")
    return page.evaluate(
        "id => JSON.parse(JSON.stringify(document.getElementById(id).layout))", plot_id
    )


def select_and_wait(page: Page, selector: str, value: str) -> None:
    """Choose an option of a select that changes the inputs, and wait for the new trace."""
    before = traces_drawn(page)
    page.select_option(selector, value)
    wait_for_trace(page, before)


def view_change(page: Page, action) -> None:
    """Do something that changes what a view shows (a layer, a head, a token), and wait until
    the views it feeds are drawn again (the page may fetch a part of the trace first)."""
    before = views_drawn(page)
    action()
    wait_for_views(page, before)


def choose(page: Page, selector: str, value: str) -> None:
    """Pick a view's option (layer, head, token), and wait for the redraw."""
    view_change(page, lambda: page.select_option(selector, value))


def trace_by_uid(page: Page, plot_id: str, uid: str) -> dict:
    (found,) = [t for t in plot_data(page, plot_id) if t.get("uid") == uid]
    return found


def vector_points(page: Page, uid: str = "after") -> list[list[float]]:
    """The toy lab's token vectors as drawn by the trace ``uid`` (``before``: layer 0,
    ``after``: the slider's layer), as the view was given them: a live 3-D scene's x, y, z; the
    still picture's ``customdata`` (its x and y are the projection); a 2-D plot's x, y."""
    t = trace_by_uid(page, "vectors-plot", uid)
    if t.get("z") is not None:
        return [list(p) for p in zip(t["x"], t["y"], t["z"], strict=True)]
    if t.get("customdata") is not None:
        return t["customdata"]
    return [list(p) for p in zip(t["x"], t["y"], strict=True)]


def vector_range(page: Page) -> list[float]:
    """The one range of every axis of the token vectors (a live scene's, or the still's)."""
    layout = plot_layout(page, "vectors-plot")
    return layout["scene"]["xaxis"]["range"] if "scene" in layout else layout["meta"]["range"]


def rotate(page: Page) -> None:
    """Turn the toy lab's token vectors from their still picture into the live 3-D scene (its
    Rotate in 3-D button) and wait for the scene."""
    button = page.locator("#vec-rotate")
    assert button.get_attribute("aria-pressed") == "false"
    button.click()
    page.wait_for_selector("#vectors-plot .gl-container canvas")
    page.wait_for_function("() => document.getElementById('vectors-plot').layout?.scene")


def cell(page: Page, row: int, col: int):
    return page.locator(f'#embeddings input[data-kind="value"][data-r="{row}"][data-c="{col}"]')


def edit_cell(page: Page, row: int, col: int, text: str) -> None:
    before = traces_drawn(page)
    cell(page, row, col).fill(text)
    wait_for_trace(page, before)


def table_values(page: Page) -> dict:
    return page.evaluate(
        """() => {
          const q = (s) => [...document.querySelectorAll(s)].map((e) => e.value);
          const rows = [...document.querySelectorAll('#embeddings tbody tr')];
          return {
            tokens: q('#embeddings input.label'),
            axes: q('#embeddings input.axis'),
            values: rows.map((r) => [...r.querySelectorAll('input.value')].map((e) => e.value)),
          };
        }"""
    )


def share_hash(state: dict) -> str:
    """The `#s=` fragment the page uses: base64url of the state's JSON, no padding."""
    raw = json.dumps(state, separators=(",", ":")).encode()
    return "#s=" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def snap(target: Page | Locator, path: str | Path, **options: Any) -> None:
    """A screenshot (of the page or one element) for a person to look at: taken with
    ATTNVIZ_SHOTS=1 (``make shots``), not in every run, as ``shoot``'s. No assertion reads it.
    An element is scrolled into view either way (what its screenshot does first), so that a
    test goes on from the same page."""
    if SHOTS_WANTED:
        ARTIFACTS.mkdir(exist_ok=True)
        target.screenshot(path=str(path), **options)
    elif isinstance(target, Locator):
        target.scroll_into_view_if_needed()


def screenshot(page: Page, name: str) -> Path:
    """The whole page's screenshot as ARTIFACTS/``name`` (``snap``: with ATTNVIZ_SHOTS=1)."""
    path = ARTIFACTS / name
    snap(page, path, full_page=True)
    return path


def raw_attention(x: list[list[float]]) -> dict:
    """The article's raw self-attention, softmax(X X^T / sqrt(d)) X, in plain Python."""
    d = len(x[0])
    scores = [
        [sum(a * b for a, b in zip(xi, xj, strict=True)) / math.sqrt(d) for xj in x] for xi in x
    ]
    weights = []
    for row in scores:
        m = max(row)
        e = [math.exp(v - m) for v in row]
        weights.append([v / sum(e) for v in e])
    out = [[sum(w[j] * x[j][c] for j in range(len(x))) for c in range(d)] for w in weights]
    return {"scores": scores, "weights": weights, "out": out}


def assert_close(actual, expected, tol: float = 1e-9) -> None:
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), (actual, expected)
        for a, e in zip(actual, expected, strict=True):
            assert_close(a, e, tol)
    elif expected is None:
        assert actual is None
    else:
        assert actual == pytest.approx(expected, abs=tol), (actual, expected)


# ---- Sentence mode ----------------------------------------------------------------------

MODEL = "all-MiniLM-L6-v2"


MIN_WEIGHT = 0.01  # headview.js draws no lighter line


def views_drawn(page: Page) -> int:
    return int(page.evaluate("document.documentElement.dataset.views || '0'"))


def wait_for_views(page: Page, after: int) -> None:
    """Wait until a redraw after a view choice (layer, head, token, option) has finished."""
    page.wait_for_function("n => +(document.documentElement.dataset.views || 0) > n", arg=after)


def type_sentence(page: Page, text: str) -> None:
    before = traces_drawn(page)
    page.fill("#s-text", text)
    wait_for_trace(page, before)


def open_sentence(page: Page, url: str, text: str | None = None) -> None:
    """Open the page in sentence mode and wait for its first trace: the default sentence, or
    `text` (opened from a link to it, as a shared link opens: one trace, not two). A page opened
    on the toy lab first and switched by its tab is test_sentence's."""
    if "#" in url:
        page.goto(url)
        wait_for_trace(page, 0)
        before = traces_drawn(page)
        page.click("#mode-sentence")
        wait_for_trace(page, before)
    else:
        link = {"mode": "sentence", "sentence": {"text": text}} if text is not None else None
        page.goto(url + (share_hash(link) if link else "#sentence"))
        wait_for_trace(page, 0)
    if text is not None and page.locator("#s-text").input_value() != text:
        type_sentence(page, text)


def head_lines(page: Page) -> list[dict]:
    """Every line of the head view: head, query row, key column, weight (as sent)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#head-view svg.hv line')].map((l) => ({
          head: +l.dataset.head, query: +l.dataset.query, key: +l.dataset.key,
          weight: +l.dataset.weight}))"""
    )


def text_trace(api, text: str, model: str = MODEL) -> dict:
    response = api.post("/api/trace", json={"model": model, "text": text})
    assert response.status_code == 200, response.text
    return response.json()


LARGE = """() => {
  const root = document.querySelector('#mv-large .hc');
  const h = root.__heat, m = h.matrix, n = m.shape[0];
  return {labels: h.labels, dtype: m.dtype, title: root.querySelector('.hc-title').textContent,
    z: Array.from({length: n}, (_, i) => Array.from(m.data.subarray(i * n, (i + 1) * n)))};
}"""


def large_heatmap(page: Page) -> dict:
    """What the model view's large heatmap draws: its labels, title, dtype and matrix."""
    return page.evaluate(LARGE)


def hover_large(page: Page, i: int, j: int) -> str:
    """Move the pointer over cell (query i, key j) of the large heatmap; the tooltip's text."""
    box = page.evaluate(
        """([i, j]) => { const root = document.querySelector('#mv-large .hc');
          const g = root.__heat.geometry, canvas = root.querySelector('canvas');
          // A whole pixel inside the cell (the pointer lands on whole pixels; a cell of 512 rows
          // is under 2 of them, and the canvas may start between two).
          const inside = (start, k) => { let p = Math.round(start + (k + 0.5) * g.cell);
            while (Math.floor((p - start) / g.cell) > k) p--;
            while (Math.floor((p - start) / g.cell) < k) p++;
            return p; };
          const at = () => { const r = canvas.getBoundingClientRect();
            return {x: inside(r.left + g.left, j), y: inside(r.top + g.top, i)}; };
          window.scrollBy(0, at().y - window.innerHeight / 2);  // the cell in view
          return at(); }""",
        [i, j],
    )
    page.mouse.move(box["x"], box["y"])
    tip = page.locator("#mv-large .hc-tip")
    tip.wait_for(state="visible")
    return tip.inner_text()


def assert_head_lines_match(page: Page, matrices: dict[int, list[list[float]]], keep=None) -> None:
    """The head view draws, for each head, the lines of weights >= MIN_WEIGHT: within half a
    quantisation step (1/255 of the head's largest weight) of the exact `matrices[head]`;
    every weight clearly above the threshold drawn, none clearly below. `keep(i, j)`: only
    these (query, key) pairs are drawn (one token's lines, on long texts)."""
    lines = {(x["head"], x["query"], x["key"]): x["weight"] for x in head_lines(page)}
    assert {h for h, _, _ in lines} <= set(matrices)
    for h, m in matrices.items():
        step = max(max(row) for row in m) / 255
        for i, row in enumerate(m):
            for j, w in enumerate(row):
                drawn = lines.get((h, i, j))
                if keep is not None and not keep(i, j):
                    assert drawn is None, (h, i, j)
                    continue
                if drawn is not None:
                    assert abs(drawn - w) <= step / 2 + 1e-6, (h, i, j, drawn, w)
                    assert drawn >= MIN_WEIGHT
                elif w >= MIN_WEIGHT + step:
                    raise AssertionError(f"head {h}: line {i} -> {j} of weight {w} not drawn")


def slide(page: Page, selector: str, value: int) -> None:
    """Set a range input (a slider of steps or checkpoints) and wait until the views it feeds
    are drawn again."""
    before = int(page.evaluate("() => +(document.documentElement.dataset.views || 0)"))
    page.locator(selector).fill(str(value))
    page.wait_for_function(
        "n => +(document.documentElement.dataset.views || 0) > n"
        " && document.documentElement.dataset.pending === '0'",
        arg=before,
    )


# axe-core, from npm (package.json), run in the page by the accessibility tests.
AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = ("serious", "critical")


def axe_serious(page) -> list[str]:
    """axe-core's violations of impact serious or critical on the page as it is (WCAG 2.x A and
    AA rules), one line each."""
    found = page.evaluate(
        """async () => (await axe.run(document, {runOnly: {type: 'tag',
          values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']}})).violations
          .map((v) => ({id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' '))}))"""
    )
    return [f"{v['id']} ({v['impact']}): {v['nodes'][:5]}" for v in found if v["impact"] in SERIOUS]


# A Train tab's run other than ``old`` (the id shown before) has ended done.
NEW_RUN_DONE = (
    "old => document.getElementById('train-mode').dataset.run === 'done'"
    " && document.getElementById('t-run-card').dataset.run !== old"
)


RUN_TIMEOUT_MS = 180_000  # the longest wait for a training run to end


def train_from_form(page, steps: str, after: str = "", lr: str | None = None) -> None:
    """Train from the Train tab's form for ``steps`` steps (at ``lr``), until the new run (not
    ``after``, the id shown before) has ended done."""
    page.fill("#t-steps", steps)
    if lr:
        page.fill("#t-lr", lr)
    page.click("#t-start")
    # A run trains for seconds to a minute (a loaded machine): the wait guards against a hang,
    # as the Train tab's tests wait on theirs, and times nothing.
    page.wait_for_function(NEW_RUN_DONE, arg=after, timeout=RUN_TIMEOUT_MS)


# How the page draws and reads a token's label (static/js/core/tokens.js), written again here
# as the tests' oracle: spaces, newlines, tabs and bytes visible, and named aloud.
_MARKS = {
    " ": ("␣", "space"),
    "\n": ("⏎", "newline"),
    "\t": ("⇥", "tab"),
    "\r": ("␍", "carriage return"),
}
_INVISIBLE = {"Zs", "Cf", "Zl", "Zp"}
_ALSO_INVISIBLE = {0x034F, 0x115F, 0x1160, 0x3164, *range(0xFE00, 0xFE10)}


def _mark(ch: str, spoken: bool) -> str | None:
    import unicodedata

    if ch in _MARKS:
        return _MARKS[ch][spoken]
    code, cat = ord(ch), unicodedata.category(ch)
    if cat == "Cc":
        return f"byte 0x{code:02X}" if spoken else f"<0x{code:02X}>"
    if cat in _INVISIBLE or code in _ALSO_INVISIBLE:
        return f"character U+{code:04X}" if spoken else f"<U+{code:04X}>"
    return None


def _chars(label: str) -> list[tuple[str, bool]]:
    """Each character, and whether it is drawn as a mark: a space only at the start or end."""
    body = label.strip(" ")
    lead = len(label) - len(label.lstrip(" ")) if body else len(label)
    end = lead + len(body)
    return [(c, c != " " or i < lead or i >= end) for i, c in enumerate(label)]


def shown_token(label: str) -> str:
    if not label:
        return "∅"
    return "".join((m and _mark(c, False)) or c for c, m in _chars(label))


def spoken_token(label: str) -> str:
    import re

    if not label:
        return "empty token"
    words: list[str] = []
    text, run, count = "", None, 0
    for ch, marked in _chars(label):
        name = _mark(ch, True) if marked else None
        if name is None:
            if run is not None:
                words.append(f"{count} {run}s" if count > 1 else run)
                run, count = None, 0
            text += ch
            continue
        if text:
            words.append(text)
            text = ""
        if name == run and name in {m[1] for m in _MARKS.values()}:
            count += 1
        else:
            if run is not None:
                words.append(f"{count} {run}s" if count > 1 else run)
            run, count = name, 1
    if run is not None:
        words.append(f"{count} {run}s" if count > 1 else run)
    if text:
        words.append(text)
    return re.sub(r"<0x([0-9A-F]{2})>", r"byte 0x\1", " ".join(words))


def quoted_token(label: str) -> str:
    import re

    blank = all(_mark(c, False) is not None for c in label) or re.fullmatch(
        r"(<0x[0-9A-F]{2}>)+", label
    )
    return f"“{shown_token(label)}”" + (f" ({spoken_token(label)})" if blank else "")


def act(page: Page, action) -> None:
    """Do something that redraws views of the trace in view, and wait for them."""
    before = views_drawn(page)
    action()
    wait_for_views(page, before)


def shoot(page: Page, name: str, selector: str | None = None) -> list[str]:
    """Screenshots ``<name>-1280.png`` and ``<name>-480.png`` in ARTIFACTS (of `selector`'s
    element, "top": the window at the top, else the whole page), back at 1280. Without
    ATTNVIZ_SHOTS=1 (``SHOTS_WANTED``) it takes none and only puts the page back at 1280."""
    if not SHOTS_WANTED:
        if page.viewport_size != VIEWPORT:
            page.set_viewport_size(VIEWPORT)
            page.wait_for_timeout(700)
        return []
    ARTIFACTS.mkdir(exist_ok=True)
    paths = []
    for width in (1280, 480):
        page.set_viewport_size({"width": width, "height": VIEWPORT["height"]})
        page.wait_for_timeout(700)  # the views redraw to the new width (after 200 ms)
        path = ARTIFACTS / f"{name}-{width}.png"
        if selector == "top":
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=str(path))
        elif selector:
            page.locator(selector).first.scroll_into_view_if_needed()
            page.locator(selector).first.screenshot(path=str(path))
        else:
            page.screenshot(path=str(path), full_page=True)
        paths.append(str(path))
    page.set_viewport_size(VIEWPORT)
    page.wait_for_timeout(700)
    return paths


def checks(page: Page) -> int:
    """How many times the Learn step's tasks were answered (``data-checks``)."""
    return int(page.evaluate("+(document.documentElement.dataset.checks || 0)"))


def answered(page: Page, action) -> None:
    """Do something in the lab and wait until the step's tasks are answered again."""
    before = checks(page)
    action()
    page.wait_for_function(
        "n => +(document.documentElement.dataset.checks || 0) > n"
        " && document.documentElement.dataset.pending === '0'",
        arg=before,
    )


LEARN_READY = """([id, checks]) => {
  const root = document.documentElement, guide = document.getElementById('learn-guide');
  return guide.dataset.ready === '1' && guide.dataset.step === id && root.dataset.pending === '0'
    && +(root.dataset.checks || 0) > checks;
}"""


def learn_open(page: Page, step_id: str, go) -> None:
    """Open the Learn step ``step_id`` by ``go()`` and wait until its tasks are answered."""
    before = [step_id, checks(page)]
    go()
    page.wait_for_function(LEARN_READY, arg=before)
