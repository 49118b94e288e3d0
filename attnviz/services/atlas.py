"""The head atlas: every head of a model scored on fixed probes, as TransformerLens's head
detectors and Olsson et al. (2022) define them: previous-token, first-token (an attention sink),
duplicate-token, induction (prefix matching) and positional (a fixed offset).

The probe: ``PROBE_BATCH`` strings of ``PROBE_HALF`` distinct tokens drawn with a fixed seed from
the words of Python's documentation that are one token each (else, for a character model, from
the model's vocabulary; special tokens left out), and only tokens that read back as themselves
when the text is tokenized again; each string is then repeated, so that the page can open any head
on the probe's text and see exactly the tokens that were scored. Scores are means of softmax
weights over the strings and the queries a score names, read through the trace's own patterns
(``ServedModel.trace``): the native engine and bridged models alike.

An encoder's attention is bidirectional: its scores are read the same way, from each query back
(the duplicate and induction scores from the second copy to the first), so that a head which
attends forward instead (to the next token, to the later copy) scores low on them; the
positional score looks both ways, and its best offset is negative when a head looks ahead.

Computed once per model on the compute thread (B forwards of at most 2 x PROBE_HALF tokens and
the model's special tokens: bounded in time by the model's size alone), and kept per model.
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from attnviz.errors import TraceError
from attnviz.pretrained.registry import ServedModel
from attnviz.pretrained.tokenize import TextTokenizer
from attnviz.schemas.atlas import AtlasProbe, AtlasResponse, AtlasScore
from attnviz.training.measures import at_offset, previous_token
from attnviz.training.tasks import Induction, default_text

PROBE_HALF = 32  # tokens of each random string (then repeated)
PROBE_BATCH = 4  # strings the scores are averaged over
PROBE_SEED = 0
MAX_OFFSET = 8  # the positional score's offsets: 0 .. 8 tokens back (an encoder's -8 .. 8)
CACHE_MODELS = 16  # atlases kept (one per model)
TRIES_PER_TOKEN = 50  # vocabulary ids tried for each token of a string, at most

# Each score's name, title and definition, in the order the page lists them.
SCORES: dict[str, tuple[str, str]] = {
    "previous_token": (
        "previous token",
        "The mean weight from each token of the probe on the token just before it.",
    ),
    "first_token": (
        "first token (sink)",
        "The mean weight from every token after the first on the first token of the sequence "
        "(a BOS or [CLS] token when the tokenizer adds one): a head that parks its attention "
        "there when it has nothing to do.",
    ),
    "duplicate_token": (
        "duplicate token",
        "The mean weight from each token of the repeat on the same token in the first copy.",
    ),
    "induction": (
        "induction",
        "Prefix matching (Olsson et al. 2022): the mean weight from each token of the repeat on "
        "the token after its earlier occurrence in the first copy, the one an induction head "
        "copies.",
    ),
    "positional": (
        "positional",
        "The largest mean weight on a fixed offset within the first copy (k tokens back, "
        f"0 <= k <= {MAX_OFFSET}: 0 is the token itself; an encoder's negative k look ahead), "
        "with that offset.",
    ),
}

_INDUCTION = Induction()  # its induction_score is the induction task's own definition


@dataclass(frozen=True)
class Probe:
    ids: list[list[int]]  # PROBE_BATCH sequences, each the tokenizer's ids of its text
    texts: list[str]
    labels: list[str]  # the first sequence's tokens as the page shows them
    start: int  # the first position of the random string (after a BOS or [CLS])
    half: int  # n: the string's tokens; the repeat starts at start + n


def _special_count(tok: TextTokenizer) -> int:
    post = tok.tok.post_processor
    return 0 if post is None else int(post.num_special_tokens_to_add(False))


# How a string's tokens are written: (before each token, before the first one too, between the
# two copies). A space before every token reads back for byte-level BPE (" the") and WordPiece;
# a bare first token for tokenizers that add their own space; nothing at all for a character
# model (it has no space).
_JOINS = ((" ", True, ""), (" ", False, " "), ("", False, ""))


@functools.cache
def _doc_words() -> tuple[str, ...]:
    """The lower-case words of Python's own documentation (``pydoc_data``, the char-LM's default
    text), sorted: a probe's tokens are drawn from these first, so that a page shown to a class
    reads as technical English rather than whatever a random draw of a vocabulary gives."""
    try:
        text = default_text()
    except RuntimeError:  # a Python without its documentation data: the vocabulary alone
        return ()
    return tuple(sorted(set(re.findall(r"\b[a-z]{3,12}\b", text))))


def _candidates(tok: TextTokenizer, g: torch.Generator, words: bool) -> Iterator[str]:
    """Words in a seeded random order: the documentation's (``words``) or the vocabulary's
    tokens as they read (special tokens left out)."""
    if words:
        pool = _doc_words()
        for i in torch.randperm(len(pool), generator=g).tolist():
            yield pool[i]
        return
    size = tok.tok.get_vocab_size(with_added_tokens=False)
    for i in torch.randperm(size, generator=g).tolist():
        if i not in tok.special_ids:
            yield tok.tok.decode([i], skip_special_tokens=True).strip()


def _string(
    tok: TextTokenizer, g: torch.Generator, n: int, lead: str, first: bool, plain: bool,
    words: bool,
) -> tuple[str, list[int]] | None:  # fmt: skip
    """``n`` distinct tokens in a seeded random order (the documentation's words that are one
    token each when ``words``, else the vocabulary's) whose text, ``lead`` before each token
    (before the first too when ``first``), tokenizes back to exactly them (with ``plain``,
    ASCII ones only, which every font draws); None if there are too few."""
    text, tried = "", 0
    ids: list[int] = []
    for word in _candidates(tok, g, words):
        if len(ids) == n or tried >= TRIES_PER_TOKEN * n:
            break
        if not word or not word.isprintable() or (plain and not word.isascii()):
            continue
        tried += 1
        cand = text + (lead if text or first else "") + word
        try:
            got = tok.tok.encode(cand, add_special_tokens=False).ids
        except Exception:  # the tokenizers library raises plain Exceptions (a character model)
            continue
        if len(got) == len(ids) + 1 and got[:-1] == ids and got[-1] not in ids:
            text, ids = cand, got
    return (text, ids) if len(ids) == n else None


def build_probe(
    tok: TextTokenizer, cap: int, batch: int = PROBE_BATCH, seed: int = PROBE_SEED
) -> Probe:
    """The atlas's probe for a tokenizer and a token cap (raises TraceError when the model has
    too few positions or tokens for one)."""
    specials = _special_count(tok)
    n = min(PROBE_HALF, (cap - specials) // 2)
    if n < 4:
        raise TraceError(
            f"model: {cap} positions are too few for the atlas's probe ({8 + specials} at least)"
        )
    choices = itertools.product((True, False), (True, False), _JOINS)
    for words, plain, (lead, first, between) in choices:
        g = torch.Generator().manual_seed(seed)
        ids: list[list[int]] = []
        texts: list[str] = []
        labels: list[str] = []
        start = 0
        for _ in range(batch):
            got = _string(tok, g, n, lead, first, plain, words)
            if got is None:
                break
            half, half_ids = got
            text = half + between + half
            try:
                toks = tok(text)
            except Exception:
                break
            start = next((i for i, s in enumerate(toks.special) if not s), 0)
            if toks.ids[start : start + 2 * n] != half_ids * 2 or not all(
                toks.special[start + 2 * n :]
            ):
                break
            ids.append(toks.ids)
            texts.append(text)
            labels = labels or toks.labels
        else:
            return Probe(ids, texts, labels, start, n)
    raise TraceError(
        "model: its tokenizer reads back no random string of its tokens for the atlas's probe"
    )


def score_patterns(
    patterns: list[torch.Tensor], start: int, half: int, causal: bool
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Every score of every head from each layer's attention on the probe, L x (B, nh, T, T)
    (the random string at ``start``, ``half`` tokens, repeated): {name: (L, nh)} and the
    positional score's best offsets (L, nh)."""
    n, s = half, start
    K = min(MAX_OFFSET, n - 1)
    offsets = list(range(0 if causal else -K, K + 1))
    out: dict[str, list[torch.Tensor]] = {name: [] for name in SCORES}
    best: list[torch.Tensor] = []
    for p in patterns:
        p = p.float()
        content = p[:, :, s : s + 2 * n, s : s + 2 * n]  # the two copies
        first = content[:, :, :n, :n]
        q = torch.arange(n, 2 * n)
        at = torch.stack([at_offset(first, k) for k in offsets])  # (offsets, nh)
        top, which = at.max(dim=0)
        out["previous_token"].append(previous_token(content))
        out["first_token"].append(p[:, :, 1:, 0].mean(dim=(0, 2)))
        out["duplicate_token"].append(content[:, :, q, q - n].mean(dim=(0, 2)))
        out["induction"].append(_INDUCTION.induction_score(content, n))
        out["positional"].append(top)
        best.append(torch.tensor(offsets)[which])
    return {name: torch.stack(rows) for name, rows in out.items()}, torch.stack(best)


