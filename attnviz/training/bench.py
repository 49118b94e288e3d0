"""``attnviz bench --train``: the training targets, measured (never asserted by a timed test).

- The default induction run: when the held-out loss on the repeat goes under 0.1 nats, and when
  a second-layer head's induction score reaches 0.7, in seconds from the start.
- The default char-LM run: when its held-out loss goes under a bigram model's.
- What the page receives: the bytes of one checkpoint event (every head's 8-bit snapshot).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import torch

from attnviz.services.training import thumbs
from attnviz.training.catalog import TASKS
from attnviz.training.tasks import CharLM, Induction, bigram_heldout_loss
from attnviz.training.trainer import HELDOUT_BATCH, Checkpoint, train

LOSS_TARGET = 0.1  # nats on the repeat
INDUCTION_TARGET = 0.7


@dataclass
class TaskFigures:
    task: str
    steps: int
    seconds: float  # the whole run, checkpoints included
    steps_per_s: float
    final_heldout: float
    crossings: dict[str, float | None] = field(default_factory=dict)  # target -> seconds
    event_bytes: int = 0  # one checkpoint event, as JSON
    extra: dict[str, float] = field(default_factory=dict)


def _first(points: list[Checkpoint], ok) -> float | None:
    return next((p.seconds for p in points if ok(p)), None)


def induction(device: str, checkpoints: int = 40) -> TaskFigures:
    entry = TASKS["induction"]
    task = Induction()
    n = (len(task.probe().ids) + 1) // 2
    t0 = time.perf_counter()
    run = train(task, entry.arch, entry.opt, device=device, checkpoints=checkpoints)
    seconds = time.perf_counter() - t0

    def score(p: Checkpoint) -> float:  # the best second-layer head on the probe
        return float(task.induction_score(p.pattern[1][None], n).max())

    from attnviz.services.training import _induction_scores

    held = _induction_scores(run.model, task)
    last = run.checkpoints[-1]
    return TaskFigures(
        task="induction",
        steps=len(run.history),
        seconds=seconds,
        steps_per_s=len(run.history) / run.history[-1].seconds,
        final_heldout=last.heldout,
        crossings={
            f"held-out loss < {LOSS_TARGET}": _first(
                run.checkpoints, lambda p: p.heldout < LOSS_TARGET
            ),
            f"layer-2 induction >= {INDUCTION_TARGET} (probe)": _first(
                run.checkpoints, lambda p: score(p) >= INDUCTION_TARGET
            ),
        },  # fmt: skip
        event_bytes=_event_bytes(last),
        extra={"layer-2 induction, 64 held-out strings": max(held[1])},
    )


def charlm(device: str, checkpoints: int = 20) -> TaskFigures:
    entry = TASKS["charlm"]
    task = CharLM()
    baseline = bigram_heldout_loss(task, HELDOUT_BATCH)
    t0 = time.perf_counter()
    run = train(task, entry.arch, entry.opt, device=device, checkpoints=checkpoints)
    seconds = time.perf_counter() - t0
    last = run.checkpoints[-1]
    return TaskFigures(
        task="charlm",
        steps=len(run.history),
        seconds=seconds,
        steps_per_s=len(run.history) / run.history[-1].seconds,
        final_heldout=last.heldout,
        crossings={
            "held-out loss < bigram": _first(run.checkpoints, lambda p: p.heldout < baseline)
        },  # fmt: skip
        event_bytes=_event_bytes(last),
        extra={"bigram held-out loss": baseline},
    )


def _event_bytes(point: Checkpoint) -> int:
    data = {"variant": 0, "checkpoint": {"step": point.step, "heldout": point.heldout,
            "seconds": point.seconds, "thumbs": thumbs(point.pattern).model_dump(),
            "sample": point.sample}}  # fmt: skip
    return len(json.dumps(data, separators=(",", ":")))


def run(device: str = "cpu") -> list[TaskFigures]:
    torch.manual_seed(0)
    return [induction(device), charlm(device)]


def table(figures: list[TaskFigures]) -> str:
    lines = ["task        steps  seconds  steps/s  held-out  snapshot event"]
    for f in figures:
        lines.append(
            f"{f.task:<10} {f.steps:>6} {f.seconds:>8.1f} {f.steps_per_s:>8.0f} "
            f"{f.final_heldout:>9.3f}  {f.event_bytes / 1024:>6.1f} KiB"
        )
        for what, at in f.crossings.items():
            lines.append(f"  {what}: " + ("never" if at is None else f"at {at:.1f} s"))
        for what, value in f.extra.items():
            lines.append(f"  {what}: {value:.3f}")
    return "\n".join(lines)


def as_json(figures: list[TaskFigures]) -> str:
    return json.dumps([f.__dict__ for f in figures])
