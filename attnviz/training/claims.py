"""A claim: a number measured on what was trained, and the bound it must meet. The ablation
presets measure theirs on a preset's runs (``ablations``), the recurrent comparison on a
comparison (``recurrent``); both state them the same way, and the services send them as
``TrainClaim``s."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

M = TypeVar("M", bound=Callable[..., float])


@dataclass(frozen=True)
class Claim(Generic[M]):
    """One checkable statement: ``measure`` (whatever it is measured on) compared with
    ``bound``."""

    text: str  # what is measured, for a learner: "post-norm: held-out loss after 400 steps"
    measure: M
    op: str  # "<=" or ">="
    bound: float

    def __post_init__(self) -> None:
        if self.op not in ("<=", ">="):
            raise ValueError(f"op: '<=' or '>=', not {self.op!r}")

    def holds_for(self, value: float) -> bool:
        return (operator.le if self.op == "<=" else operator.ge)(value, self.bound)

    def __str__(self) -> str:
        return f"{self.text} {self.op} {self.bound:g}"


@dataclass(frozen=True)
class Outcome:
    claim: Claim[Any]
    value: float
    holds: bool

    def __str__(self) -> str:
        return f"{self.claim}: measured {self.value:.3f} ({'holds' if self.holds else 'FAILS'})"