@dataclass(frozen=True)
class Atlas:
    model: str
    scores: dict[str, torch.Tensor]  # name -> (L, nh)
    offsets: torch.Tensor  # (L, nh) the positional score's best offset
    probe: Probe
    seconds: float  # the computation's time

    def response(self) -> AtlasResponse:
        layers, heads = self.offsets.shape
        return AtlasResponse(
            model=self.model,
            layers=layers,
            heads=heads,
            scores=[
                AtlasScore(
                    name=name,
                    title=SCORES[name][0],
                    definition=SCORES[name][1],
                    grid=[[round(float(x), 4) for x in row] for row in self.scores[name]],
                    offsets=self.offsets.tolist() if name == "positional" else None,
                )
                for name in SCORES
            ],
            probe=AtlasProbe(
                text=self.probe.texts[0],
                tokens=self.probe.labels,
                start=self.probe.start,
                half=self.probe.half,
                strings=len(self.probe.ids),
                seed=PROBE_SEED,
            ),
            seconds=round(self.seconds, 3),
        )


def compute_atlas(m: ServedModel, cap: int) -> Atlas:
    """The atlas of a model whose texts may have up to ``cap`` tokens: its probe run through
    ``m.trace`` (one string at a time, under the model's lock) and every head scored."""
    began = time.perf_counter()
    probe = build_probe(m.tokenizer, cap)
    L = m.cfg.n_layers
    layers: list[list[torch.Tensor]] = [[] for _ in range(L)]
    for ids in probe.ids:
        with m.lock:
            trace = m.trace(ids)
        for layer in range(L):
            layers[layer].append(trace.pattern(layer).float().cpu())  # (nh, T, T)
    patterns = [torch.stack(rows) for rows in layers]  # L x (B, nh, T, T)
    scores, offsets = score_patterns(patterns, probe.start, probe.half, m.cfg.causal)
    return Atlas(m.name, scores, offsets, probe, time.perf_counter() - began)


class AtlasCache:
    """The last ``size`` atlases, one per model (by name and cap, for the very model object:
    a trained run's model that replaces another of its name is scored afresh)."""

    def __init__(self, size: int = CACHE_MODELS) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, int], tuple[weakref.ref, Atlas]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, m: ServedModel, cap: int) -> Atlas | None:
        with self._lock:
            item = self._items.get((m.name, cap))
            if item is None or item[0]() is not m:
                return None
            self._items.move_to_end((m.name, cap))
            return item[1]

    def put(self, m: ServedModel, cap: int, atlas: Atlas) -> None:
        with self._lock:
            self._items[(m.name, cap)] = (weakref.ref(m), atlas)
            self._items.move_to_end((m.name, cap))
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def atlas(self, m: ServedModel, cap: int) -> Atlas:
        """The model's atlas, computed on first use (call on the compute thread)."""
        got = self.get(m, cap)
        if got is None:
            got = compute_atlas(m, cap)
            self.put(m, cap, got)
        return got


ATLASES = AtlasCache()
