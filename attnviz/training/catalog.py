"""What the Train mode offers: each task with its default architecture and optimiser, the
switches an ablation can vary and their values, and the variants of one switch.

A task is named once here (``TASKS``); the API's schema lists the same names, and a test checks
that the two agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from attnviz.training.tasks import (
    CHARLM_ARCH,
    CHARLM_OPT,
    REVERSE_ARCH,
    REVERSE_OPT,
    CharLM,
    Induction,
    Reverse,
    Task,
)
from attnviz.training.trainer import Architecture, Optimiser


@dataclass(frozen=True)
class TaskEntry:
    name: str
    title: str
    about: str
    arch: Architecture
    opt: Optimiser
    make: Callable[[str | None, int], Task]  # (text or None, max text chars) -> the task


def _textless(task: Task) -> Callable[[str | None, int], Task]:
    def make(text: str | None, _max_chars: int) -> Task:
        if text is not None:
            raise ValueError("text: only the charlm task learns a text")
        return task

    return make


def _charlm(text: str | None, max_chars: int) -> Task:
    return CharLM() if text is None else CharLM.from_text(text, max_chars=max_chars)


TASKS: dict[str, TaskEntry] = {
    "induction": TaskEntry(
        "induction",
        "Induction (a string, repeated)",
        Induction.about,
        Architecture(),
        Optimiser(),
        _textless(Induction()),
    ),  # fmt: skip
    "reverse": TaskEntry(
        "reverse",
        "Reverse a string (encoder-decoder)",
        Reverse().about,
        Architecture(**REVERSE_ARCH),
        Optimiser(**REVERSE_OPT),
        _textless(Reverse()),
    ),  # fmt: skip
    "copy": TaskEntry(
        "copy",
        "Copy a string (encoder-decoder)",
        Reverse(copy=True).about,
        Architecture(**REVERSE_ARCH),
        Optimiser(**REVERSE_OPT),
        _textless(Reverse(copy=True)),
    ),  # fmt: skip
    "charlm": TaskEntry(
        "charlm",
        "Language model (characters of a text)",
        CharLM.about,
        Architecture(**CHARLM_ARCH),
        Optimiser(**CHARLM_OPT),
        _charlm,
    ),  # fmt: skip
}

# The switches an ablation varies, each with its values in the order they are shown.
SWITCHES: dict[str, tuple[str | bool, ...]] = {
    "positional": ("none", "sinusoidal", "learned", "rope"),
    "norm": ("none", "pre", "post"),
    "residual": (True, False),
    "scale": (True, False),
    "ffn": (False, True),
}

_LABELS: dict[str, dict[str | bool, str]] = {
    "positional": {
        "none": "no positions",
        "sinusoidal": "sinusoidal",
        "learned": "learned",
        "rope": "RoPE",
    },  # fmt: skip
    "norm": {"none": "no norm", "pre": "pre-norm", "post": "post-norm"},
    "residual": {True: "residual", False: "no residual"},
    "scale": {True: "1/√d scaling", False: "no scaling"},
    "ffn": {False: "attention only", True: "with feed-forward"},
}


def variants_of(arch: Architecture, switch: str) -> list[tuple[str, Architecture]]:
    """One variant of ``arch`` per value of ``switch``, labelled for a person."""
    if switch not in SWITCHES:
        raise ValueError(f"compare: not a switch (one of {', '.join(SWITCHES)})")
    return [(_LABELS[switch][v], replace(arch, **_set(switch, v))) for v in SWITCHES[switch]]


def _set(switch: str, value: str | bool) -> dict[str, Any]:
    return {switch: value}


def slug(label: str) -> str:
    """A label as part of a model name: "no residual" -> "no-residual", "1/√d scaling" ->
    "1-d-scaling"."""
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-") or "variant"


assert set(SWITCHES) <= {f.name for f in fields(Architecture)}
