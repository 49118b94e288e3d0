"""Helpers for attnviz's own character-level models (the folders ``save_run`` writes): naming
the characters a text has that such a model's tokenizer cannot read, and what it reads.

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


# The most tokens a character tokenizer is taken to have (attnviz's read printable ASCII and the
# line break: 96 at most).
_MOST_CHARACTERS = 4096


def characters_of(tokenizer: Tokenizer) -> str | None:
    """A character tokenizer's characters in id order (its whole vocabulary); None for any
    other tokenizer (a large one is told from its size, without reading its vocabulary)."""
    if tokenizer.get_vocab_size(with_added_tokens=False) > _MOST_CHARACTERS:
        return None
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    if not vocab or any(len(t) != 1 for t in vocab):
        return None
    return "".join(sorted(vocab, key=vocab.__getitem__))


# Printable ASCII, the space to the tilde: what a character model reads, in words, when it
# reads nearly all of it (``alphabet``).
_PRINTABLE = frozenset(chr(i) for i in range(32, 127))
# A vocabulary of at most this many characters is quoted whole.
_QUOTED_WHOLE = 40


# Characters a reader does not see when quoted, said in words.
_SAID = {" ": "the space", "\n": "the line break", "\t": "the tab"}


def _named(c: str) -> str:
    import unicodedata

    if c in _SAID:
        return _SAID[c]
    name = unicodedata.name(c, "") if not c.isascii() else ""
    return f"{c!r} ({name.lower()})" if name else repr(c)


def named_each(chars: str) -> str:
    """Characters one by one as a reader tells them apart: quoted, a character outside ASCII
    with its Unicode name (’ from '), the space and the line break in words: ``the space, 'I',
    '’' (right single quotation mark)``."""
    return ", ".join(_named(c) for c in chars)


# Runs of characters a few words name: (first, last, what they are).
_RANGES = (("a", "z", "lowercase letters"), ("A", "Z", "capital letters"), ("0", "9", "digits"))


def _in_words(chars: str) -> str:
    """A few characters in plain words: a whole run of letters or digits by its ends (``the
    lowercase letters a to z``), the space and the line break by name, any other quoted."""
    have, parts = set(chars), []
    for lo, hi, what in _RANGES:
        run = sorted(c for c in have if lo <= c <= hi)
        if len(run) > 2 and ord(run[-1]) - ord(run[0]) + 1 == len(run):
            parts.append(f"the {what} {run[0]} to {run[-1]}")
            have -= set(run)
    parts += [_named(c) for c in sorted(have)]
    return parts[0] if len(parts) < 2 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def alphabet(chars: str) -> str:
    """What a character model reads, as the end of a sentence says it: its characters in plain
    words when they are few (``the lowercase letters a to z``), else, when they are printable
    ASCII (and the line break), the characters it lacks of those."""
    have = set(chars)
    if len(chars) <= _QUOTED_WHOLE or not have <= _PRINTABLE | {"\n"}:
        return _in_words(chars)
    lacks = "".join(sorted(_PRINTABLE - have))
    words = (
        "punctuation, the space and the line break" if "\n" in have else "punctuation and the space"
    )
    but = f", except {quoted_each(lacks)}" if lacks else ""
    return f"plain ASCII (English letters, digits, {words}){but}"
