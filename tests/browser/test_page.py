"""The page opens on the article's table, draws it, and follows edits of the table and config."""

from __future__ import annotations

import re

from attnviz.numbers import readable_percent
from tests.browser.helpers import (
    assert_close,
    choose,
    edit_cell,
    open_app,
    plot_layout,
    raw_attention,
    rotate,
    screenshot,
    select_and_wait,
    table_values,
    trace_by_uid,
    traces_drawn,
    vector_points,
    vector_range,
    view_change,
    wait_for_trace,
)
from tests.support.oracles import readable


def column(rows, c):
    return [r[c] for r in rows]


def assert_vectors_show(page, before, after):
    """The vector plot's start points and arrow tips are exactly these [n][3] vectors."""
    for uid, rows in (("before", before), ("after", after)):
        assert_close(vector_points(page, uid), rows)


def cell(v: float) -> str:
    """numbers.js readableCell(v, 2): 2 decimals, never "1.00" short of 1 nor "0.00" above 0."""
    s = f"{v:.2f}".replace("-0.00", "0.00")
    if v != 0 and float(s) == 0:
        return "<0.01" if v > 0 else ">-0.01"
    return ">0.99" if float(s) == 1 and v < 1 else s


def test_default_preset_is_drawn_and_a_cell_edit_redraws(page, live_server, presets):
    first = presets["presets"][0]
    assert first["tokens"] == ["An", "apple", "and", "a", "banana"]
    open_app(page, live_server + "/")
    screenshot(page, "initial.png")

    # The table shows the first preset.
    table = table_values(page)
    assert table["tokens"] == first["tokens"]
    assert table["axes"] == first["axes"] == ["tech", "fruit", "grammar"]
    assert [[float(v) for v in row] for row in table["values"]] == first["embeddings"]
    assert page.locator("#preset").input_value() == first["id"]
    assert first["about"] in page.locator("#preset-about").text_content()

    # Heatmaps: token labels on both axes, the first token at the top, values from softmax.
    x = [list(r) for r in first["embeddings"]]
    expected = raw_attention(x)
    for plot_id, uid, key in (
        ("scores-plot", "scores", "scores"),
        ("weights-plot", "weights", "weights"),
    ):
        layout = plot_layout(page, plot_id)
        assert layout["xaxis"]["ticktext"] == first["tokens"]
        assert layout["yaxis"]["ticktext"] == first["tokens"]
        y0, y1 = page.evaluate(f"document.getElementById('{plot_id}')._fullLayout.yaxis.range")
        assert y0 > y1  # reversed: query 0 (the first token) at the top
        heat = trace_by_uid(page, plot_id, uid)
        assert heat["type"] == "heatmap"
        assert_close(heat["z"], expected[key])
        # Values written in the cells (n = 5), each in the ink its colour needs (views/heatmaps.js)
        texts = [a["text"] for a in layout["annotations"]]
        assert texts == [cell(v) for row in expected[key] for v in row]
    weights = trace_by_uid(page, "weights-plot", "weights")
    assert (weights["zmin"], weights["zmax"]) == (0, 1)
    assert weights["colorbar"]["title"]["text"] == "attention weight (softmax), rows sum to 1"
    scores = trace_by_uid(page, "scores-plot", "scores")
    assert scores["colorbar"]["title"]["text"].startswith("score = q·k / √d")
    # Hover shows the API's value (the heatmap's z) as a person reads it: 3 significant digits.
    assert weights["customdata"][1][4][2] == f"weight {readable(weights['z'][1][4])}"

    # Vectors: d = 3, the named axes, dashed ghosts at X, solid arrows at the output: first as
    # the still picture (2-D, no WebGL), then as the live scene, the same marks.
    layout = plot_layout(page, "vectors-plot")
    assert layout["meta"]["still"] and layout["meta"]["axes"] == ["tech", "fruit", "grammar"]
    assert trace_by_uid(page, "vectors-plot", "axis-titles")["text"] == layout["meta"]["axes"]
    assert trace_by_uid(page, "vectors-plot", "ghosts-1")["line"]["dash"] == "dash"
    assert trace_by_uid(page, "vectors-plot", "arrows-1")["line"]["dash"] == "solid"
    assert_vectors_show(page, x, expected["out"])
    labels = sorted(a["text"] for a in layout["annotations"] if a["text"])
    assert labels == ["An, a", "and", "apple", "banana"]  # An and a land on the same point
    rotate(page)
    layout = plot_layout(page, "vectors-plot")
    titles = [layout["scene"][a]["title"]["text"] for a in ("xaxis", "yaxis", "zaxis")]
    assert titles == ["tech", "fruit", "grammar"]
    assert trace_by_uid(page, "vectors-plot", "ghosts")["line"]["dash"] == "dash"
    assert trace_by_uid(page, "vectors-plot", "arrows")["line"]["dash"] == "solid"
    assert_vectors_show(page, x, expected["out"])
    # The live scene turns: tokens close in 3-D share one label (core/labels.js sceneGroups),
    # each name in its colour.
    labels = sorted(re.sub(r"<[^>]+>", "", a["text"]) for a in layout["scene"]["annotations"])
    assert labels == ["An, and, a", "apple, banana"]  # in token order

    # Edit apple's tech 0.7 -> 0.0: every view follows, without a reload.
    page.evaluate("window.__marker = 'same page'")
    edit_cell(page, 1, 0, "0.0")
    x[1][0] = 0.0
    edited = raw_attention(x)
    assert_close(trace_by_uid(page, "scores-plot", "scores")["z"], edited["scores"])
    assert_close(trace_by_uid(page, "weights-plot", "weights")["z"], edited["weights"])
    assert_vectors_show(page, x, edited["out"])
    assert edited["weights"][1] != expected["weights"][1]
    assert page.evaluate("window.__marker") == "same page"
    assert "edited" in page.locator("#preset-about").text_content()
    screenshot(page, "after-edit.png")


