"""The toy table as a newcomer meets it: up to 8 columns fit at 1280 px without a scroll bar,
wider tables scroll with their axis names and token labels in view, and a pasted block replaces
or overwrites what it covers and says so in the status line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser.helpers import (
    ARTIFACTS,
    cell,
    open_app,
    select_and_wait,
    snap,
    table_values,
    traces_drawn,
    wait_for_trace,
)
from tests.browser.test_table import numbers, paste

# Screenshots to look at: test-artifacts/ (SHOTS_DIR=/some/folder to put them elsewhere).
SHOTS = Path(os.environ.get("SHOTS_DIR", ARTIFACTS))

# How the table's scroll box and the cells named by `selector` sit: what overflows, and whether
# each cell is wholly inside the box and on top (not hidden under a sticky row or column).
LAYOUT = """(selector) => {
  const box = document.querySelector('#embeddings').parentElement;
  box.scrollIntoView({block: 'nearest'});
  const b = box.getBoundingClientRect();
  const cells = [...document.querySelectorAll(selector)].map((e) => {
    const r = e.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return {inside: r.left >= b.left - 0.5 && r.right <= b.right + 0.5 &&
      r.top >= b.top - 0.5 && r.bottom <= b.bottom + 0.5, onTop: hit === e};
  });
  return {scrollX: box.scrollWidth - box.clientWidth, scrollY: box.scrollHeight - box.clientHeight,
    cells};
}"""


def layout(page, selector: str) -> dict:
    return page.evaluate(LAYOUT, selector)


def shot(page, name: str, selector: str | None = None) -> None:
    """A screenshot to look at: the whole page, or one part of it."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    if selector:
        snap(page.locator(selector), path=str(SHOTS / name))
    else:
        snap(page, path=str(SHOTS / name), full_page=True)


def click_and_wait(page, selector: str) -> None:
    before = traces_drawn(page)
    page.click(selector)
    wait_for_trace(page, before)


def scroll_table(page, how: str) -> None:
    """Scroll the embeddings' box (``b``) by a line of JS."""
    page.evaluate(
        f"() => {{ const b = document.querySelector('#embeddings').parentElement; {how} }}"
    )


@pytest.mark.parametrize("preset", ["two-heads", "river-bank", "causal"])
def test_four_columns_fit_at_1280_px(page, live_server, preset):
    open_app(page, live_server + "/")
    select_and_wait(page, "#preset", preset)
    assert len(table_values(page)["axes"]) == 4
    seen = layout(page, "#embeddings input")
    assert seen["scrollX"] <= 0, "the table scrolls sideways"
    assert all(c["inside"] and c["onTop"] for c in seen["cells"])
    if preset == "two-heads":
        page.locator("#table-h").scroll_into_view_if_needed()
        shot(page, "table-two-heads-1280.png")


def test_up_to_eight_columns_fit_and_more_scroll_with_names_in_view(page, live_server):
    open_app(page, live_server + "/")
    select_and_wait(page, "#preset", "two-heads")
    for d in range(5, 9):
        click_and_wait(page, "#add-dim")
        assert len(table_values(page)["axes"]) == d
        seen = layout(page, "#embeddings input")
        assert seen["scrollX"] <= 0, f"{d} columns scroll sideways"
        assert all(c["inside"] for c in seen["cells"]), d
    shot(page, "table-8-columns-1280.png")

    # A ninth column scrolls; scrolled to its end, the token labels stay in view, on top.
    click_and_wait(page, "#add-dim")
    assert layout(page, "#embeddings input")["scrollX"] > 0
    scroll_table(page, "b.scrollLeft = b.scrollWidth;")
    labels = layout(page, "#embeddings input.label")["cells"]
    assert labels and all(c["inside"] and c["onTop"] for c in labels)
    last = layout(page, '#embeddings input.axis[data-c="8"]')["cells"]
    assert last == [{"inside": True, "onTop": True}]
    shot(page, "table-9-columns-scrolled-right-1280.png", "#toy-mode .panel")

    # Rows past the box's height scroll under the axis names, which stay in view, on top.
    for _ in range(14):
        click_and_wait(page, "#add-token")
    assert layout(page, "#embeddings input")["scrollY"] > 0
    scroll_table(page, "b.scrollTop = b.scrollHeight; b.scrollLeft = 0;")
    axes = layout(page, "#embeddings input.axis")["cells"]
    visible = [c for c in axes if c["inside"]]
    assert len(visible) >= 6 and all(c["onTop"] for c in visible)
    # The last token's row is in view too, its label on top.
    assert layout(page, '#embeddings input.label[data-r="24"]')["cells"] == [
        {"inside": True, "onTop": True}
    ]
    page.locator("#table-h").scroll_into_view_if_needed()
    shot(page, "table-9x25-scrolled-1280.png")


