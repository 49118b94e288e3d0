"""The Learn verdict note in a narrow window (issue 42): docked along the bottom (or the top,
where the bottom would cover the control in use or an outlined card), the width of the window,
and covering none of the lab: the control the learner used stays clear of it, and the page
keeps the note's height of room below the lab, so that its last control scrolls clear of the
note too. At 1280 px it floats in a corner, the room kept all the same (issue 41). Screenshots
in test-artifacts/ (verdict-docked-<width>.png)."""

from __future__ import annotations

import pytest

from tests.browser.helpers import ARTIFACTS, AXE, answered, axe_serious, cell, learn_open, snap

VERDICT = "#learn-mode [data-role=verdict]"
FRUIT = '#embeddings input[data-r="4"][data-c="1"]'  # banana's fruit, the cell step 4 edits

BOXES = """([note, control]) => {
  const box = (sel) => { const r = document.querySelector(sel).getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height}; };
  return {note: box(note), control: box(control), width: innerWidth, height: innerHeight,
    room: parseFloat(getComputedStyle(document.body).paddingBottom)};
}"""


def overlap(a: dict, b: dict) -> bool:
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and (b["top"] < a["bottom"])
    )


@pytest.mark.parametrize("width", [480, 1280])
def test_the_verdict_note_covers_no_control_of_the_lab_in_a_narrow_window(page, live_server, width):
    page.set_viewport_size({"width": width, "height": 800})
    page.add_init_script(path=str(AXE))
    learn_open(page, "worked-example", lambda: page.goto(f"{live_server}/#learn/4"))
    fruit = cell(page, 4, 1)
    fruit.scroll_into_view_if_needed()
    # The cell the learner edits just above the window's bottom edge, where the note docks.
    page.evaluate(
        "sel => { const r = document.querySelector(sel).getBoundingClientRect();"
        " scrollBy({top: r.bottom - innerHeight + 12, behavior: 'instant'}); }",
        FRUIT,
    )
    answered(page, lambda: fruit.fill("0.9"))
    page.wait_for_function(f"() => !document.querySelector('{VERDICT}').hidden")
    box = page.evaluate(BOXES, [VERDICT, FRUIT])
    ARTIFACTS.mkdir(exist_ok=True)
    snap(page, path=str(ARTIFACTS / f"verdict-docked-{width}.png"))
    note, control = box["note"], box["control"]
    # The control in use is in the window, and not under the note, at either width.
    assert control["top"] >= 0 and control["bottom"] <= box["height"], box
    assert not overlap(note, control), box
    # Room kept below the lab as tall as the note reaches from its edge of the window.
    at_bottom = note["bottom"] >= box["height"] - 20
    reach = box["height"] - note["top"] if at_bottom else note["bottom"]
    assert box["room"] == pytest.approx(reach, abs=1), box
    if width == 1280:  # floating in a corner
        assert note["right"] < box["width"] and note["left"] > 0, box
        return
    # Docked: the window's width, on its bottom edge or its top, and small.
    assert (note["left"], note["right"]) == (0, box["width"]), box
    assert note["bottom"] == box["height"] or note["top"] == 0, box
    assert note["height"] <= 0.2 * box["height"], box
    # The page keeps the note's height of room below the lab: scrolled to its end, the lab's
    # last control is clear of the note.
    assert box["room"] == pytest.approx(note["height"], abs=1), box
    page.evaluate("scrollTo({top: document.documentElement.scrollHeight, behavior: 'instant'})")
    page.evaluate(
        "() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)))"
    )
    last = page.evaluate(
        "() => { const all = [...document.querySelectorAll('#toy-mode input, #toy-mode select,"
        " #toy-mode button')].filter((e) => e.getClientRects().length);"
        " const r = all.map((e) => e.getBoundingClientRect()).sort((a, b) => b.bottom - a.bottom)[0];"
        " return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; }"
    )
    drawn = page.evaluate(BOXES, [VERDICT, FRUIT])["note"]
    assert not overlap(last, drawn), (last, drawn)
    assert axe_serious(page) == []
    # Dismissed, the room goes with it.
    page.locator(VERDICT).locator("[data-role=verdict-close]").click()
    page.wait_for_function("() => parseFloat(getComputedStyle(document.body).paddingBottom) === 0")
