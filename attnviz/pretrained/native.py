"""Helpers for attnviz's own character-level models (the folders ``save_run`` writes): naming
the characters a text has that such a model's tokenizer cannot read.

Reading those folders is a model family like the others: ``attnviz.pretrained.families.attnviz``.
"""

from __future__ import annotations

from tokenizers import Tokenizer


def quoted_each(chars: str) -> str:
    """Characters quoted one by one, as a reader tells them apart: ``' ', 'H', 'W'``."""
    return ", ".join(repr(c) for c in chars)


def unknown_characters(tokenizer: Tokenizer, text: str) -> str:
    """For a character tokenizer (every token one character, as ``char_tokenizer`` makes), the
    characters of ``text`` it has no token for, sorted, each once; "" for any other tokenizer.
    Such a tokenizer raises on them; this says which they are."""
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    if not vocab or any(len(t) != 1 for t in vocab):
        return ""
    return "".join(sorted(set(text) - set(vocab)))
