"""Vision-language folders whose language model is a native family (Gemma 3's text model,
Qwen2-VL's and Qwen2.5-VL's Qwen2, PaliGemma 2's Gemma 2, LLaVA's and Idefics3's Llama), served
natively: the language model in attnviz's engine,
the vision tower and projector through transformers. Against transformers itself (eager
attention, the oracle) on tiny random checkpoints (tests/support/checkpoints_vlm.py): a text
with images gives every layer's weights (the forward's and those recomputed from q and k) and
hidden states of transformers' forward, and the vision tower's weights; the image rows of the
token vectors are the projector's features. ``--backend auto`` serves these folders natively and
loads none of the language model's weights into transformers."""

from __future__ import annotations

import pytest
import torch

from attnviz.pretrained.bridge import BridgedModel
from attnviz.pretrained.bridge.multimodal import PLACEHOLDER
from attnviz.pretrained.native_vlm import NativeVlm
from attnviz.pretrained.registry import load_model
from tests.support.checkpoints_vlm import TinyVlms, eager_with_towers
from tests.support.images import gradient

CPU = torch.device("cpu")
TOL = 1e-4
NATIVE = ["gemma3", "qwen2_5_vl", "qwen2_vl", "paligemma2", "llava", "idefics3"]
TEXT = "the cat sat on the mat and looked at the dog"
# One picture, or two of different shapes (Qwen: two grids; Gemma 3: two bidirectional blocks).
PICTURES = {"one": [gradient(90, 40)], "two": [gradient(40, 30), gradient(50, 20)]}


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> TinyVlms:
    return TinyVlms(tmp_path_factory.mktemp("native-vlm"))


def _written(n: int) -> str:
    return " and ".join([f"look: {PLACEHOLDER}"] * n) + f" {TEXT}"


@pytest.mark.parametrize("pictures", list(PICTURES))
@pytest.mark.parametrize("name", NATIVE)
def test_language_model_and_tower_are_transformers_own(made, name, pictures):
    m = made.native(name)
    images = PICTURES[pictures]
    enc, _ = m.encode(_written(len(images)), images)
    t = m.trace(enc.ids, images=enc)
    inputs = {"input_ids": torch.tensor([enc.ids]), **enc.inputs}
    out, calls = eager_with_towers(made.folder(name), inputs)
    assert t.layers == len(out.attentions)
    # The forward's own weights, then those recomputed from q and k (with the Layout).
    assert t.forward_pattern is not None
    for layer, want in enumerate(out.attentions):
        assert (t.forward_pattern[layer] - want[0]).abs().max() < TOL
    t.release()
    for layer, want in enumerate(out.attentions):
        assert (t.pattern(layer) - want[0]).abs().max() < TOL
    want_states = torch.stack([h[0] for h in out.hidden_states])  # (L+1, T, C)
    assert t.states.shape == want_states.shape
    assert (t.states - want_states).abs().max() < TOL
    # The image tokens' rows of the token vectors are the features, unscaled: hidden state 0.
    at = torch.tensor(enc.ids) == enc.image_token  # (T,)
    assert int(at.sum()) == sum(t.rows * t.cols for b in enc.blocks for t in b.tiles) > 0
    assert (t.embeddings[at] - want_states[0][at]).abs().max() < TOL
    # The vision tower: each layer's calls, in order, transformers' weights.
    assert t.vision is not None and t.tower is not None and not isinstance(t.tower, str)
    layers = list(dict.fromkeys(mid for mid, _ in calls))
    by_layer = [[w for mid, w in calls if mid == layer] for layer in layers]
    assert [len(c) for c in t.vision] == [len(c) for c in by_layer]
    for got_calls, want_calls in zip(t.vision, by_layer, strict=True):
        for got, want in zip(got_calls, want_calls, strict=True):
            assert got.shape == tuple(want.shape)
            assert (got.weights() - want).abs().max() < TOL


