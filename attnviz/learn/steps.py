"""The path: the seventeen steps in order. Their ids are fixed (the page links to ``#learn/n``, and
keeps the learner's progress by id)."""

from __future__ import annotations

from attnviz.learn.path import Step
from attnviz.learn.toy_steps import TOY_STEPS
from attnviz.learn.train_steps import RNN, TRAIN_STEPS

STEPS: tuple[Step, ...] = (RNN, *TOY_STEPS, *TRAIN_STEPS)
BY_ID: dict[str, Step] = {s.id: s for s in STEPS}

assert len(BY_ID) == len(STEPS), "two steps share an id"
assert all(
    s.lab == "train" and BY_ID[s.continues].lab == "train"
    and STEPS.index(BY_ID[s.continues]) < STEPS.index(s)
    for s in STEPS if s.continues is not None
), "a step continues an earlier train step"  # fmt: skip
