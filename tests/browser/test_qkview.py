"""The query-key view (static/js/qkview.js) against real traces: what it draws is the trace's
q, k, q ⊙ k, scores and softmax weights, masked keys read as masked, token text stays text."""

from __future__ import annotations

import math

from tests.browser.helpers import ARTIFACTS, assert_close, f32, mount_view

MODEL = "all-MiniLM-L6-v2"
TEXT = "The animal didn't cross the street because it was too tired"

# Ask for the head's part as the page does (q and k, and the query's scores and weights), and
# draw it.
RENDER = """async ({request, layer, head, query, tokens, allKeys}) => {
  const host = document.getElementById('qk-host');
  window.__picked = [];
  const part = await window.__api.fetchTrace(request,
    {fields: 'queries,keys,scores,attentions', layer, head, query});
  const data = window.__module.headInput(tokens || part.meta.tokens, part.arrays, query,
    part.meta.config ? part.meta.config.scale : true);
  await window.__module.render(host, data, {layer, head, allKeys},
    {onPick: (j) => window.__picked.push(j)});
  const plot = host.querySelector('.qk-plot');
  return {data: JSON.parse(JSON.stringify(plot.data)), text: host.innerText};
}"""


def mount(page, live_server, api, request) -> dict:
    mount_view(page, live_server + "/", "qk-host", "/static/js/qkview.js")
    r = api.post("/api/trace", json=request)
    assert r.status_code == 200
    return r.json()


def draw(page, request, layer, head, query, **extra) -> dict:
    return page.evaluate(
        RENDER, {"request": request, "layer": layer, "head": head, "query": query, **extra}
    )


def by_uid(data: list[dict], uid: str) -> dict:
    (found,) = [t for t in data if t.get("uid") == uid]
    return found


def check_breakdown(trace: dict, drawn: dict, layer: int, head: int, i: int) -> None:
    """Everything on the plot is the trace's numbers for (layer, head, query i): the very
    float32 values of a model (float64 of the toy), and texts as the JSON trace spells them."""
    exact = (lambda x: x) if trace["mode"] == "toy" else f32
    q = exact(trace["queries"][layer][head][i])
    keys = exact(trace["keys"][layer][head])
    hd = trace["head_dim"]
    scores = trace["scores"][layer][head][i]
    weights = trace["attentions"][layer][head][i]
    data = drawn["data"]
    assert_close(by_uid(data, "q")["z"], [q], tol=0)
    assert_close(by_uid(data, "k")["z"], keys, tol=0)
    products = [[a * b for a, b in zip(q, k, strict=True)] for k in keys]
    shown = [None if s is None else row for row, s in zip(products, scores, strict=True)]
    prod = by_uid(data, "qk")["z"]
    for row, want in zip(prod, shown, strict=True):
        if want is None:
            assert all(v is None for v in row)  # masked: not drawn as numbers, never as 0
        else:
            assert_close(row, want, 1e-12)
    info = by_uid(data, "scores")["customdata"]
    sums = by_uid(data, "sums")
    bars = by_uid(data, "weights")
    for j, (row, s, w) in enumerate(zip(products, scores, weights, strict=True)):
        if s is None:
            assert info[j][3] == "masked" and by_uid(data, "scores")["text"][j] == "masked"
            assert bars["x"][j] == 0 and bars["text"][j] == "masked"
            continue
        # The score on screen is the model's own, and Σ(q ⊙ k) / √d_head reproduces it.
        assert float(info[j][3]) == s
        assert by_uid(data, "scores")["text"][j] == f"{s:.3f}".replace("-0.000", "0.000")
        assert float(info[j][1]) == sum(row) or math.isclose(float(info[j][1]), sum(row))
        assert abs(sum(row) / math.sqrt(hd) - s) < 1e-4
        assert float(sums["customdata"][j][2]) == sum(row) / math.sqrt(hd) or math.isclose(
            float(sums["customdata"][j][2]), sum(row) / math.sqrt(hd)
        )
        assert bars["x"][j] == exact(w) and float(info[j][4]) == w


def test_query_key_view_shows_the_trace(page, live_server, api):
    request = {"model": MODEL, "text": TEXT}
    trace = mount(page, live_server, api, request)
    i = trace["tokens"].index("it")
    layer, head = 2, 5
    drawn = draw(page, request, layer, head, i)
    assert trace["head_dim"] == 32
    check_breakdown(trace, drawn, layer, head, i)
    assert "score = Σ qₖ·kₖ / √32" in drawn["text"]
    assert page.locator("#qk-host .qk-token").text_content() == "it"
    assert f"layer {layer + 1}, head {head + 1}" in drawn["text"]
    # Rows are labelled with the tokens, the query's own row in bold.
    layout = page.evaluate("() => document.querySelector('#qk-host .qk-plot').layout")
    ticks = layout["yaxis3"]["ticktext"]
    assert ticks[i] == "<b>it</b>" and ticks[2] == "animal"
    assert layout["yaxis2"]["ticktext"] == ticks
    # Nothing sticks out of the card; the exact value is on hover.
    assert page.evaluate(
        "() => { const h = document.getElementById('qk-host');"
        " return h.scrollWidth <= h.clientWidth; }"
    )
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#qk-host").screenshot(path=str(ARTIFACTS / "qkview.png"))
    box = page.evaluate(
        """() => { const p = document.querySelector('#qk-host .qk-plot');
          const ya = p._fullLayout.yaxis3, xa = p._fullLayout.xaxis, r = p.getBoundingClientRect();
          return {x: r.left + xa._offset + xa.l2p(7), y: r.top + ya._offset + ya.l2p(2)}; }"""
    )
    page.mouse.move(box["x"], box["y"])
    hover = page.locator("#qk-host .hoverlayer").text_content()
    assert "animal" in hover and repr(trace["queries"][layer][head][i][7])[:8] in hover


