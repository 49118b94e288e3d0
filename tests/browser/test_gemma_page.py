"""A Gemma-2-style folder in the browser (attnviz serve --model FOLDER): the model, head,
query-key and trajectory views are drawn from its trace, a sliding layer's weights stop at the
window, and the query-key view says its weights are soft-capped and explains them: softmax over
the keys of c * tanh(score / c)."""

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
    snap,
    views_drawn,
    wait_for_views,
)
from tests.support.checkpoints_gemma import GEMMA_STYLES, WINDOW, make_tiny_gemma
from tests.support.servers import served

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

TEXT = (
    "The animal didn't cross the street because it was too tired. "
    "I sat on the river bank and watched the water."
)
NAME = "tiny-gemma2"
CAP = GEMMA_STYLES["gemma2"]["attn_logit_softcapping"]  # 1.5: tanh bends the scores


@pytest.fixture(scope="module")
def gemma_server(tmp_path_factory):
    folder = make_tiny_gemma(tmp_path_factory.mktemp("m") / NAME, "gemma2")
    settings = Settings(device="cpu", builtin_model=False, models=str(folder))
    with served(create_app(settings)) as url:
        yield url


@pytest.fixture(scope="module")
def trace(gemma_server) -> dict:
    response = httpx.post(
        f"{gemma_server}/api/trace", json={"model": NAME, "text": TEXT}, timeout=60
    )
    assert response.status_code == 200, response.text
    return response.json()


def _open_cell(page, layer: int, head: int) -> None:
    before = views_drawn(page)
    page.click(f'#mv-grid button.mv-cell[data-layer="{layer}"][data-head="{head}"]')
    wait_for_views(page, before)


def test_the_trace_says_how_the_weights_are_made(trace):
    """The meta the views read: Gemma 2's scale, soft-cap and windows."""
    attention = trace["attention"]
    assert attention["softcap"] == CAP
    assert attention["scale"] == 24**-0.5 and attention["scale_label"] == "÷ √24"
    assert attention["windows"] == [WINDOW, None, WINDOW]  # sliding, full, sliding
    assert trace["n"] > WINDOW + 4


def test_a_gemma2_model_in_every_view(page, gemma_server, trace):
    open_sentence(page, gemma_server + "/", TEXT)
    assert page.locator("#s-model-info").text_content().startswith("GEMMA2 · 3 layers × 4 heads")
    n = trace["n"]

    # Model view: 3 x 4 thumbnails; layer 1 (sliding), head 2 opened large, the trace's weights,
    # none beyond the window.
    assert page.locator("#mv-grid button.mv-cell canvas").count() == 12
    page.locator("#model-view-card").scroll_into_view_if_needed()
    _open_cell(page, 0, 1)
    large = large_heatmap(page)
    weights = trace["attentions"][0][1]
    assert_close(large["z"], f32(weights), tol=0)
    assert large["labels"] == trace["tokens"] and large["title"] == "Layer 1, head 2"
    assert all(weights[i][j] == 0 for i in range(n) for j in range(i - WINDOW + 1))
    assert all(weights[i][j] > 0 for i in range(n) for j in range(max(0, i - WINDOW + 1), i + 1))

    # Head view: the same layer and head, every line from the trace's weights.
    svg = page.locator("#head-view svg.hv")
    assert svg.get_attribute("data-layer") == "0" and svg.get_attribute("data-heads") == "1"
    assert_head_lines_match(page, {1: weights})

    # Query-key view: the last token as the query; the formula says the scale and the soft-cap,
    # the notes the window, and the weights drawn are the soft-capped scores' softmax.
    assert page.locator("#qk-layer").input_value() == "0"
    assert page.locator("#qk-head").input_value() == "1"
    choose(page, "#qk-query", str(n - 1))
    formula = page.locator("#qk-view .qk-formula").text_content()
    assert formula.startswith("score = Σ qₖ·kₖ ÷ √24")
    assert f"soft-capped scores, {CAP} · tanh(score / {CAP})" in formula
    notes = page.locator("#qk-view .qk-about").all_text_contents()
    assert any(f"only the last {WINDOW} tokens" in note for note in notes), notes
    drawn = page.evaluate(
        """() => { const d = document.querySelector('#qk-view .qk').__qk;
          return {rows: d.rows, scores: d.scores, weights: d.weights, masked: d.masked,
                  tip: d.tipAt('row', d.rows.length - 1, -1)}; }"""
    )
    assert drawn["rows"] == list(range(n))
    assert drawn["masked"] == [j <= n - 1 - WINDOW for j in range(n)]
    capped = [CAP * math.tanh(s / CAP) for s in drawn["scores"] if s is not None]
    total = sum(math.exp(c) for c in capped)
    explained = [math.exp(c) / total for c in capped]
    seen = [w for w, m in zip(drawn["weights"], drawn["masked"], strict=True) if not m]
    assert seen == pytest.approx(explained, abs=1e-6)
    assert seen == pytest.approx(f32(trace["attentions"][0][1][n - 1][n - WINDOW :]), abs=0)
    assert any(line.startswith(f"capped: {CAP} · tanh(score / {CAP})") for line in drawn["tip"])
    page.locator("#qk-card").scroll_into_view_if_needed()
    snap(page.locator("#qk-card"), path=str(ARTIFACTS / "gemma2-qk.png"))

    # Trajectories: one chip per token and paths drawn.
    assert page.locator("#traj-tokens button.token-chip").count() == n
    paths = page.evaluate("() => document.querySelector('#traj-view .js-plotly-plot').data.length")
    assert paths >= n
    page.mouse.move(0, 0)
    screenshot(page, "gemma2-sentence-1280.png")
