"""Models served through transformers, in the browser (attnviz serve --model FOLDER, families
attnviz's engine has no conversion for): the model line says what runs them; StarCoder2 (its
attention through AttentionInterface) is drawn in the model, head, query-key and trajectory
views from transformers' numbers; BLOOM (ALiBi, its own attention) in the model, head and
trajectory views, and its query-key view says why it is unavailable instead of drawing
nothing; ModernBERT's local layers (an encoder's window, issue 42) say in the query-key view
that a query sees the keys on each side of it, not "the last" ones."""

from __future__ import annotations

import math

import httpx
import pytest

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.browser.helpers import (
    ARTIFACTS,
    assert_close,
    assert_head_lines_match,
    choose,
    f32,
    large_heatmap,
    open_sentence,
    screenshot,
    select_and_wait,
    snap,
    views_drawn,
    wait_for_views,
)
from tests.support.checkpoints import SENTENCES
from tests.support.checkpoints_bridge import (
    MODERNBERT_WINDOW,
    WINDOW,
    make_tiny_bloom,
    make_tiny_modernbert,
    make_tiny_starcoder2,
)
from tests.support.servers import served

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

TEXT = " ".join(SENTENCES[:2])


@pytest.fixture(scope="module")
def bridge_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("m")
    folders = [make_tiny_starcoder2(root / "tiny-starcoder2"), make_tiny_bloom(root / "tiny-bloom"),
               make_tiny_modernbert(root / "tiny-modernbert")]  # fmt: skip
    settings = Settings(device="cpu", builtin_model=False, models=":".join(str(f) for f in folders))
    with served(create_app(settings)) as url:
        yield url


