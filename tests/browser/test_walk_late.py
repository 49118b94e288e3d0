"""What a newcomer tripped on (issue 28, item 5, points 13-17), each in Chromium: a trained run
opens in sentence mode on a token that shows something, a causal head's summary says more than
"d → d 1.00", the offline toy file looks read only, the Train tab's exports sit in the header
as every mode's do, and the toy lab is reached by skip links, its table one Tab stop with the
arrow keys inside. Each test leaves screenshots at 1280 and 480 px in test-artifacts/
(walk-<point>-<width>.png)."""

from __future__ import annotations

import pytest

from attnviz.numbers import readable_percent
from tests.browser.helpers import (
    AXE,
    axe_serious,
    open_app,
    traces_drawn,
    train_from_form,
    wait_for_trace,
)
from tests.browser.test_walk import shoot
from tests.support.oracles import cell_value

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

# ---- 13, 14: a trained run in sentence mode ---------------------------------------------------


def causal_summary(
    labels: list[str],
    rows: list[list[float]],
    approx: bool = False,
    dtype: str = "F64",
    positions: bool = False,
) -> str:
    """describe.js strongestText with causal: the first query left out, a first-token sink (at
    least half of each later row, on average) named apart; with ``positions`` (a heatmap that
    labels only every k-th token), each token named with its position from 1 too."""
    n = len(rows)
    sink = sum(rows[i][0] for i in range(1, n)) / (n - 1)
    weights = all(abs(sum(r) - 1) <= 0.05 and all(0 <= v <= 1.05 for v in r) for r in rows[1:])
    named = weights and sink >= 0.5
    cells = [(rows[i][j], i, j) for i in range(1, n) for j in range(n) if not (named and j == 0)]
    v, i, j = max(cells, key=lambda c: (c[0], -c[1], -c[2]))
    at = (lambda k: f"{labels[k]} ({k + 1})") if positions else (lambda k: labels[k])
    said = cell_value(v, dtype)  # an 8-bit snapshot's number reads "≈ 0.42", a bound "over 0.999"
    number = said[0].isdigit() or said[0] == "-"
    cell = f"{at(i)} → {at(j)} {'≈ ' if approx and number else ''}{said}"
    if not named:
        return f"strongest past the first query (which sees only itself): {cell}"
    return (
        f"an attention sink: each later query gives on average {readable_percent(sink)} of its "
        f"weight to the first token, “{labels[0]}”; strongest elsewhere: {cell}"
    )


LARGE = """() => { const h = document.querySelector('#mv-large .hc').__heat, m = h.matrix;
  const n = m.shape[0];
  return {labels: h.labels, dtype: m.dtype, every: h.every, rows: Array.from({length: n}, (_, i) =>
    Array.from(m.data.subarray(i * n, (i + 1) * n))),
    summary: document.querySelector('#mv-large .plot-summary').textContent}; }"""


