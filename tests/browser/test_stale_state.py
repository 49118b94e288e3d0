"""Races a learner could see (issue 41): an older trace's draw landing over a newer one."""

from __future__ import annotations

import pytest

from tests.browser.helpers import (
    assert_close,
    cell,
    choose,
    open_app,
    open_sentence,
    plot_layout,
    quoted_token,
    raw_attention,
    screenshot,
    select_and_wait,
    text_trace,
    trace_by_uid,
    traces_drawn,
    wait_for_trace,
)

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

# Hold the weights plot's next draw once Plotly has drawn it (as a slow draw or a resize, whose
# debounce is 100 ms, holds it), until the test lets it go: the order of draws is forced. Every
# draw of the weights plot is logged (its first token), in the order they land.
HOLD_NEXT_WEIGHTS_DRAW = """() => {
  const P = window.Plotly;
  const react = P.react;
  window.__gate = new Promise((go) => { window.__release = go; });
  window.__held = 0;
  window.__landed = [];
  let armed = true;
  P.react = async function (el, ...rest) {
    const out = await react.call(this, el, ...rest);
    if (el.id === 'weights-plot') window.__landed.push(rest[1].xaxis.ticktext[0]);
    if (armed && el.id === 'weights-plot') {
      armed = false;
      window.__held += 1;
      await window.__gate;
    }
    return out;
  };
}"""


def test_an_older_trace_draw_never_lands_over_the_newer_one(page, live_server, presets):
    """A learner's edit traced, then the next step's table: the edit's draw, still under way
    when the next table's trace is drawn, must not land over it (shots 016, 017 of the walk)."""
    open_app(page, live_server + "/")
    select_and_wait(page, "#preset", "two-heads")  # 11 tokens: the heatmaps one above the other
    page.evaluate(HOLD_NEXT_WEIGHTS_DRAW)
    # The edit: its weights are drawn, then held mid-draw (before the cells' font is fitted).
    cell(page, 1, 0).fill("1.5")
    page.wait_for_function("() => window.__held === 1")
    # The next table (5 tokens, side by side), traced and drawn while the older draw is held.
    page.select_option("#preset", "apple-banana")
    page.wait_for_function(
        "() => document.getElementById('weights-plot').layout.xaxis.ticktext[0] === 'An'"
    )
    before = traces_drawn(page)
    page.evaluate("() => window.__release()")
    wait_for_trace(page, before)  # the older draw has finished too: nothing is pending
    screenshot(page, "stale-weights-after-release.png")
    # Once the newer table was drawn, no draw of the older one landed (not even to refit it).
    landed = page.evaluate("() => window.__landed")
    assert landed[landed.index("An") :] == ["An"] * len(landed[landed.index("An") :]), landed
    table = next(p for p in presets["presets"] if p["id"] == "apple-banana")
    weights = trace_by_uid(page, "weights-plot", "weights")
    assert_close(weights["z"], raw_attention(table["embeddings"])["weights"], tol=1e-5)
    layout = plot_layout(page, "weights-plot")
    assert layout["xaxis"]["ticktext"] == table["tokens"]
    # The plot's title and its text alternative say the same mean entropy.
    summary = page.locator("#attention-card").get_by_text("Weights, layer 1, head 1: mean entropy")
    said = summary.first.text_content().split("mean entropy ")[1].split(" nats")[0]
    assert f"mean entropy {said} nats" in layout["title"]["text"]


SENTENCE = "I sat on the river bank"


def lens_heading(page) -> str:
    return page.locator("#lens-view .lens-sub").first.text_content()


def test_a_model_switch_opens_on_the_models_own_query(page, live_server, api):
    """A query chosen under one model is a position in its tokens: the next model's Predictions
    open where a first load of that model does (shot 092 of the walk)."""
    open_sentence(page, live_server + "/", SENTENCE)
    choose(page, "#qk-query", "4")  # MiniLM's "the" (after [CLS])
    before = traces_drawn(page)
    page.select_option("#s-model", "tiny-gpt2")
    wait_for_trace(page, before)
    trace = text_trace(api, SENTENCE, "tiny-gpt2")
    first = next(i for i, s in enumerate(trace["special"]) if not s)  # a first load's query
    assert first != 4
    tokens = trace["tokens"]
    assert lens_heading(page).startswith(
        f"Next after {quoted_token(tokens[first])} (token {first + 1})"
    )
    # A query chosen under this model stays while the model does (a view choice, no new trace).
    choose(page, "#qk-query", "3")
    assert lens_heading(page).startswith(f"Next after {quoted_token(tokens[3])} (token 4)")


def test_after_generate_the_count_counts_the_box(page, live_server, api):
    """Generate leaves the text box as it is (docs/sentence.md): the count under it counts the
    box's tokens, and says apart how many the model wrote (shot 094 of the walk)."""
    open_sentence(page, live_server + "/", SENTENCE)
    before = traces_drawn(page)
    page.select_option("#s-model", "tiny-gpt2")
    wait_for_trace(page, before)
    page.fill("#s-gen-steps", "5")
    before = traces_drawn(page)
    page.click("#s-gen-go")
    wait_for_trace(page, before)
    plain = text_trace(api, SENTENCE, "tiny-gpt2")
    cap = next(m for m in api.get("/api/models").json()["models"] if m["name"] == "tiny-gpt2")[
        "max_tokens"
    ]
    assert page.locator("#s-text").input_value() == SENTENCE
    count = page.locator("#s-count").text_content()
    assert count == f"{plain['n']} / {cap} tokens + 5 written by the model", count
    # Only the text again: the count is the box's alone.
    before = traces_drawn(page)
    page.click("#s-gen-clear")
    wait_for_trace(page, before)
    assert page.locator("#s-count").text_content() == f"{plain['n']} / {cap} tokens"
    screenshot(page, "generate-count-1280.png")
