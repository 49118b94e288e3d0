"""The page fits its window, and stays usable on the largest inputs the API accepts."""

from __future__ import annotations

import random

import pytest

from tests.browser.helpers import (
    assert_close,
    open_app,
    plot_data,
    screenshot,
    select_and_wait,
    share_hash,
    trace_by_uid,
    traces_drawn,
    wait_for_trace,
)

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)


def horizontal_overflow(page) -> int:
    return page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )


def test_every_preset_fits_1280_without_horizontal_scroll(page, live_server, presets):
    open_app(page, live_server + "/")
    header = page.locator(".app-header")
    assert header.locator("h1").text_content() == "attnviz"
    assert "Self-attention" in header.locator(".tagline").text_content()
    names = page.locator("#preset option")
    assert [names.nth(i).text_content() for i in range(names.count())] == [
        p["name"] for p in presets["presets"]
    ]
    for preset in presets["presets"][1:]:
        select_and_wait(page, "#preset", preset["id"])
        assert page.locator("#preset-about").text_content() == preset["about"]
        assert horizontal_overflow(page) <= 0, preset["id"]
        # The plots sit side by side or stacked, never on top of each other.
        boxes = [page.locator(f"#{p}").bounding_box() for p in ("scores-plot", "weights-plot")]
        a, b = boxes
        assert a["x"] + a["width"] <= b["x"] + 1 or a["y"] + a["height"] <= b["y"] + 1


def test_narrow_window_stacks_the_panels(page, live_server):
    page.set_viewport_size({"width": 480, "height": 900})
    open_app(page, live_server + "/")
    assert horizontal_overflow(page) <= 0
    panel = page.locator("#toy-mode .panel").bounding_box()
    plots = page.locator("#toy-mode .plots").bounding_box()
    assert panel["y"] + panel["height"] <= plots["y"]  # inputs first, then the plots
    screenshot(page, "narrow-480.png")


def test_largest_input_draws_one_layer_and_head_at_a_time(page, live_server):
    rng = random.Random(7)
    n = d = 64
    state = {
        "v": 1,
        "preset": None,
        "tokens": [f"w{i}" for i in range(n)],
        "axes": [f"f{j}" for j in range(d)],
        "embeddings": [[round(rng.uniform(-1, 1), 2) for _ in range(d)] for _ in range(n)],
        "config": {
            "layers": 12,
            "heads": 16,
            "projections": "random",
            "residual": True,
            "norm": "pre",
            "ffn": True,
            "seed": 3,
        },
        "view": {"layer": 11, "head": 15, "vlayer": 12, "a": 0, "b": 63, "trails": True},
    }
    open_app(page, live_server + "/" + share_hash(state))
    assert page.locator("#embeddings tbody tr").count() == n
    assert page.locator("#embeddings input.value").count() == n * d
    assert page.locator("#att-layer option").count() == 12
    assert page.locator("#att-head option").count() == 16
    assert page.locator("#att-layer").input_value() == "11"
    heatmaps = [t for p in ("scores-plot", "weights-plot") for t in plot_data(page, p)]
    assert len(heatmaps) == 2  # one layer and head drawn, not 192
    # No cell text at n = 64 (the cells' numbers are layout annotations, views/heatmaps.js)
    assert all(
        not page.evaluate(f"document.getElementById('{p}').layout.annotations.length")
        for p in ("scores-plot", "weights-plot")
    )
    assert trace_by_uid(page, "weights-plot", "weights")["zmax"] == 1

    # An edit updates the same plot elements in place (Plotly.react), with the new values.
    page.evaluate("document.getElementById('weights-plot').__kept = true")
    before = traces_drawn(page)
    page.locator('#embeddings input[data-kind="value"][data-r="0"][data-c="0"]').fill("0.5")
    wait_for_trace(page, before)
    assert page.evaluate("document.getElementById('weights-plot').__kept") is True
    row = trace_by_uid(page, "weights-plot", "weights")["z"][0]
    assert_close(sum(row), 1.0, tol=1e-9)
    assert page.locator("#error").is_hidden()
