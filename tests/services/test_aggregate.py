"""Head aggregates of a trace (mean and max over a layer's heads, attention rollout) against
closed forms written here in plain Python, on toy models with and without the residual and on
MiniLM through the API, with the token options."""

from __future__ import annotations

import pytest
import torch

from attnviz.capture import ComputedTrace, capture_trace
from attnviz.capture.fields.aggregates import RULES as AGGREGATE_RULES
from attnviz.schemas.trace import TraceQuery
from attnviz.services.parts import select
from tests.support.models import make_model

X = torch.tensor(
    [[0.3, -1.2, 0.5, 0.8], [1.0, 0.4, -0.7, 0.1], [-0.5, 0.9, 0.2, -1.1], [0.6, 0.6, 1.3, -0.2]],
    dtype=torch.float64,
)


def _matmul(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    return [[sum(a[i][k] * b[k][j] for k in range(len(b))) for j in range(len(b[0]))]
            for i in range(len(a))]  # fmt: skip


def rollout_oracle(patterns: list[list[list[list[float]]]], residual: bool) -> list:
    """Abnar and Zuidema's rollout in plain Python: per layer the mean over heads, with the
    residual (A + I) / 2, multiplied through the layers."""
    out: list = []
    for heads in patterns:
        n = len(heads[0])
        mean = [[sum(h[i][j] for h in heads) / len(heads) for j in range(n)] for i in range(n)]
        if residual:
            mean = [[(mean[i][j] + (i == j)) / 2 for j in range(n)] for i in range(n)]
        out.append(mean if not out else _matmul(mean, out[-1]))
    return out


@pytest.mark.parametrize("residual", [True, False])
def test_aggregates_equal_their_closed_forms(residual):
    model = make_model(d_model=4, n_layers=3, n_heads=2, projections="random", seed=3,
                       residual=residual, causal=True)  # fmt: skip
    tensors = capture_trace(model, X[None])
    trace = ComputedTrace({"mode": "toy", "tokens": list("abcd")}, tensors)
    part = select(trace, TraceQuery(fields=",".join(AGGREGATE_RULES)))
    patterns = [tensors.pattern(i).tolist() for i in range(3)]
    want = rollout_oracle(patterns, residual)
    assert torch.allclose(
        part.arrays["rollout"], torch.tensor(want, dtype=torch.float64), atol=1e-14
    )
    rows = part.arrays["rollout"].sum(-1)
    assert torch.allclose(rows, torch.ones_like(rows), atol=1e-14)  # still a distribution
    for layer, heads in enumerate(patterns):
        mean = [[(heads[0][i][j] + heads[1][i][j]) / 2 for j in range(4)] for i in range(4)]
        top = [[max(heads[0][i][j], heads[1][i][j]) for j in range(4)] for i in range(4)]
        got = part.arrays["head_mean"][layer]
        assert torch.allclose(got, torch.tensor(mean, dtype=torch.float64), atol=1e-15)
        assert part.arrays["head_max"][layer].tolist() == top
    assert part.meta["rules"] == AGGREGATE_RULES
    # One layer asked for, one layer sent.
    one = select(trace, TraceQuery(fields="rollout", layer=1))
    assert torch.equal(one.arrays["rollout"][0], part.arrays["rollout"][1])


def test_rollout_under_the_token_options_is_the_options_applied_to_it(client):
    text = "Unbelievably, the river bank"
    body = {"model": "all-MiniLM-L6-v2", "text": text}
    full = client.post("/api/trace?fields=rollout,attentions&layer=5", json=body).json()
    hidden = client.post(
        "/api/trace?fields=rollout,head_mean&layer=5&hide_special=true&merge_words=true", json=body
    ).json()
    from attnviz.capture.tokenview import token_view

    tv = token_view(full["tokens"], special=full["special"], words=full["words"],
                    offsets=full["offsets"], text=text, hide_special=True, merge_words=True)  # fmt: skip
    want = tv.apply(torch.tensor(full["rollout"][0], dtype=torch.float64))
    got = torch.tensor(hidden["rollout"][0], dtype=torch.float64)
    assert got.shape == (len(tv.labels), len(tv.labels))
    assert torch.allclose(got, want, atol=1e-12)
    assert hidden["rules"]["rollout"].startswith("Attention rollout")
    assert hidden["token_view"]["labels"] == tv.labels


def test_rollout_past_its_bound_is_refused_by_name(monkeypatch):
    from attnviz.errors import TraceError
    from attnviz.limits import LIMITS

    model = make_model(d_model=4, n_layers=3, n_heads=2, projections="random", residual=True)
    trace = ComputedTrace({"mode": "toy", "tokens": list("abcd")}, capture_trace(model, X[None]))
    # 2 * 4^3 operations a layer: layer 0 alone is 128, all three 384.
    monkeypatch.setattr(LIMITS, "max_rollout_flops", 200.0)
    assert select(trace, TraceQuery(fields="rollout", layer=0)).arrays["rollout"].shape == (1, 4, 4)
    with pytest.raises(
        TraceError, match=r"^fields: rollout through 3 layers of 4 tokens is 3\.8e\+02"
    ):
        select(trace, TraceQuery(fields="rollout"))
