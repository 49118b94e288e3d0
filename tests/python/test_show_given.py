"""``attnviz.show(out.attentions, tokens)``: the tokens a tokenizer spells (byte-level BPE's "Ġand",
"Ċ") read as the engine labels a text's tokens, and a file that says what it is (attention
weights the caller gave) without claiming a model, a backend or a d_model it does not know."""

from __future__ import annotations

import torch

from attnviz.pretrained.tokenize import TextTokenizer, readable_labels
from attnviz.python.show import attention_trace, show
from tests.python.offline import opened
from tests.support.checkpoints import make_tokenizer

TEXT = "The cat sat\non the mat, café €5"


def weights(n: int, layers: int = 2, heads: int = 3) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.softmax(torch.randn(1, heads, n, n, generator=g), -1) for _ in range(layers))


def test_byte_level_tokens_read_as_the_engine_labels_them():
    tok = make_tokenizer()
    raw = tok.encode(TEXT).tokens
    assert "Ċ" in raw and any(t.startswith("Ġ") for t in raw)  # the tokenizer's own spelling
    t = attention_trace(weights(len(raw)), raw)
    assert t.tokens == TextTokenizer(tok)(TEXT).labels  # " sat", "\n", "<0xC3>" as the engine's
    assert t.meta["text"] == TEXT


def test_tokens_spelled_otherwise_are_kept():
    wordpiece = ["[CLS]", "the", "cat", "##s", "[SEP]"]
    assert readable_labels(wordpiece) == wordpiece
    assert readable_labels(["▁The", "▁cat", "s"]) == [" The", " cat", "s"]
    assert readable_labels([" the", " cat"]) == [" the", " cat"]  # already readable


def test_the_file_says_the_weights_were_given_and_claims_no_model(browser, tmp_path):
    raw = make_tokenizer().encode(TEXT).tokens
    display = show(weights(len(raw)), raw)  # outside IPython: the whole file, returned
    path = tmp_path / "given.html"
    path.write_text(display.page, encoding="utf-8")
    with opened(browser, path) as (page, errors):
        page.wait_for_function("() => document.documentElement.dataset.traces === '1'")
        tagline = page.inner_text(".tagline")
        body = page.inner_text("body")
        info_shown = page.is_visible("#s-model-info")
        assert errors == []
    assert tagline.startswith("Attention weights given by the caller (2 layers × 3 heads over")
    assert not info_shown
    for claim in ("d_model", "through transformers", "Ġ", "Ċ"):
        assert claim not in body, claim
