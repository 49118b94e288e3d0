"""The char-LM task: its text, windows, held-out part and probe; the limits on a text a person
gives; the bigram baseline; and text sampled from a model, deterministically."""

from __future__ import annotations

import math
import string

import pytest
import torch

from attnviz.training.sample import generate
from attnviz.training.tasks import (
    CharLM,
    bigram_counts,
    bigram_heldout_loss,
    bigram_k,
    char_label,
    clean_text,
)
from attnviz.training.trainer import Architecture, Optimiser, train

TINY = Architecture(layers=2, heads=2, d_model=16)


@pytest.fixture(scope="module")
def task() -> CharLM:
    return CharLM()


def test_the_default_text_is_fixed_and_in_the_alphabet(task):
    again = CharLM()
    assert again.text == task.text and again.vocab == task.vocab
    assert len(task.text) > 400_000
    assert set(task.vocab.chars) <= set(string.printable) - set("\t\r\x0b\x0c")
    assert list(task.vocab.chars) == sorted(set(task.text))
    assert task.vocab.decode(task.ids.tolist()) == task.text
    n = len(task.text)
    assert (task.name, task.max_tokens, task.split) == ("charlm", 64, n - n // 10)


def test_clean_text_spells_typography_in_ascii_and_drops_the_rest():
    clean, dropped = clean_text("\u201cQuote\u201d \u2014 it\u2019s\r\na\tb\u2026 caf\u00e9 \u00b0")
    assert clean == '"Quote" - it\'s\na    b... caf '
    assert dropped == "\u00b0\u00e9"


def test_batches_are_training_windows_shifted_by_one(task):
    g = torch.Generator().manual_seed(3)
    b = task.batch(g, 5)
    assert b.inputs.shape == b.targets.shape == b.mask.shape == (5, 64)
    assert b.inputs.dtype == torch.long and bool(b.mask.all())
    assert torch.equal(b.inputs[:, 1:], b.targets[:, :-1])
    train_text = task.text[: task.split]
    for row in range(5):
        window = task.vocab.decode(b.inputs[row].tolist() + b.targets[row, -1:].tolist())
        assert window in train_text
    again = task.batch(torch.Generator().manual_seed(3), 5)
    assert torch.equal(again.inputs, b.inputs)
    assert not torch.equal(task.batch(torch.Generator().manual_seed(4), 5).inputs, b.inputs)


def test_heldout_windows_are_fixed_and_span_the_last_tenth(task):
    h = task.heldout(8)
    assert h.inputs.shape == (8, 64) and bool(h.mask.all())
    assert torch.equal(task.heldout(8).inputs, h.inputs)
    held = task.text[task.split :]
    first = task.vocab.decode(h.inputs[0].tolist() + [int(h.targets[0, -1])])
    last = task.vocab.decode(h.inputs[-1].tolist() + [int(h.targets[-1, -1])])
    assert held.startswith(first) and held.endswith(last)


def test_the_probe_is_a_sentence_of_the_heldout_part(task):
    p = task.probe()
    text = task.vocab.decode(p.ids)
    assert len(p.ids) == len(p.labels) == 64
    assert text in task.text[task.split :] and text[0].isupper() and "\n" not in text
    assert p.labels == [char_label(c) for c in text]
    assert "\u2423" in p.labels and " " not in p.labels
    assert (char_label("\n"), char_label("a")) == ("\u23ce", "a")
    assert task.probe() == p


def test_a_given_text_is_capped_both_ways_with_the_rule_named():
    text = "the cat sat on the mat. " * 30  # 720 characters
    assert CharLM.from_text(text, context=64, max_chars=720).split == 648
    with pytest.raises(ValueError, match=r"^text: 720 characters exceed the cap of 700"):
        CharLM.from_text(text, context=64, max_chars=700)
    assert CharLM.from_text(text[:650], context=64).max_tokens == 64
    with pytest.raises(ValueError, match=r"text: 649 characters .* at least 650 are needed"):
        CharLM.from_text(text[:649], context=64)
    with pytest.raises(ValueError, match="after dropping"):
        CharLM.from_text("\u00e9" * 700, context=64)
    with pytest.raises(ValueError, match="^context: "):
        CharLM.from_text(text, context=0)


def test_the_bigram_baseline_by_hand():
    # Training part "abb" * 9: a->b 9 times; b->b 9; b->a 8. Held out: "abb", one window of 3:
    # inputs "ab", targets "bb". Add-one over V = 2: P(b|a) = 10/11, P(b|b) = 10/19.
    task = CharLM.from_text("abb" * 10, context=2)
    assert task.split == 27 and task.vocab.chars == "ab"
    hand = -(math.log(10 / 11) + math.log(10 / 19)) / 2
    assert bigram_heldout_loss(task, size=1, k=1.0) == pytest.approx(hand, abs=1e-12)
    assert bigram_heldout_loss(task, size=3, k=1.0) == pytest.approx(hand, abs=1e-12)
    k = 0.1
    hand = -(math.log(9.1 / 9.2) + math.log(9.1 / 17.2)) / 2
    assert bigram_heldout_loss(task, size=1, k=k) == pytest.approx(hand, abs=1e-12)
    counts = bigram_counts(task)
    assert counts.tolist() == [[0, 9], [8, 9]]
    assert bigram_heldout_loss(task, size=1) == bigram_heldout_loss(task, 1, bigram_k(counts))


def test_the_default_baseline(task):
    base = bigram_heldout_loss(task)
    assert 2.2 < base < 2.4  # nats per character; uniform guessing is ln 94 = 4.5
    assert base < bigram_heldout_loss(task, k=1.0)


@pytest.mark.slow
def test_a_short_run_lowers_the_heldout_loss(task):
    run = train(task, TINY, Optimiser(steps=40, lr=1e-2), checkpoints=2)
    first, last = run.checkpoints[0].heldout, run.checkpoints[-1].heldout
    assert first > 4.0 and last < first - 1.0


@pytest.fixture(scope="module")
def small():
    """A few steps on a short context with a learned position table."""
    task = CharLM(context=8)
    arch = Architecture(layers=1, heads=2, d_model=16, positional="learned")
    return task, train(task, arch, Optimiser(steps=20, lr=1e-2)).model


def test_generate_is_deterministic_for_a_seed(small):
    task, model = small
    a = generate(model, task.vocab, "The ", 30, 1.0, seed=1)
    assert len(a) == 30 and set(a) <= set(task.vocab.chars)
    assert generate(model, task.vocab, "The ", 30, 1.0, seed=1) == a
    assert generate(model, task.vocab, "The ", 30, 1.0, seed=2) != a
    assert generate(model, task.vocab, "The ", 0, 1.0, seed=1) == ""


def test_greedy_is_the_argmax_chain_over_the_last_positions(small):
    task, model = small
    prompt = "Python is a programming language"  # longer than the 8 positions
    ids = task.vocab.encode(prompt)
    with torch.no_grad():
        for _ in range(12):
            x = torch.tensor([ids[-8:]])
            ids.append(int(model.logits(model(x))[0, -1].argmax()))
    want = task.vocab.decode(ids[len(prompt) :])
    assert generate(model, task.vocab, prompt, 12, 0.0, seed=0) == want
    assert generate(model, task.vocab, prompt, 12, 0.0, seed=5) == want


def test_generate_refuses_what_it_cannot_continue(small):
    task, model = small
    with pytest.raises(ValueError, match="^prompt: characters '\\\\t\u00e9' are not in"):
        generate(model, task.vocab, "caf\u00e9\tx", 5, 1.0, 0)
    with pytest.raises(ValueError, match="^prompt: needs"):
        generate(model, task.vocab, "", 5, 1.0, 0)
    with pytest.raises(ValueError, match="^temperature: "):
        generate(model, task.vocab, "a", 5, -1.0, 0)
    with pytest.raises(ValueError, match="^n: "):
        generate(model, task.vocab, "a", -1, 1.0, 0)
