"""Today's Llama-style checkpoints (Llama 3.x with every RoPE scaling, Qwen2/2.5 with its window,
Qwen3, Mistral with its window, OLMo 2, Phi-3) against Hugging Face transformers, the reference:
small random checkpoints the tests make (tests/support/checkpoints_decoders.py), loaded by attnviz's own
loader from config.json in transformers 5's style and rewritten in the hub's older style.
Attentions, hidden states and logits within 1e-4 in float32, at texts past every sliding window
and past the original context of every scaled RoPE; the scores the query-key view serves explain
the weights; what the engine cannot reproduce is refused by name."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from attnviz.capture import capture_trace
from attnviz.engine import Transformer
from attnviz.pretrained import ModelFolderError, load_folder
from attnviz.pretrained.families.llama import llama_config
from tests.support.checkpoints_decoders import (
    DECODER_STYLES,
    ORIGINAL,
    WINDOW,
    make_decoder,
    rewrite_config,
    to_hub_style,
)
from tests.support.models import recomputed

TOL = 1e-4
CPU = torch.device("cpu")
SHORT = "I sat on the bank."  # under the window and the original context
LONG = "Attention lets every token look at every other token. " * 6  # well past both


@pytest.fixture(scope="module", params=list(DECODER_STYLES))
def decoder(request, tmp_path_factory):
    """(style, ours from transformers 5's config.json, ours from the hub's, Hugging Face's)."""
    from transformers import AutoModelForCausalLM

    style = request.param
    root = tmp_path_factory.mktemp(style)
    folder = make_decoder(root / "v5", style)
    hub = rewrite_config(folder, root / "hub", to_hub_style)
    theirs = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    return style, load_folder(folder, CPU), load_folder(hub, CPU), theirs


def _ids(model, text: str) -> torch.Tensor:
    return torch.tensor([model.tokenizer(text).ids])


def test_the_texts_reach_past_the_windows_and_the_original_contexts(decoder):
    _, ours, _, _ = decoder
    assert _ids(ours, SHORT).shape[1] < min(WINDOW, ORIGINAL)
    assert _ids(ours, LONG).shape[1] > 3 * max(WINDOW, ORIGINAL)


@pytest.mark.parametrize("text", [SHORT, LONG])
def test_a_decoder_equals_transformers(decoder, text):
    _, ours, _, theirs = decoder
    ids = _ids(ours, text)
    trace = capture_trace(ours.model, ids, field="text")
    # The query-key view's scores explain the forward's weights (no soft-cap in these families).
    for i in range(ours.cfg.n_layers):
        want = trace.forward_pattern[i]
        assert (torch.softmax(trace.scores(i), dim=-1) - want).abs().max().item() < 1e-6
    got = recomputed(trace)
    with torch.no_grad():
        ref = theirs(ids, output_attentions=True, output_hidden_states=True)
        logits = ours.model.logits(ours.model(ids))
    att = torch.stack([a[0] for a in ref.attentions])
    hid = torch.stack([h[0] for h in ref.hidden_states])
    assert got["attentions"].shape == att.shape
    assert (got["attentions"] - att).abs().max().item() < TOL
    assert got["hidden_states"].shape == hid.shape
    assert (got["hidden_states"] - hid).abs().max().item() < TOL
    assert (logits - ref.logits).abs().max().item() < TOL


def test_both_styles_of_config_json_read_alike(decoder):
    _, ours, ours_hub, _ = decoder
    assert ours_hub.cfg == ours.cfg
    for name, value in ours.model.state_dict().items():
        assert torch.equal(ours_hub.model.state_dict()[name], value), name


# What each style's config.json must turn into (beyond Llama's wiring, which all share).
EXPECTED: dict[str, dict] = {
    "llama3": {"head_dim": 16, "rope": "llama3", "n_ctx": 256},
    "llama-linear": {"rope": "linear"},
    # Dynamic NTK grows its base past max_position_embeddings (16): the context is factor x it.
    "llama-dynamic": {"rope": "dynamic", "n_ctx": 2 * ORIGINAL},
    "llama-yarn": {"head_dim": 16, "rope": "yarn", "n_ctx": 4 * ORIGINAL},
    "qwen2-yarn": {"rope": "yarn", "qkv_bias": True},
    "llama-longrope": {"rope": "longrope", "n_ctx": 4 * ORIGINAL},
    "llama-bias": {"bias": True, "qkv_bias": False},
    "qwen2-window": {
        "qkv_bias": True,
        "sliding_window": WINDOW,
        "layer_types": ("full_attention", "sliding_attention", "sliding_attention"),
    },
    "qwen3": {
        "head_dim": 16,
        "qk_norm": "head",
        "sliding_window": WINDOW,
        "layer_types": ("full_attention", "sliding_attention"),
    },
    "qwen3-yarn": {"head_dim": 16, "qk_norm": "head", "rope": "yarn", "n_ctx": 4 * ORIGINAL},
    # Mistral: every layer slides, and the context is max_position_embeddings, not the window.
    "mistral": {"head_dim": 16, "sliding_window": WINDOW, "n_ctx": 256},
    "olmo2": {"norm": "none", "out_norm": True, "qk_norm": "proj", "ln_eps": 1e-5},
    "phi3": {
        "rotary_dim": 4,
        "rope": "longrope",
        "sliding_window": WINDOW,
        "n_ctx": 64,
        "ln_eps": 1e-5,
    },
    "phi3-4k": {"rotary_dim": None, "sliding_window": None, "ln_eps": 1e-5},
}


def test_a_decoder_reads_its_configuration(decoder):
    style, ours, _, theirs = decoder
    cfg, hf = ours.cfg, theirs.config
    assert ours.family == DECODER_STYLES[style]["model_type"]
    assert cfg.d_head == (getattr(hf, "head_dim", None) or hf.hidden_size // hf.num_attention_heads)
    assert cfg.kv_heads == hf.num_key_value_heads
    assert cfg.rope_base == hf.rope_parameters["rope_theta"]
    expected = {"head_dim": None, "rope": None, "sliding_window": None,
                "layer_types": None, "qk_norm": "none", "bias": False, "qkv_bias": False,
                "norm": "pre", "out_norm": False, "rotary_dim": None, "n_ctx": 256,
                "ln_eps": 1e-6, **EXPECTED[style]}  # fmt: skip
    kind = expected.pop("rope")
    assert (cfg.rope_scaling.kind if cfg.rope_scaling else None) == kind
    assert {k: getattr(cfg, k) for k in expected} == expected
    tied = bool(DECODER_STYLES[style].get("tie_word_embeddings"))
    assert torch.equal(ours.model.W_U, ours.model.W_E.T) == tied


def _without(cfg) -> list:
    """What the style adds, each taken away alone: its RoPE scaling, its window."""
    plain = []
    if cfg.rope_scaling is not None:
        plain.append(replace(cfg, rope_scaling=None))
    if cfg.sliding_window is not None:
        plain.append(replace(cfg, sliding_window=None, layer_types=None))
    return plain


def test_what_a_style_adds_matters_at_the_test_length(decoder):
    """The equivalence above would be weak if the scaling or the window changed nothing at the
    length tested: without either, the weights differ from transformers'."""
    style, ours, _, theirs = decoder
    variants = _without(ours.cfg)
    assert bool(variants) == (style not in ("llama-bias", "olmo2", "phi3-4k"))
    ids = _ids(ours, LONG)
    with torch.no_grad():
        ref = theirs(ids, output_attentions=True)
    att = torch.stack([a[0] for a in ref.attentions])
    for plain in variants:
        model = Transformer(plain).eval()
        model.load_state_dict(ours.model.state_dict())
        got = capture_trace(model, ids, field="text")
        assert (torch.stack(got.forward_pattern) - att).abs().max().item() > 100 * TOL


def test_generation_step_by_step_equals_transformers_with_its_cache(decoder):
    """A prompt of 4 tokens, then one token a step with the engine's KVCache, past the window
    and the original context: the logits of every step are transformers' with its own cache.
    (Dynamic NTK and LongRoPE then differ from a forward of the whole text, in transformers as
    here: the keys cached before the length crossed the original context keep their rotation.)"""
    from transformers import DynamicCache

    from attnviz.engine.model import KVCache

    _, ours, _, theirs = decoder
    ids = _ids(ours, LONG)[:, : 2 * ORIGINAL + 4]
    cache, their_cache = KVCache(), DynamicCache(config=theirs.config)
    steps = [(0, 4)] + [(t, t + 1) for t in range(4, ids.shape[1])]
    with torch.no_grad():
        for a, b in steps:
            got = ours.model.logits(ours.model(ids[:, a:b], cache=cache))
            want = theirs(ids[:, a:b], cache=their_cache, use_cache=True).logits
            assert (got - want).abs().max().item() < TOL, (a, b)
    assert cache.length == ids.shape[1]


# ---------------------------------------------------------------------------------------------
# Refusals, each naming the setting.


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("refused")
    return {s: make_decoder(root / s, s) for s in ("llama3", "qwen2-window", "qwen3", "olmo2",
                                                   "phi3", "mistral")}  # fmt: skip


def _changed(folders, tmp_path, style: str, **changes):
    def change(hf: dict) -> dict:
        return {**hf, **changes}

    return rewrite_config(folders[style], tmp_path / "changed", change)


_LAYERED = {"full_attention": {"rope_type": "default", "rope_theta": 1e4},
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e6}}  # fmt: skip


@pytest.mark.parametrize(
    ("style", "changes", "message"),
    [
        ("llama3", {"attention_bias": True}, "attention_bias = True with mlp_bias = False is not"),
        ("llama3", {"mlp_bias": True}, "attention_bias = False with mlp_bias = True is not"),
        ("llama3", {"hidden_act": "gelu"}, "hidden_act = 'gelu' is not supported"),
        ("llama3", {"rope_parameters": {"rope_type": "proportional", "rope_theta": 1e4}},
         "rope_parameters of type 'proportional' is not supported"),
        ("llama3", {"rope_scaling": {"type": "mrope", "mrope_section": [2, 2]}},
         "rope_scaling of type 'mrope' is not supported"),
        ("llama3", {"rope_parameters": {"rope_type": "llama3", "factor": 8.0,
                                        "high_freq_factor": 4.0, "rope_theta": 1e4}},
         "rope_parameters of type 'llama3' needs low_freq_factor"),
        ("llama3", {"rope_scaling": {"rope_type": "linear", "factor": "2"}},
         r"rope_scaling.factor must be a positive number \(got '2'\)"),
        ("llama3", {"rope_parameters": {"rope_type": "longrope", "rope_theta": 1e4,
                                        "short_factor": [1.0] * 3, "long_factor": [1.0] * 8}},
         "rope_parameters.short_factor has 3 numbers; the rotated part of a head has 8 pairs"),
        ("llama3", {"partial_rotary_factor": 0.5},
         r"partial_rotary_factor = 0.5 is not supported \(llama turns the whole head\)"),
        ("llama3", {"rope_parameters": _LAYERED, "layer_types": ["full_attention"] * 2},
         "rope_parameters differs between layer types"),
        ("qwen2-window", {"use_sliding_window": False},
         "layer_types has sliding_attention layers but no window to slide"),
        ("qwen2-window", {"layer_types": ["full_attention"] * 2},
         "layer_types must name each of the 3 layers"),
        ("qwen3", {"attention_bias": True}, "attention_bias = True is not supported"),
        ("qwen3", {"partial_rotary_factor": 0.25}, "partial_rotary_factor = 0.25 is not"),
        ("olmo2", {"attention_bias": True}, "attention_bias = True is not supported"),
        ("phi3", {"rope_scaling": {"type": "linear", "factor": 2.0}},
         "rope_scaling of type 'linear' is not supported \\(Phi-3"),
        ("phi3", {"partial_rotary_factor": 0.1, "rope_parameters": None},
         "partial_rotary_factor = 0.1 turns 0 of a head's 8 coordinates; RoPE needs an even"),
        ("phi3", {"original_max_position_embeddings": 0},
         "original_max_position_embeddings must be a positive integer"),
        ("mistral", {"sliding_window": 0}, "sliding_window = 0 must be a positive integer"),
    ],
)  # fmt: skip
def test_what_the_engine_cannot_reproduce_is_refused_by_name(
    folders, tmp_path, style, changes, message
):
    with pytest.raises(ModelFolderError, match=message):
        load_folder(_changed(folders, tmp_path, style, **changes), CPU)


def test_rope_parameters_keyed_by_layer_type_read_when_alike(folders, tmp_path):
    ours = load_folder(folders["qwen3"], CPU)
    params = json.loads((folders["qwen3"] / "config.json").read_text())["rope_parameters"]
    nested = {"full_attention": params, "sliding_attention": params}
    assert load_folder(_changed(folders, tmp_path, "qwen3", rope_parameters=nested), CPU).cfg == (
        ours.cfg
    )


def test_qwen_reads_no_window_unless_use_sliding_window(folders, tmp_path):
    """Qwen2.5's configs name a sliding_window and max_window_layers but leave
    use_sliding_window false: no layer slides (the hub's style, no layer_types)."""
    hub = to_hub_style(json.loads((folders["qwen2-window"] / "config.json").read_text()))
    path = tmp_path / "qwen"
    rewrite_config(folders["qwen2-window"], path, lambda _: {**hub, "use_sliding_window": False})
    cfg = load_folder(path, CPU).cfg
    assert cfg.sliding_window is None and cfg.layer_types is None


def test_mistral_with_no_window_attends_to_everything(folders, tmp_path):
    cfg = load_folder(_changed(folders, tmp_path, "mistral", sliding_window=None), CPU).cfg
    assert cfg.sliding_window is None and cfg.n_ctx == 256


# ---------------------------------------------------------------------------------------------
# config.json shaped as the hub's checkpoints write them, read at their real sizes: the rotation
# the engine computes from what was read equals transformers' own rotary embedding, at lengths
# past each original context (no weights needed: RoPE depends on the configuration alone).


def _factors(n: int, top: float) -> list[float]:
    return [round(1.0 + (top - 1.0) * (i / (n - 1)) ** 2, 4) for i in range(n)]


_LLAMA2 = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
           "num_hidden_layers": 32, "intermediate_size": 11008, "max_position_embeddings": 4096,
           "rms_norm_eps": 1e-5, "vocab_size": 32000, "rope_theta": 10000.0}  # fmt: skip
