"""The first hour's second walk (issue 41), each in Chromium at 1280 and 480 px: the docked
answer note covers none of the cards a step outlines (steps 4, 6 and 7); step 6's W_Q, W_K,
W_V and W_O cells are named by their axes; step 12's heatmap writes the label of every token
its summary names, however few labels fit. Screenshots in test-artifacts/
(walk-<name>-<width>.png)."""

from __future__ import annotations

import re

import pytest

from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    TRAIN_TINY,
    VIEWPORT,
    answered,
    axe_serious,
    learn_open,
    shoot,
    snap,
)

# ---- Step 12: the tokens the summary names are labelled --------------------------------------

# Each text a heatmap canvas writes, where it writes it (CSS px in the canvas), from its latest
# drawing (its image drawn first: the list starts again there).
RECORD_TEXTS = """(() => {
  const proto = CanvasRenderingContext2D.prototype, fill = proto.fillText, draw = proto.drawImage;
  const ours = (ctx) => ctx.canvas.classList && ctx.canvas.classList.contains('hc-canvas');
  proto.drawImage = function (...args) { if (ours(this)) this.canvas.__texts = []; return draw.apply(this, args); };
  proto.fillText = function (text, x, y, ...rest) {
    if (ours(this)) {
      const c = this.canvas, scale = c.width / c.getBoundingClientRect().width;
      const p = this.getTransform().transformPoint(new DOMPoint(x, y));
      (c.__texts ??= []).push({text: String(text), x: p.x / scale, y: p.y / scale});
    }
    return fill.call(this, text, x, y, ...rest);
  };
})()"""

LARGE = "#t-heads-card .hc"
DRAWN = """sel => { const root = document.querySelector(sel), h = root.__heat;
  return {title: root.querySelector('.hc-title').textContent, every: h.every, geo: h.geometry,
    texts: root.querySelector('canvas').__texts,
    summary: root.querySelector('.plot-summary').textContent}; }"""

# "s (2) → d (1) ≈ 0.667": the query and key the summary names, and their positions.
NAMED = re.compile(r": (\S+) \((\d+)\) → (\S+) \((\d+)\) ")


def test_step_12s_heatmap_labels_the_tokens_its_summary_names(page, live_server):
    page.add_init_script(RECORD_TEXTS)
    page.goto(f"{live_server}/#train")
    run = page.evaluate(TRAIN_TINY)  # 2 layers of 2 heads
    learn_open(
        page, "induction", lambda: page.goto(f"{live_server}/#learn/12?train=%23train%2F{run}")
    )
    page.wait_for_function(
        "id => document.getElementById('t-run-card')?.dataset.run === id", arg=run
    )
    thinned = 0  # summaries that name a token the every-k-th labelling leaves out
    for width in (1280, 480):
        page.set_viewport_size({"width": width, "height": VIEWPORT["height"]})
        for layer in range(2):
            for head in range(2):
                button = page.locator(
                    f'#t-grids button.mv-cell[data-layer="{layer}"][data-head="{head}"]'
                )
                if button.get_attribute("aria-pressed") != "true":
                    answered(page, button.click)  # one check at a time: the server is not busy
                page.wait_for_function(
                    f"""() => {{ const r = document.querySelector('{LARGE}');
                      return r?.__heat && r.querySelector('canvas').__texts
                        && r.querySelector('.hc-title').textContent
                          .includes('layer {layer + 1}, head {head + 1} '); }}"""
                )
                drawn = page.evaluate(DRAWN, LARGE)
                geo, every, texts = drawn["geo"], drawn["every"], drawn["texts"]
                if every == 1:
                    continue  # every token labelled: nothing to find
                found = NAMED.search(drawn["summary"])
                assert found, drawn["summary"]  # thinned: the summary gives positions
                query, i, key, j = found[1], int(found[2]) - 1, found[3], int(found[4]) - 1
                thinned += i % every != 0 or j % every != 0
                # The query's label left of its row, the key's below its column (the axes'
                # titles, "query" and "key", are written at the middle row and column: not
                # labels; the run's tokens are single letters).
                row_y = geo["top"] + (i + 0.5) * geo["cell"]
                col_x = geo["left"] + (j + 0.5) * geo["cell"]
                labels = [t for t in texts if t["text"] not in ("query", "key")]
                rows = [t for t in labels if t["x"] <= geo["left"] and abs(t["y"] - row_y) < 0.5]
                cols = [
                    t
                    for t in labels
                    if abs(t["x"] - col_x) < 0.5 and t["y"] > geo["top"] + geo["tall"]
                ]
                assert [t["text"] for t in rows] == [query], (width, layer, head, drawn)
                assert [t["text"] for t in cols] == [key], (width, layer, head, drawn)
        ARTIFACTS.mkdir(exist_ok=True)
        snap(page.locator("#t-heads-card"), path=str(ARTIFACTS / f"walk-12-labels-{width}.png"))
    assert thinned > 0  # the case the test is for: a named token the thinning would leave out


