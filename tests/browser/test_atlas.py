"""The Head atlas card (views/atlas.js): nothing is asked for until "Score every head"; then
every head's cell says the API's number for the chosen score, the text alternative names the
strongest heads in words, and a head picked by a click or by the keyboard opens in the model
view on the probe's text; axe finds nothing serious; screenshots at 1280 and 480 px."""

from __future__ import annotations

import pytest

from attnviz.numbers import readable_weight
from attnviz.pretrained.registry import BUILTIN_NAME
from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    axe_serious,
    open_sentence,
    select_and_wait,
    snap,
    traces_drawn,
    type_sentence,
    views_drawn,
    wait_for_trace,
    wait_for_views,
)

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)


def cell_text(v: float) -> str:
    """views/atlas.js cellText(), numbers.js readableCell(v, 2): 2 decimals, never "1.00" short
    of 1 nor "0.00" above 0 (">0.99", "<0.01")."""
    s = f"{v:.2f}".replace("-0.00", "0.00")
    if v != 0 and float(s) == 0:
        return "<0.01" if v > 0 else ">-0.01"
    return ">0.99" if float(s) == 1 and v < 1 else s


def strongest(score: dict, count: int = 5) -> str:
    """views/atlas.js strongest(): the best heads in words, best first (ties: earlier first)."""
    cells = [(-v, i, h) for i, row in enumerate(score["grid"]) for h, v in enumerate(row)]
    words = []
    for _, i, h in sorted(cells)[:count]:
        off = f" at offset {score['offsets'][i][h]}" if score["offsets"] else ""
        words.append(f"layer {i + 1} head {h + 1} {readable_weight(score['grid'][i][h])}{off}")
    return f"{score['title']}: " + ", ".join(words)


def cells_say(page) -> list[list[str]]:
    return page.locator("#atlas-view button.atlas-cell").evaluate_all(
        "cs => cs.map((c) => [c.dataset.layer, c.dataset.head, c.textContent, c.dataset.value,"
        " c.getAttribute('aria-label'), c.title])"
    )


def assert_grid_is(page, score: dict) -> None:
    heads = len(score["grid"][0])
    got = cells_say(page)
    assert len(got) == len(score["grid"]) * heads
    for layer, head, text, value, label, title in got:
        li, h = int(layer), int(head)
        v = score["grid"][li][h]
        assert text == cell_text(v) and float(value) == v, (layer, head, text, v)
        # the button's name holds the number it shows; its tooltip, the score in words
        off = f" at offset {score['offsets'][li][h]}" if score["offsets"] else ""
        where = f"{score['title']}, layer {li + 1} head {h + 1}"
        assert label == f"{where} {text}{off}: open it on the probe", label
        assert title == f"{where} {readable_weight(v)}{off}", title
    summary = page.locator("#atlas-view .plot-summary").text_content()
    assert summary == f"Strongest heads, {strongest(score)}."


def test_the_atlas_draws_the_apis_numbers_and_opens_a_head_on_the_probe(page, live_server, api):
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/api/models/" in r.url else None)
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/")
    assert asked == []  # a trace never waits behind the atlas: it is asked for on request
    assert page.locator("#atlas-score").is_disabled()

    a = api.get(f"/api/models/{BUILTIN_NAME}/atlas").json()
    by_name = {s["name"]: s for s in a["scores"]}
    page.click("#atlas-go")
    page.locator("#atlas-view button.atlas-cell").nth(71).wait_for()
    assert len(asked) == 1 and page.locator("#atlas-go").is_hidden()
    # The score that varies most over this model's heads first (issue 28: it was induction,
    # a near-blank grid for an encoder; tests/browser/test_walk.py checks the choice); each
    # cell its number, the summary the strongest heads.
    first = page.locator("#atlas-score").input_value()
    assert first != "induction"
    assert_grid_is(page, by_name[first])
    assert page.locator("#atlas-definition").text_content() == by_name[first]["definition"]
    page.select_option("#atlas-score", "induction")
    assert_grid_is(page, by_name["induction"])
    page.select_option("#atlas-score", "previous_token")
    assert_grid_is(page, by_name["previous_token"])
    page.select_option("#atlas-score", "positional")
    assert_grid_is(page, by_name["positional"])  # offsets in the words
    page.select_option("#atlas-score", "previous_token")

    # A click opens the head on the probe: the text is the probe's, the head the one clicked.
    grid = by_name["previous_token"]["grid"]
    _, layer, head = max((v, i, h) for i, row in enumerate(grid) for h, v in enumerate(row))
    before = traces_drawn(page)
    page.click(f'#atlas-view button.atlas-cell[data-layer="{layer}"][data-head="{head}"]')
    wait_for_trace(page, before)
    assert page.locator("#s-text").input_value() == a["probe"]["text"]
    tokens = page.locator("#s-count").text_content()
    assert tokens.startswith(f"{len(a['probe']['tokens'])} / ")
    chosen = page.locator("#mv-grid button.mv-cell.selected")
    assert (chosen.get_attribute("data-layer"), chosen.get_attribute("data-head")) == (
        str(layer), str(head))  # fmt: skip
    picked = page.locator("#atlas-view button.atlas-cell.selected")
    assert picked.get_attribute("aria-pressed") == "true"

    # The keyboard: arrows move between cells, Enter opens one (same text: no new trace).
    page.locator(f'#atlas-view button.atlas-cell[data-layer="{layer}"][data-head="{head}"]').focus()
    page.keyboard.press("ArrowDown" if layer == 0 else "ArrowUp")
    page.keyboard.press("ArrowLeft" if head > 0 else "ArrowRight")
    to_layer = layer + 1 if layer == 0 else layer - 1
    to_head = head - 1 if head > 0 else head + 1
    focused = page.evaluate(
        "[document.activeElement.dataset.layer, document.activeElement.dataset.head]"
    )
    assert focused == [str(to_layer), str(to_head)]
    before = views_drawn(page)
    page.keyboard.press("Enter")
    wait_for_views(page, before)
    chosen = page.locator("#mv-grid button.mv-cell.selected")
    assert (chosen.get_attribute("data-layer"), chosen.get_attribute("data-head")) == (
        str(to_layer), str(to_head))  # fmt: skip

    assert axe_serious(page) == []
    ARTIFACTS.mkdir(exist_ok=True)
    for width in (1280, 480):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_function("() => document.documentElement.dataset.pending === '0'")
        snap(page.locator("#atlas-card"), path=str(ARTIFACTS / f"atlas-card-{width}.png"))
        overflow = page.evaluate("document.documentElement.scrollWidth > innerWidth")
        assert not overflow  # the grid scrolls inside its card, the page does not
    page.set_viewport_size({"width": 1280, "height": 800})

    # Another model puts the button back; its atlas is its own.
    type_sentence(page, "I sat on the river bank")  # a text the tiny GPT-2 reads
    select_and_wait(page, "#s-model", "tiny-gpt2")
    page.locator("#atlas-go").wait_for()
    assert page.locator("#atlas-view button.atlas-cell").count() == 0
    page.click("#atlas-go")
    page.locator("#atlas-view button.atlas-cell").nth(7).wait_for()
    assert page.locator("#atlas-view button.atlas-cell").count() == 8
