"""The corpus view's set of texts: the model's examples, sentences of Python's documentation in a
seeded order, or an upload (one text per non-empty line), each tokenized with the model's own
tokenizer, a text longer than ``LIMITS.max_corpus_text_tokens`` (or the model's cap) cut into
windows, and texts taken in order until the token budget is spent (the last one cut to fit).

Deterministic: the same source, upload, seed and budget give the same texts, token for token.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

import torch

from attnviz.errors import TraceError
from attnviz.limits import LIMITS
from attnviz.pretrained.registry import ServedModel
from attnviz.pretrained.tokenize import TextTokenizer, Tokens
from attnviz.services.text_trace import EXAMPLES
from attnviz.training.tasks import default_text

MIN_WORDS, MAX_WORDS = 5, 60  # a documentation sentence's words
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


@dataclass(frozen=True)
class SetText:
    """One text of the set (or the user's), as it runs: its ids and the labels shown."""

    text: str
    ids: list[int]
    labels: list[str]
    user: bool = False


@dataclass(frozen=True)
class TextSet:
    texts: list[SetText]
    dropped: int  # tokens of the source left out by the budget

    @property
    def tokens(self) -> int:
        return sum(len(t.ids) for t in self.texts)


@functools.cache
def doc_sentences() -> tuple[str, ...]:
    """Sentences of ``default_text()`` (pydoc_data's help topics): paragraphs split at blank
    lines, whitespace collapsed, cut after . ! or ? before a capital; ASCII prose only (5 to 60
    words, a letter first, no code: no ``>>>``, braces or ``=``). In the text's order."""
    try:
        text = default_text()
    except RuntimeError:  # a Python without its documentation data
        return ()
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        flat = " ".join(para.split())
        for s in _SENTENCE_END.split(flat):
            words = s.split()
            if not (MIN_WORDS <= len(words) <= MAX_WORDS) or not s.isascii():
                continue
            if not s[0].isalpha() or not s.endswith((".", "!", "?")):
                continue
            if any(c in s for c in "{}=|*") or ">>>" in s or "..." in s:
                continue
            out.append(s)
    return tuple(out)


def doc_order(seed: int) -> list[int]:
    """The documentation's sentences in the seeded order the docs set draws them."""
    g = torch.Generator().manual_seed(seed)
    return torch.randperm(len(doc_sentences()), generator=g).tolist()


def windows(toks: Tokens, text: str, width: int) -> list[SetText]:
    """``toks`` as texts of at most ``width`` tokens: the tokenizer's leading and trailing special
    tokens ([CLS] .. [SEP], a BOS) kept on every window, the tokens between cut in order; each
    window's text is the characters its tokens cover."""
    ids, labels, special = list(toks.ids), list(toks.labels), list(toks.special)
    if len(ids) <= width:
        return [SetText(text, ids, labels)]
    lead = 0
    while lead < len(ids) and special[lead]:
        lead += 1
    trail = 0
    while trail < len(ids) - lead and special[len(ids) - 1 - trail]:
        trail += 1
    body = width - lead - trail
    if body < 1:
        raise TraceError(f"source: {width} tokens a text leave no room beside the special tokens")
    end = len(ids) - trail
    out = []
    for a in range(lead, end, body):
        b = min(a + body, end)
        part = list(range(lead)) + list(range(a, b)) + list(range(end, len(ids)))
        chars = [toks.offsets[i] for i in range(a, b)]
        piece = text[chars[0][0] : max(c[1] for c in chars)].strip() or text
        out.append(SetText(piece, [ids[i] for i in part], [labels[i] for i in part]))
    return out


def _tokens(tok: TextTokenizer, text: str, field: str) -> Tokens:
    try:
        toks = tok(text)
    except Exception as exc:  # the tokenizers library raises plain Exceptions
        raise TraceError(f"{field}: the tokenizer could not read it ({exc})") from exc
    if not toks.ids:
        raise TraceError(f"{field}: the tokenizer made no tokens of it")
    return toks


def user_text(m: ServedModel, text: str, cap: int) -> SetText:
    """The user's sentence as one text (never cut: at most the model's cap, else a 422)."""
    toks = _tokens(m.tokenizer, text, "text")
    if len(toks.ids) > cap:
        raise TraceError(f"text: {len(toks.ids)} tokens exceed the cap of {cap}")
    return SetText(text, list(toks.ids), list(toks.labels), user=True)


def fill(
    tok: TextTokenizer, lines: Iterable[tuple[str, str]], width: int, budget: int, strict: bool
) -> TextSet:
    """Texts of ``lines`` ((text, the field an error names)) in order, each cut into windows of
    ``width``, until ``budget`` tokens are taken: the window that does not fit whole is cut to
    the room left (its special tokens kept) and the rest counted in ``dropped``. A line the
    tokenizer cannot read is a TraceError when ``strict`` (an upload), else left out."""
    texts: list[SetText] = []
    left, dropped = budget, 0
    for text, field in lines:
        if left <= 0 and dropped and not strict:
            # docs: the rest of the pool is counted without the labels (a fast batch).
            dropped += _count(tok, text)
            continue
        try:
            toks = _tokens(tok, text, field)
        except TraceError:
            if strict:
                raise
            continue
        for w in windows(toks, text, width):
            n = len(w.ids)
            if n <= left:
                texts.append(w)
                left -= n
                continue
            fit = windows_cut(w, left, toks)
            if fit is not None:
                texts.append(fit)
                left -= len(fit.ids)
                dropped += n - len(fit.ids)
            else:
                dropped += n
            left = min(left, 0)
    return TextSet(texts, dropped)


def windows_cut(w: SetText, room: int, toks: Tokens) -> SetText | None:
    """The first ``room`` tokens' worth of window ``w`` with its trailing special tokens kept
    (as the tokenizer added them), or None when no token of text fits."""
    specials = {i for i, s in zip(toks.ids, toks.special, strict=True) if s}
    lead = 0
    while lead < len(w.ids) and w.ids[lead] in specials:
        lead += 1
    trail = 0
    while trail < len(w.ids) - lead and w.ids[len(w.ids) - 1 - trail] in specials:
        trail += 1
    body = room - lead - trail
    if body < 1:
        return None
    keep = list(range(lead + body)) + list(range(len(w.ids) - trail, len(w.ids)))
    return SetText(w.text, [w.ids[i] for i in keep], [w.labels[i] for i in keep])


def _count(tok: TextTokenizer, text: str) -> int:
    try:
        return len(tok.tok.encode(text).ids)
    except Exception:  # unreadable by this tokenizer: not part of the pool
        return 0


def build_set(
    m: ServedModel, source: str, upload: str | None, seed: int, budget: int, cap: int
) -> TextSet:
    """The set a request names (``source``: examples, docs or upload), at most ``budget``
    tokens, each text at most ``min(LIMITS.max_corpus_text_tokens, cap)``."""
    width = min(LIMITS.max_corpus_text_tokens, cap)
    tok = m.tokenizer
    if source == "upload":
        lines = [ln.strip() for ln in (upload or "").splitlines()]
        named = [(ln, f"upload: line {i + 1}") for i, ln in enumerate(lines) if ln]
        if not named:
            raise TraceError("upload: has no line with text (one text per non-empty line)")
        got = fill(tok, named, width, budget, strict=True)
    elif source == "examples":
        got = fill(tok, [(t, "examples") for t in (m.examples or EXAMPLES)], width, budget, False)
    else:
        pool = doc_sentences()
        got = fill(tok, [(pool[i], "docs") for i in doc_order(seed)], width, budget, False)
    if not got.texts:
        raise TraceError(f"source: the model's tokenizer reads none of the {source} texts")
    return got
