"""Generation through the key/value cache writes what a whole forward per step writes: the same
ids and the same logits (within 1e-5), greedy or sampled, with stop tokens and a sliding
context, on tiny GPT-2 (learned positions), Llama (RoPE, grouped-query), Qwen2 (biases) and
Mistral (sliding-window attention) checkpoints; greedy equals transformers' own generation."""

from __future__ import annotations

import pytest
import torch

from attnviz.engine.generate import continue_ids, next_logits
from attnviz.pretrained import load_folder
from tests.support.checkpoints import make_tiny_gpt2, make_tiny_llama

CPU = torch.device("cpu")
STYLES = ["gpt2", "llama-gqa", "qwen2", "mistral"]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Models this small gain nothing from a second thread, and on a busy machine two threads
    spin against each other at every operation."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("gen-cache")
    out = {"gpt2": make_tiny_gpt2(root / "gpt2", seed=3)}
    for style in STYLES[1:]:
        out[style] = make_tiny_llama(root / style, style, seed=3)
    return out


@pytest.fixture(scope="module")
def models(folders):
    return {style: load_folder(folder, CPU) for style, folder in folders.items()}


def _prompt(m, n: int | None = None) -> list[int]:
    ids = m.tokenizer("I sat on the river bank and watched the water. " * 12).ids
    return ids if n is None else ids[:n]


@pytest.mark.parametrize("style", STYLES)
def test_cached_greedy_steps_equal_whole_forwards(models, folders, style):
    m = models[style]
    ids = _prompt(m, 9)
    cached, a = next_logits(m.model, ids, 16)
    whole, b = next_logits(m.model, ids, 16, use_cache=False)
    assert cached == whole
    assert a.shape == (16, m.cfg.vocab_size)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    assert continue_ids(m.model, ids, 16) == cached
    # The oracle: transformers' greedy generation with its own cache.
    from transformers import AutoModelForCausalLM

    lm = AutoModelForCausalLM.from_pretrained(folders[style]).eval()
    with torch.no_grad():
        out = lm.generate(torch.tensor([ids]), max_new_tokens=16, do_sample=False,
                          eos_token_id=None, pad_token_id=0)  # fmt: skip
    assert out[0, len(ids) :].tolist() == cached


def test_a_sliding_window_model_past_its_window(models):
    """Mistral's window is 64 keys: a prompt of 60 and 16 steps cross it through the cache."""
    m = models["mistral"]
    assert m.cfg.sliding_window == 64
    ids = _prompt(m, 60)
    cached, a = next_logits(m.model, ids, 16)
    whole, b = next_logits(m.model, ids, 16, use_cache=False)
    assert cached == whole
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


@pytest.mark.parametrize("style", ["gpt2", "llama-gqa"])
def test_sampling_and_stop_tokens_are_the_same_through_the_cache(models, style):
    m = models[style]
    ids = _prompt(m, 7)
    for seed in (1, 2):
        sampled = continue_ids(m.model, ids, 20, temperature=1.5, seed=seed)
        assert sampled == continue_ids(
            m.model, ids, 20, temperature=1.5, seed=seed, use_cache=False
        )
    stop = {sampled[5]}
    k = sampled.index(sampled[5])
    kw = {"temperature": 1.5, "seed": 2, "stop": stop}
    assert continue_ids(m.model, ids, 20, **kw) == sampled[: k + 1]
    assert continue_ids(m.model, ids, 20, **kw, use_cache=False) == sampled[: k + 1]


@pytest.mark.parametrize("style", ["gpt2", "llama-gqa"])
def test_a_sliding_context_reads_the_last_window_tokens(models, style):
    """window=8 from a 5-token prompt: the first steps extend the cache, then the context slides
    (every position moves) and each step reads its last 8 tokens afresh, as before."""
    m = models[style]
    ids = _prompt(m, 5)
    cached, a = next_logits(m.model, ids, 12, window=8)
    whole, b = next_logits(m.model, ids, 12, window=8, use_cache=False)
    assert cached == whole
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    # The window matters: past it, the logits are not those of the whole sequence.
    _, full = next_logits(m.model, ids, 12)
    assert torch.allclose(a[:4], full[:4], atol=1e-5)  # within the window: the same reading
    assert not torch.allclose(a[4:], full[4:], atol=1e-3)
    # Step by step, each step's logits are those of a forward over its last 8 tokens alone.
    seq = ids + cached
    for step in (4, 9):
        context = seq[: len(ids) + step][-8:]
        with torch.no_grad():
            want = m.model.logits(m.model(torch.tensor([context])))[0, -1]
        torch.testing.assert_close(a[step], want, atol=1e-5, rtol=0)


def test_bad_windows_and_models_are_refused(models):
    m = models["gpt2"]
    with pytest.raises(ValueError, match="window: must be at least 1"):
        continue_ids(m.model, [1, 2], 3, window=0)
    with pytest.raises(ValueError, match="ids: needs at least one token"):
        continue_ids(m.model, [], 3)
