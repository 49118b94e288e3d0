"""The whole state lives in the URL: opening a copied link shows exactly the same view."""

from __future__ import annotations

from tests.browser.helpers import (
    choose,
    edit_cell,
    fresh_page,
    open_app,
    plot_data,
    select_and_wait,
    table_values,
    trace_by_uid,
    view_change,
)

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
