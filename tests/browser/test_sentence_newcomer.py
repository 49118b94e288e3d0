"""What a newcomer trips on in sentence mode (issue 16): the token options reach every view
(or the view says why not), one 1-based numbering, long texts' trajectories start with a few
paths, and an encoder says why it cannot generate."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.helpers import (
    MODEL,
    act,
    assert_close,
    f32,
    large_heatmap,
    open_sentence,
    wait_for_trace,
)
from tests.browser.test_long import LONG

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

TEXT = "The animal didn't cross the street because it was too tired"
WORDS = [
    "the",
    "animal",
    "didn't",
    "cross",
    "the",
    "street",
    "because",
    "it",
    "was",
    "too",
    "tired",
]

QK = """() => { const q = document.querySelector('#qk-view .qk').__qk;
  return {rows: q.rows, weights: q.weights, scores: q.scores,
          title: document.querySelector('#qk-view .qk-title').textContent,
          about: [...document.querySelectorAll('#qk-view .qk-about')].map((p) => p.textContent),
          tip: q.tipAt('row', q.rows.indexOf(+document.querySelector('#qk-view .qk-plot').dataset.query), -1)}; }"""


@pytest.fixture(scope="module")
def models(live_server) -> dict:
    """The models a new visitor is offered, as the page's own fresh browser context is: the
    session's ``api`` client is a visitor of its own, whose trained runs only it is shown."""
    return httpx.get(live_server + "/api/models", timeout=60).json()


def traj_plot(page) -> list[dict]:
    return page.evaluate(
        "() => JSON.parse(JSON.stringify(document.querySelector('#traj-view .js-plotly-plot').data))"
    )


def test_token_options_reach_the_query_key_view_trajectories_and_count(page, live_server, api):
    open_sentence(page, live_server + "/", TEXT)
    trace = api.post("/api/trace", json={"model": MODEL, "text": TEXT}).json()
    n = trace["n"]
    assert trace["tokens"][3:6] == ["didn", "'", "t"]
    assert page.locator("#s-count").text_content() == f"{n} / 512 tokens"
    act(page, lambda: page.check("#s-hide-special"))
    act(page, lambda: page.check("#s-merge-words"))
    # The header counts what the views show, and the model's tokens against the cap.
    assert page.locator("#s-count").text_content() == f"11 words shown · {n} / 512 tokens"
    # "didn't" is one word (the text's, not the pre-tokenizer's "didn ' t").
    assert large_heatmap(page)["labels"] == WORDS

    # Query-key view: no special token to pick or to key; weights renormalised by the server.
    special = [i for i in range(n) if trace["special"][i]]
    options = page.locator("#qk-query option").all_text_contents()
    assert "1. [CLS]" not in options and f"{n}. [SEP]" not in options and len(options) == n - 2
    act(page, lambda: page.select_option("#qk-query", "3"))  # "didn", a piece of "didn't"
    qk = page.evaluate(QK)
    kept = [j for j in range(n) if j not in special]
    assert qk["rows"] == kept
    row = f32(trace["attentions"][0][0][3])
    total = sum(row[j] for j in kept)
    assert_close(qk["weights"], [row[j] / total for j in kept], tol=1e-12)
    assert_close(qk["scores"], f32([trace["scores"][0][0][3][j] for j in kept]), tol=0)
    assert "renormalised over the keys shown" in " ".join(qk["about"])
    assert any(
        "Word pieces are not merged in this view" in a and "“didn't” is 3 pieces, tokens 4–6" in a
        for a in qk["about"]
    )

    # Trajectories: a row per word, a word's point the mean of its pieces', no special tokens.
    proj = api.post(
        "/api/trace", json={"model": MODEL, "text": TEXT}, params={"fields": "projection"}
    ).json()["projection"]["coords"]
    chips = page.locator("#traj-tokens button.token-chip").all_text_contents()
    assert chips == WORDS
    paths = [t for t in traj_plot(page) if str(t.get("uid", "")).startswith("traj-")]
    assert len(paths) == 11
    didnt = paths[2]
    labels = page.evaluate(
        "() => document.querySelector('#traj-view .js-plotly-plot').layout.annotations"
        ".filter((a) => a.name === 'token-label').map((a) => [a.text, a.x, a.y])"
    )
    assert labels[2] == ["didn't", didnt["x"][-1], didnt["y"][-1]]  # at its path's end
    for c, axis in enumerate("xy"):
        want = [sum(f32(layer[i][c]) for i in (3, 4, 5)) / 3 for layer in proj]
        assert_close(didnt[axis], want, tol=1e-9)


