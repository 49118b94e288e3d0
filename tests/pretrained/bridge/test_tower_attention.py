"""A traced vision tower's attention through the fused kernel (bridge/tower_attention.py): its
output is eager attention's, its record's weights are eager's, and a call the kernel would not
compute as eager does (a soft-cap, training, a boolean mask, grouped keys) is eager's whole. The
tiny folders of every family take the fused path, and their traces are transformers' own
(tests/pretrained/bridge/test_vlm.py checks every tower weight and hidden state)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import attnviz.pretrained.bridge.record as record
from attnviz.pretrained.bridge.multimodal import PLACEHOLDER
from attnviz.pretrained.bridge.record import _INERT
from attnviz.pretrained.bridge.tower_attention import fused, plain
from attnviz.pretrained.registry import load_model
from tests.support import checkpoints_vlm
from tests.support.checkpoints_vlm import TinyVlms
from tests.support.images import gradient

FAMILIES = sorted(
    n.removeprefix("make_tiny_") for n in dir(checkpoints_vlm) if n.startswith("make_tiny_")
)


def eager(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """SigLIP's eager attention, as transformers writes it (no repeat of keys)."""
    w = torch.matmul(query, key.transpose(-1, -2)) * scaling
    if attention_mask is not None:
        w = w + attention_mask
    w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(query.dtype)
    out = torch.matmul(w, value).transpose(1, 2).contiguous()
    return out, w


def capped(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """An eager attention that soft-caps its scores without saying so in its keywords."""
    w = torch.tanh(torch.matmul(query, key.transpose(-1, -2)) * scaling / 2) * 2
    if attention_mask is not None:
        w = w + attention_mask
    w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(w, value).transpose(1, 2).contiguous(), w


def qkv(B=3, H=4, P=10, hs=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, H, P, hs, generator=g) for _ in range(3)]


def tower_module():
    m = nn.Module()
    m.eval()
    return m


@pytest.mark.parametrize("masked", [False, True])
def test_the_fused_output_and_record_are_eagers(masked):
    q, k, v = qkv()
    mask = None
    if masked:  # each piece hides its own keys, additively, as transformers' eager mask does
        mask = torch.zeros(3, 1, 10, 10)
        mask[1, :, :, 7:] = torch.finfo(torch.float32).min
    m, scale = tower_module(), 8**-0.5
    kw = {"scaling": scale, "dropout": 0.0, "is_causal": False}
    assert plain(m, q, k, mask, kw, _INERT)
    out, call = fused(m, eager, q, k, v, mask, scale, kw)
    want, weights = eager(m, q, k, v, mask, scale)
    assert out.shape == want.shape == (3, 10, 4, 8)
    assert (out - want).abs().max() < 1e-6
    assert call.kept is None and call.q is not None
    assert (call.weights() - weights).abs().max() < 1e-6


def test_a_call_whose_q_and_k_do_not_give_the_weights_back_is_eagers_whole():
    q, k, v = qkv(seed=1)
    m, scale = tower_module(), 8**-0.5
    kw = {"scaling": scale}
    out, call = fused(m, capped, q, k, v, None, scale, kw)
    want, weights = capped(m, q, k, v, None, scale)
    assert call.kept is not None and call.q is None
    assert torch.equal(call.weights(), weights.float())
    assert torch.equal(out, want)


def test_calls_the_kernel_would_not_compute_as_eager_are_left_to_eager():
    q, k, v = qkv()
    m = tower_module()
    kw = {"scaling": 0.3}
    assert plain(m, q, k, None, kw, _INERT)
    assert not plain(m, q, k, None, {**kw, "softcap": 30.0}, _INERT)
    assert not plain(m, q, k, None, {**kw, "s_aux": torch.zeros(4)}, _INERT)
    assert not plain(m, q, k, None, {**kw, "is_causal": True}, _INERT)
    assert not plain(m, q, k, torch.ones(3, 1, 10, 10, dtype=torch.bool), kw, _INERT)
    assert not plain(m, q, k[:, :2], None, kw, _INERT)  # grouped keys
    m.num_key_value_groups = 2
    assert not plain(m, q, k, None, kw, _INERT)
    m.num_key_value_groups = 1
    m.train()
    assert not plain(m, q, k, None, kw, _INERT)


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> TinyVlms:
    return TinyVlms(tmp_path_factory.mktemp("vlm-fused"))


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_every_familys_traced_tower_takes_the_fused_path(made, name, monkeypatch):
    calls = []

    def counted(*args, **kwargs):
        out = fused(*args, **kwargs)
        calls.append(out[1])
        return out

    monkeypatch.setattr(record, "fused", counted)
    m = load_model(made.folder(name), torch.device("cpu"), backend="transformers")
    enc, _ = m.encode(f"look {PLACEHOLDER} at it", [gradient()])
    t = m.trace(enc.ids, images=enc)
    assert t.vision is not None
    recorded = [c for layer in t.vision for c in layer]
    assert len(calls) == len(recorded) > 0
    assert all(c.kept is None and c.q is not None for c in recorded)
