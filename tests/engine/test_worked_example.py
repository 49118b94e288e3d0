"""The article's worked example and its collapse, as printed in 004."""

import pytest
import torch

from attnviz.engine import capture
from attnviz.presets import APPLE_X
from tests.support.models import make_model

X = torch.tensor(APPLE_X, dtype=torch.float64)[None]  # (1, 5, 3): An, apple, and, a, banana
AN, APPLE, BANANA = 0, 1, 4


def run(layers: int = 1):
    model = make_model(d_model=3, n_layers=layers)
    with torch.inference_mode(), capture(model) as cache:
        out = model(X)[0]
    return out, cache


def test_score_matrix_is_the_articles():
    _, cache = run()
    scores = cache["blocks.0.attn.hook_scores"][0, 0]
    printed = [
        [0.58, 0, 0.29, 0.58, 0],
        [0, 0.65, 0, 0, 0.37],
        [0.29, 0, 0.14, 0.29, 0],
        [0.58, 0, 0.29, 0.58, 0],
        [0, 0.37, 0, 0, 0.37],
    ]
    assert torch.allclose(scores, torch.tensor(printed, dtype=torch.float64), atol=0.005)
    assert torch.allclose(scores, X[0] @ X[0].T / 3**0.5, rtol=0, atol=1e-15)


def test_apple_row_weights():
    _, cache = run()
    w = cache["blocks.0.attn.hook_pattern"][0, 0, APPLE]
    assert w.tolist() == pytest.approx([0.16, 0.30, 0.16, 0.16, 0.23], abs=0.005)


@pytest.mark.parametrize(
    ("token", "after"),
    [(APPLE, [0.21, 0.42, 0.39]), (BANANA, [0.17, 0.39, 0.42]), (AN, [0.10, 0.23, 0.61])],
)
def test_vectors_after_one_pass(token, after):
    out, _ = run()
    assert out[token].tolist() == pytest.approx(after, abs=0.005)


def test_apple_banana_distance_drops_from_0700_to_0059():
    out, _ = run()
    before = (X[0, APPLE] - X[0, BANANA]).norm().item()
    after = (out[APPLE] - out[BANANA]).norm().item()
    assert round(before, 3) == 0.700
    assert round(after, 3) == 0.059


def test_five_layers_collapse_to_the_mean_with_uniform_weights():
    out, cache = run(layers=5)
    pattern = cache["blocks.4.attn.hook_pattern"][0, 0]
    assert torch.allclose(pattern, torch.full((5, 5), 0.2, dtype=torch.float64), atol=1e-9)
    assert torch.allclose(out, out[0].expand(5, 3), atol=1e-9)
    assert out[0].tolist() == pytest.approx([0.14, 0.31, 0.52], abs=0.005)
    # The spread between tokens shrinks at every layer until it is exactly zero.
    spreads = [cache[f"blocks.{i}.hook_resid_post"][0].std(0).sum().item() for i in range(5)]
    assert spreads[0] > spreads[1] > spreads[2] > 0
    assert spreads[-1] == 0.0
