"""The query-key view (static/js/views/qkview.js) against real traces: what it draws is the trace's
q, k, q ⊙ k, scores and softmax weights, exactly; its tooltips give them to 3 significant digits
(as a person reads them), masked keys read as masked, token text stays text."""

from __future__ import annotations

import math

import pytest

from tests.browser.helpers import ARTIFACTS, assert_close, f32, mount_view, shown_token, snap
from tests.support.oracles import js_number, readable

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

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
    window.__module.scoreRule(part.meta));
  await window.__module.render(host, data, {layer, head, allKeys},
    {onPick: (j) => window.__picked.push(j)});
  const d = host.querySelector('.qk').__qk;
  const c = Math.min(7, d.q.length - 1);  // a dimension of the head
  const tips = {row: d.rows.map((_, r) => d.tipAt('row', r, -1)),
    k: d.rows.map((_, r) => d.tipAt('k', r, c)), p: d.rows.map((_, r) => d.tipAt('p', r, c)),
    q: d.tipAt('q', 0, c)};
  const {geometry, tipAt, ...drawn} = d;
  return {data: JSON.parse(JSON.stringify(drawn)), tips, text: host.innerText};
}"""


def mount(page, live_server, api, request) -> dict:
    mount_view(page, live_server + "/", "qk-host", "/static/js/views/qkview.js")
    r = api.post("/api/trace", json=request)
    assert r.status_code == 200
    return r.json()


def draw(page, request, layer, head, query, **extra) -> dict:
    return page.evaluate(
        RENDER, {"request": request, "layer": layer, "head": head, "query": query, **extra}
    )


def check_breakdown(trace: dict, drawn: dict, layer: int, head: int, i: int) -> None:
    """Everything drawn is the trace's numbers for (layer, head, query i): the very float32
    values of a model (float64 of the toy), and the tooltips write the JSON trace's numbers to 3
    significant digits."""
    exact = (lambda x: x) if trace["mode"] == "toy" else f32
    d, tips = drawn["data"], drawn["tips"]
    rows = d["rows"]
    q = exact(trace["queries"][layer][head][i])
    keys = exact(trace["keys"][layer][head])
    hd = trace["head_dim"]
    c = min(7, hd - 1)
    scores = trace["scores"][layer][head][i]
    weights = trace["attentions"][layer][head][i]
    assert_close(d["q"], q, tol=0)
    assert_close(d["keys"], [keys[j] for j in rows], tol=0)
    assert tips["q"][1] == f"q = {readable(trace['queries'][layer][head][i][c])}"
    for r, j in enumerate(rows):
        product = [a * b for a, b in zip(q, keys[j], strict=True)]
        assert_close(d["products"][r], product, 1e-12)
        assert tips["k"][r] == [
            f"key {shown_token(trace['tokens'][j])} (token {j + 1}) · dim {c}",
            f"k = {readable(trace['keys'][layer][head][j][c])}",
        ]
        row = tips["row"][r]
        assert row[0] == f"key {shown_token(trace['tokens'][j])} (token {j + 1})"
        if scores[j] is None:  # masked: never drawn as a number, never as 0
            assert d["masked"][r] and d["scores"][r] is None
            assert tips["p"][r] == [
                f"key {shown_token(trace['tokens'][j])} (token {j + 1}): masked (after the query)"
            ]
            assert row[3:] == ["score (model) = masked", "weight = masked"]
            continue
        assert not d["masked"][r]
        # The score on screen is the model's own, and Σ(q ⊙ k) / √d_head reproduces it.
        assert row[3] == f"score (model) = {readable(scores[j])}"
        assert row[4] == f"weight = {readable(weights[j])}"
        assert d["scores"][r] == exact(scores[j]) and d["weights"][r] == exact(weights[j])
        assert math.isclose(d["sums"][r], sum(product), rel_tol=1e-12, abs_tol=1e-12)
        assert abs(d["sums"][r] / math.sqrt(hd) - scores[j]) < 1e-4
        assert row[1] == f"Σ q⊙k = {readable(d['sums'][r])}"


def hover_cell(page, block: str, r: int, c: int) -> str:
    """Move the pointer over a cell (block "q", "k" or "p") or a key's numbers ("row"); the tip."""
    box = page.evaluate(
        """([block, r, c]) => { const d = document.querySelector('#qk-host .qk').__qk, g = d.geometry;
          const b = document.querySelector('#qk-host canvas').getBoundingClientRect();
          const top = {q: g.qTop, k: g.kTop, p: g.pTop, row: g.pTop}[block];
          const x = block === 'row' ? g.xScore + 20 : g.x0 + (c + 0.5) * g.cell;
          return {x: b.left + x, y: b.top + top + (r + 0.5) * g.row}; }""",
        [block, r, c],
    )
    page.mouse.move(box["x"], box["y"])
    tip = page.locator("#qk-host .qk-tip")
    tip.wait_for(state="visible")
    return tip.inner_text()


