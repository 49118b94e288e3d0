"""Training runs in the line for a slot (``services.line``, which comparisons share): a run's
length and remaining time for the estimates, and the ``queue`` events a waiting run is told.

The estimate is what the runs ahead say: a training run's remaining time (its steps left at
its pace so far, never past its time limit), a waiting one's whole length (its steps at the
last measured pace, never past the time limit). Each waiting run is told its place and estimate
in a ``queue`` event whenever they change (a run ahead started, ended or was cancelled, and
every ``TICK_S`` as the runs ahead go on: the estimate counts down), and once more, with state
``running``, when it starts.

Every method is called under the run table's lock (``TrainService.lock``)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from attnviz.services.line import Line, Words
from attnviz.services.training.runs import LiveRun

GUESS_STEP_S = 0.05  # seconds per step before any run has been measured (the same as runs.py)
TICK_S = 5.0  # how often the waiting runs' estimates are worked out again, between changes
WAITING_CANCELLED = "cancelled while waiting in line"  # the reason a waiting run ends with
WORDS = Words(field="train", one="run", goes="training")


class RunQueue(Line[LiveRun]):
    """The training runs waiting for a slot, at most ``bound`` of them."""

    def __init__(self, bound: int) -> None:
        super().__init__(bound, WORDS)

    def update(self, running: Iterable[LiveRun], *, slots: int, max_seconds: float,
               step_s: float) -> None:  # fmt: skip
        """Tell each waiting run its place and estimate, where either changed (a ``queue``
        event): ``running``: the runs training now; ``step_s``: the last measured seconds
        per step (0: none measured yet)."""
        pace = step_s or GUESS_STEP_S
        running = list(running)
        ahead = [left(r, max_seconds, pace) for r in running]
        lengths = [
            min(max_seconds, r.plan.opt.steps * len(r.variants) * pace) for r in self.waiting
        ]
        for run, place, wait in self.lay(running, ahead, lengths, slots):
            tell(run, place, wait)


def left(run: LiveRun, max_seconds: float, pace: float) -> float:
    """Seconds until a training run ends: at its own pace once it has one, else at ``pace``
    (the last measured); never past its time limit."""
    deadline = run.started + max_seconds
    if run.step_time or any(v.history for v in run.variants):
        return run.remaining_s(deadline)
    whole = run.plan.opt.steps * len(run.variants) * pace
    return min(whole, max(0.0, deadline - time.monotonic()))


def tell(run: LiveRun, place: int | None, wait_s: int | None) -> None:
    """A ``queue`` event to ``run``: its place and estimate (None, None once it starts), when
    they differ from what it was told last."""
    if (run.place, run.wait_s) == (place, wait_s) and place is not None:
        return

    def apply() -> None:
        run.place, run.wait_s = place, wait_s
        if place is None:
            run.state = "running"

    state = "queued" if place is not None else "running"
    run.emit("queue", {"state": state, "place": place, "wait_s": wait_s}, apply=apply)


def cancel_waiting(run: LiveRun) -> None:
    """``run``, taken out of the line, ends cancelled (its ``end`` event), never having
    started."""
    reason = WAITING_CANCELLED

    def end() -> None:
        run.state, run.reason = "cancelled", reason
        run.ended, run.place, run.wait_s = time.monotonic(), None, None
        for v in run.variants:
            v.state = "cancelled"

    run.emit("end", {"state": "cancelled", "reason": reason, "place": None, "wait_s": None},
             apply=end)  # fmt: skip
