"""Gemma 1, 2 and 3 against Hugging Face transformers, the reference: small random checkpoints the
tests make (tests/support/checkpoints_gemma.py) and save as folders, their config.json both as
transformers 5 writes it and rewritten in the hub's older style, loaded by attnviz's own loader;
attentions, hidden states and logits within 1e-4 at lengths past the sliding window."""

from __future__ import annotations

import json
import re

import pytest
import torch

from attnviz.capture import capture_trace
from attnviz.pretrained import ModelFolderError, load_folder
from tests.support.checkpoints_gemma import (
    GEMMA_STYLES,
    WINDOW,
    hub_style,
    make_tiny_gemma,
    make_tiny_gemma3_multimodal,
    rewrite_config,
)
from tests.support.models import recomputed

TOL = 1e-4
CPU = torch.device("cpu")
TEXTS = [
    "The animal didn't cross the street because it was too tired.",
    "a",
    "Attention lets every token look at every other token. " * 6,
]
STYLES = [*GEMMA_STYLES, "gemma3-multimodal"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Each style's folder as transformers 5 saves it, made once."""
    made: dict[str, object] = {}

    def get(style: str):
        if style not in made:
            root = tmp_path_factory.mktemp(style)
            if style == "gemma3-multimodal":
                made[style] = make_tiny_gemma3_multimodal(root / style)
            else:
                made[style] = make_tiny_gemma(root / style, style)
        return made[style]

    return get


def _reference(folder, style: str):
    from transformers import AutoModelForCausalLM, Gemma3ForConditionalGeneration

    cls = Gemma3ForConditionalGeneration if style == "gemma3-multimodal" else AutoModelForCausalLM
    return cls.from_pretrained(folder, attn_implementation="eager").eval()


@pytest.fixture(scope="module", params=[(s, c) for s in STYLES for c in ("t5", "hub")],
                ids=lambda p: f"{p[0]}-{p[1]}")  # fmt: skip
def family(request, folders, tmp_path_factory):
    """(style, folder, our model, Hugging Face's model on the same folder), with config.json
    as transformers 5 writes it ("t5") or in the hub's older style ("hub")."""
    style, config_style = request.param
    folder = folders(style)
    if config_style == "hub":
        folder = rewrite_config(folder, tmp_path_factory.mktemp("hub") / style, hub_style)
    return style, folder, load_folder(folder, CPU), _reference(folder, style)


def _softcapped(scores: torch.Tensor, cap: float | None) -> torch.Tensor:
    """c * tanh(s / c) of the scores a query sees; a masked key (-inf) stays masked (tanh would
    make it -c)."""
    if cap is None:
        return scores
    return torch.where(torch.isneginf(scores), scores, cap * torch.tanh(scores / cap))


@pytest.mark.parametrize("text", TEXTS)
def test_a_gemma_equals_transformers(family, text):
    style, _, ours, theirs = family
    ids = ours.tokenizer(text).ids
    x = torch.tensor([ids])
    trace = recomputed(capture_trace(ours.model, x, field="text"))
    with torch.no_grad():
        ref = theirs(x, output_attentions=True, output_hidden_states=True)
        logits = ours.model.logits(ours.model(x))
    att = torch.stack([a[0] for a in ref.attentions])
    hid = torch.stack([h[0] for h in ref.hidden_states])
    assert trace["attentions"].shape == att.shape
    assert (trace["attentions"] - att).abs().max().item() < TOL
    assert trace["hidden_states"].shape == hid.shape
    assert (trace["hidden_states"] - hid).abs().max().item() < TOL
    assert logits.shape == ref.logits.shape
    assert (logits - ref.logits).abs().max().item() < TOL
    # The query-key view's scores explain its weights: softmax of the soft-capped scores.
    cap = ours.cfg.attn_softcap
    explained = torch.softmax(_softcapped(trace["scores"], cap), dim=-1)
    assert (explained - trace["attentions"]).abs().max().item() < 1e-6
    if style == "gemma2" and len(ids) > 1:
        # A cap of 1.5 bends them: the plain softmax of the scores is not the pattern.
        plain = torch.softmax(trace["scores"], dim=-1)
        assert (plain - trace["attentions"]).abs().max().item() > 1e-3


def test_the_sliding_layers_see_only_the_window(family):
    style, _, ours, _ = family
    cfg = ours.cfg
    ids = ours.tokenizer(TEXTS[2]).ids
    assert len(ids) > 3 * WINDOW
    trace = recomputed(capture_trace(ours.model, torch.tensor([ids]), field="text"))
    n = len(ids)
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    outside = (i - j >= WINDOW) & (j <= i)  # earlier keys out of the window
    for layer in range(cfg.n_layers):
        weights, scores = trace["attentions"][layer], trace["scores"][layer]
        if cfg.window_of(layer) is None:
            assert (weights[:, outside] > 0).all(), layer
        else:
            assert (weights[:, outside] == 0).all() and torch.isneginf(scores[:, outside]).all()
            assert (weights[:, (i - j < WINDOW) & (j <= i)] > 0).all()
    kinds = {cfg.window_of(layer) for layer in range(cfg.n_layers)}
    assert kinds == ({None} if style == "gemma" else {None, WINDOW})


def test_a_gemma_reads_its_configuration(family):
    style, folder, ours, theirs = family
    cfg = ours.cfg
    hf = theirs.config.get_text_config()
    assert cfg.norm_type == "rms" and cfg.ln_offset == 1.0 and cfg.rope_style == "halves"
    assert cfg.d_head == 16 != cfg.d_model // cfg.n_heads and cfg.kv_heads == 2
    assert cfg.embed_scale == 32**0.5 and cfg.gated and cfg.activation == "gelu_tanh"
    assert cfg.out_norm == (style != "gemma")
    assert cfg.qk_norm == ("head" if style.startswith("gemma3") else "none")
    if style == "gemma":
        assert cfg.attn_scale is None and cfg.layer_types is None and cfg.rope_base == 5000.0
    else:
        assert cfg.attn_scale == hf.query_pre_attn_scalar**-0.5
        assert list(cfg.layer_types) == hf.layer_types and cfg.sliding_window == WINDOW
        assert cfg.final_softcap == hf.final_logit_softcapping
    if style.startswith("gemma2"):
        assert cfg.attn_softcap == hf.attn_logit_softcapping and cfg.rope_scaling is None
        assert (
            cfg.layer_types
            == ("sliding_attention", "full_attention", "sliding_attention")[: cfg.n_layers]
        )
    if style.startswith("gemma3"):
        assert cfg.attn_softcap is None and cfg.rope_base == 1e6 and cfg.rope_local_base == 1e4
        assert cfg.rope_scaling is not None and cfg.rope_scaling.kind == "linear"
        assert cfg.rope_scaling.factor == 8.0
        assert cfg.layer_types == ("sliding_attention", "sliding_attention", "full_attention")
    tied = style != "gemma2-untied"
    assert torch.equal(ours.model.W_U, ours.model.W_E.T) == tied
    assert ours.family == json.loads((folder / "config.json").read_text())["model_type"]


@pytest.mark.parametrize("style", STYLES)
def test_both_styles_of_config_json_read_the_same(folders, tmp_path, style):
    folder = folders(style)
    hub = rewrite_config(folder, tmp_path / "hub", hub_style)
    text = json.loads((hub / "config.json").read_text()).get("text_config")
    written = text if text is not None else json.loads((hub / "config.json").read_text())
    assert "rope_parameters" not in written and "layer_types" not in written
    assert load_folder(folder, CPU).cfg == load_folder(hub, CPU).cfg


def test_transformers_defaults_are_the_readers(folders):
    """What a config.json leaves out means what transformers' config classes say."""
    from transformers import Gemma2Config, Gemma3TextConfig, GemmaConfig

    from attnviz.pretrained.families.gemma import DEFAULTS

    for model_type, cls in (("gemma", GemmaConfig), ("gemma2", Gemma2Config),
                            ("gemma3_text", Gemma3TextConfig)):  # fmt: skip
        hf = cls()
        for key, value in DEFAULTS[model_type].items():
            assert getattr(hf, key) == value, (model_type, key)


def test_a_multimodal_gemma3_with_few_text_keys_takes_transformers_defaults(folders, tmp_path):
    """The hub's multimodal Gemma 3 folders list a handful of text_config keys."""
    from transformers import Gemma3TextConfig

    keep = {"hidden_size", "intermediate_size", "model_type", "num_hidden_layers",
            "rope_scaling", "sliding_window", "head_dim", "vocab_size", "num_attention_heads",
            "num_key_value_heads", "sliding_window_pattern", "rope_theta",
            "rope_local_base_freq"}  # fmt: skip

    def few(hf: dict) -> dict:
        hub = hub_style(hf)
        return {**hub, "text_config": {k: v for k, v in hub["text_config"].items() if k in keep}}

    folder = rewrite_config(folders("gemma3-multimodal"), tmp_path / "few", few)
    cfg = load_folder(folder, CPU).cfg
    text = json.loads((folder / "config.json").read_text())["text_config"]
    defaults = Gemma3TextConfig(**text)
    assert "query_pre_attn_scalar" not in text
    assert cfg.attn_scale == defaults.query_pre_attn_scalar**-0.5 == 256**-0.5
    assert cfg.final_softcap is None and cfg.n_ctx == defaults.max_position_embeddings


def _changed(folder, tmp_path, **changes):
    def change(hf: dict) -> dict:
        if hf.get("model_type") == "gemma3":
            return {**hf, "text_config": {**hf["text_config"], **changes}}
        return {**hf, **changes}

    return rewrite_config(folder, tmp_path / "changed", change)


@pytest.mark.parametrize(
    ("style", "changes", "message"),
    [
        ("gemma2", {"use_bidirectional_attention": True}, "use_bidirectional_attention = True"),
        ("gemma", {"use_bidirectional_attention": True}, "use_bidirectional_attention = True"),
        ("gemma2", {"attention_bias": True}, "attention_bias = True is not supported"),
        ("gemma2", {"hidden_activation": "gelu_fast"}, "hidden_activation = 'gelu_fast'"),
        ("gemma", {"hidden_act": "gelu_fast"}, "hidden_act = 'gelu_fast'"),
        ("gemma3", {"attn_logit_softcapping": 50.0}, "attn_logit_softcapping = 50.0"),
        ("gemma3-multimodal", {"attn_logit_softcapping": 50.0}, "attn_logit_softcapping = 50"),
        ("gemma3-multimodal", {"final_logit_softcapping": 30.0}, "final_logit_softcapping = 30"),
        (
            "gemma2",
            {"rope_parameters": {"rope_type": "ntk-by-parts", "factor": 2.0, "rope_theta": 1e4}},
            "rope_parameters of type 'ntk-by-parts' is not supported",
        ),
        ("gemma2", {"rope_scaling": {"type": "linear"}}, "rope_scaling of type 'linear' needs"),
        (
            "gemma",
            {"rope_parameters": {"rope_theta": 1e4, "partial_rotary_factor": 0.5}},
            "partial_rotary_factor = 0.5 is not supported",
        ),
        (
            "gemma3",
            {"rope_parameters": {"full_attention": {"rope_type": "linear"}}},
            "rope_parameters.full_attention of type 'linear' needs factor",
        ),
        (
            "gemma3",
            {"rope_parameters": {"rope_type": "linear", "factor": 2.0}},
            "rope_parameters: Gemma 3 keys it by layer type",
        ),
        (
            "gemma3",
            {
                "rope_parameters": {
                    "full_attention": {"rope_type": "default", "rope_theta": 1e6},
                    "sliding_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4},
                }
            },
            "sliding_attention rope_type 'linear' is not supported",
        ),
        ("gemma2", {"layer_types": ["sliding_attention"]}, "layer_types must list 3 layers"),
        (
            "gemma2",
            {"layer_types": ["full_attention", "local", "full_attention"]},
            "layer_types must list",
        ),
        ("gemma2", {"sliding_window": None}, "sliding_window must be a positive integer"),
        (
            "gemma3",
            {"sliding_window_pattern": 0, "layer_types": None},
            "sliding_window_pattern must be a positive integer",
        ),
        ("gemma2", {"num_key_value_heads": 3}, "num_key_value_heads = 3 must divide"),
        ("gemma2", {"query_pre_attn_scalar": 0}, "query_pre_attn_scalar must be a positive"),
        ("gemma2", {"attn_logit_softcapping": -1.0}, "attn_logit_softcapping must be a positive"),
        ("gemma2", {"head_dim": 8}, "expected shape"),
    ],
)
def test_what_the_engine_cannot_reproduce_is_refused_by_name(
    folders, tmp_path, style, changes, message
):
    with pytest.raises(ModelFolderError, match=re.escape(message)):
        load_folder(_changed(folders(style), tmp_path, **changes), CPU)


def test_a_multimodal_gemma3_without_its_text_config_is_refused(folders, tmp_path):
    folder = rewrite_config(
        folders("gemma3-multimodal"), tmp_path / "m", lambda hf: {**hf, "text_config": None}
    )
    with pytest.raises(ModelFolderError, match="text_config must be an object"):
        load_folder(folder, CPU)


def test_every_tensor_of_the_text_model_is_used(folders, tmp_path):
    """A tensor the conversion does not know (a bias on the query, say) is refused by name."""
    import shutil

    from safetensors.torch import load_file, save_file

    folder = tmp_path / "extra"
    shutil.copytree(folders("gemma2"), folder)
    tensors = load_file(folder / "model.safetensors")
    tensors["model.layers.0.self_attn.q_proj.bias"] = torch.zeros(64)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelFolderError, match="unexpected tensors layers.0.self_attn.q_proj.bias"):
        load_folder(folder, CPU)