def test_query_key_view_shows_the_trace(page, live_server, api):
    request = {"model": MODEL, "text": TEXT}
    trace = mount(page, live_server, api, request)
    i = trace["tokens"].index("it")
    layer, head = 2, 5
    drawn = draw(page, request, layer, head, i)
    assert trace["head_dim"] == 32
    check_breakdown(trace, drawn, layer, head, i)
    assert "score = Σ qₖ·kₖ ÷ √32" in drawn["text"]
    assert page.locator("#qk-host .qk-token").text_content() == "it"
    assert f"layer {layer + 1}, head {head + 1}" in drawn["text"]
    # "Show the numbers": each key's score and weight exactly as the API sent them.
    numbers = page.locator("#qk-host .plot-numbers")
    numbers.locator("summary").click()
    cells = [r.split("\t") for r in numbers.locator("tbody tr").all_inner_texts()]
    scores, weights = trace["scores"][layer][head][i], trace["attentions"][layer][head][i]
    assert [c[2:] for c in cells] == [
        ["masked", "masked"] if scores[j] is None else [js_number(scores[j]), js_number(weights[j])]
        for j in drawn["data"]["rows"]
    ]
    numbers.locator("summary").click()  # closed again: the hovers below point at the canvas
    # Nothing sticks out of the card; the value is under the pointer.
    assert page.evaluate(
        "() => { const h = document.getElementById('qk-host');"
        " return h.scrollWidth <= h.clientWidth; }"
    )
    ARTIFACTS.mkdir(exist_ok=True)
    snap(page.locator("#qk-host"), path=str(ARTIFACTS / "qkview.png"))
    animal = trace["tokens"].index("animal")
    tip = hover_cell(page, "k", animal, 7)
    k = trace["keys"][layer][head][animal][7]
    assert tip == f"key animal (token {animal + 1}) · dim 7\nk = {readable(k)}"
    tip = hover_cell(page, "row", animal, -1)
    score = trace["scores"][layer][head][i][animal]
    assert tip.splitlines()[3] == f"score (model) = {readable(score)}"


def test_clicking_a_key_row_picks_it_as_the_query(page, live_server, api):
    request = {"model": MODEL, "text": TEXT}
    trace = mount(page, live_server, api, request)
    draw(page, request, 0, 0, 1)
    plot_before = page.evaluate_handle("() => document.querySelector('#qk-host canvas')")
    target = trace["tokens"].index("street")
    hover_cell(page, "k", target, 10)
    page.mouse.down()
    page.mouse.up()
    page.wait_for_function("() => window.__picked.length > 0")
    assert page.evaluate("() => window.__picked") == [target]
    # Drawing the picked query reuses the same plot element and shows the new breakdown.
    drawn = draw(page, request, 0, 0, target)
    check_breakdown(trace, drawn, 0, 0, target)
    assert page.evaluate("p => p === document.querySelector('#qk-host canvas')", plot_before)
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
    assert drawn["data"]["masked"] == [False, False, False, True, True]
    assert hover_cell(page, "p", 3, 1) == "key a (token 4): masked (after the query)"
    assert "score = Σ qₖ·kₖ ÷ √3" in drawn["text"]
    snap(page.locator("#qk-host"), path=str(ARTIFACTS / "qkview-masked.png"))


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
    assert masked == [j > i for j in range(n)] == drawn["data"]["masked"]
    assert f"score = Σ qₖ·kₖ ÷ √{trace['head_dim']}" in drawn["text"]
    snap(page.locator("#qk-host"), path=str(ARTIFACTS / "qkview-gpt2.png"))


def test_token_text_is_never_html(page, live_server, api):
    request = {"model": MODEL, "text": TEXT}
    trace = mount(page, live_server, api, request)
    evil = '<img src=x onerror="window.__xss=1">'
    tokens = [*trace["tokens"][:3], evil, *trace["tokens"][4:]]
    draw(page, request, 0, 0, 3, tokens=tokens)
    # The text as text, drawn as every token is (issue 28, 5.10: core/tokens.js), never markup.
    assert page.locator("#qk-host .qk-token").text_content() == shown_token(evil)
    assert hover_cell(page, "k", 3, 0).startswith(f"key {shown_token(evil)} (token 4)")
    assert page.locator("#qk-host img").count() == 0
    assert page.evaluate("() => window.__xss") is None