# ---- Step 6: the weights named by their axes -------------------------------------------------

WEIGHT = '#custom-weights table[data-matrix="{}"] input[data-i="{}"][data-j="{}"]'
AXES = (
    "() => [...document.querySelectorAll('#embeddings input[data-kind=axis]')].map((e) => e.value)"
)


def test_step_6s_weights_are_named_by_their_axes(page, live_server):
    """A screen reader hears W_Q's cell as the hint speaks of it, "W_Q, grammar row, fruit
    column" (as the table's cells, "banana, fruit"), not "row 3 column 2"; renamed axes and
    several heads are followed."""
    learn_open(page, "qkv", lambda: page.goto(f"{live_server}/#learn/6"))
    axes = page.evaluate(AXES)
    assert axes == ["tech", "fruit", "grammar"]  # the step's table, as the hint names its rows
    # The name a screen reader hears (Playwright's accessible-name computation) finds the cell.
    for m in "qkvo":
        for i, row in enumerate(axes):
            for j, col in enumerate(axes):
                name = f"W_{m.upper()}, {row} row, {col} column"
                found = page.get_by_role("textbox", name=name, exact=True)
                assert found.count() == 1, name
                assert found.evaluate(
                    "e => [e.closest('table').dataset.matrix, +e.dataset.i, +e.dataset.j]"
                ) == [m, i, j]
    # The hint's cell: W_V's grammar row, the last (a table cell's name for comparison).
    assert page.locator(WEIGHT.format("v", 2, 2)).get_attribute("aria-label") == (
        "W_V, grammar row, grammar column"
    )
    assert (
        page.locator('#embeddings input[data-kind=value][data-r="4"][data-c="1"]').get_attribute(
            "aria-label"
        )
        == "banana, fruit"
    )

    # An axis renamed: the weights' names follow it.
    answered(
        page, lambda: page.locator("#embeddings input[data-kind=axis][data-c='1']").fill("sweet")
    )
    assert page.locator(WEIGHT.format("q", 2, 1)).get_attribute("aria-label") == (
        "W_Q, grammar row, sweet column"
    )
    # Three heads of one dimension: a column of W_Q is its head's, a row of W_O a head's output.
    answered(page, lambda: page.select_option("#config select[name=heads]", "3"))
    assert page.locator(WEIGHT.format("q", 0, 2)).get_attribute("aria-label") == (
        "W_Q, tech row, grammar column (head 3)"
    )
    assert page.locator(WEIGHT.format("o", 1, 0)).get_attribute("aria-label") == (
        "W_O, sweet row (head 2), tech column"
    )
    page.locator("#custom-weights").scroll_into_view_if_needed()
    shoot(page, "walk-6-weights", "#custom-weights")


# ---- Steps 4, 6 and 7: the answer note covers none of the outlined cards -----------------------

NOTE = "#learn-mode [data-role=verdict]"

# The note's box, the part in the window of each card the step outlines (its outline, 3 px at
# 2 px from it, with it), and the box of the control `sel` (null: none).
BOXES = """(sel) => {
  const box = (r) => ({left: r.left, top: r.top, right: r.right, bottom: r.bottom});
  const note = document.querySelector('#learn-mode [data-role=verdict]');
  const cards = [...document.querySelectorAll('.learn-focus')].map((e) => {
    const r = e.getBoundingClientRect(), o = 5;
    return {id: e.id, left: Math.max(0, r.left - o), top: Math.max(0, r.top - o),
      right: Math.min(innerWidth, r.right + o), bottom: Math.min(innerHeight, r.bottom + o)};
  }).filter((v) => v.right > v.left && v.bottom > v.top);
  return {note: box(note.getBoundingClientRect()), hidden: note.hidden,
    ids: [...document.querySelectorAll('.learn-focus')].map((e) => e.id),
    oneLine: note.dataset.compact === 'true', place: note.dataset.place, cards,
    control: sel ? box(document.querySelector(sel).getBoundingClientRect()) : null,
    width: innerWidth, height: innerHeight};
}"""

FRAMES = "() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)))"


def overlap(a: dict, b: dict) -> bool:
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and b["top"] < a["bottom"]
    )


