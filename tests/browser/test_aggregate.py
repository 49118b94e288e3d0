"""The model view's head aggregates in the browser: the picker offers what the API computes,
and the large heatmap draws the API's numbers with the rule stated under it."""

from __future__ import annotations

from attnviz.capture.fields import REGISTRY
from attnviz.capture.fields.aggregates import RULES as AGGREGATE_RULES
from tests.browser.helpers import assert_close, large_heatmap, open_sentence, screenshot

TEXT = "The animal didn't cross the street because it was too tired"


def test_mean_max_and_rollout_of_a_layer(page, live_server, api):
    open_sentence(page, live_server + "/", TEXT)
    options = page.locator("#mv-aggregate option").evaluate_all("os => os.map((o) => o.value)")
    # the fields of all a layer's heads together, as the registry declares them
    assert options == ["head", *(f.name for f in REGISTRY if f.over_heads)]
    assert options[1:4] == list(AGGREGATE_RULES)
    assert page.locator("#mv-rule").is_hidden()
    page.click('#mv-grid button.mv-cell[data-layer="3"][data-head="0"]')
    for kind in AGGREGATE_RULES:
        before = int(page.evaluate("() => +(document.documentElement.dataset.views || 0)"))
        page.select_option("#mv-aggregate", kind)
        page.wait_for_function(
            "n => +(document.documentElement.dataset.views || 0) > n"
            " && document.documentElement.dataset.pending === '0'",
            arg=before,
        )
        part = api.post(f"/api/trace?fields={kind}&layer=3",
                        json={"model": "all-MiniLM-L6-v2", "text": TEXT}).json()  # fmt: skip
        large = large_heatmap(page)
        assert large["title"].startswith("Layer 4, ")
        assert large["dtype"] == "F64"
        assert_close(large["z"], part[kind][0], tol=0)  # the API's float64 numbers, as sent
        assert page.locator("#mv-rule").inner_text() == part["rules"][kind] == AGGREGATE_RULES[kind]
    assert "rollout" in page.locator("#mv-large .hc-title").inner_text()
    screenshot(page, "model-rollout.png")
    # Back to the chosen head: no rule under it.
    page.select_option("#mv-aggregate", "head")
    page.wait_for_function("() => document.getElementById('mv-rule').hidden")
