"""The Predictions card's *What pushed this* (views/pushed.js, modes/sentence/cards/pushed.js):
on the tiny GPT-2 its bars are the API's logit_attribution at the query for the chosen token,
to the last digit, and sum to the logit the API gives; switching between the top prediction,
the true next token and the difference asks for that token (the difference equals the log of
the two probabilities' ratio that top_k and lens give); the keyboard cursor reads a bar's
value to 3 significant digits; an encoder without an unembedding and a trace with a head knocked out say why;
axe finds nothing serious on it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from attnviz.app import create_app
from attnviz.numbers import readable_prose
from attnviz.settings import Settings
from tests.browser.helpers import (
    AXE,
    axe_serious,
    f32,
    mount_view,
    open_sentence,
    quoted_token,
    select_and_wait,
    share_hash,
    snap,
    view_change,
    wait_for_trace,
)
from tests.support.checkpoints import make_tiny_bert_mlm
from tests.support.oracles import js_number, readable
from tests.support.servers import served

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

TEXT = "The animal didn't cross the street because it was too tired."
MODEL = "tiny-gpt2"
SHOTS = Path("/work/shots/pushed")
TOL = 1e-9  # the page shows the server's float64 values; sums are compared in float64


def api_part(api, **params) -> dict:
    r = api.post("/api/trace", params=params, json={"model": MODEL, "text": TEXT})
    assert r.status_code == 200, r.text
    return r.json()


def bars(page) -> list[dict]:
    """Every bar drawn: its component's wire name and its value as the page holds it."""
    return page.locator("#pushed-view rect.pushed-bar").evaluate_all(
        "rs => rs.map((r) => ({name: r.dataset.name, value: +r.dataset.value}))"
    )


def chart(page) -> dict:
    return page.locator("#pushed-view .pushed-chart").evaluate(
        "c => ({logit: +c.dataset.logit, token: +c.dataset.token, versus: c.dataset.versus})"
    )


def choose(page, value: str) -> None:
    view_change(page, lambda: page.locator(f'#pushed-view input[value="{value}"]').check())
    page.locator("#pushed-view .pushed-chart").wait_for()


def assert_equals_api(page, api, position: int, token: int, versus: int | None = None) -> dict:
    """The bars are the API's values, by name, and sum to its logit; returns the API's answer."""
    params = {"fields": "logit_attribution", "position": position, "token": token}
    if versus is not None:
        params["versus"] = versus
    want = api_part(api, **params)["logit_attribution"]
    got = bars(page)
    names = [c["name"] for c in want["components"]]
    assert [b["name"] for b in got] == names
    assert all(b["value"] == v for b, v in zip(got, want["values"], strict=True))
    drawn = chart(page)
    assert drawn["token"] == token and drawn["versus"] == ("" if versus is None else str(versus))
    assert drawn["logit"] == want["logit"]
    assert abs(math.fsum(b["value"] for b in got) - want["logit"]) < TOL
    return want