HUB_SHAPED: dict[str, dict] = {
    "llama-3.2-1b": {
        "model_type": "llama", "hidden_size": 2048, "head_dim": 64, "num_attention_heads": 32,
        "num_key_value_heads": 8, "num_hidden_layers": 16, "intermediate_size": 8192,
        "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "vocab_size": 128256,
        "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": True,
        "rope_theta": 500000.0,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    },
    "llama-2-linear-x4": {**_LLAMA2, "rope_scaling": {"type": "linear", "factor": 4.0}},
    "llama-2-dynamic-x2": {**_LLAMA2, "rope_scaling": {"type": "dynamic", "factor": 2.0}},
    "qwen2.5-7b-yarn": {
        "model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28,
        "num_key_value_heads": 4, "num_hidden_layers": 28, "intermediate_size": 18944,
        "max_position_embeddings": 32768, "max_window_layers": 28, "sliding_window": 131072,
        "use_sliding_window": False, "rope_theta": 1000000.0, "vocab_size": 152064,
        "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
    },
    "qwen3-0.6b": {
        "model_type": "qwen3", "hidden_size": 1024, "head_dim": 128, "num_attention_heads": 16,
        "num_key_value_heads": 8, "num_hidden_layers": 28, "intermediate_size": 3072,
        "max_position_embeddings": 40960, "max_window_layers": 28, "sliding_window": None,
        "use_sliding_window": False, "rope_theta": 1000000.0, "rope_scaling": None,
        "attention_bias": False, "tie_word_embeddings": True, "vocab_size": 151936,
    },
    "mistral-7b-v0.1": {
        "model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 8, "num_hidden_layers": 32, "intermediate_size": 14336,
        "max_position_embeddings": 32768, "sliding_window": 4096, "rope_theta": 10000.0,
        "rms_norm_eps": 1e-5, "vocab_size": 32000,
    },
    "olmo-2-1b": {
        "model_type": "olmo2", "hidden_size": 2048, "num_attention_heads": 16,
        "num_key_value_heads": 16, "num_hidden_layers": 16, "intermediate_size": 8192,
        "max_position_embeddings": 4096, "rope_theta": 500000, "rms_norm_eps": 1e-6,
        "rope_scaling": None, "attention_bias": False, "vocab_size": 100352, "pad_token_id": 1,
    },
    "phi-3-mini-128k": {
        "model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32,
        "num_key_value_heads": 32, "num_hidden_layers": 32, "intermediate_size": 8192,
        "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
        "sliding_window": 262144, "rope_theta": 10000.0, "vocab_size": 32064,
        "pad_token_id": 32000, "bos_token_id": 1, "eos_token_id": 32000,
        "rope_scaling": {"type": "longrope", "short_factor": _factors(48, 1.2),
                         "long_factor": _factors(48, 40.0)},
    },
    "phi-4-mini": {
        "model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 24,
        "num_key_value_heads": 8, "num_hidden_layers": 32, "intermediate_size": 8192,
        "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
        "partial_rotary_factor": 0.75, "sliding_window": 262144, "rope_theta": 10000.0,
        "tie_word_embeddings": True, "vocab_size": 200064, "pad_token_id": 199999,
        "rope_scaling": {"type": "longrope", "short_factor": _factors(48, 1.1),
                         "long_factor": _factors(48, 30.0)},
    },
}  # fmt: skip
# Lengths to rotate: under the original context and past it.
LENGTHS = {"llama-3.2-1b": 9000, "llama-2-linear-x4": 5000, "llama-2-dynamic-x2": 6000,
           "qwen2.5-7b-yarn": 40000, "qwen3-0.6b": 100, "mistral-7b-v0.1": 5000,
           "olmo-2-1b": 5000, "phi-3-mini-128k": 5000, "phi-4-mini": 5000}  # fmt: skip