def test_clicking_a_key_row_picks_it_as_the_query(page, live_server, api):
    request = {"model": MODEL, "text": TEXT}
    trace = mount(page, live_server, api, request)
    draw(page, request, 0, 0, 1)
    plot_before = page.evaluate_handle("() => document.querySelector('#qk-host .qk-plot')")
    target = trace["tokens"].index("street")
    box = page.evaluate(
        """(j) => { const p = document.querySelector('#qk-host .qk-plot');
          const ya = p._fullLayout.yaxis2, xa = p._fullLayout.xaxis, r = p.getBoundingClientRect();
          return {x: r.left + xa._offset + xa.l2p(10), y: r.top + ya._offset + ya.l2p(j)}; }""",
        target,
    )
    page.mouse.move(box["x"], box["y"])
    page.mouse.click(box["x"], box["y"])
    page.wait_for_function("() => window.__picked.length > 0")
    assert page.evaluate("() => window.__picked") == [target]
    # Drawing the picked query reuses the same plot element and shows the new breakdown.
    drawn = draw(page, request, 0, 0, target)
    check_breakdown(trace, drawn, 0, 0, target)
    assert page.evaluate("p => p === document.querySelector('#qk-host .qk-plot')", plot_before)
    assert page.locator("#qk-host .qk-token").text_content() == "street"


def test_masked_keys_read_as_masked(page, live_server, api):
    """A causal trace (the toy model with the causal mask): keys after the query are masked."""
    request = {
        "tokens": ["An", "apple", "and", "a", "banana"],
        "axes": ["tech", "fruit", "grammar"],
        "embeddings": [[0, 0, 1], [0.7, 0.8, 0], [0, 0, 0.5], [0, 0, 1], [0, 0.8, 0]],
        "config": {"layers": 1, "heads": 1, "projections": "random", "mask": "causal"},
    }
    trace = mount(page, live_server, api, request)
    drawn = draw(page, request, 0, 0, 2)
    assert trace["scores"][0][0][2][3] is None
    check_breakdown(trace, drawn, 0, 0, 2)
    overlay = by_uid(drawn["data"], "masked")["z"]
    assert [row[0] for row in overlay] == [None, None, None, 1, 1]
    assert "score = Σ qₖ·kₖ / √3" in drawn["text"]
    page.locator("#qk-host").screenshot(path=str(ARTIFACTS / "qkview-masked.png"))


def test_causal_model_trace(page, live_server, api):
    """The tiny GPT-2 the test server loads: a causal text trace, scores null after the query."""
    (tiny,) = [m for m in api.get("/api/models").json()["models"] if m["name"] == "tiny-gpt2"]
    assert tiny["causal"]
    request = {"model": "tiny-gpt2", "text": "I sat on the river bank"}
    trace = mount(page, live_server, api, request)
    n = len(trace["tokens"])
    i = n // 2
    drawn = draw(page, request, 1, 2, i)
    check_breakdown(trace, drawn, 1, 2, i)
    masked = [s is None for s in trace["scores"][1][2][i]]
    assert masked == [j > i for j in range(n)]
    assert by_uid(drawn["data"], "scores")["text"][i + 1 :] == ["masked"] * (n - i - 1)
    assert f"score = Σ qₖ·kₖ / √{trace['head_dim']}" in drawn["text"]
    page.locator("#qk-host").screenshot(path=str(ARTIFACTS / "qkview-gpt2.png"))


def test_token_text_is_never_html(page, live_server, api):
    request = {"model": MODEL, "text": TEXT}
    trace = mount(page, live_server, api, request)
    evil = '<img src=x onerror="window.__xss=1">'
    tokens = [*trace["tokens"][:3], evil, *trace["tokens"][4:]]
    draw(page, request, 0, 0, 3, tokens=tokens)
    assert page.locator("#qk-host .qk-token").text_content() == evil
    assert page.locator("#qk-host img").count() == 0
    assert page.evaluate("() => window.__xss") is None
    layout = page.evaluate("() => document.querySelector('#qk-host .qk-plot').layout")
    assert "&lt;img" in layout["yaxis2"]["ticktext"][3]
