"""The head atlas: each score on hand-set patterns whose answer is known, on an engine whose
attention is uniform (closed forms), on the induction task's trained model (its first layer's
head must come out as the previous-token head, its second layer's as the induction head), and
the probe: what the page opens is exactly what was scored."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnviz.engine import Transformer, TransformerConfig
from attnviz.errors import TraceError
from attnviz.pretrained.folder import PretrainedModel
from attnviz.pretrained.registry import load_model
from attnviz.pretrained.tokenize import TextTokenizer
from attnviz.services import atlas as atlas_service
from attnviz.services.atlas import (
    MAX_OFFSET,
    PROBE_BATCH,
    PROBE_HALF,
    SCORES,
    AtlasCache,
    build_probe,
    compute_atlas,
    score_patterns,
)
from attnviz.training import measures
from attnviz.training.export import char_tokenizer
from attnviz.training.tasks import Induction
from attnviz.training.trainer import train


def one_hot(T: int, key) -> torch.Tensor:
    """A (T, T) pattern whose row q puts all its weight on key(q)."""
    p = torch.zeros(T, T)
    for q in range(T):
        p[q, key(q)] = 1.0
    return p


@pytest.mark.parametrize("start", [0, 1])
def test_each_score_finds_the_head_built_to_have_it(start):
    """Five hand-set heads on a probe of n = 6 repeated after ``start`` special tokens (and one
    after it, as [SEP]): each scores 1 on its own score. T = start + 12 + 1."""
    n, s = 6, start
    T = s + 2 * n + 1
    prev = one_hot(T, lambda q: max(q - 1, 0))
    first = one_hot(T, lambda q: 0)
    dup = one_hot(T, lambda q: q - n if s + n <= q < s + 2 * n else q)
    ind = one_hot(T, lambda q: q - n + 1 if s + n <= q < s + 2 * n else q)
    back3 = one_hot(T, lambda q: q - 3 if q - 3 >= s else q)
    pattern = torch.stack([prev, first, dup, ind, back3])[None]  # (1, 5, T, T)
    scores, offsets = score_patterns([pattern], s, n, causal=True)
    assert list(scores) == list(SCORES)
    built = {"previous_token": 0, "first_token": 1, "duplicate_token": 2, "induction": 3}
    for name, head in built.items():
        row = scores[name][0].tolist()
        assert row[head] == pytest.approx(1), (name, row)
        assert max(v for h, v in enumerate(row) if h != head) < 0.5, (name, row)
    # The induction score reads queries n .. 2n-2 of the repeat, each on the token after its
    # earlier occurrence: Induction.induction_score, the training lab's own definition.
    assert scores["positional"][0, 4] == 1 and offsets[0, 4] == 3
    assert scores["positional"][0, 0] == 1 and offsets[0, 0] == 1  # previous token: offset 1


def test_an_encoder_head_that_looks_ahead_has_a_negative_offset():
    n = 6
    T = 2 * n
    ahead = one_hot(T, lambda q: min(q + 2, T - 1))
    scores, offsets = score_patterns([ahead[None, None]], 0, n, causal=False)
    assert offsets[0, 0] == -2 and scores["positional"][0, 0] == 1
    assert scores["previous_token"][0, 0] == 0 and scores["induction"][0, 0] == 0
    _, causal_offsets = score_patterns([ahead[None, None]], 0, n, causal=True)
    assert causal_offsets[0, 0] >= 0  # a causal model's offsets look back only


def uniform_model(n_ctx: int = 40) -> PretrainedModel:
    """A character model whose W_Q is zero: every query's scores are equal, so a causal head
    gives each of the q + 1 keys it sees the weight 1 / (q + 1)."""
    task = Induction()
    cfg = TransformerConfig(d_model=8, n_layers=2, n_heads=2, causal=True, vocab_size=26,
                            n_ctx=n_ctx, positional="learned")  # fmt: skip
    model = Transformer(cfg).eval()
    with torch.no_grad():
        for block in model.blocks:
            block.attn.W_Q.zero_()
    return PretrainedModel(name="uniform", family="attnviz", source=Path("uniform"), origin="test",
                           cfg=cfg, model=model, device=torch.device("cpu"),
                           tokenizer=TextTokenizer(char_tokenizer(task.vocab)))  # fmt: skip


def test_closed_forms_on_uniform_causal_attention():
    m = uniform_model(n_ctx=40)  # n = 20: the probe's strings fill the positions
    got = compute_atlas(m, m.cfg.n_ctx)
    n = got.probe.half
    assert n == 20 and got.probe.start == 0 and len(got.probe.ids) == PROBE_BATCH

    def mean(qs) -> float:
        return sum(1 / (q + 1) for q in qs) / len(qs)

    want = {
        "previous_token": mean(range(1, 2 * n)),
        "first_token": mean(range(1, 2 * n)),
        "duplicate_token": mean(range(n, 2 * n)),
        "induction": mean(range(n, 2 * n - 1)),
        "positional": mean(range(0, n)),  # offset 0, the token itself: the first row's 1
    }
    for name, value in want.items():
        assert torch.allclose(got.scores[name], torch.full((2, 2), value), atol=1e-6), name
    assert got.offsets.eq(0).all()


@pytest.mark.slow
def test_the_induction_tasks_heads_come_out_as_previous_token_and_induction_heads():
    """The default induction run (2 layers x 4 heads, RoPE, 800 steps: about 15 s here)
    forms a previous-token head in layer 1 and induction heads in layer 2 (the task's test,
    tests/training/test_trainer.py); the atlas, on its own probe, must find them there."""
    task = Induction()
    run = train(task)
    m = PretrainedModel(name="induction", family="attnviz", source=Path("induction"),
                        origin="test", cfg=run.model.cfg, model=run.model,
                        tokenizer=TextTokenizer(char_tokenizer(task.vocab)),
                        device=torch.device("cpu"))  # fmt: skip
    got = compute_atlas(m, m.cfg.n_ctx)
    prev, ind = got.scores["previous_token"], got.scores["induction"]
    H = prev.shape[1]
    assert int(prev.argmax()) // H == 0, prev  # the top previous-token head is in layer 1
    assert int(ind.argmax()) // H == 1, ind  # the top induction head is in layer 2
    assert prev[0].max() >= 0.4 and ind[1].max() >= 0.7
    assert ind[0].max() < 0.1 and prev[1].max() < 0.2
    # The probe is text the model reads: its letters, each string twice.
    text = got.probe.texts[0]
    assert text[: len(text) // 2] == text[len(text) // 2 :] and set(text) <= set(task.vocab.chars)


def test_the_shared_measures_are_the_training_labs():
    """at_offset(1) is the previous-token measure the training service reports, and the
    atlas's induction score is Induction.induction_score's."""
    p = torch.softmax(torch.randn(3, 2, 9, 9, generator=torch.Generator().manual_seed(1)), -1)
    t = torch.arange(1, 9)
    assert torch.equal(measures.previous_token(p), p[:, :, t, t - 1].mean(dim=(0, 2)))
    scores, _ = score_patterns([p[:, :, :8, :8]], 0, 4, causal=True)
    assert torch.equal(scores["induction"][0], Induction().induction_score(p[:, :, :8, :8], 4))


def test_the_probe_reads_back_as_scored(minilm_dir, tiny_gpt2_dir):
    """Tokenizing the probe's text gives its ids exactly: the special tokens, the random
    string, the same string again (MiniLM: [CLS] first, [SEP] last; GPT-2's BPE: none)."""
    for folder, start in ((minilm_dir, 1), (tiny_gpt2_dir, 0)):
        m = load_model(folder, torch.device("cpu"))
        probe = build_probe(m.tokenizer, 512)
        assert probe.start == start and probe.half == PROBE_HALF
        for ids, text in zip(probe.ids, probe.texts, strict=True):
            toks = m.tokenizer(text)
            assert toks.ids == ids
            half = ids[start : start + PROBE_HALF]
            assert ids[start + PROBE_HALF : start + 2 * PROBE_HALF] == half
            assert len(set(half)) == PROBE_HALF  # distinct: one earlier occurrence each
            assert not any(toks.special[start : start + 2 * PROBE_HALF])
        assert probe.labels == m.tokenizer(probe.texts[0]).labels
        assert len({tuple(i) for i in probe.ids}) == PROBE_BATCH  # different strings
        # Fixed: the same probe every time.
        assert build_probe(m.tokenizer, 512).ids == probe.ids


def test_a_model_with_too_few_positions_is_refused_by_name():
    tok = TextTokenizer(char_tokenizer(Induction().vocab))
    with pytest.raises(TraceError, match="model: 7 positions are too few"):
        build_probe(tok, 7)
    assert build_probe(tok, 8).half == 4  # the least: 4 letters twice


def test_each_model_is_scored_once_and_a_new_model_of_the_same_name_afresh(monkeypatch):
    calls = []
    real = atlas_service.compute_atlas

    def counted(m, cap):
        calls.append(m)
        return real(m, cap)

    monkeypatch.setattr(atlas_service, "compute_atlas", counted)
    cache = AtlasCache(size=1)
    a, b = uniform_model(), uniform_model()
    first = cache.atlas(a, 40)
    assert cache.atlas(a, 40) is first and calls == [a]
    assert cache.atlas(b, 40) is not first and calls == [a, b]  # same name, another model
    cache.atlas(a, 40)
    assert calls == [a, b, a]  # size 1: b pushed a out
    assert MAX_OFFSET >= 1
