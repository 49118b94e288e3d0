"""The native engine's placement over several devices: plans balanced by bytes over fake
capacities (a 1B-shaped model on the meta device, never allocated), sequential plans, refusals
with the figures, and a placed model's forward, cache and trace."""

from __future__ import annotations

import pytest
import torch

from attnviz.capture.fields.aggregates import rollout
from attnviz.capture.fields.entropy import entropy
from attnviz.capture.fields.thumbs import score_range
from attnviz.capture.value_norms import value_norms
from attnviz.engine import Transformer, TransformerConfig
from attnviz.engine.device import gb
from attnviz.engine.model import KVCache
from attnviz.engine.placement import (
    Placement,
    PlacementError,
    capacities_of,
    gather,
    part_bytes,
    place_model,
    plan_layers,
)
from attnviz.pretrained import load_folder
from attnviz.pretrained.folder import ModelFolderError
from tests.support.checkpoints import make_tiny_llama

CPU = torch.device("cpu")
# Llama-3.2-1B's shape: 16 blocks of 2048 wide, 8 key/value heads, a 128k vocabulary.
ONE_B = TransformerConfig(
    d_model=2048, n_layers=16, n_heads=32, n_kv_heads=8, causal=True, positional="rope",
    residual=True, norm="pre", norm_type="rms", ln_affine=True, final_norm=True, ffn=True,
    d_ffn=8192, activation="silu", gated=True, vocab_size=128256, unembed=True,
)  # fmt: skip
FAKE = {"cuda:0": int(3e9), "cuda:1": int(3e9), "cpu": int(64e9)}


@pytest.fixture(scope="module")
def parts() -> tuple[list[int], int, int]:
    with torch.device("meta"):
        skeleton = Transformer(ONE_B)
    return part_bytes(skeleton, torch.bfloat16.itemsize)


def shares(plan: Placement, parts: tuple[list[int], int, int]) -> dict[str, int]:
    blocks, embed, head = parts
    out: dict[str, int] = {}
    for device, n in zip([plan.embed, *plan.layers, plan.head], [embed, *blocks, head],
                         strict=True):  # fmt: skip
        out[device] = out.get(device, 0) + n
    return out


def in_order(plan: Placement, order: list[str]) -> bool:
    rank = [order.index(d) for d in [plan.embed, *plan.layers, plan.head]]
    return rank == sorted(rank)


def test_part_bytes_are_the_parameters_bytes(parts):
    blocks, embed, head = parts
    block = 2048 * (2048 + 512 + 512 + 2048) + 3 * 2048 * 8192 + 2 * 2048  # attn, mlp, norms
    assert blocks == [2 * block] * 16
    assert embed == 2 * 128256 * 2048
    assert head == 2 * (128256 * 2048 + 2048)


@pytest.mark.parametrize("mode", ["balanced", "auto"])
def test_a_balanced_plan_evens_the_bytes_over_the_gpus(parts, mode):
    plan = plan_layers(*parts, FAKE, mode)
    got = shares(plan, parts)
    assert set(got) == {"cuda:0", "cuda:1"}  # 3.0 GB fits on the two: nothing on the CPU
    assert max(got.values()) - min(got.values()) <= max(parts[0])
    assert all(got[d] <= FAKE[d] for d in got)
    assert in_order(plan, list(FAKE))
    assert sum(got.values()) == sum(parts[0]) + parts[1] + parts[2]


def test_balanced_over_three_gpus_and_unequal_ones(parts):
    three = {"cuda:0": int(2e9), "cuda:1": int(2e9), "cuda:2": int(2e9)}
    got = shares(plan_layers(*parts, three, "balanced"), parts)
    assert len(got) == 3 and max(got.values()) - min(got.values()) <= max(parts[1:])
    # A small GPU takes what it holds; the rest is evened over the others within its room.
    small = {"cuda:0": int(0.8e9), "cuda:1": int(3e9), "cpu": int(64e9)}
    plan = plan_layers(*parts, small, "balanced")
    got = shares(plan, parts)
    assert got["cuda:0"] <= small["cuda:0"] and "cpu" not in got
    assert got["cuda:0"] + max(parts[0]) > small["cuda:0"]  # as full as it can be
    assert in_order(plan, list(small))


def test_balanced_spills_to_the_cpu_only_past_the_gpus(parts):
    tight = {"cuda:0": int(1e9), "cuda:1": int(1e9), "cpu": int(64e9)}
    plan = plan_layers(*parts, tight, "balanced")
    got = shares(plan, parts)
    assert plan.head == "cpu" and in_order(plan, list(tight))
    blocks = parts[0][0]
    # the GPUs hold as much as fits in order: the next part would overflow the last one
    assert got["cuda:0"] <= 1e9 and got["cuda:1"] <= 1e9
    assert got["cuda:0"] + got["cuda:1"] + blocks > 2e9 - blocks


