"""Every view of the three modes readable without a mouse and without sight: a heatmap or plot
takes focus, the arrow keys move its cursor and a polite live region reads the number the hover
shows, the API's rounded to 3 significant digits (the numbers table keeps it whole); each has a summary that follows the data (checked
against numbers computed here from the API's trace or run) and, where the numbers are few, a
table of them; axe-core finds nothing serious in several states of each mode; nothing overflows
the viewport sideways at 480 px."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnviz.numbers import readable_prose
from tests.browser.helpers import (
    AXE,
    MODEL,
    axe_serious,
    edit_cell,
    open_app,
    open_sentence,
    select_and_wait,
    snap,
    view_change,
)
from tests.browser.test_train import open_train, small_form, train_and_wait
from tests.support.oracles import cell_value, js_number, readable

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

SHOTS = Path("/tmp/shots-a11y")
TEXT = "The cat sat on the mat because it was tired"


def live(page, plot: str) -> str:
    """What the live region of the plot `plot` (a selector) says now."""
    return page.evaluate(
        """s => { const e = document.querySelector(s);
          let box = e.nextElementSibling;
          while (box && !box.classList.contains('plot-text')) box = box.nextElementSibling;
          return box.querySelector('.plot-live').textContent; }""",
        plot,
    )


def summary(page, plot: str) -> str:
    return page.evaluate(
        "s => document.querySelector(s).nextElementSibling.querySelector('.plot-summary')"
        ".textContent",
        plot,
    )


def press(page, *keys: str) -> None:
    for key in keys:
        page.keyboard.press(key)


def no_sideways_overflow(page) -> None:
    width = page.evaluate("() => document.documentElement.clientWidth")
    assert width == 480
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width


def shots(page, name: str) -> None:
    """The page at 1280 and at 480 px (checked for sideways overflow there), then 1280 again."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    snap(page, path=str(SHOTS / f"{name}-1280.png"), full_page=True)
    page.set_viewport_size({"width": 480, "height": 900})
    page.wait_for_timeout(300)  # Plotly's own resize (a debounced window listener)
    no_sideways_overflow(page)
    snap(page, path=str(SHOTS / f"{name}-480.png"), full_page=True)
    assert axe_serious(page) == []
    page.set_viewport_size({"width": 1280, "height": 800})


CLIPPED = """() => [...document.querySelectorAll('#embeddings input.axis')]
  .filter((e) => e.scrollWidth > e.clientWidth).map((e) => e.value)"""
NAMES = """() => [...document.querySelectorAll('#embeddings input[data-kind=value]')]
  .map((e) => [+e.dataset.r, +e.dataset.c, e.getAttribute('aria-label')])"""


def test_toy_table_cells_are_named_by_their_token_and_dimension_and_no_name_is_cut(
    page, live_server, presets
):
    """Issue 41: a screen reader hears "apple, fruit", not "Token 2, dimension 2" (the token's
    position too where two tokens share a name); a dimension's name fits its header at 1280 and
    480 px ("grammar" was cut short in step 7's table)."""
    page.add_init_script(path=str(AXE))
    open_app(page, live_server + "/")
    for preset in (
        presets["presets"][0],
        next(p for p in presets["presets"] if p["id"] == "two-heads"),
    ):
        if preset is not presets["presets"][0]:
            select_and_wait(page, "#preset", preset["id"])
        tokens, axes = preset["tokens"], preset["axes"]
        names = page.evaluate(NAMES)
        assert len(names) == len(tokens) * len(axes)
        for r, c, name in names:
            token = tokens[r] if tokens.count(tokens[r]) == 1 else f"{tokens[r]} (token {r + 1})"
            assert name == f"{token}, {axes[c]}", (r, c, name)
        assert page.evaluate(CLIPPED) == []
    assert page.evaluate(NAMES)[1] == [0, 1, f"{tokens[0]}, {axes[1]}"]
    # At 1280 px the panel widens to the names: the whole table in view, no column scrolled off.
    assert page.evaluate(
        "() => { const e = document.querySelector('#embeddings').parentElement;"
        " return e.scrollWidth <= e.clientWidth; }"
    )
    snap(page.locator("#toy-mode"), path=str(SHOTS / "toy-table-two-heads-1280.png"))
    # Renaming a dimension renames its cells for a screen reader, and widens its header.
    page.locator('#embeddings input.axis[data-c="1"]').fill("whereabouts")
    assert page.evaluate(NAMES)[1] == [0, 1, f"{tokens[0]}, whereabouts"]
    assert page.evaluate(CLIPPED) == []
    snap(page.locator("#embeddings"), path=str(SHOTS / "toy-table-names-1280.png"))
    page.set_viewport_size({"width": 480, "height": 900})
    assert page.evaluate(CLIPPED) == []
    snap(page.locator("#embeddings"), path=str(SHOTS / "toy-table-names-480.png"))
    assert axe_serious(page) == []
    page.set_viewport_size({"width": 1280, "height": 800})