def trace_of(url: str, model: str) -> dict:
    response = httpx.post(f"{url}/api/trace", json={"model": model, "text": TEXT}, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def open_cell(page, layer: int, head: int) -> None:
    before = views_drawn(page)
    page.click(f'#mv-grid button.mv-cell[data-layer="{layer}"][data-head="{head}"]')
    wait_for_views(page, before)


def test_starcoder2_through_transformers_in_every_view(page, bridge_server):
    trace = trace_of(bridge_server, "tiny-starcoder2")
    n = trace["n"]
    assert n > 3 * WINDOW
    open_sentence(page, bridge_server + "/", TEXT)
    assert (
        page.locator("#s-model-info")
        .text_content()
        .startswith("STARCODER2 · through transformers · 2 layers × 4 heads")
    )

    # Model view: 2 x 4 thumbnails; layer 2, head 2 large: transformers' weights, exactly.
    assert page.locator("#mv-grid button.mv-cell canvas").count() == 8
    # Its heads are knocked out as the engine's are (tests/browser/test_knockout.py).
    assert page.locator("#mv-knock").is_enabled()
    open_cell(page, 1, 1)
    large = large_heatmap(page)
    weights = trace["attentions"][1][1]
    assert_close(large["z"], f32(weights), tol=0)
    assert large["title"] == "Layer 2, head 2"

    # Head view: every line from those weights.
    assert_head_lines_match(page, {1: weights})

    # Query-key view, the last token as the query: the keys past the window masked, the scores
    # (÷ √8) explaining the weights, and a note on where q and k come from.
    choose(page, "#qk-query", str(n - 1))
    formula = page.locator("#qk-view .qk-formula").text_content()
    assert formula.startswith("score = Σ qₖ·kₖ ÷ √8")
    notes = page.locator("#qk-view .qk-about").all_text_contents()
    assert any(note.startswith("Served through transformers: q and k are") for note in notes)
    assert any(f"only the last {WINDOW} tokens" in note for note in notes), notes
    drawn = page.evaluate(
        """() => { const d = document.querySelector('#qk-view .qk').__qk;
          return {rows: d.rows, sums: d.sums, scores: d.scores, weights: d.weights,
                  masked: d.masked}; }"""
    )
    assert drawn["masked"] == [j <= n - 1 - WINDOW for j in range(n)]
    seen = [(s, w) for s, w, m in zip(drawn["sums"], drawn["weights"], drawn["masked"], strict=True)
            if not m]  # fmt: skip
    total = sum(math.exp(s / math.sqrt(8)) for s, _ in seen)
    assert [w for _, w in seen] == pytest.approx(
        [math.exp(s / math.sqrt(8)) / total for s, _ in seen], abs=1e-5
    )
    assert [w for _, w in seen] == pytest.approx(f32(weights[n - 1][n - WINDOW :]), abs=0)
    page.locator("#qk-card").scroll_into_view_if_needed()
    snap(page.locator("#qk-card"), path=str(ARTIFACTS / "bridge-starcoder2-qk.png"))

    # Trajectories: a chip per token and a path drawn for each shown.
    assert page.locator("#traj-tokens button.token-chip").count() == n
    assert page.evaluate("() => document.querySelector('#traj-view .js-plotly-plot').data.length")
    page.mouse.move(0, 0)
    screenshot(page, "bridge-starcoder2-1280.png")


def test_bloom_is_drawn_and_its_query_key_view_says_why_not(page, bridge_server, console):
    trace = trace_of(bridge_server, "tiny-bloom")
    open_sentence(page, bridge_server + "/", TEXT)
    select_and_wait(page, "#s-model", "tiny-bloom")
    assert (
        page.locator("#s-model-info")
        .text_content()
        .startswith("BLOOM · through transformers · 2 layers × 4 heads")
    )
    # Model and head views: its own weights.
    assert page.locator("#mv-grid button.mv-cell canvas").count() == 8
    open_cell(page, 0, 2)
    weights = trace["attentions"][0][2]
    assert_close(large_heatmap(page)["z"], f32(weights), tol=0)
    assert_head_lines_match(page, {2: weights})
    # Query-key view: a note in its place, naming what is missing and why.
    note = page.locator("#qk-view .qk-unavailable")
    assert note.count() == 1 and page.locator("#qk-view canvas").count() == 0
    text = note.text_content()
    assert "The query-key view is not available for this model." in text
    assert "tiny-bloom (bloom, served through transformers) records no queries or keys" in text
    assert "its attention (ALiBi) does not go through transformers' AttentionInterface" in text
    assert "queries, keys, values and scores" in text
    # Another head or query keeps the note (and asks the server for nothing it cannot give).
    choose(page, "#qk-head", "3")
    assert page.locator("#qk-view .qk-unavailable").count() == 1
    page.locator("#qk-card").scroll_into_view_if_needed()
    snap(page.locator("#qk-card"), path=str(ARTIFACTS / "bridge-bloom-qk.png"))
    # Trajectories from its hidden states.
    assert page.locator("#traj-tokens button.token-chip").count() == trace["n"]
    page.mouse.move(0, 0)
    screenshot(page, "bridge-bloom-1280.png")
    assert not console.unexpected()


def test_an_encoders_window_reads_on_each_side_of_the_query(page, bridge_server, console):
    """ModernBERT's local layers keep the keys within 8 positions on each side (a window of 9):
    the query-key view's note says so in the trace's own words, and a key past it on either
    side reads masked outside the window (an encoder masks no key for being after the query)."""
    trace = trace_of(bridge_server, "tiny-modernbert")
    n, w = trace["n"], MODERNBERT_WINDOW + 1
    assert trace["attention"]["windows"] == [None, w, w] and not trace["causal"]
    i = n // 2
    assert i - w >= 0 and i + w < n  # keys past the window on both sides
    open_sentence(page, bridge_server + "/", TEXT)
    select_and_wait(page, "#s-model", "tiny-modernbert")
    choose(page, "#qk-layer", "1")
    choose(page, "#qk-query", str(i))
    notes = page.locator("#qk-view .qk-about").all_text_contents()
    said = (
        f"This layer slides a window: a query sees only the {MODERNBERT_WINDOW} tokens on each side"
    )
    assert any(note.startswith(said) for note in notes), notes
    assert trace["attention"]["window_notes"][1] in " ".join(notes)
    assert not any("the last" in note for note in notes), notes
    drawn = page.evaluate(
        """([before, after]) => { const d = document.querySelector('#qk-view .qk').__qk;
          return {rows: d.rows, masked: d.masked, before: d.tipAt('p', d.rows.indexOf(before), 0),
                  after: d.tipAt('p', d.rows.indexOf(after), 0)}; }""",
        [i - w, i + w],
    )
    assert drawn["rows"] == list(range(n))
    assert drawn["masked"] == [abs(i - j) >= w for j in range(n)]
    assert drawn["before"][0].endswith("masked (outside this layer's window)")
    assert drawn["after"][0].endswith("masked (outside this layer's window)")
    card = page.locator("#qk-card")
    card.scroll_into_view_if_needed()
    snap(card, path=str(ARTIFACTS / "bridge-modernbert-qk-1280.png"))
    page.set_viewport_size({"width": 480, "height": 900})
    card.scroll_into_view_if_needed()
    snap(card, path=str(ARTIFACTS / "bridge-modernbert-qk-480.png"))
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 480
    assert not console.unexpected()