@pytest.mark.parametrize("name", NATIVE)
def test_the_native_trace_is_the_bridges(made, name):
    """The same folder through the bridge: the same sequence, blocks, weights and tower."""
    m, b = made.native(name), made.model(name)
    enc, placed = m.encode(_written(1), PICTURES["one"])
    benc, bplaced = b.encode(_written(1), PICTURES["one"])
    assert (enc.ids, placed, enc.blocks) == (benc.ids, bplaced, benc.blocks)
    t, bt = m.trace(enc.ids, images=enc), b.trace(benc.ids, images=benc)
    t.release()
    bt.release()
    for layer in range(t.layers):
        assert (t.pattern(layer) - bt.pattern(layer)).abs().max() < TOL
    assert m.mrope(enc.ids, enc) == b.mrope(benc.ids, benc)
    assert m.backend == "native" and b.backend == "transformers"


@pytest.mark.parametrize("name", NATIVE)
def test_a_text_alone_is_the_language_models(made, name):
    m, hf = made.native(name), made.oracle(name)
    ids = m.tokenizer(TEXT).ids
    t = m.trace(ids)
    assert t.vision is None
    with torch.no_grad():
        out = hf(input_ids=torch.tensor([ids]), output_hidden_states=True)
    want = torch.stack([h[0] for h in out.hidden_states])  # (L+1, T, C)
    assert (t.states - want).abs().max() < TOL


@pytest.mark.slow
def test_auto_serves_them_natively_without_the_language_models_weights(made):
    for name in NATIVE:
        m = made.native(name)
        assert m.family == name.removesuffix("2")  # config.json's model_type, a native family
        assert m.backend == "native" and m.reads_images
        assert isinstance(load_model(made.folder(name), CPU, backend="native"), NativeVlm)
        # transformers' model holds the tower and projector; its language model is shapes only.
        hf = m.vision.hf
        assert all(p.is_meta for p in hf.get_decoder().parameters())
        assert all(p.is_meta for p in hf.get_output_embeddings().parameters())
        towers = [p for part in m.vision.parts.values() for p in part.parameters()]
        assert towers and not any(p.is_meta for p in towers)
    # Qwen3-VL's model_type is no native family's (its tower's features also enter the text's
    # first layers: deepstack): the bridge serves it whole.
    assert isinstance(load_model(made.folder("qwen3_vl"), CPU), BridgedModel)


def test_the_hubs_older_qwen_config_reads_as_transformers_5s(made):
    """The hub's Qwen2.5-VL config.json keeps the text model's keys beside vision_config and
    names its rotary ``{"type": "mrope", "mrope_section": [...]}``: the same language model."""
    import json

    from attnviz.pretrained.convert import FAMILIES

    hf = json.loads((made.folder("qwen2_5_vl") / "config.json").read_text())
    text = dict(hf["text_config"])
    rope = text.pop("rope_parameters")
    old = {k: v for k, v in hf.items() if k != "text_config"}
    old.update({k: v for k, v in text.items() if k != "model_type"})
    old["rope_scaling"] = {"type": "mrope", "mrope_section": rope["mrope_section"]}
    old["rope_theta"] = rope["rope_theta"]
    family = FAMILIES["qwen2_5_vl"]
    cfg = family.config(hf)
    assert cfg.rope_sections == tuple(rope["mrope_section"]) and cfg.qkv_bias
    assert family.config(old) == cfg


def test_a_mask_the_engine_would_not_compute_is_refused(made):
    """The Layout is checked against transformers' own masks: PaliGemma's prefix is whole on
    its sliding layers, so an engine whose window cut it (window_in_spans) is refused, naming
    the sliding layers."""
    from dataclasses import replace

    from attnviz.pretrained.bridge.model import grown_inputs
    from attnviz.pretrained.native_vlm.layout import vlm_layout

    m = made.native("paligemma2")
    enc, _ = m.encode(_written(1), PICTURES["one"])
    inputs = grown_inputs(m.vision.hf, enc.ids, enc, CPU, torch.float32)
    layout = vlm_layout(m.vision.hf, enc.ids, inputs, m.cfg, m.vision.first)
    assert layout.spans == ((0, len(enc.ids)),)
    # PaliGemma's forward counts its language model's positions from 1 (read from it), the
    # others' from 0.
    assert m.vision.first == 1 and made.native("gemma3").vision.first == 0
    assert layout.positions is not None and layout.positions.tolist() == list(
        range(1, len(enc.ids) + 1)
    )
    with pytest.raises(ValueError, match="its sliding layers' mask is not the engine's window"):
        vlm_layout(m.vision.hf, enc.ids, inputs, replace(m.cfg, window_in_spans=True))


