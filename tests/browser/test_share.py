"""The whole state lives in the URL: opening a copied link shows exactly the same view."""

from __future__ import annotations

import pytest

from tests.browser.helpers import (
    choose,
    edit_cell,
    fresh_page,
    open_app,
    plot_data,
    select_and_wait,
    table_values,
    trace_by_uid,
    traces_drawn,
    view_change,
    views_drawn,
    wait_for_trace,
)

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

CONTROLS = [
    "#cfg-layers",
    "#cfg-heads",
    "#cfg-projections",
    "#cfg-mask",
    "#cfg-positional",
    "#cfg-norm",
    "#cfg-seed",
    "#preset",
    "#att-layer",
    "#att-head",
    "#vec-layer",
    "#dist-a",
    "#dist-b",
]
CHECKBOXES = ["#cfg-scale", "#cfg-residual", "#cfg-ffn", "#vec-trails"]
PLOTS = ["scores-plot", "weights-plot", "vectors-plot", "distances-plot"]


def snapshot(page) -> dict:
    """Everything a reader of the page sees: table, controls, plot data, tables of numbers."""
    return {
        "table": table_values(page),
        "controls": {s: page.locator(s).input_value() for s in CONTROLS},
        "checks": {s: page.locator(s).is_checked() for s in CHECKBOXES},
        "plots": {p: plot_data(page, p) for p in PLOTS},
        "before_after": page.locator("#before-after").inner_text(),
        "readout": page.locator("#dist-readout").inner_text(),
    }


def test_a_copied_link_restores_the_same_view(page, browser, live_server):
    open_app(page, live_server + "/")
    edit_cell(page, 1, 0, "0.25")  # apple's tech
    select_and_wait(page, "#cfg-layers", "3")
    select_and_wait(page, "#cfg-positional", "sinusoidal")
    select_and_wait(page, "#cfg-norm", "post")
    page.locator("#cfg-residual").check()
    page.wait_for_function("() => document.documentElement.dataset.pending === '0'")
    choose(page, "#att-layer", "1")  # layer 2
    view_change(page, lambda: page.locator("#vec-layer").fill("2"))
    choose(page, "#dist-a", "0")
    view_change(page, lambda: page.locator("#vec-trails").uncheck())
    page.wait_for_function("() => document.documentElement.dataset.pending === '0'")
    url = page.evaluate("location.href")
    assert "#s=" in url
    here = snapshot(page)
    assert here["controls"]["#cfg-layers"] == "3"
    assert here["controls"]["#att-layer"] == "1" and here["controls"]["#vec-layer"] == "2"
    assert here["table"]["values"][1][0] == "0.25"
    assert trace_by_uid(page, "vectors-plot", "after")["name"] == "after layer 2"

    with fresh_page(browser) as (fresh, errors):
        open_app(fresh, url)
        there = snapshot(fresh)
        assert fresh.evaluate("location.href") == url
    assert errors == []
    assert there["table"] == here["table"]
    assert there["controls"] == here["controls"]
    assert there["checks"] == here["checks"]
    assert there["before_after"] == here["before_after"]
    assert there["readout"] == here["readout"]
    for plot in PLOTS:
        assert there["plots"][plot] == here["plots"][plot], plot


def test_a_link_that_cannot_be_read_falls_back_to_the_first_preset(page, live_server):
    page.goto(live_server + "/#s=bm90LWpzb24")  # base64url of "not-json"
    page.wait_for_function("() => +(document.documentElement.dataset.traces || 0) > 0")
    assert page.locator("#preset").input_value() == "apple-banana"
    assert table_values(page)["tokens"] == ["An", "apple", "and", "a", "banana"]
    error = page.locator("#error")
    assert error.is_visible() and "This link could not be read" in error.text_content()


SENTENCE = "The animal didn't cross the street because it was too tired"


def sentence_state(page) -> dict:
    """What sentence mode shows: the text, the options, the chosen head, the large heatmap."""
    return {
        "text": page.locator("#s-text").input_value(),
        "hide": page.locator("#s-hide-special").is_checked(),
        "merge": page.locator("#s-merge-words").is_checked(),
        "pressed": page.locator('#mv-grid button[aria-pressed="true"]').get_attribute("aria-label"),
        "large": page.evaluate(
            "() => { const h = document.querySelector('#mv-large .hc').__heat;"
            " return {labels: h.labels, z: Array.from(h.matrix.data)}; }"
        ),
        "qk": [page.locator(s).input_value() for s in ("#qk-layer", "#qk-head", "#qk-query")],
    }


def to_mode(page, mode: str) -> None:
    """Switch tabs and wait until the mode's views are drawn (a new trace the first time)."""
    traces, views = traces_drawn(page), views_drawn(page)
    page.click(f"#mode-{mode}")
    page.wait_for_function(
        "([t, v]) => (+(document.documentElement.dataset.traces || 0) > t"
        " || +(document.documentElement.dataset.views || 0) > v)"
        " && document.documentElement.dataset.pending === '0'",
        arg=[traces, views],
    )


def edit_both_modes(page, live_server: str) -> None:
    open_app(page, live_server + "/")
    edit_cell(page, 1, 0, "0.25")  # apple's tech
    select_and_wait(page, "#cfg-layers", "2")
    to_mode(page, "sentence")
    before = traces_drawn(page)
    page.fill("#s-text", SENTENCE)
    wait_for_trace(page, before)
    view_change(page, lambda: page.check("#s-hide-special"))
    view_change(page, lambda: page.click('#mv-grid button[data-layer="3"][data-head="5"]'))
    view_change(page, lambda: page.select_option("#qk-query", "10"))


def test_a_sentence_link_restores_the_toy_lab_too(page, browser, live_server):
    edit_both_modes(page, live_server)
    url = page.evaluate("location.href")
    sentence = sentence_state(page)
    to_mode(page, "toy")
    toy = snapshot(page)
    assert toy["table"]["values"][1][0] == "0.25" and toy["controls"]["#cfg-layers"] == "2"

    with fresh_page(browser) as (fresh, errors):
        fresh.goto(url)
        wait_for_trace(fresh, 0)
        assert fresh.evaluate("document.documentElement.dataset.mode") == "sentence"
        assert sentence_state(fresh) == sentence
        assert fresh.evaluate("location.href") == url
        to_mode(fresh, "toy")  # the toy tab shows the table the link's author had
        fresh.wait_for_selector("#weights-plot.js-plotly-plot .main-svg")
        assert snapshot(fresh) == toy
    assert errors == []


def test_a_toy_link_restores_sentence_mode_too(page, browser, live_server):
    edit_both_modes(page, live_server)
    sentence = sentence_state(page)
    to_mode(page, "toy")
    url = page.evaluate("location.href")
    toy = snapshot(page)

    with fresh_page(browser) as (fresh, errors):
        fresh.goto(url)
        wait_for_trace(fresh, 0)
        assert fresh.evaluate("document.documentElement.dataset.mode") == "toy"
        assert snapshot(fresh) == toy
        to_mode(fresh, "sentence")  # the sentence tab shows the link's sentence, not the default
        fresh.wait_for_selector("#mv-large .hc canvas")
        assert sentence_state(fresh) == sentence
    assert errors == []
