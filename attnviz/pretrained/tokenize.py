"""Text -> tokens with the model's own ``tokenizer.json`` (the ``tokenizers`` library)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer


@dataclass(frozen=True)
class Tokens:
    """One tokenized text: ids, display labels, character offsets, which are special, words."""

    ids: list[int]
    # WordPiece tokens as they are ("##ing"); byte-level BPE decoded (" the"); SentencePiece
    # pieces with their word-start mark as a space ("▁the" -> " the")
    labels: list[str]
    offsets: list[tuple[int, int]]  # [start, end) into the text; (0, 0) for special tokens
    special: list[bool]  # added by the template (<s>, [CLS]) or a special token in the text
    words: list[int | None]  # word index of each token; None for special tokens


PIECE_MARK = "\u2581"  # "▁": SentencePiece's mark of a piece that starts a word


def _byte_level_alphabet() -> dict[str, int]:
    """GPT-2's byte-level BPE spells each byte as one printable character: the printable
    bytes as themselves, the rest as 256 + their rank. -> {character: byte}"""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


_BYTE_OF = _byte_level_alphabet()
# The characters byte-level BPE writes for the bytes it does not print as themselves (Ġ, a
# space; Ċ, a newline; ĉ, a tab): a token holding one was spelled by such a tokenizer.
_REMAPPED = frozenset(c for c in _BYTE_OF if ord(c) >= 256)


def readable_labels(tokens: list[str]) -> list[str]:
    """Tokens as a tokenizer spells them (``tokenizer.convert_ids_to_tokens``) labelled as the
    engine labels a text's tokens: byte-level BPE's (GPT-2's "Ġthe", "Ċ") read as the text they
    stand for (" the", a newline), a token that is part of a character as its bytes ("<0xE2>");
    SentencePiece's word-start mark as a space ("▁the" -> " the"). Tokens spelled otherwise
    (WordPiece's "##ing", or labels already readable) are returned as they are."""
    chars = {c for t in tokens for c in t}
    if chars & _REMAPPED and chars <= _BYTE_OF.keys():
        out = []
        for t in tokens:
            raw = bytes(_BYTE_OF[c] for c in t)
            try:
                out.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                out.append("".join(f"<0x{b:02X}>" for b in raw))
        return out
    if PIECE_MARK in chars:
        return [t.replace(PIECE_MARK, " ") for t in tokens]
    return list(tokens)


def readable_text(tokens: list[str]) -> str | None:
    """The text byte-level BPE tokens (as ``readable_labels`` reads them) spell together, a
    character split over tokens whole again; None for tokens spelled otherwise."""
    chars = {c for t in tokens for c in t}
    if not (chars & _REMAPPED and chars <= _BYTE_OF.keys()):
        return None
    return bytes(_BYTE_OF[c] for t in tokens for c in t).decode("utf-8", errors="replace")


def _bytes_read(raw: bytes) -> str:
    """UTF-8 ``raw`` as text, each byte that is part of no whole character as "<0xE2>"."""
    text = raw.decode("utf-8", errors="surrogateescape")
    return re.sub("[\udc80-\udcff]", lambda m: f"<0x{ord(m[0]) - 0xDC00:02X}>", text)


class TextTokenizer:
    """A ``tokenizers.Tokenizer`` with truncation and padding off: every token of the text is
    kept, so a text that is too long is refused by the caller rather than cut silently."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tok = tokenizer
        self.tok.no_truncation()
        self.tok.no_padding()
        self.wordpiece = type(self.tok.model).__name__ == "WordPiece"
        # Special tokens a text can hold as they are (a chat template's <|im_start|>), which the
        # encoding's special mask does not mark; the unknown token stands for text, not markup.
        unk = getattr(self.tok.model, "unk_token", None)
        self.special_ids = {
            i
            for i, t in self.tok.get_added_tokens_decoder().items()
            if t.special and t.content != unk
        }

    @classmethod
    def from_file(cls, path: Path) -> TextTokenizer:
        return cls(Tokenizer.from_file(str(path)))

    @property
    def vocab_size(self) -> int:
        return self.tok.get_vocab_size(with_added_tokens=True)

    def __call__(self, text: str) -> Tokens:
        enc = self.tok.encode(text)
        special = [
            bool(s) or i in self.special_ids
            for s, i in zip(enc.special_tokens_mask, enc.ids, strict=True)
        ]
        pieces = any(PIECE_MARK in t for t in enc.tokens)
        labels = self._labels(list(enc.tokens), list(enc.ids), special, pieces)
        offsets = [(0, 0) if s else (a, b) for (a, b), s in zip(enc.offsets, special, strict=True)]
        words = _piece_words(enc.tokens, special) if pieces else _text_words(text, offsets, special)
        return Tokens(list(enc.ids), labels, offsets, special, words)

    def _labels(
        self, tokens: list[str], ids: list[int], special: list[bool], pieces: bool
    ) -> list[str]:
        if self.wordpiece:
            return tokens
        if pieces:  # SentencePiece: the mark is the space before a word
            return [
                t.replace(PIECE_MARK, " ") if PIECE_MARK in t or s
                else self.tok.decode([i], skip_special_tokens=False)
                for t, i, s in zip(tokens, ids, special, strict=True)
            ]  # fmt: skip
        # byte-level BPE tokens ("Ġthe") read as the text they stand for (" the"); a token that is
        # part of a character (one byte of "€") reads as its bytes, "<0xE2>", not as "�"
        labels = []
        for t, i in zip(tokens, ids, strict=True):
            label = self.tok.decode([i], skip_special_tokens=False)
            if "\ufffd" in label and all(c in _BYTE_OF for c in t):
                label = "".join(f"<0x{_BYTE_OF[c]:02X}>" for c in t)
            labels.append(label)
        return labels

    def written_text(self, ids: list[int]) -> str:
        """What a model wrote (token ids), read as its tokens are labelled: byte-level BPE's bytes
        joined, so that a character split over tokens is whole again, and a byte that ends up
        in no whole character reads as "<0xE2>", never as "\ufffd"; other tokenizers' text as
        they decode it, or their labels joined where that decoding has a "\ufffd"."""
        if type(self.tok.decoder).__name__ == "ByteLevel":
            tokens = [self.tok.id_to_token(i) or "" for i in ids]
            out, run = [], bytearray()
            for t, i in zip(tokens, ids, strict=True):
                if i in self.special_ids or not set(t) <= _BYTE_OF.keys():
                    out.append(_bytes_read(bytes(run)))
                    run.clear()
                    out.append(self.tok.decode([i], skip_special_tokens=False))
                else:
                    run += bytes(_BYTE_OF[c] for c in t)
            return "".join(out) + _bytes_read(bytes(run))
        text = self.tok.decode(ids, skip_special_tokens=False)
        return "".join(self.label_ids(ids)[0]) if "\ufffd" in text else text

    def label_ids(self, ids: list[int]) -> tuple[list[str], list[bool]]:
        """Labels and special flags of token ids a model wrote (not read from a text), labelled
        as a text's tokens are."""
        tokens = [self.tok.id_to_token(i) or "" for i in ids]
        special = [i in self.special_ids for i in ids]
        pieces = any(PIECE_MARK in t for t in tokens)
        return self._labels(tokens, ids, special, pieces), special


# A word of the text: letters and digits, with the apostrophes, hyphens and points inside it
# ("didn't", "well-known", "3.14"); any other character that is not a space is a word of its own.
WORD = re.compile(r"\w+(?:['\u2019.\-]\w+)*|\S")


def _text_words(text: str, offsets: list[tuple[int, int]], special: list[bool]) -> list[int | None]:
    """Words of WordPiece and byte-level BPE tokens, from the text rather than the pre-tokenizer
    (which splits "didn't" into "didn", "'", "t"): each token belongs to the word (``WORD``) of
    its first character that is not a space; a token of spaces alone is a word of its own."""
    owner = [-1] * len(text)
    found = 0
    for found, m in enumerate(WORD.finditer(text), start=1):
        owner[m.start() : m.end()] = [found - 1] * (m.end() - m.start())
    words: list[int | None] = []
    for (a, b), s in zip(offsets, special, strict=True):
        start = next((p for p in range(a, min(b, len(text))) if not text[p].isspace()), None)
        if s:
            words.append(None)
        elif start is None or owner[start] < 0:
            words.append(found)  # no word of the text: one of its own
            found += 1
        else:
            words.append(owner[start])
    # Numbered in text order (a word of spaces alone took a number past the text's words).
    order: dict[int, int] = {}
    return [None if w is None else order.setdefault(w, len(order)) for w in words]


def _piece_words(tokens: list[str], special: list[bool]) -> list[int | None]:
    """Words of SentencePiece pieces: a word starts at a piece marked "▁", and after a special
    token or the text's start (some Llama tokenizers have no pre-tokenizer, so the encoding's
    own word ids would make the whole text one word)."""
    words: list[int | None] = []
    w, after_special = -1, True
    for t, s in zip(tokens, special, strict=True):
        if s:
            words.append(None)
            after_special = True
            continue
        if after_special or t.startswith(PIECE_MARK):
            w += 1
        words.append(w)
        after_special = False
    return words