def test_13_14_a_trained_run_opens_on_the_repeat_and_its_heads_say_something(
    page, live_server, api
):
    """13: "Open in sentence mode" puts the query on the probe's token that shows what the task
    teaches (the server's, from the task: the repeat's first letter), not on token 1, whose
    causal row is all its own and whose prediction is the unpredictable first copy. 14: the
    summary of a causal head leaves that first query out (it read "strongest: d → d 1.00"), and
    names a first-token sink apart."""
    page.add_init_script(path=str(AXE))
    page.goto(live_server + "/#train")
    page.wait_for_function("() => document.getElementById('t-task').options.length > 0")
    train_from_form(page, "30")
    run_id = page.locator("#t-run-card").get_attribute("data-run")
    run = api.get(f"/api/train/{run_id}").json()
    probe = run["probe"]
    n = (len(probe["tokens"]) + 1) // 2
    assert probe["query"] == n  # the repeat's first letter (0-based)

    drawn = traces_drawn(page)
    page.click("#t-models button:has-text('Open in sentence mode')")
    wait_for_trace(page, drawn)
    page.wait_for_function("() => document.documentElement.dataset.pending === '0'")
    assert page.locator("#s-model").input_value() == run_id
    assert page.locator("#qk-query").input_value() == str(n)
    picked = page.locator("#qk-query option:checked").text_content()
    assert probe["tokens"][n] in picked

    # 14: the large heatmap's summary, computed here from what it draws.
    large = page.evaluate(LARGE)
    assert large["labels"] == probe["tokens"]
    assert large["rows"][0][0] == 1.0  # the first query sees only itself
    expected = causal_summary(
        large["labels"], large["rows"], dtype=large["dtype"], positions=large["every"] > 1
    )
    assert large["summary"].endswith(expected), (large["summary"], expected)
    assert "strongest: " not in large["summary"]
    assert axe_serious(page) == []
    shoot(page, "13-opens-on-the-repeat", "#qk-card")
    shoot(page, "13-prediction-on-the-repeat", "#lens-card")
    shoot(page, "14-causal-summary", "#model-view-card")

    # The Train tab's own heads: the same rule on the run's 8-bit snapshots.
    page.click("#mode-train")
    page.wait_for_function("() => document.documentElement.dataset.mode === 'train'")
    said = page.locator("#t-large .plot-summary").text_content()
    assert "past the first query" in said or "an attention sink" in said, said
    assert " → " in said and not said.startswith(f"{n * 2 - 1} × {n * 2 - 1} weights, strongest:")


def test_14_the_toy_labs_causal_heads_leave_the_first_query_out(page, live_server):
    open_app(page, live_server + "/")
    before = traces_drawn(page)
    page.select_option("#cfg-mask", "causal")
    wait_for_trace(page, before)
    said = page.evaluate(
        "() => document.querySelector('#weights-plot').nextElementSibling"
        ".querySelector('.plot-summary').textContent"
    )
    rows = page.evaluate(
        "() => document.getElementById('weights-plot').data.find((t) => t.uid === 'weights').z"
    )
    labels = page.evaluate("() => [...document.querySelectorAll('#embeddings input.label')]"
                           ".map((e) => e.value)")  # fmt: skip
    assert said.endswith(causal_summary(labels, rows)), said


# ---- 16: one place for the exports -------------------------------------------------------------

HEADER_EXPORTS = """() => [...document.querySelectorAll('header.app-header button')]
  .filter((b) => b.offsetParent !== null && b.textContent.startsWith('Export'))
  .map((b) => b.textContent)"""


def test_16_every_mode_exports_from_the_header_with_the_same_labels(page, live_server, tmp_path):
    """The Train tab offered Export JSON in the header and Export HTML in its run card, while
    the toy lab and sentence mode offer both in the header: now every mode has both there, and
    the run card none."""
    open_app(page, live_server + "/")
    assert page.evaluate(HEADER_EXPORTS) == ["Export JSON", "Export HTML"]
    page.click("#mode-sentence")
    page.wait_for_function("() => !document.getElementById('export-html').disabled")
    assert page.evaluate(HEADER_EXPORTS) == ["Export JSON", "Export HTML"]
    page.click("#mode-train")
    page.wait_for_function("() => document.getElementById('t-task').options.length > 0")
    assert page.evaluate(HEADER_EXPORTS) == ["Export JSON", "Export HTML"]
    assert page.locator("#export-html").is_disabled()  # no run yet
    train_from_form(page, "12")
    run_id = page.locator("#t-run-card").get_attribute("data-run")
    assert page.evaluate(HEADER_EXPORTS) == ["Export JSON", "Export HTML"]
    assert page.locator("#t-run-card :is(a, button)", has_text="Export").count() == 0
    page.wait_for_function("() => !document.getElementById('export-html').disabled")
    with page.expect_download() as info:
        page.click("#export-html")
    assert info.value.suggested_filename == f"attnviz-run-{run_id}.html"
    path = tmp_path / "run.html"
    info.value.save_as(path)
    # The file's title names the run as the page does (what it trains), never by its id.
    title = page.evaluate(
        "async (id) => (await (await fetch('/api/train/' + id)).json()).title", run_id
    )
    assert f"<title>attnviz · {title}</title>" in path.read_text()
    page.wait_for_function(
        "() => document.getElementById('status').textContent.startsWith('saved attnviz-run-')"
    )
    with page.expect_download() as info:
        page.click("#export-json")
    assert info.value.suggested_filename == f"attnviz-run-{run_id}.json"
    # At 480 px the header's four controls still fit (its status wraps, even a file's name).
    page.set_viewport_size({"width": 480, "height": 800})
    page.wait_for_timeout(300)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 480
    shoot(page, "16-train-header-exports", "top")


