"""What a newcomer tripped on (issue 28, item 5, points 1-7), each in Chromium: the large
heatmap frames the query shown, the Learn steps speak of the run in view, *Show this head* sets
its row too, a page left open drops a model the server no longer has, the knock-out's patch
source recomputes as the text does, and the head atlas opens on a score that varies. Each test
leaves screenshots at 1280 and 480 px in test-artifacts/ (walk-<point>-<width>.png)."""

from __future__ import annotations

from tests.browser.helpers import (
    ARTIFACTS,
    VIEWPORT,
    open_sentence,
    views_drawn,
    wait_for_views,
)

TEXT = "I sat on the river bank"
SHOWCASE = "The animal didn't cross the street because it was too tired"

# Which rows of the model view's large heatmap are framed: a row is framed when the pixel on
# the plot's left edge, half a cell down the row, is the frame's colour (theme.js TEXT), not the
# heatmap's. Read from the canvas itself, as the reader sees it.
FRAMED_ROWS = """() => {
  const root = document.querySelector('#mv-large .hc');
  const g = root.__heat.geometry, canvas = root.querySelector('canvas');
  const ctx = canvas.getContext('2d'), dpr = canvas.width / canvas.clientWidth;
  const rows = root.__heat.rowLabels.length, framed = [];
  for (let i = 0; i < rows; i++) {
    const x = Math.floor(g.left * dpr) + 0, y = Math.floor((g.top + (i + 0.5) * g.cell) * dpr);
    const [r, gr, b] = ctx.getImageData(x, y, 1, 1).data;
    if (r === 0x1d && gr === 0x23 && b === 0x30) framed.push(i);
  }
  return framed;
}"""


def act(page, action) -> None:
    before = views_drawn(page)
    action()
    wait_for_views(page, before)


def shoot(page, name: str, selector: str | None = None) -> list[str]:
    """Screenshots at 1280 and 480 px (of `selector`'s element, else the page), back at 1280."""
    ARTIFACTS.mkdir(exist_ok=True)
    paths = []
    for width in (1280, 480):
        page.set_viewport_size({"width": width, "height": VIEWPORT["height"]})
        page.wait_for_timeout(700)  # the views redraw to the new width (after 200 ms)
        path = ARTIFACTS / f"walk-{name}-{width}.png"
        if selector:
            page.locator(selector).first.scroll_into_view_if_needed()
            page.locator(selector).first.screenshot(path=str(path))
        else:
            page.screenshot(path=str(path), full_page=True)
        paths.append(str(path))
    page.set_viewport_size(VIEWPORT)
    page.wait_for_timeout(700)
    return paths


# ---- 1. the large heatmap frames the query shown ---------------------------------------------


def test_the_large_heatmap_frames_the_query_the_query_key_view_shows(page, live_server):
    open_sentence(page, live_server + "/", TEXT)
    labels = page.evaluate("() => document.querySelector('#mv-large .hc').__heat.rowLabels")
    assert labels[:7] == ["[CLS]", "i", "sat", "on", "the", "river", "bank"]
    assert page.evaluate(FRAMED_ROWS) == [1]  # the first ordinary token, "i"
    # Pick "river" in the query-key view: the large heatmap frames its row, and only its row,
    # at once (not on some later redraw).
    act(page, lambda: page.select_option("#qk-query", "5"))
    assert page.evaluate(FRAMED_ROWS) == [5]
    # A row clicked in the large heatmap itself, then another head: the frame follows.
    act(page, lambda: page.select_option("#qk-query", "2"))
    assert page.evaluate(FRAMED_ROWS) == [2]
    act(page, lambda: page.click('#mv-grid button.mv-cell[data-layer="2"][data-head="4"]'))
    assert page.evaluate(FRAMED_ROWS) == [2]
    shoot(page, "1-query-frame", "#model-view-card")
