"""Direct logit attribution (capture/attribution.py) against TransformerLens 4.x, the
development-only oracle: its TransformerBridge booted offline from the same tiny random
checkpoint (a GPT-2 and a Llama-style one, loaded by transformers here), in compatibility mode,
``stack_head_results`` plus the embeddings, each layer's b_O and MLP output through
``logit_attrs``: every component within 1e-4 (reached: ~1e-7), for a logit and a difference.

Compatibility mode's weight processing is on. Folding the norms and centring the writing
weights leave each component's attribution as it is (the decomposition centres each component
through the frozen LayerNorm as TransformerLens does); folding the value biases into b_O
(moving each head's b_V @ W_O to the bias) and centring the unembedding (shifting a single
logit, not a difference) would not, so the GPT-2 bridge keeps those two off, and the Llama one,
which has no biases, is compared on a logit difference with every default."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnviz.capture.attribution import logit_attribution
from attnviz.capture.decompose import clean_run
from attnviz.pretrained.registry import load_model
from tests.support.checkpoints import SENTENCES, make_tiny_gpt2, make_tiny_llama

TOL = 1e-4
CPU = torch.device("cpu")


def _bridge(folder: Path, tmp: Path, **processing):
    """TransformerLens's bridge over transformers' model of ``folder``, no download."""
    from transformer_lens.model_bridge import TransformerBridge
    from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

    hf = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    # Saved and read back: the bridge asks the tokenizer where it came from (name_or_path).
    PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json")).save_pretrained(tmp)
    tok = AutoTokenizer.from_pretrained(tmp)
    bridge = TransformerBridge.boot_transformers(str(folder), hf_model=hf, tokenizer=tok,
                                                 device="cpu")  # fmt: skip
    bridge.enable_compatibility_mode(disable_warnings=True, **processing)
    return bridge


def _tl_components(bridge, cache) -> dict[str, torch.Tensor]:
    """TransformerLens's residual stream at the end, by attnviz's component names: each
    (1, T, C)."""
    heads = cache.stack_head_results(layer=-1)  # (L * nh, 1, T, C)
    L, nh = bridge.cfg.n_layers, bridge.cfg.n_heads
    parts = {f"L{i}.H{h}": heads[i * nh + h] for i in range(L) for h in range(nh)}
    parts["embed"] = cache["hook_embed"]
    if "hook_pos_embed" in cache:
        parts["pos"] = cache["hook_pos_embed"]
    for i in range(L):
        parts[f"L{i}.mlp"] = cache[f"blocks.{i}.hook_mlp_out"]
        b_o = bridge.blocks[i].attn.b_O
        if b_o is not None and bool(b_o.abs().max() > 0):
            parts[f"L{i}.attn_bias"] = b_o.detach().expand_as(cache["hook_embed"])
    return parts


CASES = {
    "gpt2": (make_tiny_gpt2, {"fold_value_biases": False, "center_unembed": False}, False),
    "llama": (make_tiny_llama, {}, True),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(CASES))
def test_logit_attribution_equals_transformer_lens(kind, tmp_path):
    make, processing, versus_only = CASES[kind]
    folder = make(tmp_path / kind)
    bridge = _bridge(folder, tmp_path / "tok", **processing)
    m = load_model(folder, CPU)
    ids = m.tokenizer(" ".join(SENTENCES[:2])).ids
    x = torch.tensor([ids])
    run = clean_run(m.model, x)
    with torch.no_grad():
        logits, cache = bridge.run_with_cache(x)
        parts = _tl_components(bridge, cache)
    names = list(parts)
    assert len(names) >= 2 * 4 + 2 + 1  # every head, each MLP, the token vectors
    stack = torch.stack([parts[n] for n in names])  # (N, 1, T, C)
    for position in (1, len(ids) // 2, len(ids) - 1):
        top = logit_attribution(run, position)
        assert top.token == int(logits[0, position].argmax())
        other = int(logits[0, position].argsort()[-2])
        for versus in (other,) if versus_only else (None, other):
            ours = logit_attribution(run, position, top.token, versus)
            with torch.no_grad():
                theirs = cache.logit_attrs(
                    stack[:, :, position], tokens=torch.tensor([top.token]), pos_slice=position,
                    incorrect_tokens=None if versus is None else torch.tensor([versus]),
                ).reshape(len(names))  # fmt: skip
            mine = {c.name: float(v) for c, v in zip(ours.components, ours.values, strict=True)}
            assert set(mine) - set(names) <= {"bias"}  # TransformerLens's: its b_U, below
            for name, value in zip(names, theirs.tolist(), strict=True):
                assert abs(mine[name] - value) < TOL, (kind, position, versus, name)
            b_u = bridge.b_U.detach()
            bias = float(b_u[top.token] - (0 if versus is None else b_u[versus]))
            assert abs(mine.get("bias", 0.0) - bias) < TOL
            want = logits[0, position, top.token] - (0 if versus is None else
                                                     logits[0, position, versus])  # fmt: skip
            assert abs(ours.logit - float(want)) < TOL