# ---- 15: the offline toy file looks read only ------------------------------------------------

LOOKS = """() => [...document.querySelectorAll('#embeddings input')].map((e) => {
  const s = getComputedStyle(e);
  return {readOnly: e.readOnly, border: s.borderTopColor, background: s.backgroundColor};
})"""


def test_15_the_offline_toy_file_looks_read_only(browser, tmp_path):
    """Its cells looked like text boxes and its × buttons like buttons, though nothing edits
    them: now the cells are text (no border, no box), the × buttons are gone, and each of the
    table's and the model's cards says "Read-only copy: open attnviz to edit"."""
    import attnviz
    from tests.python.offline import opened, wait_drawn
    from tests.python.test_toy_file import TABLE

    path = attnviz.trace(**TABLE).save_html(tmp_path / "toy.html", layer=0, head=0)
    with opened(browser, path, scripts=[AXE]) as (page, errors):
        wait_drawn(page)
        looks = page.evaluate(LOOKS)
        assert looks and all(x["readOnly"] for x in looks)
        assert {x["border"] for x in looks} == {"rgba(0, 0, 0, 0)"}, looks[:3]
        assert {x["background"] for x in looks} == {"rgba(0, 0, 0, 0)"}, looks[:3]
        assert page.locator("#embeddings button.remove").count() > 0  # drawn, but
        assert page.locator("#embeddings button.remove:visible").count() == 0  # not shown
        notes = page.locator(".read-only-note:visible")
        assert notes.all_inner_texts() == ["Read-only copy: open attnviz to edit."] * 2
        assert page.locator("#embeddings").get_attribute("aria-readonly") == "true"
        # The keyboard still reads it: one Tab stop, arrows between the cells, nothing typed.
        page.locator("#embeddings [tabindex='0']").focus()
        page.keyboard.press("Control+Home")  # the first dimension's name
        page.keyboard.press("ArrowDown")  # past the row of (hidden) × buttons
        assert page.evaluate("() => document.activeElement.dataset.r") == "0"
        page.keyboard.press("Home")
        assert page.evaluate("() => document.activeElement.dataset.kind") == "label"
        before = page.evaluate("() => document.activeElement.value")
        page.keyboard.press("Enter")
        page.keyboard.type("zz")
        assert page.evaluate("() => document.activeElement.value") == before
        assert axe_serious(page) == []
        assert errors == []
        shoot(page, "15-offline-read-only", "#toy-mode .panel")


# ---- 17: skip links, and the table one Tab stop ------------------------------------------------

ACTIVE = """() => { const e = document.activeElement;
  return {tag: e.tagName, id: e.id, kind: e.dataset.kind || null, r: e.dataset.r ?? null,
    c: e.dataset.c ?? null, text: e.textContent, value: e.value ?? null,
    inTable: !!e.closest('#embeddings'), inScores: !!e.closest('#scores-plot'),
    inViews: !!e.closest('#toy-views')}; }"""