def assert_clear(boxes: dict) -> None:
    """The note in the window, over no outlined card's visible part (or, where none leaves it
    room, in one line), and not over the control used."""
    note = boxes["note"]
    assert note["top"] >= 0 and note["bottom"] <= boxes["height"] + 0.5, boxes
    assert note["left"] >= 0 and note["right"] <= boxes["width"] + 0.5, boxes
    if not boxes["oneLine"]:
        assert [c["id"] for c in boxes["cards"] if overlap(note, c)] == [], boxes
    else:
        assert note["bottom"] - note["top"] <= 48, boxes  # one line: badge and buttons
    if boxes["control"]:
        assert not overlap(note, boxes["control"]), boxes


def edit_step_4(page) -> str:
    fruit = '#embeddings input[data-kind="value"][data-r="4"][data-c="1"]'  # banana's fruit
    near_bottom(page, fruit)
    answered(page, lambda: page.locator(fruit).fill("1.5"))
    return fruit


def edit_step_6(page) -> str:
    grammar = WEIGHT.format("v", 2, 2)  # W_V's grammar row: task 1
    near_bottom(page, grammar)
    answered(page, lambda: page.locator(grammar).fill("0"))
    return grammar


def edit_step_7(page) -> str:
    # The weights heatmap's bottom at the window's bottom edge, where a learner reads the "it"
    # row; head 2 chosen where it is (the page not scrolled to the picker).
    page.evaluate(
        "() => { const r = document.getElementById('weights-plot').getBoundingClientRect();"
        " scrollBy({top: r.bottom - innerHeight + 12, behavior: 'instant'}); }"
    )
    answered(
        page,
        lambda: page.evaluate(
            "() => { const s = document.getElementById('att-head'); s.value = s.options[1].value;"
            " s.dispatchEvent(new Event('change', {bubbles: true})); }"
        ),
    )
    return ""


def near_bottom(page, sel: str) -> None:
    """The control at four fifths of the window's height, as a learner scrolled to it has it."""
    page.evaluate(
        "sel => { const r = document.querySelector(sel).getBoundingClientRect();"
        " scrollBy({top: r.bottom - 0.8 * innerHeight, behavior: 'instant'}); }",
        sel,
    )


STEPS = {4: ("worked-example", edit_step_4), 6: ("qkv", edit_step_6), 7: ("heads", edit_step_7)}


@pytest.mark.parametrize("width", [1280, 480])
@pytest.mark.parametrize("n", [4, 6, 7])
def test_the_answer_note_covers_none_of_the_outlined_cards(page, live_server, n, width):
    page.set_viewport_size({"width": width, "height": 900 if width > 900 else 800})
    page.add_init_script(path=str(AXE))
    step_id, edit = STEPS[n]
    learn_open(page, step_id, lambda: page.goto(f"{live_server}/#learn/{n}"))
    used = edit(page)
    page.wait_for_function(f"() => !document.querySelector('{NOTE}').hidden")
    page.evaluate(FRAMES)
    boxes = page.evaluate(BOXES, used or None)
    ARTIFACTS.mkdir(exist_ok=True)
    snap(page, path=str(ARTIFACTS / f"walk-note-{n}-{width}.png"))
    assert_clear(boxes)
    # The keyboard: Tab from Back to the task reaches Dismiss.
    go = page.locator(NOTE).locator("[data-role=verdict-go]")
    go.focus()
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.dataset.role") == "verdict-close"
    # Scrolled on to each outlined card (its top at two fifths of the window), the note finds
    # its place again (while the task's answer is out of the window).
    at = page.evaluate("scrollY")
    seen = int(bool(boxes["cards"]))  # checks with an outlined card in the window
    for i in range(len(boxes["ids"])):
        page.evaluate(
            "i => { const r = document.querySelectorAll('.learn-focus')[i].getBoundingClientRect();"
            " scrollBy({top: r.top - 0.4 * innerHeight, behavior: 'instant'}); }",
            i,
        )
        page.evaluate(FRAMES)
        again = page.evaluate(BOXES, None)
        if not again["hidden"]:
            assert_clear(again)
            seen += bool(again["cards"])
            snap(page, path=str(ARTIFACTS / f"walk-note-{n}-card{i + 1}-{width}.png"))
    assert seen, boxes  # the case the test is for: the note shown with a card in the window
    assert axe_serious(page) == []
    page.evaluate(f"scrollTo({{top: {at}, behavior: 'instant'}})")
    page.wait_for_function(f"() => !document.querySelector('{NOTE}').hidden")
    # Enter on Back to the task goes to the tasks, which then hide the note.
    go.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => document.querySelector('{NOTE}').hidden")
    assert page.evaluate(
        "() => document.activeElement === document.querySelector('#learn-guide .learn-tasks h3')"
    )
