"""The runs waiting for a training slot: a first-come queue, bounded (``train_queue``), with
each waiting run's place (1-based) and an estimate of its wait, and the per-visitor rule.

A run that finds every slot taken waits here in state ``queued``; it holds no slot and no
compute thread (nothing of it runs until it starts). Each visitor may have one run going and
one waiting (the operator is exempt): a visitor's second run waits while their first trains,
even where a slot is free, and more is ``TooManyRuns`` (429 with Retry-After). One client
address may have ``train_per_address`` runs going or waiting (a client that keeps no cookie is
a new visitor at every request: the address is what bounds it); more is ``TooManyRuns`` too.
When a slot frees, the first in line whose owner has no run training starts. Past the bound a
start is ``Busy`` (503 with Retry-After).

The estimate is what the runs ahead say: a training run's remaining time (its steps left at
its pace so far, never past its time limit), a waiting one's whole length (its steps at the
last measured pace, never past the time limit), laid on the slots in order. It is whole
seconds, never negative; a waiting run never starts before its owner's training run ends. Each
waiting run is told its place and estimate in a ``queue`` event
whenever they change (a run ahead started, ended or was cancelled, and every ``TICK_S`` as the
runs ahead go on: the estimate counts down), and once more, with state ``running``, when it
starts.

Every method is called under the run table's lock (``TrainService.lock``)."""

from __future__ import annotations

import heapq
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable

from attnviz.services.ownership import Caller
from attnviz.services.training.runs import LiveRun

GUESS_STEP_S = 0.05  # seconds per step before any run has been measured (the same as runs.py)
TICK_S = 5.0  # how often the waiting runs' estimates are worked out again, between changes
WAITING_CANCELLED = "cancelled while waiting in line"  # the reason a waiting run ends with


class TooManyRuns(Exception):
    """The caller (a visitor, or a client address) already has as many runs going as the rule
    allows: 429, naming the rule, with ``retry_after`` (seconds until one of theirs should
    end)."""

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


def waits(ahead: Iterable[float], lengths: Iterable[float], slots: int, *,
          ahead_owners: Iterable[str | None] | None = None,
          owners: Iterable[str | None] | None = None) -> list[float]:  # fmt: skip
    """When each waiting run starts, in seconds from now: the slots free after ``ahead`` (the
    training runs' remaining seconds; a slot not taken is free now), and whenever one frees,
    the first waiting run in order whose owner has no run training takes it for its
    ``lengths``. ``ahead_owners``, ``owners``: whose the training and the waiting runs are
    (None, or not given: a run the rule does not bind, the operator's)."""
    ahead = [max(0.0, a) for a in ahead]
    lengths = [max(0.0, x) for x in lengths]
    ahead_owners = [None] * len(ahead) if ahead_owners is None else list(ahead_owners)
    owners = [None] * len(lengths) if owners is None else list(owners)
    ends = [(a, i, o) for i, (a, o) in enumerate(zip(ahead, ahead_owners, strict=True))]
    heapq.heapify(ends)
    busy = Counter(o for o in ahead_owners if o is not None)
    idle = max(1, slots) - len(ahead)  # below 0 while more train than there are slots
    out = [0.0] * len(lengths)
    left = list(range(len(lengths)))
    t, n = 0.0, len(ends)
    while left:
        i = 0
        while idle > 0 and i < len(left):  # the free slots, to the first who may start
            k, owner = left[i], owners[left[i]]
            if owner is not None and busy[owner]:
                i += 1
                continue
            out[k] = t
            left.pop(i)
            idle -= 1
            heapq.heappush(ends, (t + lengths[k], n, owner))
            n += 1
            if owner is not None:
                busy[owner] += 1
        if not left or not ends:
            break
        t, _, owner = heapq.heappop(ends)  # the next run to end frees its slot and its owner
        idle += 1
        if owner is not None:
            busy[owner] -= 1
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

    def pop(self, running: Iterable[LiveRun] = ()) -> LiveRun | None:
        """The first in line who may start beside ``running`` (the runs training: its owner has
        none of them), taken out of the line, or None."""
        busy = {bound(r) for r in running} - {None}
        for i, run in enumerate(self.waiting):
            if bound(run) not in busy:
                return self.waiting.pop(i)
        return None

    def place(self, run: LiveRun) -> int | None:
        """``run``'s place in line (1 is next), or None when it is not waiting."""
        return self.waiting.index(run) + 1 if run in self.waiting else None

    @staticmethod
    def refusal(runs: Iterable[LiveRun], caller: Caller, *, per_address: int,
                retry: Callable[[list[LiveRun]], int]) -> TooManyRuns | None:  # fmt: skip
        """Why ``caller`` may not start another run now, or None: each visitor may have one
        run going and one waiting (a second waits while the first trains, ``must_wait``), and
        each client address ``per_address`` runs going or waiting; the operator is exempt.
        ``retry``: the seconds until one of the given runs should end (the 429's Retry-After)."""
        if caller.operator or not caller.visitor:
            return None
        going_now = [r for r in runs if not r.finished and not r.exempt]
        mine = [r for r in going_now if bound(r) == caller.visitor]
        queued = sum(r.state == "queued" for r in mine)
        going = len(mine) - queued
        if queued or going >= 2:
            if going and queued:
                what = "a run training and one waiting"
            elif queued:
                what = "a run waiting for a slot"
            else:
                what = f"{going} runs training"
            return TooManyRuns(
                f"train: you already have {what}; wait for one to finish or cancel it (each "
                "visitor may have one run training and one waiting)",
                retry(mine),
            )
        here = [r for r in going_now if caller.address and r.address == caller.address]
        if len(here) < per_address:
            return None
        after = retry(here)
        return TooManyRuns(
            f"train: {len(here)} runs are training or waiting from your network address, as "
            f"many as this server takes from one address; try again "
            f"in {after} s, when one of them should have ended",
            after,
        )

    @staticmethod
    def must_wait(running: Iterable[LiveRun], caller: Caller) -> bool:
        """Whether ``caller``'s new run waits even where a slot is free: a run of theirs
        trains (the operator is exempt)."""
        if caller.operator or not caller.visitor:
            return False
        return any(bound(r) == caller.visitor for r in running)

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
        starts = waits(ahead, lengths, slots, ahead_owners=[bound(r) for r in running],
                       owners=[bound(r) for r in self.waiting])  # fmt: skip
        for place, (run, wait) in enumerate(zip(self.waiting, starts, strict=True), start=1):
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


def bound(run: LiveRun) -> str | None:
    """The visitor whose rule binds ``run``: its owner, or None (the operator's, or nobody's)."""
    return None if run.exempt or not run.access.owner else run.access.owner


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