def test_before_after_table_and_distance_readout(page, live_server, api, presets):
    open_app(page, live_server + "/")
    rows = page.locator("#before-after tbody tr")
    assert rows.count() == 5

    def row_text(i):
        return [rows.nth(i).locator("td").nth(c).text_content() for c in range(3)]

    first = presets["presets"][0]
    trace = api.post("/api/trace", json={k: first[k] for k in ("tokens", "axes", "embeddings")})
    trace = trace.json()
    # Read as the article's tables are: each value to 3 significant digits (issue 41), the
    # exact ones in the API's hidden states.
    hs = trace["hidden_states"]
    for i, token in enumerate(first["tokens"]):
        shown = [f"[{', '.join(readable(v) for v in hs[k][i])}]" for k in (0, 1)]
        assert row_text(i) == [token, *shown]
    assert row_text(1)[1] == "[0.7, 0.8, 0]"
    # The article's apple after one pass, [0.21, 0.42, 0.39] at its rounding.
    assert [round(float(v), 2) for v in row_text(1)[2][1:-1].split(", ")] == [0.21, 0.42, 0.39]
    # The whole vector is in the cell's title, each of the API's numbers to 3 significant digits.
    title = rows.nth(1).locator("td").nth(2).get_attribute("title")
    assert title == f"[{', '.join(readable(v) for v in trace['hidden_states'][1][1])}]"

    readout = page.locator("#dist-readout")
    d0, d1 = trace["distances"][0][1][4], trace["distances"][1][1][4]  # the article's 0.7, 0.059
    assert readout.text_content() == f"apple ↔ banana: {readable(d0)} → {readable(d1)}"
    assert (readable(d0), readable(d1)) == ("0.7", "0.0587")
    assert readout.locator(".value").nth(1).get_attribute("title") == (
        f"layer 1: {readable(trace['distances'][1][1][4])}"
    )
    line = trace_by_uid(page, "distances-plot", "distance")
    assert_close(line["y"], [d[1][4] for d in trace["distances"]], tol=0)

    # Another pair: An and banana.
    choose(page, "#dist-a", "0")
    page.wait_for_function(
        "() => document.getElementById('dist-readout').textContent.startsWith('An ↔ banana')"
    )
    a, b = trace["distances"][0][0][4], trace["distances"][1][0][4]
    assert readout.text_content() == f"An ↔ banana: {readable(a)} → {readable(b)}"
    assert_close(trace_by_uid(page, "distances-plot", "distance")["y"], [a, b], tol=0)


