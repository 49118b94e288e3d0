"""Text -> tokens with the model's own ``tokenizer.json`` (the ``tokenizers`` library)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer


@dataclass(frozen=True)
class Tokens:
    """One tokenized text: ids, display labels, character offsets, which are special, words."""

    ids: list[int]
    labels: list[str]  # WordPiece tokens as they are ("##ing"); byte-level BPE decoded (" the")
    offsets: list[tuple[int, int]]  # [start, end) into the text; (0, 0) for special tokens
    special: list[bool]
    words: list[int | None]  # word index of each token; None for special tokens


class TextTokenizer:
    """A ``tokenizers.Tokenizer`` with truncation and padding off: every token of the text is
    kept, so a text that is too long is refused by the caller rather than cut silently."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tok = tokenizer
        self.tok.no_truncation()
        self.tok.no_padding()
        self.wordpiece = type(self.tok.model).__name__ == "WordPiece"

    @classmethod
    def from_file(cls, path: Path) -> TextTokenizer:
        return cls(Tokenizer.from_file(str(path)))

    @property
    def vocab_size(self) -> int:
        return self.tok.get_vocab_size(with_added_tokens=True)

    def __call__(self, text: str) -> Tokens:
        enc = self.tok.encode(text)
        special = [bool(s) for s in enc.special_tokens_mask]
        if self.wordpiece:
            labels = list(enc.tokens)
        else:  # byte-level BPE tokens ("Ġthe") read as the text they stand for (" the")
            labels = [self.tok.decode([i], skip_special_tokens=False) for i in enc.ids]
        words = [None if s else w for w, s in zip(enc.word_ids, special, strict=True)]
        offsets = [(0, 0) if s else (a, b) for (a, b), s in zip(enc.offsets, special, strict=True)]
        return Tokens(list(enc.ids), labels, offsets, special, words)