def test_toy_lab_heatmaps_by_keyboard_and_in_words(page, live_server, api, presets):
    page.add_init_script(path=str(AXE))
    open_app(page, live_server + "/")
    first = presets["presets"][0]
    trace = api.post("/api/trace", json={k: first[k] for k in ("tokens", "axes", "embeddings")})
    trace = trace.json()
    tokens = trace["tokens"]
    weights = trace["attentions"][0][0]
    scores = trace["scores"][0][0]

    # The weights: focus, then the arrow keys; the live region reads the API's number to 3
    # significant digits (as a person reads it; the table below and the CSV keep it exact).
    page.focus("#weights-plot")
    w00 = readable(weights[0][0])
    assert live(page, "#weights-plot") == f"{tokens[0]} → {tokens[0]}: weight {w00}"
    press(page, "ArrowDown", "End")  # apple's row, its last key: banana
    assert live(page, "#weights-plot") == f"apple → banana: weight {readable(weights[1][4])}"
    press(page, "ArrowLeft", "ArrowLeft", "ArrowUp", "ArrowUp")  # clamped at the first row
    assert live(page, "#weights-plot") == f"An → and: weight {readable(weights[0][2])}"
    press(page, "Control+End")
    assert live(page, "#weights-plot") == f"banana → banana: weight {readable(weights[4][4])}"
    # Plotly's hover label marks the cell (the same words the live region reads).
    page.wait_for_function(
        "() => document.querySelector('#weights-plot .hoverlayer').textContent"
        ".includes('query bananakey banana')"
    )
    # Tab goes on in reading order: the plot's own tool buttons, then its numbers.
    for _ in range(20):
        page.keyboard.press("Tab")
        if not page.evaluate(
            "() => document.getElementById('weights-plot').contains(document.activeElement)"
        ):
            break
    assert page.evaluate(
        "() => document.activeElement.matches('#weights-plot + .plot-text summary')"
    )

    # The summaries: the strongest weight and the largest score, computed here.
    cells = [(w, i, j) for i, row in enumerate(weights) for j, w in enumerate(row)]
    w, i, j = max(cells, key=lambda c: (c[0], -c[1], -c[2]))
    assert summary(page, "#weights-plot").endswith(
        f"strongest: {tokens[i]} → {tokens[j]} {cell_value(w)}"
    )
    cells = [(s, i, j) for i, row in enumerate(scores) for j, s in enumerate(row)]
    s, i, j = max(cells, key=lambda c: (c[0], -c[1], -c[2]))
    assert summary(page, "#scores-plot") == (
        f"Scores, layer 1, head 1: largest: {tokens[i]} → {tokens[j]} {cell_value(s)}"
    )
    # The numbers, behind "Show the numbers": every weight exactly as the API sent it.
    box = page.locator("#weights-plot + .plot-text")
    box.locator("summary").click()
    rows = box.locator("tbody tr")
    assert rows.count() == len(tokens)
    assert rows.nth(1).locator("th").inner_text() == "apple"
    assert rows.nth(1).locator("td").all_inner_texts() == [js_number(v) for v in weights[1]]

    # The numbers written in the cells: black or white, whichever its colour needs (AA).
    inks = page.evaluate(
        "() => document.getElementById('weights-plot').layout.annotations.map((a) => a.font.color)"
    )
    assert len(inks) == 25 and set(inks) <= {"#000000", "#ffffff"}

    # The distance: a line plot reachable by keyboard, read as its hover.
    page.focus("#distances-plot")
    press(page, "End")
    assert live(page, "#distances-plot") == (
        f"apple ↔ banana, layer 1: {readable(trace['distances'][1][1][4])}"
    )
    # The vectors: a token at the start and after the layer.
    page.focus("#vectors-plot")
    press(page, "ArrowRight", "ArrowDown")
    after = trace["hidden_states"][1][1]
    assert live(page, "#vectors-plot") == (
        "apple · layer 1: "
        + ", ".join(f"{a} = {readable(v)}" for a, v in zip(trace["axes"], after, strict=True))
    )
    # (on the still picture, the hover label marks the cursor too)
    page.wait_for_function(
        "() => document.querySelector('#vectors-plot .hoverlayer').textContent.includes('apple')"
    )
    assert axe_serious(page) == []

    # After an edit: the summary follows the data, and axe still finds nothing serious.
    edit_cell(page, 1, 1, "3")
    new = api.post(
        "/api/trace",
        json={
            "tokens": tokens,
            "axes": trace["axes"],
            "embeddings": [
                [3.0 if (r, c) == (1, 1) else v for c, v in enumerate(row)]
                for r, row in enumerate(first["embeddings"])
            ],
        },
    ).json()
    weights = new["attentions"][0][0]
    cells = [(w, i, j) for i, row in enumerate(weights) for j, w in enumerate(row)]
    w, i, j = max(cells, key=lambda c: (c[0], -c[1], -c[2]))
    assert summary(page, "#weights-plot").endswith(
        f"strongest: {tokens[i]} → {tokens[j]} {cell_value(w)}"
    )
    page.focus("#weights-plot")
    press(page, "Control+Home", "ArrowDown", "ArrowRight")
    assert live(page, "#weights-plot") == f"apple → apple: weight {readable(weights[1][1])}"
    assert axe_serious(page) == []
    shots(page, "toy-edited")


