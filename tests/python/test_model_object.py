"""A transformers model object in memory (``attnviz.trace(model=hf, tokenizer=tok, text=...)``,
``attnviz.show(model=...)``): traced through the bridge without being saved, its weights and
hidden states are the model's own output_attentions and hidden_states, and its trace is the
trace of the same weights saved to a folder and loaded with the transformers backend; the
object is left as it was (training mode, attention implementation), probed once however often
it is traced, traced anew when its weights change; show() of it draws offline; a missing or
wrong argument is refused by name."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import attnviz
from attnviz.errors import TraceError
from attnviz.pretrained.bridge import load_bridged
from attnviz.pretrained.bridge.memory import MemoryModel
from attnviz.python import local
from attnviz.python.html import Display
from tests.python.offline import drawn, opened, wait_drawn
from tests.support.checkpoints import SENTENCES, make_piece_tokenizer, make_tokenizer

CPU = torch.device("cpu")
TOL = 1e-6
TEXT = SENTENCES[0]


def tiny(kind: str, seed: int = 0):
    """A tiny random model made from a config in memory (never saved), every parameter
    perturbed so that no norm is the identity and no bias zero, with its fast tokenizer."""
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
    )

    torch.manual_seed(seed)
    if kind == "gpt2":
        tk = make_tokenizer()
        model = GPT2LMHeadModel(
            GPT2Config(vocab_size=tk.get_vocab_size(), n_positions=128, n_embd=32, n_layer=2,
                       n_head=4, bos_token_id=0, eos_token_id=0)
        )  # fmt: skip
    else:  # Llama: grouped-query attention (2 key/value heads), RoPE
        tk = make_piece_tokenizer()
        model = LlamaForCausalLM(
            LlamaConfig(vocab_size=tk.get_vocab_size(), hidden_size=32, intermediate_size=64,
                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                        max_position_embeddings=128, rope_theta=500.0, bos_token_id=1,
                        eos_token_id=2)
        )  # fmt: skip
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model, PreTrainedTokenizerFast(tokenizer_object=tk)


def own_forward(model, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The model's own output_attentions (layers, heads, n, n) and hidden_states (layers + 1,
    n, d): eager attention, eval mode, on a copy of the object (the original left alone)."""
    import copy

    m = copy.deepcopy(model).eval()
    m.set_attn_implementation("eager")
    with torch.no_grad():
        out = m(input_ids=torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    attentions = torch.stack([a[0] for a in out.attentions]).numpy()
    states = torch.stack([h[0] for h in out.hidden_states]).numpy()
    return attentions, states


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_a_model_object_is_its_own_forward_and_its_saved_folders_trace(kind, tmp_path):
    model, tok = tiny(kind)
    assert model.training and model.config._attn_implementation == "sdpa"
    t = attnviz.trace(model=model, tokenizer=tok, text=TEXT)
    # The object is left as it was: training mode, its own attention.
    assert model.training and all(m.training for m in model.modules())
    assert model.config._attn_implementation == "sdpa"
    assert t.meta["backend"] == "transformers"
    # The attributions (issue 29) decompose the native engine's stream: a bridged model has none.
    assert set(t.meta["unavailable"]) == {"value_weighted", "value_weighted_sum",
                                          "qk_attribution", "logit_attribution"}  # fmt: skip
    # The class's name, numbered when another object of this process took it first.
    assert re.fullmatch(rf"{type(model).__name__}( \(\d+\))?", t.meta["model"]), t.meta["model"]
    ids = t["token_ids"]
    assert ids == tok(TEXT)["input_ids"] and len(ids) > 8
    attentions, states = own_forward(model, ids)
    assert t["attentions"].shape == attentions.shape
    np.testing.assert_allclose(t["attentions"], attentions, rtol=0, atol=TOL)
    np.testing.assert_allclose(t["hidden_states"], states, rtol=0, atol=TOL)
    # A part cut later (weights from the recorded q and k, as from the service's cache).
    np.testing.assert_allclose(
        t.part(fields="attentions", layer=1, head=3)["attentions"][0, 0], attentions[1, 3],
        rtol=0, atol=TOL,
    )  # fmt: skip

    # The same weights saved to a folder and loaded through the transformers backend.
    folder = tmp_path / f"saved-{kind}"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    served = load_bridged(folder, CPU, name=f"saved-{kind}-{id(model)}")
    local.trace_service().registry.add(served)
    try:
        saved = attnviz.trace(model=served.name, text=TEXT)
        assert sorted(saved.arrays) == sorted(t.arrays)
        for name, array in saved.arrays.items():
            np.testing.assert_allclose(t[name], array, rtol=0, atol=TOL, err_msg=name)
        skip = {"model", "json_numbers"}  # the name; the same count either way (asserted below)
        assert {k: v for k, v in t.meta.items() if k not in skip} == {
            k: v for k, v in saved.meta.items() if k not in skip
        }
        assert t.meta["json_numbers"] == saved.meta["json_numbers"]
        for query in ({"fields": "view", "layer": 1, "head": 2},
                      {"fields": "queries,keys,scores,attentions", "layer": 0, "head": 1,
                       "query": 4},
                      {"fields": "thumbs", "thumb": 0, "thumb_layer": 1},
                      {"fields": "rollout,head_mean", "layer": 1}):  # fmt: skip
            a, b = t.part(**query), saved.part(**query)
            assert sorted(a.arrays) == sorted(b.arrays), query
            for name in a.arrays:
                np.testing.assert_allclose(a[name], b[name], rtol=0, atol=TOL, err_msg=name)
        # Letting it write first: the same tokens, the same trace of them.
        steps = {"steps": 5, "temperature": 1.0, "seed": 3}
        a = attnviz.trace(model=model, tokenizer=tok, text=TEXT, generate=steps)
        b = attnviz.trace(model=served.name, text=TEXT, generate=steps)
        assert a.meta["generated"] == b.meta["generated"] and a.tokens == b.tokens
        assert a.meta["generated"]["steps"] > 0
        np.testing.assert_allclose(a["attentions"], b["attentions"], rtol=0, atol=TOL)
    finally:
        local.trace_service().registry.remove([served.name])


def test_the_same_object_is_probed_once_and_traced_anew_when_its_weights_change():
    model, tok = tiny("gpt2", seed=1)
    model.config.name_or_path = "/somewhere/my-tiny-gpt2"
    first = attnviz.trace(model=model, tokenizer=tok, text=TEXT)
    served = local._memory[id(model)]
    assert isinstance(served, MemoryModel) and served.hf is model
    assert first.meta["model"] == served.name == "my-tiny-gpt2"  # the folder's own name
    again = attnviz.trace(model=model, tokenizer=tok, text=TEXT)
    assert local._memory[id(model)] is served  # not probed nor registered again
    assert sum(m.hf is model for m in local._memory.values()) == 1
    np.testing.assert_array_equal(first["attentions"], again["attentions"])
    with torch.no_grad():  # trained further: the next trace is of the weights as they are now
        for p in model.parameters():
            p.mul_(1.5)
    later = attnviz.trace(model=model, tokenizer=tok, text=TEXT)
    attentions, _ = own_forward(model, later["token_ids"])
    assert np.abs(later["attentions"] - first["attentions"]).max() > 1e-3
    np.testing.assert_allclose(later["attentions"], attentions, rtol=0, atol=TOL)
    # Another object of the same name is another model, named apart.
    other, _ = tiny("gpt2", seed=2)
    other.config.name_or_path = "my-tiny-gpt2"
    assert attnviz.trace(model=other, tokenizer=tok, text=TEXT).meta["model"] == (
        "my-tiny-gpt2 (2)"
    )


def test_a_model_whose_attention_bypasses_the_interface_says_so():
    """BLOOM computes ALiBi attention itself: weights and hidden states, no queries or keys."""
    from transformers import BloomConfig, BloomForCausalLM, PreTrainedTokenizerFast

    tk = make_tokenizer()
    torch.manual_seed(0)
    model = BloomForCausalLM(
        BloomConfig(vocab_size=tk.get_vocab_size(), hidden_size=32, n_layer=2, n_head=4)
    )
    tok = PreTrainedTokenizerFast(tokenizer_object=tk)
    t = attnviz.trace(model=model, tokenizer=tok, text=TEXT)
    assert set(t.meta["unavailable"]) >= {"queries", "keys", "scores"}
    assert "AttentionInterface" in t.meta["unavailable"]["queries"]
    assert "queries" not in t.arrays
    attentions, states = own_forward(model, t["token_ids"])
    np.testing.assert_allclose(t["attentions"], attentions, rtol=0, atol=TOL)
    np.testing.assert_allclose(t["hidden_states"], states, rtol=0, atol=TOL)
    assert model.training


def test_show_of_a_model_object_draws_offline(browser, tmp_path):
    model, tok = tiny("llama", seed=3)
    display = attnviz.show(model=model, tokenizer=tok, text=TEXT, layer=1, head=2)
    assert isinstance(display, Display)  # outside IPython: returned, not displayed
    path = tmp_path / "shown.html"
    path.write_text(display.page, encoding="utf-8")
    with opened(browser, path) as (page, errors):
        wait_drawn(page)
        seen = drawn(page)
        assert seen["cells"] == 2 * 4
        assert seen["large"] and seen["headLines"] > 0 and seen["traj"] > 0
        assert seen["qk"] > 0 and not seen["qkUnavailable"]
        assert seen["error"] == ""
        assert "LlamaForCausalLM" in page.locator("header .tagline").inner_text()
        assert errors == []


@pytest.mark.parametrize("call", [attnviz.trace, attnviz.show])
def test_a_missing_or_wrong_argument_is_refused_by_name(call):
    model, tok = tiny("gpt2", seed=4)
    cases = [
        ({"model": model, "text": TEXT}, r"^tokenizer: a model object \(GPT2LMHeadModel\) needs"),
        ({"tokenizer": tok, "text": TEXT}, r"^model: tokenizer= goes with a transformers model"),
        ({"model": model, "tokenizer": tok}, r"^text: the text to trace is required"),
        ({"model": object(), "tokenizer": tok, "text": TEXT}, r"^model: a transformers model"),
        ({"model": model, "tokenizer": 3, "text": TEXT}, r"^tokenizer: a transformers tokenizer"),
        ({"model": "all-MiniLM-L6-v2", "tokenizer": tok, "text": TEXT},
         r"^tokenizer: only with a transformers model object"),
    ]  # fmt: skip
    for kwargs, message in cases:
        with pytest.raises(TraceError, match=message):
            call(**kwargs)


def test_a_tokenizer_larger_than_the_models_table_is_refused():
    from transformers import GPT2Config, GPT2LMHeadModel

    _, tok = tiny("gpt2")
    small = GPT2LMHeadModel(GPT2Config(vocab_size=100, n_embd=16, n_layer=1, n_head=2,
                                       bos_token_id=0, eos_token_id=0))  # fmt: skip
    assert len(tok) > 100
    with pytest.raises(TraceError, match=r"^tokenizer: it has \d+ tokens but the model's .* 100"):
        attnviz.trace(model=small, tokenizer=tok, text=TEXT)
