"""Tasks to train on, each with what it teaches and what to look for.

A task makes batches of token ids from a generator (so that a seed fixes the data order) and
says which positions the loss counts: (inputs, targets, mask), each (B, T).
"""

from __future__ import annotations

import functools
import re
import string
from dataclasses import dataclass
from typing import Protocol

import torch

# The held-out batch is drawn from its own generator, never from the training one, so that
# measuring it does not change the training data's order.
HELDOUT_SEED = 2_147_483_647


@dataclass(frozen=True)
class Batch:
    inputs: torch.Tensor  # (B, T) token ids
    targets: torch.Tensor  # (B, T): the id each position should predict next
    mask: torch.Tensor  # (B, T) bool: the positions the loss counts
    source: torch.Tensor | None = None  # (B, S) ids an encoder reads, for an encoder-decoder

    def to(self, device: torch.device) -> Batch:
        source = None if self.source is None else self.source.to(device)
        return Batch(self.inputs.to(device), self.targets.to(device), self.mask.to(device), source)


@dataclass(frozen=True)
class CharVocab:
    """One token per character."""

    chars: str

    @property
    def size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        return [self.chars.index(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids)


@dataclass(frozen=True)
class Probe:
    """The fixed input whose attention is shown at every checkpoint, and where to look."""

    ids: list[int]
    labels: list[str]  # one per token
    look: str  # what the pattern shows once the task is learned
    # The token (0-based) whose row shows what the task teaches: where a page opens the probe's
    # query (the first token's row of a causal self-attention is all its own, and shows nothing).
    query: int
    source: list[int] | None = None  # what an encoder-decoder's encoder reads
    source_labels: list[str] | None = None


class Task(Protocol):
    """What the trainer needs of a task. ``name`` is the API's; ``about`` says, in a sentence or
    three, what the task teaches and what to look for."""

    @property
    def name(self) -> str: ...

    @property
    def about(self) -> str: ...

    @property
    def vocab(self) -> CharVocab: ...

    @property
    def encoder_decoder(self) -> bool:
        """Batches carry a source, and the model has an encoder for it."""
        ...

    @property
    def max_tokens(self) -> int: ...

    def batch(self, g: torch.Generator, size: int) -> Batch: ...

    def heldout(self, size: int) -> Batch: ...

    def probe(self) -> Probe: ...


@dataclass(frozen=True)
class Induction:
    """A random string of lowercase letters, then the same string again; the loss is on the
    repeat. Its length changes from batch to batch (``min_len`` to ``max_len``): with one fixed
    length a model learns "copy the token L back" by position alone, in a few dozen steps, and
    no induction head forms."""

    min_len: int = 8
    max_len: int = 24
    vocab: CharVocab = CharVocab(string.ascii_lowercase)
    name: str = "induction"
    encoder_decoder: bool = False
    about: str = (
        "A random string, then the same string again. The first copy cannot be predicted; the "
        "second can, by finding the earlier occurrence of the current letter and copying the "
        "letter after it. Look for a head in the first layer that attends to the previous "
        "token, and a head in the second that attends, from each letter of the repeat, to the "
        "letter after its earlier occurrence: an induction head."
    )

    @property
    def max_tokens(self) -> int:
        return 2 * self.max_len - 1

    def batch(self, g: torch.Generator, size: int) -> Batch:
        n = int(torch.randint(self.min_len, self.max_len + 1, (1,), generator=g))
        return self._repeat(torch.randint(0, self.vocab.size, (size, n), generator=g))

    def _repeat(self, half: torch.Tensor) -> Batch:
        n = half.shape[1]  # half: (B, n)
        ids = torch.cat([half, half], dim=1)  # (B, 2n)
        inputs, targets = ids[:, :-1], ids[:, 1:]  # (B, 2n - 1) each
        mask = torch.zeros_like(inputs, dtype=torch.bool)
        # Position t predicts token t + 1. The repeat's first letter (token n) follows a letter
        # not seen before, so it cannot be known; the rest (tokens n + 1 .. 2n - 1) can.
        mask[:, n:] = True
        return Batch(inputs, targets, mask)

    def heldout(self, size: int) -> Batch:
        """Fresh strings, never trained on (with 26^8 strings and more, almost surely), at the
        middle length."""
        n = (self.min_len + self.max_len) // 2
        g = torch.Generator().manual_seed(HELDOUT_SEED)
        return self._repeat(torch.randint(0, self.vocab.size, (size, n), generator=g))

    def probe(self) -> Probe:
        n = min(12, self.max_len)
        g = torch.Generator().manual_seed(HELDOUT_SEED - 1)
        half = torch.randint(0, self.vocab.size, (n,), generator=g).tolist()
        ids = (half + half)[:-1]
        return Probe(
            ids,
            list(self.vocab.decode(ids)),
            f"From each letter of the repeat (tokens {n + 1} to {2 * n - 1}), an induction head "
            f"attends to the letter after its earlier occurrence: a stripe {n - 1} tokens "
            "left of the diagonal. A previous-token head attends one token left.",
            # The repeat's first letter: its row reaches back to the letter after its earlier
            # occurrence, and what it predicts (the next letter) can be known.
            query=n,
        )

    def induction_score(self, pattern: torch.Tensor, n: int) -> torch.Tensor:
        """Per head, the mean weight from each query of the repeat (positions n .. 2n - 2) on
        the token after its earlier occurrence (position q - n + 1). (B, nh, T, T) -> (nh,)"""
        queries = torch.arange(n, 2 * n - 1)
        keys = queries - n + 1
        return pattern[:, :, queries, keys].mean(dim=(0, 2))


# ---------------------------------------------------------------------------------------------
# Reversing a string with an encoder-decoder.

END = "."  # the mark that ends a source and a target, and starts the decoder's input

# The recommended settings for reverse and copy, as overrides of the trainer's ``Architecture``
# and ``Optimiser``. One layer suffices: the encoder's heads tell each letter its neighbour and
# the decoder's cross-attention finds, from the letter just written, the next one. On two CPU
# cores the held-out loss is near 0.05 after 600 steps, 5 to 6 s (seeds 0 and 1; 2 layers take
# twice as long to get there). Sinusoidal positions learn it far slower than RoPE: at lr 3e-3,
# 2 layers, the held-out loss is still 1.0 after 600 steps (RoPE: 0.12).
REVERSE_ARCH: dict = {"layers": 1, "heads": 4, "d_model": 64}
REVERSE_OPT: dict = {"steps": 600, "lr": 4e-3, "batch": 32}


@dataclass(frozen=True)
class Reverse:
    """An encoder reads a random string of lowercase letters and an end mark; the decoder
    writes the string reversed, then the end mark, one letter at a time, each from the letters
    it wrote so far (its input starts with the mark) and what its cross-attention reads of the
    encoder's output. Every position counts. With ``copy``, the decoder writes the string as it
    is. The length changes from batch to batch, so that no fixed position holds the answer.

    source  a b c d .     decoder input  . d c b a     targets  d c b a .
    """

    min_len: int = 4
    max_len: int = 12
    copy: bool = False
    vocab: CharVocab = CharVocab(END + string.ascii_lowercase)
    encoder_decoder: bool = True
    probe_word: str = "pathfinder"  # ten letters, none twice: one place for each in the source

    @property
    def name(self) -> str:
        return "copy" if self.copy else "reverse"

    @property
    def about(self) -> str:
        if self.copy:
            return (
                "An encoder reads a string; a decoder writes it out again, letter by letter, "
                "attending to the encoder's output through cross-attention. Look for "
                "cross-attention heads whose pattern becomes a diagonal: the decoder walks "
                "through the source in order as it writes. To know where it is, it looks up "
                "the letter it has just written, so the encoder must tell each letter its "
                "neighbour: look there for a head that attends to the letter before or after."
            )
        return (
            "An encoder reads a string; a decoder writes it backwards, letter by letter, "
            "attending to the encoder's output through cross-attention (the encoder-decoder of "
            "the original transformer, which translated). Look for cross-attention heads whose "
            "pattern becomes an anti-diagonal: the decoder walks back through the source as it "
            "writes. To know where it is, it looks up the letter it has just written, so the "
            "encoder must tell each letter its neighbour: look there for a head that attends "
            "to the letter before or after."
        )

    @property
    def max_tokens(self) -> int:
        return self.max_len + 1

    def _pairs(self, letters: torch.Tensor) -> Batch:
        B, n = letters.shape  # letters: (B, n) ids of letters (the mark is id 0)
        end = torch.zeros(B, 1, dtype=letters.dtype)
        out = letters if self.copy else letters.flip(1)  # (B, n)
        source = torch.cat([letters, end], dim=1)  # (B, n + 1)
        inputs = torch.cat([end, out], dim=1)  # (B, n + 1)
        targets = torch.cat([out, end], dim=1)  # (B, n + 1)
        return Batch(inputs, targets, torch.ones_like(inputs, dtype=torch.bool), source)

    def _letters(self, g: torch.Generator, size: int, n: int) -> torch.Tensor:
        return torch.randint(1, self.vocab.size, (size, n), generator=g)

    def batch(self, g: torch.Generator, size: int) -> Batch:
        n = int(torch.randint(self.min_len, self.max_len + 1, (1,), generator=g))
        return self._pairs(self._letters(g, size, n))

    def heldout(self, size: int) -> Batch:
        """Fresh strings at the middle length, from a generator of their own."""
        n = (self.min_len + self.max_len) // 2
        g = torch.Generator().manual_seed(HELDOUT_SEED)
        return self._pairs(self._letters(g, size, n))

    def probe(self) -> Probe:
        word = self.probe_word[: self.max_len]
        pair = self._pairs(torch.tensor([self.vocab.encode(word)]))
        assert pair.source is not None
        ids, source = pair.inputs[0].tolist(), pair.source[0].tolist()
        n = len(word)
        walk = "a diagonal: the rows walk through the source in order" if self.copy else (
            "an anti-diagonal: the rows walk back through the source, from its last letter to "
            "its first"
        )  # fmt: skip
        return Probe(
            ids,
            list(self.vocab.decode(ids)),
            f"Cross-attention: each row is a letter the decoder writes (its input is the letter "
            f"it wrote before), each column a source letter. Once learned, the pattern is "
            f"{walk}. It may sit a column off the letter being written: an encoder head that "
            f"attends to the letter before copies each letter into its right-hand neighbour, "
            f"and the row can read it there. The last row writes the end mark, after all {n} "
            f"letters. In the encoder, look for that head (or one attending to the letter "
            f"after).",
            # The first letter written: its cross-attention row reads the source's last letter.
            query=0,
            source=source,
            source_labels=list(self.vocab.decode(source)),
        )

    def alignment(self, cross: torch.Tensor, n: int, reach: int = 2) -> torch.Tensor:
        """Per head, how much of its weight lies on one (anti-)diagonal: the mean weight, over
        the rows that write a letter after another (1 .. n - 1), on the column of the letter
        written (n - 1 - row reversed, row copied) shifted by k, for the best k from -reach to
        reach. A model may align on the letter itself or on a neighbour, whichever the
        encoder told about its neighbours (a trained 1-layer reverser attends two columns
        right, to the letter after the one it has just written, which knows it).
        (B, nh, n + 1, n + 1) -> (nh,)"""
        rows = torch.arange(1, n)
        base = rows if self.copy else n - 1 - rows
        best = torch.zeros(cross.shape[1], dtype=cross.dtype)
        for k in range(-reach, reach + 1):
            cols = base + k
            ok = (cols >= 0) & (cols <= n)
            if ok.sum() * 2 < len(rows):  # too few rows left on this diagonal to say
                continue
            best = torch.maximum(best, cross[:, :, rows[ok], cols[ok]].mean(dim=(0, 2)))
        return best

    def decode(self, model, source: list[int], steps: int | None = None) -> list[int]:
        """Greedy: the ids the model writes for ``source`` (ids, ending with the mark), up to
        and without the end mark, at most ``steps`` (the source's letters + 1 by default)."""
        device = model.param_device
        src = torch.tensor([source], device=device)  # (1, S)
        out: list[int] = []
        for _ in range(steps if steps is not None else len(source)):
            inputs = torch.tensor([[0, *out]], device=device)  # (1, t)
            with torch.no_grad():
                logits = model.logits(model(inputs, src))  # (1, t, V)
            nxt = int(logits[0, -1].argmax())
            if nxt == 0:
                break
            out.append(nxt)
        return out


# ---------------------------------------------------------------------------------------------
# A character-level language model on English text.

# Typographic characters that have a plain ASCII spelling; anything else outside printable
# ASCII and the newline is dropped (and listed in ``CharLM.dropped``).
_ASCII_SPELLING = {
    "\r\n": "\n",
    "\r": "\n",
    "\t": "    ",
    "\u00a0": " ",  # no-break space
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2015": "-",
    "\u2212": "-",  # minus sign
    "\u2026": "...",
}
_KEEP = frozenset("\n" + "".join(chr(i) for i in range(32, 127)))
_SPELLING = re.compile("|".join(re.escape(k) for k in sorted(_ASCII_SPELLING, key=len)[::-1]))

CHARLM_CONTEXT = 64
CHARLM_HELDOUT_SHARE = 10  # the last 1/10 of the text is held out

# The recommended settings for a char-LM run, as overrides of the trainer's ``Architecture`` and
# ``Optimiser`` (plain dicts: the trainer imports this module, not the other way round). On the
# default text the held-out loss beats the bigram baseline (2.31 nats, ``bigram_heldout_loss``)
# after about 50 steps, 2 to 20 s on two CPU cores (36 to 200 ms a step, by how busy they are),
# and ends near 1.46 after 600. Without the feed-forward a step is 1.6 times cheaper, but the
# baseline falls only after about 65 steps and the loss ends near 1.62; lr 1e-2 does worse.
CHARLM_ARCH: dict = {"layers": 2, "heads": 4, "d_model": 64, "ffn": True}
CHARLM_OPT: dict = {"steps": 600, "lr": 3e-3, "batch": 32}


def clean_text(text: str) -> tuple[str, str]:
    """The text in the char-LM's alphabet: printable ASCII and the newline. Line ends become
    ``\\n``, a tab four spaces, typographic quotes, dashes, ellipses and no-break spaces their
    ASCII spelling; every other character is dropped. Returns (clean text, the dropped
    characters, sorted, each once)."""
    text = _SPELLING.sub(lambda m: _ASCII_SPELLING[m.group()], text)
    dropped = "".join(sorted(set(text) - _KEEP))
    if dropped:
        text = text.translate({ord(c): None for c in dropped})
    return text, dropped


@functools.cache
def default_text() -> str:
    """English prose with some code: the help topics of the standard library's ``pydoc``
    (``pydoc_data.topics.topics``), in sorted order of their names, about 465,000 characters.
    Fixed for one Python version (3.11.7 here); other versions ship slightly different text."""
    try:
        from pydoc_data.topics import topics
    except ImportError as exc:  # a Python installed without its documentation data
        raise RuntimeError(
            "the default char-LM text is the standard library's pydoc_data.topics, which this "
            "Python lacks; pass a text"
        ) from exc
    return "\n".join(topics[k] for k in sorted(topics))


@functools.cache
def _default_clean() -> tuple[str, str]:
    return clean_text(default_text())


def char_label(c: str) -> str:
    """How a character reads on a heatmap's axis: a space as "␣", a newline as "⏎"."""
    return {" ": "\u2423", "\n": "\u23ce"}.get(c, c)


class CharLM:
    """Predict the next character of a text. The vocabulary is the sorted set of the (cleaned,
    see ``clean_text``) text's characters; the first 9/10 of the text is trained on, the last
    1/10 held out. A batch is random windows of ``context`` + 1 characters from the training
    part (inputs: all but the last; targets: all but the first; every position counts)."""

    name = "charlm"
    encoder_decoder = False
    about = (
        "Predict the next character of English text (by default Python's own help pages). "
        "Nothing is given but the characters so far: the model has to find out which letters "
        "follow which, where words end, and how a quote or a bracket closes. Look for heads "
        "that attend to the previous character or two, heads that attend back to the space "
        "before the current word (its start), and heads that hold on to an opening quote or "
        "bracket until it is closed. The loss to beat is a bigram model's, which only knows "
        "the previous character."
    )

    def __init__(self, text: str | None = None, context: int = CHARLM_CONTEXT) -> None:
        if not isinstance(context, int) or context < 1:
            raise ValueError(f"context: must be a positive integer (got {context!r})")
        clean, self.dropped = _default_clean() if text is None else clean_text(text)
        n = len(clean)
        least = CHARLM_HELDOUT_SHARE * (context + 1)
        if n < least:
            dropped = f" (after dropping {self.dropped!r})" if self.dropped else ""
            raise ValueError(
                f"text: {n} characters{dropped} is too short for a context of {context}: the "
                f"held-out last tenth must hold one window of {context + 1} characters, so at "
                f"least {least} are needed"
            )
        self.text = clean
        self.context = context
        self.vocab = CharVocab("".join(sorted(set(clean))))
        lookup = torch.zeros(128, dtype=torch.long)
        lookup[torch.tensor([ord(c) for c in self.vocab.chars])] = torch.arange(self.vocab.size)
        codes = torch.frombuffer(bytearray(clean.encode("ascii")), dtype=torch.uint8)
        self.ids = lookup[codes.long()]  # (n,)
        self.split = n - n // CHARLM_HELDOUT_SHARE  # train: [0, split); held out: [split, n)

    @classmethod
    def from_text(
        cls, text: str, context: int = CHARLM_CONTEXT, max_chars: int | None = None
    ) -> CharLM:
        """A task on a text a person gave; ``max_chars`` caps its length as given (before
        cleaning). ValueError, naming the rule, when it is too long or too short."""
        if not isinstance(text, str):
            raise ValueError("text: must be a string")
        if max_chars is not None and len(text) > max_chars:
            raise ValueError(
                f"text: {len(text):,} characters exceed the cap of {max_chars:,} for a char-LM text"
            )
        return cls(text, context)

    def __repr__(self) -> str:
        return (
            f"CharLM({len(self.text):,} characters, vocabulary {self.vocab.size}, "
            f"context {self.context})"
        )

    @property
    def max_tokens(self) -> int:
        return self.context

    @property
    def train_ids(self) -> torch.Tensor:
        return self.ids[: self.split]

    @property
    def heldout_ids(self) -> torch.Tensor:
        return self.ids[self.split :]

    def _windows(self, ids: torch.Tensor, starts: torch.Tensor) -> Batch:
        w = ids[starts[:, None] + torch.arange(self.context + 1)]  # (B, context + 1)
        inputs, targets = w[:, :-1], w[:, 1:]
        return Batch(inputs, targets, torch.ones_like(inputs, dtype=torch.bool))

    def batch(self, g: torch.Generator, size: int) -> Batch:
        """``size`` windows starting anywhere in the training part."""
        high = self.split - self.context  # starts 0 .. split - context - 1
        return self._windows(self.train_ids, torch.randint(0, high, (size,), generator=g))

    def heldout(self, size: int) -> Batch:
        """``size`` windows evenly spaced over the held-out part, first to last (they overlap
        when the part is short)."""
        last = len(self.heldout_ids) - self.context - 1
        starts = torch.linspace(0, last, size, dtype=torch.float64).round().long()
        return self._windows(self.heldout_ids, starts)

    def probe_start(self) -> int:
        """Where in the held-out part the probe starts: the first sentence (a capital letter
        after ". " or at a line's start) whose ``context`` characters hold no newline and
        are mostly letters and spaces; else the first sentence start; else the part's start."""
        held = self.text[self.split :]
        last = len(held) - self.context
        starts = [
            i
            for i in range(last + 1)
            if held[i].isupper() and (i == 0 or held[i - 1] == "\n" or held[i - 2 : i] == ". ")
        ]
        for i in starts:
            window = held[i : i + self.context]
            if "\n" not in window and sum(c.isalpha() or c == " " for c in window) >= 0.9 * len(
                window
            ):
                return i
        return starts[0] if starts else 0

    def probe(self) -> Probe:
        start = self.probe_start()
        ids = self.heldout_ids[start : start + self.context].tolist()
        text = self.vocab.decode(ids)
        return Probe(
            ids,
            [char_label(c) for c in text],
            "A previous-character head is a stripe just left of the diagonal. A head that "
            "attends from every letter of a word to the space before it (its start) makes "
            "small triangles, one per word; after a quote or a bracket, look for a column that "
            "stays lit until it closes.",
            query=charlm_query(text),
        )


def charlm_query(text: str) -> int:
    """The probe's query for a char-LM: the second letter of the text's second word (its row
    shows the previous character and, back at the space, the word's start), else the middle."""
    space = text.find(" ")
    if space >= 0 and space + 2 < len(text):
        return space + 2
    return len(text) // 2


BIGRAM_KS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)