def test_the_bars_are_the_apis_and_follow_the_choice(page, live_server, api):
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/", TEXT)  # the default model: an encoder
    note = page.locator("#pushed-view .pushed-unavailable")
    assert note.text_content().startswith("Nothing to attribute here:")
    assert "no unembedding" in note.text_content()

    select_and_wait(page, "#s-model", MODEL)
    page.locator("#pushed-view .pushed-chart").wait_for()
    t = api_part(api, fields="top_k,lens", k=5)
    n, layers, heads = t["n"], t["layers"], t["heads"]
    # embed, pos and the biases, then each layer's heads, attention bias and MLP
    assert page.locator("#pushed-view rect.pushed-bar").count() == 3 + layers * (heads + 2)

    # The query is the first token; the default: its top prediction, whose logit the bars sum to.
    q = 0
    top = t["top_k"]["ids"][q][0]
    nxt = t["lens"]["targets"][q]
    assert page.locator('#pushed-view input[value="top"]').is_checked()
    a = assert_equals_api(page, api, q, top)
    assert a["token"] == top  # the server's own default, the top prediction
    words = page.locator("#pushed-view .pushed-words").text_content()
    best = max(range(len(a["values"])), key=lambda i: a["values"][i])
    # numbers as a sentence says them (attnviz.numbers, numbers.js's twin): 3 significant digits
    assert f"of a logit of {readable_prose(a['logit'])}." in words
    assert f" +{readable_prose(a['values'][best])}" in words  # the largest push is named
    labels = page.locator("#pushed-view .pushed-radio").all_text_contents()
    assert any(quoted_token(t["top_k"]["vocab"][str(top)]) in s for s in labels)

    # The true next token, then the difference: each asks the server for that token.
    choose(page, "next")
    assert_equals_api(page, api, q, nxt)
    assert page.locator('#pushed-view input[value="next"]').is_checked()
    if nxt != top:
        choose(page, "diff")
        d = assert_equals_api(page, api, q, nxt, top)
        # logit[next] - logit[top] is the log of their probabilities' ratio (lens, top_k).
        rows = t["lens"]["rows"]
        ratio = f32(t["lens"]["target_probs"][rows - 1][q]) / f32(t["top_k"]["probs"][q][0])
        assert abs(d["logit"] - math.log(ratio)) < 1e-4
    # The choice travels in the share link's state.
    assert '"pushed"' in page.evaluate(
        "() => atob(location.hash.slice(3).replace(/-/g, '+').replace(/_/g, '/'))"
    )

    # The keyboard cursor reads each bar's value, the API's, to 3 significant digits.
    choose(page, "top")
    page.locator("#pushed-view .pushed-chart").focus()
    live = page.locator("#pushed-view .plot-live")
    first = a["values"][0]
    assert live.text_content().startswith(f"embedding: {readable(first)} of ")
    page.keyboard.press("ArrowDown")  # layer 1, head 1
    i = next(k for k, c in enumerate(a["components"]) if c["name"] == "L0.H0")
    assert live.text_content().startswith(f"L1 H1: {readable(a['values'][i])} of ")
    page.keyboard.press("End")  # layer 1's MLP
    i = next(k for k, c in enumerate(a["components"]) if c["name"] == "L0.mlp")
    assert live.text_content().startswith(f"L1 MLP: {readable(a['values'][i])} of ")
    hover = page.locator('#pushed-view [data-role="pushed-hover"]').text_content()
    assert hover.startswith(f"L1 MLP: {readable(a['values'][i])} of ")

    # The numbers table: every component, layers as rows, each value exactly as the API sent it.
    table = page.locator("#pushed-view table.data-table")
    assert table.locator("tbody tr").count() == 3 + layers
    assert table.locator("thead th").count() == 1 + heads + 2
    page.locator("#pushed-view .plot-numbers > summary").click()
    body = table.locator("tbody tr")
    assert body.nth(0).locator("td").first.text_content() == js_number(first)
    layer1 = body.filter(has=page.locator("th", has_text="L1")).first.locator("td")
    for h in range(heads):
        k = next(k for k, c in enumerate(a["components"]) if c["name"] == f"L0.H{h}")
        assert layer1.nth(h).text_content() == js_number(a["values"][k])
    k = next(k for k, c in enumerate(a["components"]) if c["name"] == "L0.mlp")
    assert layer1.nth(heads + 1).text_content() == js_number(a["values"][k])

    # The last position: no next token, only the top prediction.
    last = page.locator(f'#lens-view .lens-cell[data-row="0"][data-pos="{n - 1}"]')
    if last.count() == 0:
        view_change(page, lambda: page.select_option("#qk-query", str(n - 1)))
    else:
        view_change(page, lambda: last.click())
    page.locator("#pushed-view .pushed-chart").wait_for()
    assert page.locator('#pushed-view input[value="next"]').count() == 0
    assert "The text ends here" in page.locator("#pushed-view .pushed-note").text_content()
    assert_equals_api(page, api, n - 1, t["top_k"]["ids"][n - 1][0])

    assert axe_serious(page) == []
    SHOTS.mkdir(parents=True, exist_ok=True)
    view_change(page, lambda: page.select_option("#qk-query", "3"))
    page.locator("#pushed-view .pushed-chart").wait_for()
    card = page.locator("#lens-card")
    card.scroll_into_view_if_needed()
    snap(card, path=str(SHOTS / "pushed-1280.png"))
    page.set_viewport_size({"width": 480, "height": 900})
    view_change(page, lambda: page.locator('#pushed-view input[value="next"]').check())
    page.locator("#pushed-view .pushed-chart").wait_for()
    snap(card, path=str(SHOTS / "pushed-480.png"))