def test_sentence_mode_every_view_by_keyboard_and_in_words(page, live_server, api):
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/", TEXT)
    trace = api.post("/api/trace", json={"model": MODEL, "text": TEXT}).json()
    tokens = trace["tokens"]

    # A cell of the model view by keyboard (Enter opens it), then the large heatmap's cursor.
    page.focus('#mv-grid button.mv-cell[data-layer="2"][data-head="4"]')
    view_change(page, lambda: page.keyboard.press("Enter"))
    page.wait_for_function(
        "() => document.querySelector('#mv-large .hc-title').textContent === 'Layer 3, head 5'"
    )
    m = trace["attentions"][2][4]
    canvas = "#mv-large .hc-canvas"
    page.focus(canvas)
    press(page, "ArrowDown", "ArrowDown", "ArrowRight")
    text = live(page, "#mv-large .hc-body")
    assert text == f"{tokens[2]} → {tokens[1]}: {readable(m[2][1])} (query 3, key 2)"
    press(page, "End")
    last_w = readable(m[2][-1])
    assert live(page, "#mv-large .hc-body").startswith(f"{tokens[2]} → {tokens[-1]}: {last_w} ")
    # The visible tooltip shows the same number at the cursor.
    assert page.locator("#mv-large .hc-tip").inner_text().split("\n")[-1] == f"weight {last_w}"
    # Enter makes the cursor's row the query of the other views, and its column the key that
    # Why this score explains (issue 29): its matrix and its key view by keyboard, exactly.
    view_change(page, lambda: page.keyboard.press("Enter"))
    assert page.locator("#qk-query").input_value() == "2"
    last = len(tokens) - 1
    page.wait_for_function(
        "k => { const w = document.querySelector('#why-view').__why;"
        " return w && w.attribution.query === 2 && w.attribution.key === k; }",
        arg=last,
    )
    page.focus("#why-view .why-matrix")
    press(page, "ArrowRight")
    said = live(page, "#why-view .why-matrix-box")
    assert said.startswith("query from the embedding of ") and " × key from " in said
    page.focus("#why-view .why-keys")
    press(page, "ArrowDown")
    assert live(page, "#why-view .why-keys").startswith("key ")

    cells = [(w, i, j) for i, row in enumerate(m) for j, w in enumerate(row)]
    w, i, j = max(cells, key=lambda c: (c[0], -c[1], -c[2]))
    n = len(tokens)
    assert summary(page, "#mv-large .hc-body") == (
        f"{n} × {n} weights, strongest: {tokens[i]} → {tokens[j]} {cell_value(w)}"
    )
    rows = page.locator("#mv-large .plot-numbers tbody tr")
    assert rows.count() == n

    # The query-key view: the canvas takes focus; End reads the key's sum, score and weight.
    page.focus("#qk-view .qk-canvas")
    press(page, "End")
    said = live(page, "#qk-view .qk-scroll")
    assert said.startswith(f"key {tokens[0]} (token 1), Σ q⊙k = ")
    assert said.endswith(f"weight = {readable(m[2][0])}")
    # The trajectories: each path's point at a layer, as its hover writes it.
    page.focus("#traj-view .traj-plot")
    press(page, "End")
    assert live(page, "#traj-view .traj-plot").startswith(f"{tokens[0]} · layer 6: PC1 (")
    # The head view: each query token names its strongest key.
    label = page.locator("#head-view .hv-left .hv-token").nth(2).get_attribute("aria-label")
    assert label.startswith(f"query {tokens[2]}: strongest key ")
    assert (
        "strongest line of each head shown" in page.locator("#head-view .plot-summary").inner_text()
    )

    assert axe_serious(page) == []
    shots(page, "sentence-every-view")


