"""The Predictions card (views/lens.js): with a causal model it draws the top-k after the query
and the logit lens around it, and what a cell says (its live region, under the keyboard
cursor) is the API's numbers; Enter or a click makes a column's token the query; with an
encoder it says why there are no predictions; axe finds nothing serious on it."""

from __future__ import annotations

import pytest

from tests.browser.helpers import (
    AXE,
    axe_serious,
    f32,
    open_sentence,
    quoted_token,
    screenshot,
    select_and_wait,
    shown_token,
    spoken_token,
    view_change,
)
from tests.support.oracles import js_number

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

TEXT = "The animal didn't cross the street because it was too tired."
MODEL = "tiny-gpt2"


def percent(p: float) -> str:
    """lens.js's percent(): one decimal, two below 1%, "<0.01%" below that; "over 99.9%" where
    one decimal would say all of it short of it, "0%" only for none."""
    if p >= 0.01:
        s = f"{p * 100:.1f}"
        return "over 99.9%" if s == "100.0" and p < 1 else f"{s}%"
    if p >= 0.0001:
        return f"{p * 100:.2f}%"
    return "<0.01%" if p > 0 else "0%"


def expected(t: dict, row: int, pos: int, quote=None) -> str:
    """What the cell at ``row``, ``pos`` must say, from the API's JSON: its tokens quoted as the
    live region reads them (named: “space the”), or by ``quote`` (the hover line draws them:
    “␣the”; issue 28, 5.10 changed these on purpose from the raw labels)."""
    q = quote or (lambda s: f"“{spoken_token(s)}”")
    lens, tokens = t["lens"], t["tokens"]
    rows = lens["rows"]
    name = "embeddings" if row == 0 else f"layer {row}" + (" (output)" if row == rows - 1 else "")
    top = lens["vocab"][str(lens["ids"][row][pos])]
    head = (f"{name}, after {q(tokens[pos])} (token {pos + 1}): top {q(top)} "
            f"{percent(f32(lens['probs'][row][pos]))}")  # fmt: skip
    target = lens["targets"][pos]
    if target < 0:
        return f"{head}; the text ends here"
    return (f"{head}; the next token {q(lens['vocab'][str(target)])} is rank "
            f"{lens['target_ranks'][row][pos]}, {percent(f32(lens['target_probs'][row][pos]))}")  # fmt: skip


def test_the_lens_reads_the_apis_numbers_and_picks_the_query(page, live_server, api):
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/", TEXT)  # the default model: an encoder
    note = page.locator("#lens-view .lens-unavailable")
    assert "is an encoder" in note.text_content()
    assert "masked-language-model head" in note.text_content()

    select_and_wait(page, "#s-model", MODEL)
    grid = page.locator("#lens-view .lens-grid")
    grid.wait_for()
    r = api.post("/api/trace", params={"fields": "top_k,lens"}, json={"model": MODEL, "text": TEXT})
    assert r.status_code == 200
    t = r.json()
    rows, n = t["lens"]["rows"], t["n"]
    assert rows == t["layers"] + 1
    cols = page.locator('#lens-view .lens-cell[data-row="0"]').count()
    assert 3 <= cols <= n and page.locator("#lens-view .lens-cell").count() == rows * cols

    # The top-k after the query (the first token): the API's k tokens and probabilities.
    items = page.locator("#lens-view .lens-top-row")
    assert items.count() == t["top_k"]["k"]
    for j in range(items.count()):
        token = t["top_k"]["vocab"][str(t["top_k"]["ids"][0][j])]
        assert items.nth(j).locator(".lens-top-token").text_content() == quoted_token(token)
        p = items.nth(j).locator(".lens-top-p").text_content()
        assert p.startswith(percent(f32(t["top_k"]["probs"][0][j])))

    # "Show the numbers": every cell of the window, its top token, its probability exactly as
    # the API sent it (never a rounded percentage: issue 41) and the next token's rank.
    lens = t["lens"]
    numbers = page.locator("#lens-view .plot-numbers")
    numbers.locator("summary").click()
    head = numbers.locator("thead th").all_inner_texts()[1:]
    body = [r.split("\t") for r in numbers.locator("tbody tr").all_inner_texts()]
    assert len(head) == cols and len(body) == rows
    for c, label in enumerate(head):
        pos = int(label.split(".")[0]) - 1
        for row in range(rows):
            top = shown_token(lens["vocab"][str(lens["ids"][row][pos])])
            rank = (
                "" if lens["targets"][pos] < 0 else f"; next rank {lens['target_ranks'][row][pos]}"
            )
            assert body[row][1 + c] == f"{top} {js_number(lens['probs'][row][pos])}{rank}"
    numbers.locator("summary").click()  # closed again

    # The keyboard cursor: each cell's live text is the API's top token, its probability and
    # the next token's rank and probability.
    grid.focus()
    live = page.locator("#lens-view .plot-live")
    first = [int(c) for c in page.locator('#lens-view .lens-cell[data-row="0"]').evaluate_all(
        "cs => cs.map((c) => c.dataset.pos)")]  # fmt: skip
    assert live.text_content() == expected(t, 0, first[0])
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert live.text_content() == expected(t, 1, first[2])
    page.keyboard.press("End")
    page.keyboard.press("ArrowDown")
    last = expected(t, min(2, rows - 1), first[-1])
    assert live.text_content() == last
    hover = page.locator('#lens-view [data-role="lens-hover"]')
    assert hover.text_content() == expected(t, min(2, rows - 1), first[-1], quoted_token)

    # Enter makes the column's token the query: the top-k list follows it.
    view_change(page, lambda: page.keyboard.press("Enter"))
    q = first[-1]
    heading = page.locator("#lens-view .lens-sub").first.text_content()
    assert heading.startswith(f"Next after {quoted_token(t['tokens'][q])} (token {q + 1})")
    # A click on a cell does the same.
    cell = page.locator('#lens-view .lens-cell[data-row="0"]').first
    pos = int(cell.get_attribute("data-pos"))
    view_change(page, lambda: cell.click())
    heading = page.locator("#lens-view .lens-sub").first.text_content()
    assert heading.startswith(f"Next after {quoted_token(t['tokens'][pos])} (token {pos + 1})")
    assert page.locator("#qk-query").input_value() == str(pos)

    assert axe_serious(page) == []
    page.locator("#lens-card").scroll_into_view_if_needed()
    screenshot(page, "lens-1280.png")