def test_a_knocked_out_trace_says_why(page, live_server):
    state = {"mode": "sentence", "sentence": {"model": MODEL, "text": TEXT,
                                              "ablate": [{"layer": 0, "head": 1}]}}  # fmt: skip
    page.goto(live_server + "/" + share_hash(state))
    wait_for_trace(page, 0)
    note = page.locator("#pushed-view .pushed-unavailable")
    note.wait_for()
    assert "knocks heads out" in note.text_content()
    assert page.locator("#lens-view .lens-grid").count() == 1  # the rest of the card is drawn


@pytest.fixture(scope="module")
def mlm_server(tmp_path_factory):
    folder = make_tiny_bert_mlm(tmp_path_factory.mktemp("m") / "tiny-bert-mlm")
    settings = Settings(device="cpu", builtin_model=False, models=str(folder))
    with served(create_app(settings)) as url:
        yield url


def test_a_masked_lm_encoder_predicts_but_says_why_nothing_is_attributed(page, mlm_server):
    """An encoder with its masked-LM head: the card draws its predictions (the token at each
    position), and the panel the server's reason for no logit attribution."""
    open_sentence(page, mlm_server + "/", "the cat sat on the mat")
    page.locator("#lens-view .lens-grid").wait_for()
    note = page.locator("#pushed-view .pushed-unavailable")
    note.wait_for()
    assert note.text_content().startswith(
        "Nothing to attribute here: model tiny-bert-mlm has no unembedding"
    )
    assert page.locator("#pushed-view .pushed-chart").count() == 0


# GPT-2's shape: 12 layers x 12 heads, 3 + 12 x 14 = 171 components; drawn from a part in the
# compact form as TraceParts gives it, timed in the page.
GPT2_RENDER = """() => {
  const L = 12, H = 12, components = [{name: "embed", kind: "embed", layer: null, head: null},
    {name: "pos", kind: "pos", layer: null, head: null}];
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) components.push({name: `L${l}.H${h}`, kind: "head", layer: l, head: h});
    components.push({name: `L${l}.attn_bias`, kind: "attn_bias", layer: l, head: null});
    components.push({name: `L${l}.mlp`, kind: "mlp", layer: l, head: null});
  }
  components.push({name: "bias", kind: "bias", layer: null, head: null});
  const values = Float64Array.from(components, (_, i) => Math.sin(i * 1.7) * (1 + (i % 7)));
  const logit = values.reduce((s, v) => s + v, 0);
  const part = {meta: {logit_attribution: {position: 3, token: 11, versus: null, components, logit}},
    arrays: {"logit_attribution.values": {dtype: "F64", shape: [values.length], data: values}}};
  const m = window.__module, host = document.getElementById("pushed-host");
  const choices = {next: {id: 12, label: " b"}, top: {id: 11, label: " a"}};
  const t0 = performance.now();
  m.render(host, {tokens: ["a", "b", "c", "d", "e"], choices, attribution: m.attributionOf(part)},
    {query: 3, choice: "top"});
  const ms = performance.now() - t0;
  const drawn = [...host.querySelectorAll("rect.pushed-bar")].map((r) => +r.dataset.value);
  return {ms, drawn, values: [...values], rows: host.querySelectorAll("tbody tr").length};
}"""


def test_gpt2s_shape_draws_fast(page, live_server):
    mount_view(page, live_server + "/", "pushed-host", "/static/js/views/pushed.js", 1200)
    got = page.evaluate(GPT2_RENDER)
    assert got["drawn"] == got["values"] and len(got["drawn"]) == 171
    assert got["rows"] == 3 + 12  # embed, pos and the biases; then a row per layer
    assert got["ms"] < 1000, got["ms"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    host = page.locator("#pushed-host")
    snap(host, path=str(SHOTS / "pushed-gpt2-shape-1280.png"))
    host.evaluate("h => { h.style.width = '440px'; }")
    page.evaluate(GPT2_RENDER)
    snap(host, path=str(SHOTS / "pushed-gpt2-shape-480.png"))
    print(f"GPT-2's shape drawn in {got['ms']:.1f} ms")
