"""The families beyond BERT and GPT-2 (Llama, Qwen2, Mistral; RoBERTa, DistilBERT) against
Hugging Face transformers, the reference: small random checkpoints the tests make and save as
folders, loaded by attnviz's own loader; attentions and hidden states within 1e-4."""

from __future__ import annotations

import json

import pytest
import torch

from attnviz.capture import capture_trace
from attnviz.pretrained import ModelFolderError, load_folder
from tests.support.checkpoints import LLAMA_STYLES, make_tiny_encoder, make_tiny_llama
from tests.support.models import recomputed

TOL = 1e-4
CPU = torch.device("cpu")
TEXTS = [
    "The animal didn't cross the street because it was too tired.",
    "a",
    "Attention lets every token look at every other token. " * 6,
]


@pytest.fixture(scope="module", params=[*LLAMA_STYLES, "roberta", "distilbert"])
def family(request, tmp_path_factory):
    """(style, folder, our model, Hugging Face's model on the same folder)."""
    from transformers import AutoModel

    style = request.param
    folder = tmp_path_factory.mktemp(style)
    if style in LLAMA_STYLES:
        make_tiny_llama(folder, style)
    else:
        make_tiny_encoder(folder, style)
    ours = load_folder(folder, CPU)
    theirs = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    return style, folder, ours, theirs


@pytest.mark.parametrize("text", TEXTS)
def test_a_family_equals_transformers(family, text):
    _, _, ours, theirs = family
    ids = ours.tokenizer(text).ids
    trace = recomputed(capture_trace(ours.model, torch.tensor([ids]), field="text"))
    with torch.no_grad():
        ref = theirs(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    att = torch.stack([a[0] for a in ref.attentions])
    hid = torch.stack([h[0] for h in ref.hidden_states])
    assert trace["attentions"].shape == att.shape
    assert (trace["attentions"] - att).abs().max().item() < TOL
    assert trace["hidden_states"].shape == hid.shape
    assert (trace["hidden_states"] - hid).abs().max().item() < TOL


def test_a_family_reads_its_configuration(family):
    style, folder, ours, theirs = family
    cfg, hf = ours.cfg, theirs.config
    assert ours.family == json.loads((folder / "config.json").read_text())["model_type"]
    if style in LLAMA_STYLES:
        assert cfg.rope_style == "halves" and cfg.norm_type == "rms" and cfg.gated
        assert cfg.kv_heads == hf.num_key_value_heads
        assert cfg.rope_base == hf.rope_parameters["rope_theta"]
        assert cfg.qkv_bias == (style == "qwen2")
        tied = style in ("llama-tied-theta", "qwen2")
        assert torch.equal(ours.model.W_U, ours.model.W_E.T) == tied
        if style == "mistral":  # every layer slides; the context stays max_position_embeddings
            assert cfg.sliding_window == 64 and cfg.layer_types is None and cfg.n_ctx == 256
        # The logits are the language model's.
        from transformers import AutoModelForCausalLM

        lm = AutoModelForCausalLM.from_pretrained(folder).eval()
        ids = torch.tensor([ours.tokenizer(TEXTS[0]).ids])
        with torch.no_grad():
            want = lm(ids).logits
            got = ours.model.logits(ours.model(ids))
        assert (got - want).abs().max().item() < TOL
    else:
        assert cfg.norm == "post" and cfg.n_ctx == (128 if style == "roberta" else 128)


def _rewrite(folder, tmp_path, **changes):
    import shutil

    copy = tmp_path / "changed"
    shutil.copytree(folder, copy)
    path = copy / "config.json"
    hf = json.loads(path.read_text())
    hf.update(changes)
    path.write_text(json.dumps(hf))
    return copy


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        # Scalings and head sizes are read (tests/pretrained/test_families_decoders.py); a
        # scaling without its parameters, of a kind the engine lacks, a partial rotation are not.
        ({"rope_parameters": {"rope_type": "llama3", "rope_theta": 1e4}}, "'llama3' needs factor"),
        ({"rope_scaling": {"type": "proportional"}}, "'proportional' is not supported"),
        ({"partial_rotary_factor": 0.5}, "partial_rotary_factor = 0.5 is not supported"),
        ({"attention_bias": True}, "attention_bias = True with mlp_bias = False is not supported"),
        ({"hidden_act": "gelu"}, "hidden_act = 'gelu' is not supported"),
        ({"num_key_value_heads": 3}, "num_key_value_heads = 3 must divide"),
    ],
)
def test_what_the_engine_cannot_reproduce_is_refused_by_name(tmp_path, changes, message):
    folder = make_tiny_llama(tmp_path / "llama", "llama-gqa")
    with pytest.raises(ModelFolderError, match=message):
        load_folder(_rewrite(folder, tmp_path, **changes), CPU)


def test_qwen2_slides_from_max_window_layers_on(tmp_path):
    folder = make_tiny_llama(tmp_path / "qwen", "qwen2")
    changed = _rewrite(folder, tmp_path, use_sliding_window=True, sliding_window=8,
                       max_window_layers=1, layer_types=None)  # fmt: skip
    cfg = load_folder(changed, CPU).cfg
    assert cfg.sliding_window == 8
    assert cfg.layer_types == ("full_attention", "sliding_attention")


def test_llama_style_hook_names_are_pinned(tmp_path):
    from attnviz.engine import hook_points

    model = load_folder(make_tiny_llama(tmp_path / "m", "qwen2"), CPU).model
    names = list(hook_points(model))
    assert [n for n in names if not n.startswith("blocks.")] == [
        "hook_embed", "ln_final.hook_normalized", "hook_logits",
    ]  # fmt: skip
    assert [n.removeprefix("blocks.0.") for n in names if n.startswith("blocks.0.")] == [
        "hook_resid_pre",
        "ln1.hook_normalized",
        "attn.hook_q",
        "attn.hook_k",
        "attn.hook_v",
        "attn.hook_rot_q",
        "attn.hook_rot_k",
        "attn.hook_scores",
        "attn.hook_pattern",
        "attn.hook_z",
        "hook_attn_out",
        "hook_resid_mid",
        "ln2.hook_normalized",
        "mlp.hook_pre",
        "mlp.hook_lin",
        "mlp.hook_post",
        "hook_mlp_out",
        "hook_resid_post",
    ]
    # Keys are per query head, each the copy of its group's key/value head (the view reads them).
    assert model.blocks[0].attn.W_K.shape == (32, 2 * 8) and model.cfg.kv_head_of(3) == 1