def test_layers_heads_and_layer_pickers(page, live_server, api, presets):
    open_app(page, live_server + "/")
    # Only the divisors of d = 3 are offered as head counts.
    heads = page.locator("#cfg-heads option")
    assert [heads.nth(i).get_attribute("value") for i in range(heads.count())] == ["1", "3"]
    select_and_wait(page, "#cfg-layers", "3")
    select_and_wait(page, "#cfg-heads", "3")
    assert page.locator("#att-layer option").count() == 3
    assert page.locator("#att-head option").count() == 3
    assert page.locator("#vec-layer").get_attribute("max") == "3"

    first = presets["presets"][0]
    body = {k: first[k] for k in ("tokens", "axes", "embeddings")}
    body["config"] = {"layers": 3, "heads": 3}
    trace = api.post("/api/trace", json=body).json()

    choose(page, "#att-layer", "1")
    choose(page, "#att-head", "2")
    assert_close(trace_by_uid(page, "scores-plot", "scores")["z"], trace["scores"][1][2], tol=0)
    assert_close(
        trace_by_uid(page, "weights-plot", "weights")["z"], trace["attentions"][1][2], tol=0
    )
    assert "layer 2, head 3" in plot_layout(page, "weights-plot")["title"]["text"]

    view_change(page, lambda: page.locator("#vec-layer").fill("2"))
    assert_close(vector_points(page), trace["hidden_states"][2], tol=0)
    assert page.locator("#before-after thead th").nth(2).text_content() == "after layer 2"
    # The axes keep one range for every layer, so the picture does not jump.
    ranges = vector_range(page)
    view_change(page, lambda: page.locator("#vec-layer").fill("0"))
    assert vector_range(page) == ranges
    assert_close(vector_points(page), body["embeddings"])


def test_causal_preset_greys_and_labels_masked_cells(page, live_server):
    open_app(page, live_server + "/")
    select_and_wait(page, "#preset", "causal")
    scores = trace_by_uid(page, "scores-plot", "scores")
    n = len(scores["z"])
    for i in range(n):
        for j in range(n):
            assert (scores["z"][i][j] is None) == (j > i)
    assert scores["customdata"][0][1][2].startswith("masked")
    weights = trace_by_uid(page, "weights-plot", "weights")
    assert all(weights["z"][i][j] == 0 for i in range(n) for j in range(n) if j > i)

    # Hovering a masked cell says so.
    box = page.evaluate(
        """() => {
          const el = document.getElementById('scores-plot');
          const xa = el._fullLayout.xaxis, ya = el._fullLayout.yaxis;
          const r = el.getBoundingClientRect();
          return {x: r.left + xa._offset + xa.d2p(2), y: r.top + ya._offset + ya.d2p(0)};
        }"""
    )
    page.mouse.move(box["x"], box["y"])
    hover = page.locator("#scores-plot .hoverlayer")
    page.wait_for_function(
        "() => document.querySelector('#scores-plot .hoverlayer').textContent.includes('masked')"
    )
    assert "key" in hover.text_content()
    page.mouse.move(0, 0)
    screenshot(page, "causal.png")