def test_one_numbering_from_1_in_picker_header_and_hover(page, live_server):
    open_sentence(page, live_server + "/", TEXT)
    act(page, lambda: page.select_option("#qk-query", "10"))  # "it"
    picked = page.locator("#qk-query option:checked").text_content()
    assert picked == "11. it"
    qk = page.evaluate(QK)
    assert qk["title"].startswith("Query it token 11 ·")
    assert qk["tip"][0] == "key it (token 11)"
    canvas_label = page.evaluate(
        "() => document.querySelector('#qk-view .qk').__qk.tipAt('q', 0, 0)[0]"
    )
    assert canvas_label == "query it (token 11) · dim 0"


def test_a_long_text_starts_with_a_few_trajectories_and_has_none(page, live_server, api):
    open_sentence(page, live_server + "/")
    before = int(page.evaluate("+document.documentElement.dataset.traces"))
    page.fill("#s-text", LONG)
    wait_for_trace(page, before)
    page.wait_for_selector("#traj-view .main-svg")
    n = api.post(
        "/api/trace", json={"model": MODEL, "text": LONG}, params={"fields": "entropy_mean"}
    ).json()["n"]
    assert n > 400
    paths = [t for t in traj_plot(page) if str(t.get("uid", "")).startswith("traj-")]
    # A few paths from the query (the first ordinary token) on, each its own colour.
    assert [t["uid"] for t in paths] == [f"traj-{i}" for i in range(1, 9)]
    assert len({t["line"]["color"] for t in paths}) == 8
    pressed = page.locator('#traj-tokens button.token-chip[aria-pressed="true"]')
    assert pressed.count() == 8
    note = page.locator("#traj-view .traj-note").text_content()
    assert f"8 of {n} tokens shown" in note and "starts with 8 tokens from the query on" in note
    # none: nothing drawn, said so.
    act(page, lambda: page.click("#traj-none"))
    assert [t for t in traj_plot(page) if str(t.get("uid", "")).startswith("traj-")] == []
    assert pressed.count() == 0
    assert "No tokens picked" in str(
        page.evaluate(
            "() => JSON.stringify(document.querySelector('#traj-view .js-plotly-plot').layout.annotations)"
        )
    )
    # all: every path, coloured by position in bands, with the scale in words.
    act(page, lambda: page.click("#traj-all"))
    bands = [t for t in traj_plot(page) if str(t.get("uid", "")).startswith("traj-band-")]
    assert len(bands) == 8 and len({t["line"]["color"] for t in bands}) == 8
    drawn = sum(t["x"].count(None) for t in bands)
    assert drawn == n
    scale = page.locator("#traj-view .traj-scale")
    assert (
        scale.is_visible()
        and scale.text_content() == f"token 1token {n}colour: position in the text"
    )
    # The link keeps the choice.
    assert page.evaluate("location.hash").startswith("#s=")


def test_an_encoder_says_why_it_cannot_generate_and_which_models_can(page, live_server, models):
    open_sentence(page, live_server + "/", TEXT)
    causal = [m["name"] for m in models["models"] if m["causal"]]
    assert causal and MODEL not in causal
    note = page.locator("#s-gen-note")
    assert page.locator("#s-gen-row").is_hidden()
    assert note.is_visible()
    text = note.text_content()
    assert "Generate needs a causal model" in text and f"{MODEL} is an encoder" in text
    # The causal models are a chooser, not a list of names (issue 41); choosing one switches.
    chooser = page.locator("#s-gen-causal")
    assert chooser.is_visible()
    offered = chooser.locator("option").evaluate_all("os => os.map((o) => o.value)")
    assert offered == ["", *causal]
    before = int(page.evaluate("+document.documentElement.dataset.traces"))
    page.select_option("#s-gen-causal", causal[0])
    wait_for_trace(page, before)
    assert page.locator("#s-model").input_value() == causal[0]
    assert note.is_hidden() and page.locator("#s-gen-go").is_visible()
