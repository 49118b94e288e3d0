"""Value-weighted attention in sentence mode: the model view's and head view's switch
"weights | value-weighted" draws the API's ||a_ij v_j W_O^h||, read back from the large
heatmap's live region and the head view's lines; the choice travels in a share link; axe finds
nothing serious; screenshots at 1280 and 480 px."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnviz.wire.constants import MEASURES
from tests.browser.helpers import (
    AXE,
    MODEL,
    assert_close,
    axe_serious,
    f32,
    fresh_page,
    head_lines,
    large_heatmap,
    open_app,
    open_sentence,
    raw_attention,
    snap,
    trace_by_uid,
    view_change,
    wait_for_trace,
)
from tests.browser.test_a11y import live, press
from tests.support.oracles import readable

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

SHOTS = Path("/tmp/shots-vw")
TEXT = "I sat on the river bank"
BODY = {"model": MODEL, "text": TEXT}


def flip(page, card: str, value: str) -> None:
    view_change(page, lambda: page.check(f'input[name="{card}-measure"][value="{value}"]'))
    page.wait_for_function("() => document.documentElement.dataset.pending === '0'")


def test_the_switch_shows_value_weighted_attention_and_a_link_keeps_it(
    page, browser, live_server, api
):
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/", TEXT)
    view_change(page, lambda: page.click('#mv-grid button.mv-cell[data-layer="2"][data-head="4"]'))
    assert page.locator('input[name="mv-measure"][value="weights"]').is_checked()
    # The switches offer the server's measures, as the page's state reads them.
    for name in ("mv-measure", "hv-measure"):
        radios = page.locator(f'input[name="{name}"]').evaluate_all("rs => rs.map((r) => r.value)")
        assert radios == list(MEASURES)
    page_measures = page.evaluate(
        "() => import('/static/js/core/state.js').then((m) => m.MEASURES)"
    )
    assert page_measures == list(MEASURES)
    flip(page, "mv", "value_weighted")
    # Both switches follow the one state key.
    assert page.locator('input[name="hv-measure"][value="value_weighted"]').is_checked()
    part = api.post("/api/trace?fields=value_weighted,attentions&layer=2&head=4", json=BODY).json()
    vw, weights = part["value_weighted"][0][0], part["attentions"][0][0]
    large = large_heatmap(page)
    assert large["title"] == "Layer 3, head 5, value-weighted"
    assert_close(large["z"], f32(vw), tol=0)  # the API's float32 numbers, exactly
    assert large["z"] != f32(weights)
    assert page.locator("#mv-legend-unit").inner_text().startswith("value-weighted norm")
    # The chosen head's rule is said once, in the measure's note (issue 28, 5.9: the rule
    # beneath it said the same again; this expectation changed on purpose).
    assert "||a_ij v_j W_O^h||" in page.locator("#mv-measure-note").inner_text()
    assert page.locator("#mv-rule").is_hidden()
    assert "value-weighted norm" in page.locator("#mv-caption").inner_text()
    # The keyboard's cursor reads the API's number in the live region (3 significant digits),
    # and names what it is.
    page.focus("#mv-large .hc-canvas")
    press(page, "ArrowDown", "ArrowDown", "ArrowRight")
    tokens = part["tokens"]
    assert (
        live(page, "#mv-large .hc-body")
        == f"{tokens[2]} → {tokens[1]}: {readable(vw[2][1])} (query 3, key 2)"
    )
    assert page.locator("#mv-large .hc-tip").inner_text().split("\n")[-1] == (
        f"value-weighted norm {readable(vw[2][1])}"
    )
    label = page.locator("#mv-large .hc-canvas").get_attribute("aria-label") or ""
    assert "value-weighted norms" in label

    # The head view draws the norms of its layer (8-bit, within half a step of the scale).
    layer = api.post("/api/trace?fields=value_weighted&layer=2", json=BODY).json()[
        "value_weighted"
    ][0]
    lines = head_lines(page)
    assert lines and page.locator("#hv-measure-note").is_visible()
    for line in lines:
        exact = layer[line["head"]][line["query"]][line["key"]]
        peak = max(max(row) for row in layer[line["head"]])
        assert abs(line["weight"] - exact) <= peak / 255 / 2 + 1e-6
    assert "value-weighted norms" in (
        page.locator("#head-view svg.hv").get_attribute("aria-label") or ""
    )

    # The norm of the heads' sum, its own array.
    view_change(page, lambda: page.select_option("#mv-aggregate", "value_weighted_sum"))
    page.wait_for_function("() => document.documentElement.dataset.pending === '0'")
    total = api.post("/api/trace?fields=value_weighted_sum&layer=2", json=BODY).json()
    assert_close(large_heatmap(page)["z"], total["value_weighted_sum"][0], tol=0)
    assert page.locator("#mv-rule").inner_text() == total["rules"]["value_weighted_sum"]
    assert axe_serious(page) == []
    shots(page, "value-weighted")

    # A link restores the switch and the same numbers.
    url = page.evaluate("location.href")
    with fresh_page(browser) as (there, errors):
        there.goto(url)
        wait_for_trace(there, 0)
        there.wait_for_function("() => document.documentElement.dataset.pending === '0'")
        assert there.locator('input[name="mv-measure"][value="value_weighted"]').is_checked()
        assert there.locator("#mv-aggregate").input_value() == "value_weighted_sum"
        assert_close(large_heatmap(there)["z"], total["value_weighted_sum"][0], tol=0)
    assert errors == []

    # Back to the weights: the chosen head's weights again.
    view_change(page, lambda: page.select_option("#mv-aggregate", "head"))
    flip(page, "hv", "weights")
    assert page.locator('input[name="mv-measure"][value="weights"]').is_checked()
    assert_close(large_heatmap(page)["z"], f32(weights), tol=0)
    assert page.locator("#mv-legend-unit").inner_text() == "attention weight"
    assert page.locator("#mv-measure-note").is_hidden()


def test_the_toy_lab_shows_value_weighted_attention_of_its_closed_form(
    page, browser, live_server, api
):
    """The first preset, identity projections and one head: W_V = W_O = I, so
    ||a_ij v_j W_O|| = a_ij ||x_j||, with a the article's raw self-attention."""
    page.add_init_script(path=str(AXE))
    open_app(page, live_server + "/")
    preset = api.get("/api/presets").json()["presets"][0]
    x = preset["embeddings"]
    weights = raw_attention(x)["weights"]
    norms = [sum(v * v for v in row) ** 0.5 for row in x]
    view_change(page, lambda: page.check('input[name="att-measure"][value="value_weighted"]'))
    page.wait_for_function("() => document.documentElement.dataset.pending === '0'")
    page.focus("#weights-plot")
    press(page, "ArrowDown", "End")  # the second token's row, its last key
    tokens, n = preset["tokens"], len(x)
    text = live(page, "#weights-plot")
    head, number = text.rsplit(" ", 1)
    assert head == f"{tokens[1]} → {tokens[n - 1]}: value-weighted norm"
    # The heatmap draws the API's norm exactly; the live region reads it to 3 significant digits.
    norm = trace_by_uid(page, "weights-plot", "weights")["z"][1][n - 1]
    assert norm == pytest.approx(weights[1][n - 1] * norms[n - 1], rel=1e-12)
    assert number == readable(norm)
    assert (
        page.locator("#attention-card [data-role=weights-caption]")
        .inner_text()
        .startswith("Value-weighted")
    )
    assert axe_serious(page) == []
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 480):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_function("() => document.documentElement.dataset.pending === '0'")
        snap(page.locator("#attention-card"), path=str(SHOTS / f"toy-attention-{width}.png"))
    page.set_viewport_size({"width": 1280, "height": 800})
    # The link keeps the switch.
    url = page.evaluate("location.href")
    with fresh_page(browser) as (there, errors):
        open_app(there, url)
        assert there.locator('input[name="att-measure"][value="value_weighted"]').is_checked()
        there.focus("#weights-plot")
        press(there, "ArrowDown", "End")
        assert live(there, "#weights-plot") == text
    assert errors == []


def shots(page, name: str) -> None:
    """The page at 1280 and 480 px wide, and its model and head view cards at each."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 480):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_function("() => document.documentElement.dataset.pending === '0'")
        snap(page, path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
        for card in ("model-view-card", "head-view-card"):
            snap(page.locator(f"#{card}"), path=str(SHOTS / f"{name}-{card}-{width}.png"))
    page.set_viewport_size({"width": 1280, "height": 800})