@pytest.mark.parametrize("style", list(GEMMA_STYLES))
def test_a_gemma_writes_what_transformers_writes(folders, style):
    """Greedy generation, each step through the engine's key/value cache, 40 tokens past a
    window of 8: the tokens transformers' own generate writes (it stops at the same
    end-of-text token, if one comes)."""
    from transformers import AutoModelForCausalLM

    from attnviz.engine.generate import continue_ids

    folder = folders(style)
    ours = load_folder(folder, CPU)
    theirs = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    ids = ours.tokenizer("The animal").ids
    with torch.no_grad():
        out = theirs.generate(torch.tensor([ids]), max_new_tokens=40, do_sample=False)
    want = out[0, len(ids) :].tolist()
    assert len(want) > 4 * WINDOW
    assert continue_ids(ours.model, ids, 40, stop=ours.eos_ids) == want


def test_a_multimodal_gemma3_is_read_under_either_prefix(folders, tmp_path):
    """transformers 5 names the text model model.language_model.* in memory (the hub's files,
    and its own save_pretrained, language_model.model.*): both read the same."""
    import shutil

    from safetensors.torch import load_file, save_file

    saved = folders("gemma3-multimodal")
    folder = tmp_path / "renamed"
    shutil.copytree(saved, folder)
    tensors = load_file(folder / "model.safetensors")
    assert any(k.startswith("language_model.model.") for k in tensors)
    renamed = {k.replace("language_model.model.", "model.language_model."): v
               for k, v in tensors.items()}  # fmt: skip
    save_file(renamed, folder / "model.safetensors", metadata={"format": "pt"})
    want = load_folder(saved, CPU).model.state_dict()
    got = load_folder(folder, CPU).model.state_dict()
    assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)
