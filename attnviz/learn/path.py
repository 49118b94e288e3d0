"""What a step of the Learn mode is: its words, its formula, the lab state it starts from, its
tasks (each with the function that checks it) and the article's tables it restates.

The steps themselves are data in ``toy_steps.py`` and ``train_steps.py``; ``steps.py`` puts them
in the order of the path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from attnviz.learn.article import Table


class LearnRefused(ValueError):
    """A check body that validated but does not fit the step or the trace (a view's layer past
    the model's, the wrong lab's body); the message starts with the field it is about: 422."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class Result:
    """One task's answer: whether it is done, and what is true now, with numbers, and why."""

    done: bool
    says: str
    # A cell of the heatmap in view the answer points at (query, key; 0-based tokens), which
    # the page marks: step 13's cell to open.
    cell: tuple[int, int] | None = None


@dataclass(frozen=True)
class Task:
    id: str
    prompt: str
    hint: str
    # (what the check reads: a ToyReading, a TrainReading or a RecurrentReading) -> Result
    check: Callable[..., Result]
    # A finding (a head of the run found and shown): done once, it stays done while the learner
    # shows another head; a state's task (a table's weights) reads "done before, not now".
    finding: bool = False
    # The lab's button the task needs, by id, shown in the task as a button of the same name
    # that presses it: the task's one action in view beside its question.
    action: str | None = None
    # The parts of the toy lab the task reads (TOY_PARTS' names; empty: the whole lab): the
    # learner has tried the task once one of them differs from the step's start, and only then
    # does its answer say how to solve it; a try at it is a change to one of them.
    reads: tuple[str, ...] = ()


# The parts of a toy lab a task can read, each with how the page names it.
TOY_PARTS = {
    "table": "the table",
    "settings": "the Model card's settings",
    "W_Q": "W_Q",
    "W_K": "W_K",
    "W_V": "W_V",
    "W_O": "W_O",
    "layer": "the attention card's layer",
    "head": "the attention card's head",
}


@dataclass(frozen=True)
class ToyStart:
    """A toy state: a preset's table with some of its config replaced, and the view's layer
    and head (the rest of the view as the page opens any table: the last layer's vectors, the
    second and last tokens' distance, trails on)."""

    preset: str
    config: dict[str, Any] = field(default_factory=dict)
    layer: int = 0
    head: int = 0


@dataclass(frozen=True)
class Step:
    id: str
    title: str
    lab: Literal["toy", "train"]
    text: tuple[str, ...]
    formula: str  # presentation MathML (mathml.math)
    formula_text: str  # the same in plain text
    tasks: tuple[Task, ...]
    focus: tuple[str, ...]
    toy: ToyStart | None = None
    train: dict[str, str] | None = None  # the Train tab's form settings by name
    # A train step that goes on with an earlier train step's run (its id): it opens in that
    # step's lab as the learner left it, and its check reads the run trained there.
    continues: str | None = None
    article: tuple[Table, ...] = ()
    # The lab's cards the step shows, by id (empty: the whole lab): a step whose task needs one
    # card opens on it alone, the rest of the lab one click away (Explore freely).
    only: tuple[str, ...] = ()
