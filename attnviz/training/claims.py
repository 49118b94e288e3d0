"""A claim: a number measured on what was trained, and the bound it must meet. The ablation
presets measure theirs on a preset's runs (``ablations``), the recurrent comparison on a
comparison (``recurrent``); both state them the same way, and the services send them as
``TrainClaim``s: the claim in short (``str``, for tables and exports) and as a sentence a
learner reads (``Claim.sentence``), its numbers rounded to what a person reads.

A claim about time (how a training step's time grows) is an observation, not a check: it is
measured and shown, but a run's verdict never depends on it, since a busy machine can make any
timing come out otherwise."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from attnviz.numbers import (
    readable_against,
    readable_percent,
    readable_points,
    readable_prose,
    readable_share,
)

M = TypeVar("M", bound=Callable[..., float])

# What a claim's number is, for its sentence: a share (0.97 -> "97%"), a difference of shares
# ("47 points", 0.004 -> "0.4 points"), a share of a head's weight said before "of its weight"
# (0.583 -> "0.583", 0.9996 -> "almost all (over 0.999)"), a loss in nats, a ratio ("3.1
# times"), or a plain number (3 significant digits).
Unit = Literal["share", "points", "weight", "nats", "times", "number"]


def said(x: float, unit: Unit = "number") -> str:
    """``x`` as a person reads it: 3 significant digits, as the page's numbers.js readable()
    writes them, never a value it is not (``attnviz.numbers.readable_prose``: "about 0.00008"); a
    share as a whole percentage (``readable_percent``: "over 99%", never "100%" short of all of
    it); a difference of shares in points (``readable_points``: "0.4 points", never "0 points"
    short of none); a share of a weight as ``readable_share`` says it."""
    if unit == "share":
        return readable_percent(x)
    if unit == "weight":
        return readable_share(x)
    if unit == "points":
        return readable_points(x)
    number = readable_prose(x)
    return {"nats": f"{number} nats", "times": f"{number} times"}.get(unit, number)


@dataclass(frozen=True)
class Claim(Generic[M]):
    """One statement about a measure (whatever it is measured on) and ``bound``: checked, or,
    when ``checked`` is false, an observation shown beside the checks and never counted."""

    text: str  # what is measured, in short: "post-norm: held-out loss after 300 steps"
    measure: M
    op: str  # "<=" or ">="
    bound: float
    # The same as a learner reads it, "{}" where the measured value goes: "The post-norm
    # model's held-out loss after 300 steps was {}".
    says: str
    unit: Unit = "number"
    checked: bool = True

    def __post_init__(self) -> None:
        if self.op not in ("<=", ">="):
            raise ValueError(f"op: '<=' or '>=', not {self.op!r}")
        if self.says.count("{}") != 1:
            raise ValueError(f"says: one '{{}}' for the value, in {self.says!r}")

    def holds_for(self, value: float) -> bool:
        return (operator.le if self.op == "<=" else operator.ge)(value, self.bound)

    def sentence(self, value: float) -> str:
        """The claim measured, as a sentence: "The post-norm model's held-out loss after 300
        steps was 3.24 nats (the claim: at least 3 nats)."; a value that rounds to its bound
        but is not it reads "just under" or "just over" it, never as the bound."""
        bound = f"{'at least' if self.op == '>=' else 'at most'} {said(self.bound, self.unit)}"
        text = self.says.format(readable_against(value, self.bound, lambda x: said(x, self.unit)))
        text = text[0].upper() + text[1:]
        if self.checked:
            return f"{text} (the claim: {bound})."
        return (
            f"{text}. On an idle machine it is {bound}; a time depends on how busy the machine "
            "is, so this one is shown here and not checked."
        )

    def __str__(self) -> str:
        return f"{self.text} {self.op} {self.bound:g}"


@dataclass(frozen=True)
class Outcome:
    claim: Claim[Any]
    value: float
    holds: bool

    @property
    def counts(self) -> bool:
        """Whether the outcome is a check's (an observation's never decides a verdict)."""
        return self.claim.checked

    def __str__(self) -> str:
        return f"{self.claim}: measured {self.value:.3f} ({'holds' if self.holds else 'FAILS'})"
