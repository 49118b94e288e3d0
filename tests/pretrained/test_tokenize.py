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


def test_written_text_is_byte_aware_as_the_labels_are(tiny_gpt2):
    """What a model wrote (issue 42): a character split over tokens whole again, a byte of no
    whole character as its label reads it ("<0xE2>"), never as "\ufffd"."""
    tok = tiny_gpt2.tokenizer
    ids = tok("café €").ids
    assert tok.written_text(ids) == "café €"
    euro = tok("€").ids
    cut = euro[:-1]  # the euro sign's bytes but its last: two stray bytes
    assert len(euro) > 1, tok("€").labels
    assert tok.written_text(cut) == "".join(tok.label_ids(cut)[0])
    assert "\ufffd" not in tok.written_text(cut) and tok.written_text(cut).startswith("<0xE2>")
    assert tok.written_text([*ids, *cut]) == "café €" + tok.written_text(cut)


def test_sentencepiece_pieces_read_as_words_and_chat_tokens_are_special():
    from attnviz.capture.tokenview import token_view
    from attnviz.pretrained.tokenize import TextTokenizer
    from tests.support.checkpoints import make_piece_tokenizer

    tok = TextTokenizer(make_piece_tokenizer(specials=("<|im_start|>", "<|im_end|>")))
    text = "<|im_start|>user The animal didn't cross the street<|im_end|>"
    toks = tok(text)
    raw = tok.tok.encode(text).tokens
    # "▁animal" reads " animal"; a piece inside a word reads as its text.
    assert [
        lab == " animal" for lab, t in zip(toks.labels, raw, strict=True) if t == "▁animal"
    ] == [True]
    assert all("\u2581" not in lab for lab in toks.labels)
    # The template's <s> and the text's chat tokens are special; the pieces of "user" one word.
    assert [lab for lab, s in zip(toks.labels, toks.special, strict=True) if s] == [
        "<s>", "<|im_start|>", "<|im_end|>",
    ]  # fmt: skip
    user = [i for i, t in enumerate(raw) if i > 1 and not toks.special[i]][: len("user") - 1]
    assert len({toks.words[i] for i in user}) == 1
    view = token_view(toks.labels, special=toks.special, words=toks.words, offsets=toks.offsets,
                      text=text, hide_special=True, merge_words=True)  # fmt: skip
    # A word of several pieces reads as its text; a one-piece word keeps its space, as GPT-2's.
    assert view.labels == ["user", " The", " animal", " didn't", " cross", " the", " street"]


def test_pieces_without_a_pre_tokenizer_still_make_words():
    """Some Llama tokenizers replace spaces with "▁" in a normalizer and have no pre-tokenizer:
    the encoding's word ids then say one word; the marks say where words start."""
    from tokenizers import normalizers

    from attnviz.pretrained.tokenize import TextTokenizer
    from tests.support.checkpoints import make_piece_tokenizer

    inner = make_piece_tokenizer()
    inner.normalizer = normalizers.Sequence(
        [normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")]
    )
    inner.pre_tokenizer = None
    toks = TextTokenizer(inner)("the river bank")
    assert len({w for w in toks.words if w is not None}) == 3