def test_auto_falls_back_to_the_bridge_where_the_engine_refuses(made, tmp_path, caplog):
    """A Gemma 3 folder whose text model sets what the engine refuses (an attention soft-cap,
    which transformers' Gemma 3 never applies): ``auto`` serves it through transformers and
    logs why, ``native`` refuses it naming the setting."""
    import json
    import logging
    import shutil

    from attnviz.pretrained.folder import ModelFolderError

    folder = shutil.copytree(made.folder("gemma3"), tmp_path / "capped")
    hf = json.loads((folder / "config.json").read_text())
    hf["text_config"]["attn_logit_softcapping"] = 50.0
    (folder / "config.json").write_text(json.dumps(hf))
    with caplog.at_level(logging.WARNING, logger="attnviz.pretrained.registry"):
        assert isinstance(load_model(folder, CPU), BridgedModel)
    assert "not run natively" in caplog.text and "attn_logit_softcapping" in caplog.text
    with pytest.raises(ModelFolderError, match="attn_logit_softcapping"):
        load_model(folder, CPU, backend="native")


def test_the_hubs_tower_names_are_renamed_as_transformers_renames_them(made, tmp_path):
    """The hub's Gemma 3 files name the tower ``vision_tower.vision_model.*`` (transformers 5
    renames them on load): the native model reads them so, and its trace is transformers'."""
    import shutil

    from safetensors.torch import load_file, save_file

    folder = shutil.copytree(made.folder("gemma3"), tmp_path / "hub-names")
    saved = load_file(folder / "model.safetensors")
    tower = "vision_tower."
    renamed = {
        (f"{tower}vision_model.{k.removeprefix(tower)}" if k.startswith(tower) else k): v
        for k, v in saved.items()
    }
    assert any(k.startswith("vision_tower.vision_model.") for k in renamed)
    save_file(renamed, folder / "model.safetensors", metadata={"format": "pt"})
    m = load_model(folder, CPU)
    assert isinstance(m, NativeVlm)
    enc, _ = m.encode(_written(1), PICTURES["one"])
    t = m.trace(enc.ids, images=enc)
    out, _ = eager_with_towers(folder, {"input_ids": torch.tensor([enc.ids]), **enc.inputs})
    want = torch.stack([h[0] for h in out.hidden_states])  # (L+1, T, C)
    assert (t.states - want).abs().max() < TOL


def test_a_buffer_transformers_leaves_unset_is_refused():
    """The tower's buffers that no checkpoint holds are made by the model's own _init_weights;
    one it leaves as it was (uninitialised memory after to_empty) is refused, by name."""
    from attnviz.pretrained.folder import ModelFolderError
    from attnviz.pretrained.native_vlm.tower import _init_buffers

    class Rotary(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("inv_freq", torch.ones(4), persistent=False)

    class Owner:
        def __init__(self, fills: bool) -> None:
            self.fills = fills

        def _init_weights(self, module: torch.nn.Module) -> None:
            if self.fills:
                module.inv_freq.copy_(torch.arange(4.0))

    part = torch.nn.Sequential(Rotary())
    _init_buffers(part, Owner(True), "folder: tower")
    assert part[0].inv_freq.tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(ModelFolderError, match=r"^folder: tower\.0\.inv_freq: transformers'"):
        _init_buffers(part, Owner(False), "folder: tower")


def test_without_transformers_native_reads_the_text_model_alone(made, monkeypatch):
    from attnviz.pretrained import registry
    from attnviz.pretrained.folder import PretrainedModel

    want = made.native("qwen2_5_vl").cfg  # the whole model's, read with transformers there
    monkeypatch.setattr(registry, "transformers_missing", lambda: "no module named transformers")
    m = load_model(made.folder("qwen2_5_vl"), CPU, backend="native")
    assert type(m) is PretrainedModel and not m.reads_images
    assert m.cfg == want