def test_sequential_fills_each_device_in_order(parts):
    blocks, embed, head = parts
    caps = {"cuda:0": int(1.2e9), "cuda:1": int(3e9), "cpu": int(64e9)}
    plan = plan_layers(*parts, caps, "sequential")
    got = shares(plan, parts)
    assert in_order(plan, list(caps)) and "cpu" not in got
    on0 = plan.layers.count("cuda:0")
    assert embed + on0 * blocks[0] <= caps["cuda:0"] < embed + (on0 + 1) * blocks[0]
    assert plan.head == "cuda:1"


def test_a_model_that_fits_nowhere_is_refused_with_the_figures(parts):
    total = sum(parts[0]) + parts[1] + parts[2]
    caps = {"cuda:0": int(1e9), "cpu": int(1.5e9)}
    with pytest.raises(PlacementError) as err:
        plan_layers(*parts, caps, "balanced")
    text = str(err.value)
    assert f"needs {gb(total)}" in text
    assert "1.0 GB on cuda:0" in text and "1.5 GB on cpu" in text
    assert "16 blocks" in text


def test_max_memory_becomes_capacities():
    assert capacities_of({"0": "20GiB", "1": "3.5GB", "cpu": 1000}) == {
        "cuda:0": 20 * 2**30, "cuda:1": int(3.5e9), "cpu": 1000,
    }  # fmt: skip
    with pytest.raises(PlacementError, match="disk"):
        capacities_of({"0": "1GB", "disk": "100GB"})
    with pytest.raises(ValueError, match=r"max_memory\[cpu\]"):
        capacities_of({"cpu": "lots"})


def _tiny() -> Transformer:
    cfg = TransformerConfig(d_model=8, n_layers=2, n_heads=2, causal=True, positional="rope",
                            residual=True, norm="pre", norm_type="rms", ln_affine=True,
                            final_norm=True, ffn=True, vocab_size=11, unembed=True)  # fmt: skip
    return Transformer(cfg).eval()


def test_place_model_moves_each_part_and_the_stream_between_them():
    """Block 1 and the head on the meta device (shapes only): the residual stream follows the
    blocks, each layer's cached keys and values stay on its device."""
    model = _tiny()
    place_model(model, Placement("cpu", ("cpu", "meta"), "meta"))
    assert model.W_E.device == CPU and model.blocks[0].attn.W_Q.device == CPU
    assert all(p.is_meta for p in model.blocks[1].parameters())
    assert model.W_U.is_meta and model.ln_final.w.is_meta
    cache = KVCache()
    with torch.inference_mode():
        out = model(torch.tensor([[1, 2, 3]]), cache=cache)
        logits = model.logits(out)
    assert out.is_meta and out.shape == (1, 3, 8) and logits.shape == (1, 3, 11)
    assert cache.kv[0][0].device == CPU and cache.kv[1][0].is_meta
    assert model.placement == Placement("cpu", ("cpu", "meta"), "meta")


def test_gather_keeps_one_device_and_meets_on_the_cpu():
    rows = [torch.ones(2, 3), torch.zeros(2, 3)]
    assert torch.equal(gather(rows), torch.stack(rows))
    with pytest.raises(NotImplementedError):  # a meta row cannot be read: the CPU copy is made
        gather([torch.ones(2), torch.empty(2, device="meta")])


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_tiny_llama(tmp_path_factory.mktemp("place") / "llama", seed=5)


def test_a_placed_model_traces_as_the_unplaced_one(folder):
    """A plan (all on the CPU, the one device here) through the loader's path: the same trace,
    bit for bit, and the placement the served model reports."""
    torch.set_num_threads(1)
    plain = load_folder(folder, CPU)
    placed = load_folder(folder, CPU, device_map="balanced", max_memory={"cpu": "1GB"})
    assert plain.placement == {"embed": "cpu", "layers": ["cpu", "cpu"], "head": "cpu"}
    assert placed.placement == plain.placement and placed.model.placement is not None
    ids = plain.tokenizer("the river bank and the water").ids
    a, b = plain.trace(ids), placed.trace(ids)
    again = placed.trace(ids, keep_qkv_bytes=0)  # q, k, v recomputed from a layer's input
    assert torch.equal(a.states, b.states)
    for layer in range(a.layers):
        for x, y, z in zip(a.qkv(layer), b.qkv(layer), again.qkv(layer), strict=True):
            assert torch.equal(x, y) and torch.equal(x, z)
        assert torch.equal(a.pattern(layer), b.pattern(layer))
    a.release(), b.release()
    for derive in (entropy, value_norms, score_range):
        assert torch.equal(derive(a), derive(b)), derive.__name__
    for x, y in zip(rollout(a), rollout(b), strict=True):
        assert torch.equal(x, y)
    assert torch.equal(a.clean_run().output, b.clean_run().output)
    assert placed.continue_ids(ids, 6) == plain.continue_ids(ids, 6)  # through the cache


def test_the_loader_refuses_a_plan_that_fits_nowhere(folder):
    with pytest.raises(ModelFolderError, match=r"needs .* GB of weights .* on cpu"):
        load_folder(folder, CPU, device_map="sequential", max_memory={"cpu": "10KB"})
    with pytest.raises(ModelFolderError, match="offload_folder"):
        load_folder(folder, CPU, device_map="auto", offload_folder=folder)
