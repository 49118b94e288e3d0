"""GPT-NeoX (Pythia) against Hugging Face transformers, the reference: small random checkpoints
the tests make (tests/support/checkpoints_gemma.py) and save as folders, their config.json both as
transformers 5 writes it and in the hub's older style (rotary_pct, rotary_emb_base), loaded by
attnviz's own loader; attentions, hidden states and logits within 1e-4."""

from __future__ import annotations

import json
import re

import pytest
import torch

from attnviz.capture import capture_trace
from attnviz.pretrained import ModelFolderError, load_folder
from tests.support.checkpoints_gemma import NEOX_STYLES, hub_style, make_tiny_neox, rewrite_config
from tests.support.models import recomputed

TOL = 1e-4
CPU = torch.device("cpu")
TEXTS = [
    "The animal didn't cross the street because it was too tired.",
    "a",
    "Attention lets every token look at every other token. " * 6,
]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    made: dict[str, object] = {}

    def get(style: str):
        if style not in made:
            made[style] = make_tiny_neox(tmp_path_factory.mktemp(style) / style, style)
        return made[style]

    return get


@pytest.fixture(scope="module", params=[(s, c) for s in NEOX_STYLES for c in ("t5", "hub")],
                ids=lambda p: f"{p[0]}-{p[1]}")  # fmt: skip
def family(request, folders, tmp_path_factory):
    """(style, folder, our model, Hugging Face's GPTNeoXForCausalLM on the same folder)."""
    from transformers import AutoModelForCausalLM

    style, config_style = request.param
    folder = folders(style)
    if config_style == "hub":
        folder = rewrite_config(folder, tmp_path_factory.mktemp("hub") / style, hub_style)
    theirs = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    return style, folder, load_folder(folder, CPU), theirs


@pytest.mark.parametrize("text", TEXTS)
def test_a_gpt_neox_equals_transformers(family, text):
    _, _, ours, theirs = family
    x = torch.tensor([ours.tokenizer(text).ids])
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
    assert (logits - ref.logits).abs().max().item() < TOL
    # The query-key view's scores explain its weights (no soft-cap here).
    explained = torch.softmax(trace["scores"], dim=-1)
    assert (explained - trace["attentions"]).abs().max().item() < 1e-6


def test_a_gpt_neox_reads_its_configuration(family):
    style, folder, ours, theirs = family
    cfg, hf = ours.cfg, theirs.config
    assert (
        ours.family == "gpt_neox" == json.loads((folder / "config.json").read_text())["model_type"]
    )
    assert cfg.parallel == hf.use_parallel_residual == (style != "neox-sequential")
    assert cfg.norm_type == "layer" and cfg.ln_affine and cfg.bias and cfg.final_norm
    assert cfg.rope_style == "halves" and cfg.d_head == 16
    assert cfg.rotary_dim == int(16 * hf.rope_parameters["partial_rotary_factor"])
    assert cfg.rotary_dim == {"pythia": 4, "neox-sequential": 8, "neox-dynamic": 4}[style]
    assert cfg.rope_base == hf.rope_parameters["rope_theta"]
    if style == "neox-dynamic":  # the base grows past 32 tokens: the context with it
        assert cfg.rope_scaling is not None and cfg.rope_scaling.kind == "dynamic"
        assert cfg.rope_scaling.factor == 2.0 and cfg.n_ctx == 64
    else:
        assert cfg.rope_scaling is None and cfg.n_ctx == 256
    tied = style == "neox-sequential"
    assert torch.equal(ours.model.W_U, ours.model.W_E.T) == tied


def test_the_fused_qkv_is_split_per_head(folders):
    """Head h's query, key and value are rows h*3*hs .. (h+1)*3*hs of query_key_value, in that
    order: the engine's head h is columns h*hs .. (h+1)*hs of W_Q, W_K, W_V."""
    from safetensors.torch import load_file

    folder = folders("pythia")
    ours = load_folder(folder, CPU).model
    fused = load_file(folder / "model.safetensors")
    w = fused["gpt_neox.layers.1.attention.query_key_value.weight"]  # (3 * 64, 64)
    b = fused["gpt_neox.layers.1.attention.query_key_value.bias"]  # (3 * 64,)
    attn = ours.blocks[1].attn
    for h in range(4):
        rows = slice(h * 48, (h + 1) * 48)
        cols = slice(h * 16, (h + 1) * 16)
        for j, (W, bias) in enumerate(
            [(attn.W_Q, attn.b_Q), (attn.W_K, attn.b_K), (attn.W_V, attn.b_V)]
        ):
            assert torch.equal(W[:, cols].T, w[rows][j * 16 : (j + 1) * 16])
            assert torch.equal(bias[cols], b[rows][j * 16 : (j + 1) * 16])


@pytest.mark.parametrize("style", list(NEOX_STYLES))
def test_both_styles_of_config_json_read_the_same(folders, tmp_path, style):
    folder = folders(style)
    hub = rewrite_config(folder, tmp_path / "hub", hub_style)
    written = json.loads((hub / "config.json").read_text())
    assert "rope_parameters" not in written and "rotary_pct" in written
    assert load_folder(folder, CPU).cfg == load_folder(hub, CPU).cfg