def test_17_skip_links_and_the_table_as_one_grid_stop(page, live_server):
    """The first toy heatmap took 59 Tab presses, every cell of the table a stop. Now skip
    links lead to the lab, the views and the table, and the table is one stop (an ARIA grid,
    roving tabindex) with the arrow keys inside: Enter or F2 edits, Escape leaves editing."""
    page.add_init_script(path=str(AXE))
    open_app(page, live_server + "/")
    page.evaluate("() => document.activeElement.blur()")

    # From the top: the skip links first, shown when focused.
    names = []
    for _ in range(3):
        page.keyboard.press("Tab")
        names.append(page.evaluate(ACTIVE)["text"])
        assert page.evaluate(
            "() => document.activeElement.getBoundingClientRect().top >= 0"
        )  # in view
    assert names == ["Skip to the lab", "Skip to the views", "Skip to the table"]
    shoot(page, "17-skip-link", "top")

    # Every Tab on from there: the table is one stop, the first heatmap near.
    stops, table_stops = 0, 0
    for _ in range(60):
        page.keyboard.press("Tab")
        stops += 1
        at = page.evaluate(ACTIVE)
        table_stops += at["inTable"]
        if at["inScores"]:
            break
    assert at["inScores"], "the scores heatmap was never reached"
    assert table_stops == 1
    assert stops + 3 <= 35, stops  # was 59: 31 of them the table's cells and × buttons

    # Skip to the views: the next Tab is in the attention card.
    page.focus(".skip-links a[data-skip=views]")
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.id") == "toy-views"
    presses = 0
    while presses < 8 and not page.evaluate(ACTIVE)["inScores"]:
        page.keyboard.press("Tab")
        presses += 1
    assert page.evaluate(ACTIVE)["inScores"] and presses <= 5, presses

    # Skip to the table: its stop, then the arrows.
    page.focus(".skip-links a[data-skip=table]")
    page.keyboard.press("Enter")
    at = page.evaluate(ACTIVE)
    assert at["inTable"] and at["kind"] == "axis" and at["c"] == "0"
    page.keyboard.press("ArrowDown")  # the row of × (dimension 1's)
    assert page.evaluate(ACTIVE)["tag"] == "BUTTON"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    at = page.evaluate(ACTIVE)
    assert (at["kind"], at["r"], at["c"]) == ("value", "1", "1")
    page.keyboard.press("Home")
    assert page.evaluate(ACTIVE)["kind"] == "label"
    page.keyboard.press("End")
    assert page.evaluate(ACTIVE)["tag"] == "BUTTON"  # the row's ×
    page.keyboard.press("ArrowLeft")
    at = page.evaluate(ACTIVE)
    assert (at["kind"], at["r"]) == ("value", "1")
    last_c = at["c"]

    # Enter edits: the arrows move the caret, not the focus; typing types; Escape leaves.
    before = traces_drawn(page)
    page.keyboard.press("Enter")
    page.keyboard.press("ArrowLeft")
    page.keyboard.type("5")
    wait_for_trace(page, before)
    at = page.evaluate(ACTIVE)
    assert (at["kind"], at["r"], at["c"]) == ("value", "1", last_c)
    value = at["value"]
    assert "5" in value
    page.keyboard.press("Escape")
    page.keyboard.press("ArrowUp")
    at = page.evaluate(ACTIVE)
    assert (at["kind"], at["r"], at["c"]) == ("value", "0", last_c)
    # Typing on a cell reached by the arrows replaces it, as in a spreadsheet; Enter then
    # moves down a row.
    before = traces_drawn(page)
    page.keyboard.type("0.5")
    wait_for_trace(page, before)
    assert page.evaluate(ACTIVE)["value"] == "0.5"
    page.keyboard.press("Enter")
    at = page.evaluate(ACTIVE)
    assert (at["r"], at["c"]) == ("1", last_c) and at["value"] == value
    # Tab leaves the grid at once; Shift+Tab comes back to the cell it left.
    page.keyboard.press("Tab")
    assert not page.evaluate(ACTIVE)["inTable"]
    page.keyboard.press("Shift+Tab")
    at = page.evaluate(ACTIVE)
    assert (at["r"], at["c"]) == ("1", last_c)
    assert page.locator("#embeddings").get_attribute("role") == "grid"
    # A row's × by the keyboard: the row goes, the focus stays in the grid, on the cell now in
    # the ×'s place (the next row's).
    page.keyboard.press("End")
    before = traces_drawn(page)
    page.keyboard.press("Enter")
    wait_for_trace(page, before)
    assert page.locator("#embeddings tbody tr").count() == 4
    at = page.evaluate(ACTIVE)
    assert at["inTable"] and at["tag"] == "BUTTON"
    assert page.locator("#embeddings [tabindex='0']").count() == 1
    assert axe_serious(page) == []
    shoot(page, "17-table-grid", "#toy-mode .panel")