def bigram_counts(task: CharLM) -> torch.Tensor:
    """(V, V) float64: how often character b follows character a in the training part."""
    V, ids = task.vocab.size, task.train_ids
    counts = torch.zeros(V, V, dtype=torch.float64)
    counts.index_put_((ids[:-1], ids[1:]), torch.ones(len(ids) - 1, dtype=torch.float64), True)
    return counts


def bigram_k(counts: torch.Tensor) -> float:
    """The add-k smoothing (of ``BIGRAM_KS``) under which each bigram of the training part is
    best predicted from all the others (leave-one-out): chosen without the held-out part."""
    V = counts.shape[0]
    seen = counts > 0
    c, rows = counts[seen], counts.sum(1, keepdim=True).expand_as(counts)[seen]

    def loo(k: float) -> float:
        return float((c * ((c - 1 + k) / (rows - 1 + k * V)).log()).sum())

    return max(BIGRAM_KS, key=loo)


def bigram_heldout_loss(task: CharLM, size: int = 64, k: float | None = None) -> float:
    """The baseline a trained model must beat: the held-out loss (nats per character, on the
    positions of ``task.heldout(size)``; the trainer measures 64 windows) of a bigram model fit
    on the training part, which knows only which character follows which, with add-k
    smoothing: P(b | a) = (count(a, b) + k) / (count(a) + k V). ``k`` None: chosen by
    ``bigram_k`` on the training part (0.1 on the default text, 0.007 nats better than
    add-one)."""
    counts = bigram_counts(task)
    k = bigram_k(counts) if k is None else k
    V = counts.shape[0]
    logp = ((counts + k) / (counts.sum(1, keepdim=True) + k * V)).log()  # (V, V)
    b = task.heldout(size)
    return float(-logp[b.inputs[b.mask], b.targets[b.mask]].mean())
