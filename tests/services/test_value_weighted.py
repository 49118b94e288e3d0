"""Value-weighted attention (Kobayashi et al., 2020): ||a_ij v_j W_O^h|| per head and
||sum_h a^h_ij v^h_j W_O^h|| per layer, on a closed form worked by hand, against a direct
computation from MiniLM's own weights, and through the API in both forms."""

from __future__ import annotations

import math

import pytest
import torch

from attnviz.capture import ComputedTrace, capture_trace
from attnviz.capture.fields.aggregates import VALUE_RULES as VALUE_WEIGHTED_AGGREGATES
from attnviz.errors import TraceError
from attnviz.schemas.trace import TraceQuery
from attnviz.services.parts import select
from attnviz.wire.compact import decode
from attnviz.wire.constants import COMPACT_MEDIA_TYPE
from tests.support.models import make_model

# Two heads of two dimensions each on d = 4. W_Q = W_K = 0: every weight is 1/3 (three tokens,
# no mask). W_V = I: head 0's value is (x1, x2), head 1's (x3, x4). W_O sends head 0's to
# (3 x1, 4 x2, 0, 0) and head 1's to (-3 x3, -4 x4, 0, 0): equal values cancel in the sum.
ZERO = [[0.0] * 4 for _ in range(4)]
EYE = [[float(i == j) for j in range(4)] for i in range(4)]
W_O = [[3.0, 0, 0, 0], [0, 4.0, 0, 0], [-3.0, 0, 0, 0], [0, -4.0, 0, 0]]
X = [[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 2.0]]
# ||v_j W_O^h|| by hand: token 0: (3, 4) -> 5 and (-3, -4) -> 5, their sum 0; token 1: (3, 0)
# -> 3 and 0, sum 3; token 2: (0, 4) -> 4 and (0, -8) -> 8, sum (0, -4) -> 4.
HEAD_NORMS = [[5.0, 3.0, 4.0], [5.0, 0.0, 8.0]]
SUM_NORMS = [0.0, 3.0, 4.0]
CUSTOM = {"q": ZERO, "k": ZERO, "v": EYE, "o": W_O}


def closed_trace(causal: bool = False) -> ComputedTrace:
    model = make_model(d_model=4, n_layers=1, n_heads=2, projections="custom", custom=CUSTOM,
                       causal=causal)  # fmt: skip
    x = torch.tensor(X, dtype=torch.float64)[None]
    return ComputedTrace({"mode": "toy", "tokens": list("abc")}, capture_trace(model, x))


def test_value_weighted_attention_equals_its_closed_form():
    trace = closed_trace()
    part = select(trace, TraceQuery(fields="value_weighted,value_weighted_sum,attentions"))
    weights = part.arrays["attentions"]
    assert torch.allclose(weights, torch.full_like(weights, 1 / 3), atol=1e-15)
    per_head = part.arrays["value_weighted"]  # (1, 2, 3, 3)
    want = torch.tensor([[[[n / 3 for n in HEAD_NORMS[h]]] * 3 for h in range(2)]],
                        dtype=torch.float64)  # fmt: skip
    assert per_head.shape == (1, 2, 3, 3)
    assert torch.allclose(per_head, want, rtol=0, atol=1e-14)
    total = part.arrays["value_weighted_sum"]  # (1, 3, 3): heads summed before the norm
    assert torch.allclose(
        total, torch.tensor([[[n / 3 for n in SUM_NORMS]] * 3], dtype=torch.float64), atol=1e-7
    )
    assert total[0, 0, 0] < 1e-7 < per_head[0, 0, 0, 0]  # two heads that cancel
    assert part.meta["rules"]["value_weighted"].startswith("||a_ij v_j W_O^h||")


def test_causal_rows_weigh_only_what_they_see():
    trace = closed_trace(causal=True)
    part = select(trace, TraceQuery(fields="value_weighted,value_weighted_sum"))
    per_head, total = part.arrays["value_weighted"][0], part.arrays["value_weighted_sum"][0]
    for i in range(3):
        for j in range(3):
            a = 1 / (i + 1) if j <= i else 0.0
            for h in range(2):
                assert math.isclose(float(per_head[h, i, j]), a * HEAD_NORMS[h][j], abs_tol=1e-14)
            assert math.isclose(float(total[i, j]), a * SUM_NORMS[j], abs_tol=1e-7)


def test_the_measure_draws_view_thumbs_and_aggregates_from_the_norms():
    trace = closed_trace()
    q = TraceQuery(fields="view,head_mean,head_max,rollout,thumbs", measure="value_weighted")
    part = select(trace, q)
    want = torch.tensor([[[n / 3 for n in HEAD_NORMS[h]]] * 3 for h in range(2)],
                        dtype=torch.float64)  # fmt: skip
    assert torch.allclose(part.arrays["view"][0], want, rtol=0, atol=1e-14)
    assert torch.allclose(part.arrays["head_mean"][0], want.mean(0), rtol=0, atol=1e-14)
    assert torch.allclose(part.arrays["head_max"][0], want.amax(0), rtol=0, atol=1e-14)
    thumbs = part.arrays["thumbs"]
    assert torch.allclose(thumbs["scale"][0], torch.tensor([5 / 3, 8 / 3], dtype=torch.float32))
    assert thumbs["values"][0, 1, 0].tolist() == [159, 0, 255]  # 5/8, 0 and 8/8 of 255, rounded
    # Rollout over ||sum_h||: each row (0, 3, 4) / 7, no residual, one layer.
    rollout = part.arrays["rollout"][0]
    assert torch.allclose(rollout, torch.tensor([[0, 3 / 7, 4 / 7]] * 3, dtype=torch.float64))
    assert part.meta["measure"] == "value_weighted"
    assert part.meta["rules"]["head_mean"] == VALUE_WEIGHTED_AGGREGATES["head_mean"]