@pytest.mark.parametrize("name", list(HUB_SHAPED))
def test_hub_shaped_configs_rotate_as_transformers(name):
    import importlib

    from transformers import AutoConfig

    from attnviz.engine.positional import rope_cos_sin, rope_frequencies
    from attnviz.pretrained.convert import FAMILIES

    hf = HUB_SHAPED[name]
    model_type = hf["model_type"]
    cfg = FAMILIES[model_type].config(hf)
    config = AutoConfig.for_model(model_type, **{k: v for k, v in hf.items() if k != "model_type"})
    module = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    (rotary,) = [getattr(module, n) for n in dir(module) if n.endswith("RotaryEmbedding")]
    head = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    assert cfg.d_head == head and cfg.kv_heads == config.num_key_value_heads
    for n in (64, LENGTHS[name]):
        with torch.no_grad():
            want_cos, want_sin = rotary(config)(torch.zeros(1), torch.arange(n)[None])
        base, scaling = cfg.rope_of(0)
        inv_freq, factor = rope_frequencies(cfg.rotary_dim or cfg.d_head, base, scaling, n)
        cos, sin = rope_cos_sin(inv_freq, factor, 0, n, torch.float32)
        assert cos.shape == want_cos[0].shape
        assert (cos - want_cos[0]).abs().max().item() < 1e-5, n
        assert (sin - want_sin[0]).abs().max().item() < 1e-5, n


def test_hub_shaped_configs_read_their_sizes_windows_and_contexts():
    cfg = llama_config(HUB_SHAPED["llama-3.2-1b"])
    assert (cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.d_head) == (2048, 32, 8, 64)
    assert cfg.n_ctx == 131072 and cfg.rope_base == 500000.0
    assert cfg.rope_scaling is not None and cfg.rope_scaling.kind == "llama3"
    assert (cfg.rope_scaling.factor, cfg.rope_scaling.original_max_positions) == (32.0, 8192)
    qwen = llama_config(HUB_SHAPED["qwen2.5-7b-yarn"])
    assert qwen.sliding_window is None and qwen.n_ctx == 4 * 32768  # YaRN's x4 context
    mistral = llama_config(HUB_SHAPED["mistral-7b-v0.1"])
    assert mistral.sliding_window == 4096 and mistral.n_ctx == 32768