def test_the_table_at_480_px(page, live_server):
    page.set_viewport_size({"width": 480, "height": 900})
    open_app(page, live_server + "/")
    select_and_wait(page, "#preset", "two-heads")
    seen = layout(page, "#embeddings input")
    assert seen["scrollX"] <= 0  # four columns fit on a phone too
    assert page.evaluate("document.documentElement.scrollWidth") <= 480
    shot(page, "table-two-heads-480.png", "#toy-mode .panel")


CSV = "token,x,y\ncat,1,0\ndog,0.9,0.1\ncar,0,1\n"


def test_a_pasted_table_with_names_replaces_the_table_and_says_so(page, live_server):
    open_app(page, live_server + "/")
    paste(page, cell(page, 0, 0), CSV)
    table = table_values(page)
    assert table["tokens"] == ["cat", "dog", "car"]
    assert table["axes"] == ["x", "y"]
    assert numbers(table) == [[1, 0], [0.9, 0.1], [0, 1]]
    assert page.locator("#table-size").text_content() == "3 × 2"
    status = page.locator("#status").text_content()
    assert (
        status == "n = 3, d = 2, 1 layer, 1 head · pasted 3 x 2 with names: it replaces the table"
    )
    assert page.locator("#preset-about").text_content() == "Your own table."
    # The plots follow the new table: three tokens on the heatmap's axis.
    ticks = page.locator("#weights-plot .ytick text").all_text_contents()
    assert ticks == ["cat", "dog", "car"]

    # Pasted anywhere (here into the last value cell) a whole table still replaces the table.
    paste(page, cell(page, 2, 1), "word,a,b,c\nup,1,2,3\n")
    assert table_values(page) == {
        "tokens": ["up"],
        "axes": ["a", "b", "c"],
        "values": [["1", "2", "3"]],
    }
    assert (
        page.locator("#status")
        .text_content()
        .endswith("pasted 1 x 3 with names: it replaces the table")
    )
    page.locator("#table-h").scroll_into_view_if_needed()
    shot(page, "paste-replaced-1280.png")


def test_a_numeric_block_overwrites_what_it_covers_and_says_so(page, live_server):
    open_app(page, live_server + "/")
    paste(page, cell(page, 1, 1), "5,6\n7,8\n")
    table = table_values(page)
    assert table["tokens"] == ["An", "apple", "and", "a", "banana"]
    assert numbers(table) == [[0, 0, 1], [0.7, 5, 6], [0, 7, 8], [0, 0, 1], [0, 0.8, 0]]
    status = page.locator("#status").text_content()
    assert status.endswith(" · pasted 2 x 2 at token 2, dimension 2"), status

    # Past the edge the table grows, and the status says to what.
    paste(page, cell(page, 4, 2), "1,2\n3,4\n")
    table = table_values(page)
    assert table["axes"] == ["tech", "fruit", "grammar", "x4"]
    assert table["tokens"][-1] == "t6"
    assert numbers(table)[4:] == [[0, 0.8, 1, 2], [0, 0, 3, 4]]
    status = page.locator("#status").text_content()
    assert status.endswith("pasted 2 x 2 at token 5, dimension 3; the table grew to 6 x 4"), status

    # The next edit says only what it did itself.
    before = traces_drawn(page)
    cell(page, 0, 0).fill("0.5")
    wait_for_trace(page, before)
    assert page.locator("#status").text_content() == "n = 6, d = 4, 1 layer, 1 head"

    # Past the cap of 64 tokens the block is clipped, and the status says so.
    paste(page, cell(page, 0, 0), "\n".join(["1,2"] * 70))
    assert len(table_values(page)["tokens"]) == 64
    assert page.locator("#status").text_content() == (
        "n = 64, d = 4, 1 layer, 1 head · pasted 64 x 2 at token 1, dimension 1; the table grew "
        "to 64 x 4; clipped to 64 tokens x 64 dimensions"
    )