def test_value_rollout_with_a_residual_multiplies_through_the_layers():
    model = make_model(d_model=4, n_layers=3, n_heads=2, projections="random", seed=3,
                       residual=True, causal=True)  # fmt: skip
    x = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    t = capture_trace(model, x[None])
    trace = ComputedTrace({"mode": "toy", "tokens": list("abcde")}, t)
    part = select(trace, TraceQuery(fields="rollout,value_weighted_sum", measure="value_weighted"))
    eye, out = torch.eye(5, dtype=torch.float64), None
    for layer in range(3):
        # The layer's sum over heads, straight from the weights, values and W_O.
        p, v = t.pattern(layer), t.qkv(layer)[2]
        w_o = model.blocks[layer].attn.W_O.view(2, 2, 4)
        contrib = torch.einsum("hij,hjc->ijc", p, v @ w_o)  # (T, T, C)
        n = contrib.norm(dim=-1)
        assert torch.allclose(part.arrays["value_weighted_sum"][layer], n, atol=1e-12)
        a = (n / n.sum(-1, keepdim=True) + eye) / 2
        out = a if out is None else a @ out
        assert torch.allclose(part.arrays["rollout"][layer], out, atol=1e-12)


def test_a_trace_without_the_output_projection_refuses_by_name():
    trace = closed_trace()
    trace.tensors.w_o = None
    with pytest.raises(TraceError, match=r"^fields: this trace has no values or output"):
        select(trace, TraceQuery(fields="value_weighted"))
    with pytest.raises(TraceError, match=r"^measure: this trace has no values or output"):
        select(trace, TraceQuery(fields="view", measure="value_weighted"))


def test_minilm_equals_a_direct_computation_from_its_weights(client, minilm_dir):
    """The API's numbers against ||a_ij v_j W_O^h|| computed here from the model's own
    safetensors (W_V, b_V, W_O) and the hidden states and weights the trace reports."""
    from safetensors.torch import load_file

    text = "I sat on the river bank"
    body = {"model": "all-MiniLM-L6-v2", "text": text}
    layer = 3
    t = client.post(f"/api/trace?fields=hidden_states,attentions,value_weighted,"
                    f"value_weighted_sum&layer={layer}", json=body).json()  # fmt: skip
    sd = load_file(str(minilm_dir / "model.safetensors"))
    pre = next(k[: -len("embeddings.word_embeddings.weight")] for k in sd
               if k.endswith("embeddings.word_embeddings.weight"))  # fmt: skip
    att = f"{pre}encoder.layer.{layer}.attention."
    w_v, b_v = sd[f"{att}self.value.weight"].double(), sd[f"{att}self.value.bias"].double()
    w_o = sd[f"{att}output.dense.weight"].double()  # (C, C): out = z @ w_o.T
    x = torch.tensor(t["hidden_states"][layer], dtype=torch.float64)  # its input (post-norm)
    a = torch.tensor(t["attentions"][0], dtype=torch.float64)  # (H, T, T)
    H, T, C = a.shape[0], x.shape[0], x.shape[1]
    hs = C // H
    v = (x @ w_v.T + b_v).view(T, H, hs).transpose(0, 1)  # (H, T, hs)
    f = torch.einsum("hjd,hdc->hjc", v, w_o.T.reshape(H, hs, C))  # (H, T, C) v_j W_O^h
    want = a * f.norm(dim=-1)[:, None, :]
    got = torch.tensor(t["value_weighted"][0], dtype=torch.float64)
    assert got.shape == (H, T, T)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)
    total = torch.einsum("hij,hjc->ijc", a, f).norm(dim=-1)
    got_total = torch.tensor(t["value_weighted_sum"][0], dtype=torch.float64)
    assert torch.allclose(got_total, total, rtol=1e-4, atol=1e-5)
    # Some keys get much weight and move little: the two orders differ.
    assert not torch.equal(a.argmax(-1), got.argmax(-1))


def test_the_http_fields_agree_in_json_and_compact_forms(client):
    body = {"model": "all-MiniLM-L6-v2", "text": "I went to the investment bank"}
    url = "/api/trace?fields=value_weighted,value_weighted_sum,view&layer=2&measure=value_weighted"
    js = client.post(url, json=body).json()
    r = client.post(url, json=body, headers={"Accept": COMPACT_MEDIA_TYPE})
    meta, arrays = decode(r.content)
    assert meta["measure"] == "value_weighted"
    for name in ("value_weighted", "value_weighted_sum", "view"):
        assert arrays[name].tolist() == torch.tensor(js[name], dtype=arrays[name].dtype).tolist()
    # view under the measure is value_weighted itself (no token options).
    assert torch.equal(arrays["view"], arrays["value_weighted"])
    assert js["rules"]["value_weighted_sum"].startswith("||Σ_h")


def test_a_bad_measure_is_a_422_naming_it(client):
    body = {"model": "all-MiniLM-L6-v2", "text": "bank"}
    r = client.post("/api/trace?fields=view&measure=values", json=body)
    assert r.status_code == 422
    assert "measure" in r.text and "value_weighted" in r.text
