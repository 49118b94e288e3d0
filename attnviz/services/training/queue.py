"""The runs waiting for a training slot: a first-come queue, bounded (``train_queue``), with
each waiting run's place (1-based) and an estimate of its wait, and the per-visitor rule.

A run that finds every slot taken waits here in state ``queued``; it holds no slot and no
compute thread (nothing of it runs until it starts). When a slot frees, the first in line
starts. Past the bound a start is ``Busy`` (503 with Retry-After). Each visitor may have one
run going and one waiting (the operator is exempt): more is ``TooManyRuns`` (429).

The estimate is what the runs ahead say: a training run's remaining time (its steps left at
its pace so far, never past its time limit), a waiting one's whole length (its steps at the
last measured pace, never past the time limit), laid on the slots in order. It is whole
seconds, never negative. Each waiting run is told its place and estimate in a ``queue`` event
whenever they change (a run ahead started, ended or was cancelled, and every ``TICK_S`` as the
runs ahead go on: the estimate counts down), and once more, with state ``running``, when it
starts.

Every method is called under the run table's lock (``TrainService.lock``)."""

from __future__ import annotations

import heapq
import math
import threading
import time
from collections.abc import Callable, Iterable

from attnviz.services.ownership import Caller
from attnviz.services.training.runs import LiveRun

GUESS_STEP_S = 0.05  # seconds per step before any run has been measured (the same as runs.py)
TICK_S = 5.0  # how often the waiting runs' estimates are worked out again, between changes
WAITING_CANCELLED = "cancelled while waiting in line"  # the reason a waiting run ends with


class TooManyRuns(Exception):
    """The caller already has a run going and one waiting: 429, naming the rule."""


def waits(ahead: Iterable[float], lengths: Iterable[float], slots: int) -> list[float]:
    """When each waiting run starts, in seconds from now: the slots free after ``ahead`` (the
    training runs' remaining seconds; a slot not taken is free now), and each waiting run,
    in order, takes the first slot to free for its ``lengths``."""
    free = sorted(max(0.0, a) for a in ahead)[: max(1, slots)]
    free += [0.0] * max(0, max(1, slots) - len(free))
    heapq.heapify(free)
    out = []
    for length in lengths:
        t = heapq.heappop(free)
        out.append(t)
        heapq.heappush(free, t + max(0.0, length))
    return out


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st (the page says "next in line" for 1)."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class RunQueue:
    """The waiting runs, first come first served, at most ``bound`` of them."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.waiting: list[LiveRun] = []

    def __len__(self) -> int:
        return len(self.waiting)

    @property
    def full(self) -> bool:
        return len(self.waiting) >= self.bound

    def add(self, run: LiveRun) -> int:
        """``run`` waits at the end of the line (in state ``queued``); its place."""
        run.state = "queued"
        self.waiting.append(run)
        return len(self.waiting)

    def remove(self, run: LiveRun) -> bool:
        """Take ``run`` out of the line (it was cancelled): whether it was in it. The runs
        behind it move up (``update`` tells them)."""
        if run in self.waiting:
            self.waiting.remove(run)
            return True
        return False

    def pop(self) -> LiveRun | None:
        """The first in line, taken out of it, or None."""
        return self.waiting.pop(0) if self.waiting else None

    def place(self, run: LiveRun) -> int | None:
        """``run``'s place in line (1 is next), or None when it is not waiting."""
        return self.waiting.index(run) + 1 if run in self.waiting else None

    @staticmethod
    def refusal(runs: Iterable[LiveRun], caller: Caller) -> TooManyRuns | None:
        """Why ``caller`` may not start another run now, or None: each visitor may have one
        run going and one waiting (two going, where slots are free); the operator is exempt."""
        if caller.operator or not caller.visitor:
            return None
        mine = [r for r in runs if r.access.owner == caller.visitor and not r.finished]
        queued = sum(r.state == "queued" for r in mine)
        if queued == 0 and len(mine) < 2:
            return None
        going = len(mine) - queued
        if going and queued:
            what = "a run training and one waiting"
        elif queued:
            what = "a run waiting for a slot"
        else:
            what = f"{going} runs training"
        return TooManyRuns(
            f"train: you already have {what}; wait for one to finish or cancel it (each "
            "visitor may have one run training and one waiting)"
        )

    def update(self, running: Iterable[LiveRun], *, slots: int, max_seconds: float,
               step_s: float) -> None:  # fmt: skip
        """Tell each waiting run its place and estimate, where either changed (a ``queue``
        event): ``running``: the runs training now; ``step_s``: the last measured seconds
        per step (0: none measured yet)."""
        pace = step_s or GUESS_STEP_S
        ahead = [left(r, max_seconds, pace) for r in running]
        lengths = [
            min(max_seconds, r.plan.opt.steps * len(r.variants) * pace) for r in self.waiting
        ]
        for place, (run, wait) in enumerate(zip(self.waiting, waits(ahead, lengths, slots),
                                                 strict=True), start=1):  # fmt: skip
            tell(run, place, max(0, math.ceil(wait)))


class Ticker:
    """Calls ``tick`` every ``every`` seconds, on a thread of its own, for as long as it answers
    True; ``wake`` starts it again (one thread at most, none while nobody waits)."""

    def __init__(self, every: float, tick: Callable[[], bool]) -> None:
        self.every, self.tick = every, tick
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def wake(self) -> None:
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="train-queue",
                                               daemon=True)  # fmt: skip
                self.thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(self.every)
            if not self.tick():
                return


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
