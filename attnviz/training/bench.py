"""``attnviz bench --train``: the training targets, measured (never asserted by a timed test).

- The default induction run: when the held-out loss on the repeat goes under 0.1 nats, and when
  a second-layer head's induction score reaches 0.7, in seconds from the start.
- The default reverse run (an encoder-decoder): when its held-out loss goes under 0.1 nats, and
  when a cross-attention head puts 0.7 of its weight on one anti-diagonal.
- The default char-LM run: when its held-out loss goes under a bigram model's.
- What the page receives: the bytes of one checkpoint event (every head's 8-bit snapshot).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from attnviz.services.training import thumbs
from attnviz.training.catalog import TASKS
from attnviz.training.tasks import CharLM, Induction, Reverse, bigram_heldout_loss
from attnviz.training.trainer import HELDOUT_BATCH, Checkpoint, Run, train

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


def _trained(name: str, task, device: str, checkpoints: int) -> tuple[Run, float]:
    """The task's default run, and its seconds in all (checkpoints included)."""
    entry = TASKS[name]
    t0 = time.perf_counter()
    run = train(task, entry.arch, entry.opt, device=device, checkpoints=checkpoints)
    return run, time.perf_counter() - t0


def _figures(
    name: str, run: Run, seconds: float, crossings: dict, extra: dict[str, float]
) -> TaskFigures:
    last = run.checkpoints[-1]
    return TaskFigures(
        task=name,
        steps=len(run.history),
        seconds=seconds,
        steps_per_s=len(run.history) / run.history[-1].seconds,
        final_heldout=last.heldout,
        crossings=crossings,
        event_bytes=_event_bytes(last),
        extra=extra,
    )


def _targets(run: Run, what: str, score: Callable[[Checkpoint], float]) -> dict:
    """When the held-out loss first goes under LOSS_TARGET, and ``score`` (a head's, on the
    probe) first reaches INDUCTION_TARGET, in seconds from the start."""
    loss = _first(run.checkpoints, lambda p: p.heldout < LOSS_TARGET)
    head = _first(run.checkpoints, lambda p: score(p) >= INDUCTION_TARGET)
    return {f"held-out loss < {LOSS_TARGET}": loss, f"{what} >= {INDUCTION_TARGET} (probe)": head}


def induction(device: str, checkpoints: int = 40) -> TaskFigures:
    from attnviz.services.training import _induction_scores

    task = Induction()
    n = (len(task.probe().ids) + 1) // 2
    run, seconds = _trained("induction", task, device, checkpoints)

    def score(p: Checkpoint) -> float:  # the best second-layer head on the probe
        return float(task.induction_score(p.pattern[1][None], n).max())

    crossings = _targets(run, "layer-2 induction", score)
    best = max(_induction_scores(run.model, task)[1])
    return _figures("induction", run, seconds, crossings,
                    {"layer-2 induction, 64 held-out strings": best})  # fmt: skip


def reverse(device: str, checkpoints: int = 40) -> TaskFigures:
    from attnviz.services.training import _alignment_scores

    task = Reverse()
    n = len(task.probe_word)
    run, seconds = _trained("reverse", task, device, checkpoints)

    def aligned(p: Checkpoint) -> float:  # the best cross-attention head of any layer
        assert p.cross is not None
        return max(float(task.alignment(p.cross[i][None], n).max()) for i in range(len(p.cross)))

    crossings = _targets(run, "cross-attention alignment", aligned)
    best = max(max(row) for row in _alignment_scores(run.model, task))
    return _figures("reverse", run, seconds, crossings,
                    {"best alignment, 64 held-out strings": best})  # fmt: skip


def charlm(device: str, checkpoints: int = 20) -> TaskFigures:
    task = CharLM()
    baseline = bigram_heldout_loss(task, HELDOUT_BATCH)
    run, seconds = _trained("charlm", task, device, checkpoints)
    crossings = {"held-out loss < bigram": _first(run.checkpoints, lambda p: p.heldout < baseline)}
    return _figures("charlm", run, seconds, crossings, {"bigram held-out loss": baseline})


def _event_bytes(point: Checkpoint) -> int:
    snaps = {"thumbs": point.pattern, "cross": point.cross, "encoder": point.encoder}
    data = {"variant": 0, "checkpoint": {"step": point.step, "heldout": point.heldout,
            "seconds": point.seconds, "sample": point.sample,
            **{k: thumbs(v).model_dump() for k, v in snaps.items() if v is not None}}}  # fmt: skip
    return len(json.dumps(data, separators=(",", ":")))


def run(device: str = "cpu") -> list[TaskFigures]:
    torch.manual_seed(0)
    return [induction(device), reverse(device), charlm(device)]


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