def test_more_than_three_dimensions_use_the_pca_projection(page, live_server, api, presets):
    open_app(page, live_server + "/")
    select_and_wait(page, "#preset", "large-d")
    preset = next(p for p in presets["presets"] if p["id"] == "large-d")
    body = {k: preset[k] for k in ("tokens", "axes", "embeddings", "config")}
    trace = api.post("/api/trace", json=body).json()
    assert trace["d"] == 64 and trace["projection"]["components"] == 3
    coords = trace["projection"]["coords"]
    for uid, layer in (("before", 0), ("after", 1)):
        assert_close(vector_points(page, uid), coords[layer], tol=0)
    ratio = trace["projection"]["explained_variance_ratio"][0]
    pc1 = f"PC1 ({readable_percent(ratio)} var)"  # a whole percentage, as numbers.js says it
    assert plot_layout(page, "vectors-plot")["meta"]["axes"][0] == pc1
    rotate(page)
    assert plot_layout(page, "vectors-plot")["scene"]["xaxis"]["title"]["text"] == pc1
    assert_close(vector_points(page), coords[1], tol=0)
    assert "PCA" in page.locator("#vectors-caption").text_content()
    screenshot(page, "pca-d64.png")

    # Tick "scale": the weights follow the API's answer for the new config.
    before = traces_drawn(page)
    page.locator("#cfg-scale").check()
    wait_for_trace(page, before)
    body["config"] = {**body["config"], "scale": True}
    scaled = api.post("/api/trace", json=body).json()
    assert_close(
        trace_by_uid(page, "weights-plot", "weights")["z"], scaled["attentions"][0][0], tol=0
    )


def test_custom_projections_edit_the_matrices(page, live_server, api, presets):
    open_app(page, live_server + "/")
    select_and_wait(page, "#cfg-projections", "custom")
    matrices = page.locator("#custom-weights table")
    assert matrices.count() == 4
    identity = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    for name in "qkvo":
        inputs = page.locator(f'#custom-weights table[data-matrix="{name}"] input')
        assert [float(inputs.nth(i).input_value()) for i in range(9)] == sum(identity, [])
    first = presets["presets"][0]
    x = first["embeddings"]
    assert_close(trace_by_uid(page, "weights-plot", "weights")["z"], raw_attention(x)["weights"])

    # W_Q reads fruit twice as strongly: the page shows what the API computes for it.
    before = traces_drawn(page)
    page.locator('#custom-weights table[data-matrix="q"] input[data-i="1"][data-j="1"]').fill("2")
    wait_for_trace(page, before)
    q = [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0]]
    body = {k: first[k] for k in ("tokens", "axes", "embeddings")}
    weights = {"q": q, "k": identity, "v": identity, "o": identity}
    body["config"] = {"projections": "custom", "weights": weights}
    trace = api.post("/api/trace", json=body).json()
    assert_close(
        trace_by_uid(page, "weights-plot", "weights")["z"], trace["attentions"][0][0], tol=0
    )

    # Removing a dimension shrinks every matrix to 2 x 2 and the vector plot to 2-D raw axes.
    before = traces_drawn(page)
    page.click('#embeddings button[data-remove-col="0"]')  # tech
    wait_for_trace(page, before)
    q_inputs = page.locator('#custom-weights table[data-matrix="q"] input')
    assert [float(q_inputs.nth(i).input_value()) for i in range(q_inputs.count())] == [
        2.0,
        0.0,
        0.0,
        1.0,
    ]
    body = {
        "tokens": first["tokens"],
        "axes": ["fruit", "grammar"],
        "embeddings": [row[1:] for row in x],
        "config": {
            "projections": "custom",
            "weights": {
                "q": [[2.0, 0.0], [0.0, 1.0]],
                "k": [[1.0, 0.0], [0.0, 1.0]],
                "v": [[1.0, 0.0], [0.0, 1.0]],
                "o": [[1.0, 0.0], [0.0, 1.0]],
            },
        },
    }
    trace = api.post("/api/trace", json=body).json()
    after = trace_by_uid(page, "vectors-plot", "after")
    assert after["type"] == "scatter"
    assert_close(after["x"], column(trace["hidden_states"][1], 0), tol=0)
    assert_close(after["y"], column(trace["hidden_states"][1], 1), tol=0)
    assert plot_layout(page, "vectors-plot")["xaxis"]["title"]["text"] == "fruit"
