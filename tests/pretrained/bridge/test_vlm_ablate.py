"""Knocking heads out of a vision-language model's language model, on a text with a picture,
against transformers itself (eager attention, the oracle, as tests/pretrained/bridge/
test_ablate.py): a zero-ablated head is transformers' forward with that head's slice of its
layer's output-projection input zeroed, over the image's tokens and the text's alike; mean, its
average over every position of the same run (the image's included). The vision tower is never
knocked out: its weights are the clean run's. Over HTTP, the images and ``ablate`` together give
200, and the cache keys on both."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.pretrained.bridge import BridgedModel
from attnviz.pretrained.bridge.multimodal import PLACEHOLDER
from attnviz.pretrained.registry import ModelRegistry, load_model
from attnviz.schemas.trace import TextTraceRequest
from attnviz.services.text_trace import run_text_trace
from attnviz.settings import Settings
from tests.support import checkpoints_vlm
from tests.support.images import data_url, encoded, gradient

CPU = torch.device("cpu")
TOL = 1e-4
TEXT = f"look: {PLACEHOLDER} the cat sat on the mat and looked at the dog"
FAMILIES = ["idefics3", "llava", "qwen2_5_vl", "gemma3"]

Fill = Callable[[torch.Tensor], torch.Tensor]


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, tuple]:
    root = tmp_path_factory.mktemp("vlm-ablate")
    out = {}
    for name in FAMILIES:
        folder = getattr(checkpoints_vlm, f"make_tiny_{name}")(root / name, seed=11)
        m = load_model(folder, CPU, backend="transformers")
        assert isinstance(m, BridgedModel) and m.reads_images
        out[name] = (folder, m)
    return out


def oracle(folder):
    from transformers import AutoModelForImageTextToText

    hf = AutoModelForImageTextToText.from_pretrained(folder, attn_implementation="eager")
    return hf.eval()


def hf_ablated(hf, inputs: dict, fills: dict[tuple[int, int], Fill]) -> torch.Tensor:
    """transformers' hidden states (L+1, T, C) with ``fill`` over each (layer, head)'s slice of
    the layer's output-projection input (the heads' outputs side by side)."""
    text = hf.get_decoder()
    cfg = hf.config.get_text_config()
    hs = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    handles = []
    for layer in sorted({layer for layer, _ in fills}):
        heads = {head: f for (lay, head), f in fills.items() if lay == layer}

        def pre(_m, args, heads=heads):
            x = args[0].clone()  # (B, T, nh * hs)
            for head, fill in heads.items():
                cols = slice(head * hs, (head + 1) * hs)
                x[..., cols] = fill(x[..., cols])
            return (x, *args[1:])

        o_proj = text.layers[layer].self_attn.o_proj
        handles.append(o_proj.register_forward_pre_hook(pre))
    try:
        with torch.no_grad():
            out = hf(**inputs, output_hidden_states=True, use_cache=False)
    finally:
        for h in handles:
            h.remove()
    return torch.stack([h[0] for h in out.hidden_states])  # (L+1, T, C)


def zero(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(x)


def mean(x: torch.Tensor) -> torch.Tensor:
    return x.mean(dim=1, keepdim=True).expand_as(x)  # over every position of this run


def traced(m: BridgedModel, *ablate: dict):
    body: dict = {"model": m.name, "text": TEXT, "images": [data_url(encoded(gradient()))]}
    if ablate:
        body["ablate"] = list(ablate)
    return run_text_trace(TextTraceRequest(**body), ModelRegistry([m]), None)


@pytest.mark.parametrize("name", FAMILIES)
def test_knocked_out_heads_with_a_picture_are_transformers_own(made, name):
    folder, m = made[name]
    hf = oracle(folder)
    enc, _ = m.encode(TEXT, [gradient()])
    inputs = {"input_ids": torch.tensor([enc.ids]), **enc.inputs}
    clean = traced(m)
    knocked = traced(
        m, {"layer": 0, "head": 1, "mode": "zero"}, {"layer": 1, "head": 0, "mode": "mean"}
    )
    ids = knocked.meta["token_ids"]
    assert ids == clean.meta["token_ids"] == enc.ids
    [block] = knocked.meta["images"]
    assert block["stop"] - block["start"] >= 4  # the image's tokens are in the run
    assert [a["patched"] for a in knocked.meta["ablated"]] == [len(ids), len(ids)]
    want = hf_ablated(hf, inputs, {(0, 1): zero, (1, 0): mean})
    assert knocked.tensors.states.shape == want.shape
    assert float((knocked.tensors.states - want).abs().max()) < TOL
    # It changed the run, over the image's tokens too, and the clean trace is transformers'.
    plain = hf_ablated(hf, inputs, {})
    assert float((clean.tensors.states - plain).abs().max()) < TOL
    image = slice(block["start"], block["stop"])
    assert float((knocked.tensors.states[-1, image] - plain[-1, image]).abs().max()) > 100 * TOL
    # The vision tower reads the pixels before any language-model layer: never knocked out.
    got, base = knocked.tensors.vision, clean.tensors.vision
    assert got is not None and base is not None
    for layer_got, layer_base in zip(got, base, strict=True):
        for a, b in zip(layer_got, layer_base, strict=True):
            assert torch.equal(a.weights(), b.weights())


def test_over_http_images_and_ablate_are_200_and_cached_apart(made):
    folder, _ = made["llava"]
    settings = Settings(device="cpu", builtin_model=False, models=str(folder))
    body = {"model": folder.name, "text": TEXT, "images": [data_url(encoded(gradient()))]}
    knock = {"ablate": [{"layer": 0, "head": 1, "mode": "zero"}]}
    with TestClient(create_app(settings)) as c:
        clean = c.post("/api/trace", json=body)
        knocked = c.post("/api/trace", json={**body, **knock})
        again = c.post("/api/trace", json={**body, **knock})
    assert clean.status_code == knocked.status_code == again.status_code == 200, knocked.text
    a, b = clean.json(), knocked.json()
    assert b["ablated"][0]["layer"] == 0 and not a.get("ablated")
    assert a["images"] == b["images"]
    # Layer 0's knock-out is in its output: layer 1 reads another stream, and attends anew.
    assert b["attentions"][0] == a["attentions"][0]
    assert b["hidden_states"][-1] != a["hidden_states"][-1]
    assert b["attentions"][1] != a["attentions"][1]
    assert again.json()["hidden_states"] == b["hidden_states"]