def test_train_mode_a_finished_run_by_keyboard_and_in_words(page, live_server, api):
    page.add_init_script(path=str(AXE))
    open_train(page, live_server)
    small_form(page, 24)
    run = train_and_wait(page, api)
    assert run["state"] == "done"
    v = run["variants"][0]
    loss = v["history"]["loss"]
    last = v["checkpoints"][-1]

    # The loss: its summary from the run's numbers; the cursor reads the hover's.
    baseline = run.get("baseline")
    assert summary(page, "#t-loss") == (
        f"loss {readable_prose(loss[0])} → {readable_prose(loss[-1])} over 24 steps, held-out {readable(last['heldout'])}"
        " at step 24"
        + (f"; the bigram baseline {readable(baseline)}" if baseline is not None else "")
        + "."
    )
    page.focus("#t-loss")
    press(page, "End")
    assert live(page, "#t-loss") == f"model, step 24: batch loss {readable(loss[-1])}"
    held = page.locator("#t-loss + .plot-text tbody tr")
    assert held.count() == len(v["checkpoints"])
    # The gradient norms: layer 1's last step.
    page.focus("#t-grads")
    press(page, "End")
    g = v["history"]["grad_norms"][-1][0]
    assert live(page, "#t-grads") == f"layer 1, step 24: {readable_prose(g)}"
    first = v["history"]["grad_norms"][0][0]
    assert summary(page, "#t-grads").startswith(
        f"Gradient norm, step {v['history']['step'][0]} → 24: layer 1 {readable_prose(first)} → "
        f"{readable_prose(g)}"
    )

    # The chosen head at the last checkpoint: 8-bit, read as the hover writes it.
    page.focus("#t-large .hc-canvas")
    press(page, "ArrowRight")
    said = live(page, "#t-large .hc-body")
    probe = run["probe"]["tokens"]
    assert said.startswith(f"{probe[0]} → {probe[1]}: ≈ ")
    assert said.endswith("(query 1, key 2)") and "≈" in said and "8-bit" not in said
    assert axe_serious(page) == []
    shots(page, "train-finished")