def test_what_a_config_leaves_out_is_transformers_default(folders, tmp_path):
    """Without rotary_pct, rotary_emb_base, use_parallel_residual..., GPTNeoXConfig's defaults."""
    from transformers import GPTNeoXConfig

    dropped = ("rope_parameters", "use_parallel_residual", "hidden_act", "layer_norm_eps",
               "attention_bias", "tie_word_embeddings")  # fmt: skip

    def drop(hf: dict) -> dict:
        return {k: v for k, v in hf.items() if k not in dropped}

    folder = rewrite_config(folders("pythia"), tmp_path / "few", drop)
    cfg = load_folder(folder, CPU).cfg
    hf = GPTNeoXConfig(**json.loads((folder / "config.json").read_text()))
    assert cfg.rotary_dim == int(16 * hf.rope_parameters["partial_rotary_factor"]) == 4
    assert cfg.rope_base == hf.rope_parameters["rope_theta"] == 10000
    assert cfg.parallel == hf.use_parallel_residual is True
    assert cfg.ln_eps == hf.layer_norm_eps and cfg.activation == hf.hidden_act == "gelu"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"attention_bias": False}, "attention_bias = False is not supported"),
        ({"hidden_act": "gelu_fast"}, "hidden_act = 'gelu_fast' is not supported"),
        (
            {
                "rope_parameters": {
                    "rope_type": "ntk-by-parts",
                    "factor": 2.0,
                    "rope_theta": 1e4,
                    "partial_rotary_factor": 0.25,
                }
            },
            "rope_parameters of type 'ntk-by-parts' is not supported",
        ),  # fmt: skip
        ({"rope_scaling": {"type": "linear"}}, "rope_scaling of type 'linear' needs factor"),
        ({"rope_parameters": None, "rotary_pct": 0.1}, "rotary_pct = 0.1 rotates 1 of each"),
        ({"rope_parameters": None, "rotary_pct": 1.5}, "rotary_pct must be in"),
        (
            {"rope_parameters": {"rope_theta": 1e4, "partial_rotary_factor": 0.1}},
            "partial_rotary_factor = 0.1 turns 1 of",
        ),
        ({"rope_parameters": None, "rotary_emb_base": -1}, "rope_theta must be a positive"),
        ({"use_parallel_residual": "yes"}, "use_parallel_residual must be true or false"),
        ({"num_attention_heads": 3}, "3 heads do not divide hidden_size 64"),
    ],
)
def test_what_the_engine_cannot_reproduce_is_refused_by_name(folders, tmp_path, changes, message):
    folder = rewrite_config(folders("pythia"), tmp_path / "c", lambda hf: {**hf, **changes})
    with pytest.raises(ModelFolderError, match=re.escape(message)):
        load_folder(folder, CPU)


@pytest.mark.parametrize("style", list(NEOX_STYLES))
def test_a_gpt_neox_writes_what_transformers_writes(folders, style):
    """Greedy generation through the engine's key/value cache (neox-dynamic: past its context
    of 32, where the rotary base grows each step): transformers' own generate's tokens."""
    from transformers import AutoModelForCausalLM

    from attnviz.engine.generate import continue_ids

    folder = folders(style)
    ours = load_folder(folder, CPU)
    theirs = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    ids = ours.tokenizer("The animal").ids
    with torch.no_grad():
        out = theirs.generate(torch.tensor([ids]), max_new_tokens=40, do_sample=False)
    want = out[0, len(ids) :].tolist()
    assert len(ids) + len(want) > 32
    assert continue_ids(ours.model, ids, 40, stop=ours.eos_ids) == want


def test_the_hubs_buffers_are_left_out_and_an_unknown_tensor_refused(folders, tmp_path):
    """Pythia's files on the hub carry each layer's causal mask (attention.bias), masked_bias
    and rotary inv_freq: buffers, not weights, left out. A tensor the conversion does not
    know is refused by name."""
    import shutil

    from safetensors.torch import load_file, save_file

    folder = tmp_path / "hub"
    shutil.copytree(folders("pythia"), folder)
    tensors = load_file(folder / "model.safetensors")
    for i in range(2):
        p = f"gpt_neox.layers.{i}.attention."
        tensors[p + "bias"] = torch.ones(1, 1, 256, 256, dtype=torch.bool).tril()
        tensors[p + "masked_bias"] = torch.tensor(-1e9)
        tensors[p + "rotary_emb.inv_freq"] = torch.ones(2)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    want = load_folder(folders("pythia"), CPU).model.state_dict()
    got = load_folder(folder, CPU).model.state_dict()
    assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)
    tensors["gpt_neox.layers.0.mlp.gate.weight"] = torch.zeros(96, 64)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelFolderError, match="unexpected tensors layers.0.mlp.gate.weight"):
        load_folder(folder, CPU)
