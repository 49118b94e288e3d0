"""Tokenization with the model's own tokenizer.json: ids, labels, offsets, specials, words."""

from __future__ import annotations

TEXT = "The animal didn't cross the street. Unbelievably!"


def test_minilm_tokens_offsets_specials_and_words(minilm):
    toks = minilm.tokenizer(TEXT)
    assert toks.labels[0] == "[CLS]" and toks.labels[-1] == "[SEP]"
    assert toks.special == [True] + [False] * (len(toks.ids) - 2) + [True]
    assert toks.words[0] is None and toks.words[-1] is None
    assert toks.offsets[0] == (0, 0) and toks.offsets[-1] == (0, 0)
    for label, (a, b), special in zip(toks.labels, toks.offsets, toks.special, strict=True):
        if not special:  # an uncased WordPiece token is its slice of the text, lower-cased
            assert label.removeprefix("##") == TEXT[a:b].lower()
    # "unbelievably" is one word in several pieces that share its word index
    pieces = [i for i, label in enumerate(toks.labels) if label.startswith("##")]
    assert pieces, toks.labels
    first = pieces[0] - 1
    assert {toks.words[i] for i in [first, *pieces]} == {toks.words[first]}
    assert TEXT[toks.offsets[first][0] : toks.offsets[pieces[-1]][1]] == "Unbelievably"


def test_minilm_keeps_every_token_although_its_tokenizer_json_truncates_and_pads(minilm):
    """tokenizer.json asks for truncation and padding to 128; neither may happen silently."""
    toks = minilm.tokenizer("word " * 300)
    assert len(toks.ids) == 302
    short = minilm.tokenizer("hi")
    assert short.labels == ["[CLS]", "hi", "[SEP]"]


def test_byte_level_labels_are_the_text_they_stand_for(tiny_gpt2):
    toks = tiny_gpt2.tokenizer(TEXT)
    assert "".join(toks.labels) == TEXT  # " the", not "Ġthe"; no special tokens added
    assert not any(toks.special)
    for label, (a, b) in zip(toks.labels, toks.offsets, strict=True):
        assert TEXT[a:b].strip() == label.strip()
    assert toks.words == sorted(toks.words)


def test_byte_level_labels_of_multibyte_characters(tiny_gpt2):
    toks = tiny_gpt2.tokenizer("café €")
    # a token may hold part of a character's bytes; the decoded labels still rebuild the text
    assert tiny_gpt2.tokenizer.tok.decode(toks.ids) == "café €"
