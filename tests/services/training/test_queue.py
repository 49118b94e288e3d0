"""The line for a slot (``services.line``) with training runs in it, without training: places
in order (first come first served), the bound, each visitor's bound, a cancel moving the places
behind it up, and estimates that are whole, never negative seconds, and shorter as the runs
ahead progress and finish. Comparisons wait in the same line: tests/api/test_recurrent.py."""

from __future__ import annotations

import json
import time

import pytest

from attnviz.schemas.train import TrainRequest
from attnviz.services.line import Ticker, TooManyRuns, ordinal, waits
from attnviz.services.ownership import Caller, Ownership
from attnviz.services.training.queue import RunQueue
from attnviz.services.training.runs import LiveRun, Plan
from attnviz.training.tasks import Induction
from attnviz.training.trainer import Architecture, Optimiser, Step

MAX_S = 120.0


def live(owner: str, steps: int = 100, state: str = "running", n: list[int] = [0]) -> LiveRun:  # noqa: B006
    n[0] += 1
    plan = Plan(Induction(), [("", Architecture(layers=1, heads=1, d_model=8))],
                Optimiser(steps=steps), params=[100])  # fmt: skip
    run = LiveRun(f"run{n[0]}", TrainRequest(), plan, Ownership(owner=owner))
    run.state = state
    return run


def progress(run: LiveRun, done: int, seconds_per_step: float) -> None:
    """``run`` has trained ``done`` steps at that pace (its first variant running)."""
    v = run.variants[0]
    v.state = "running"
    v.history = [Step(i, 1.0, [0.0], i * seconds_per_step) for i in range(1, done + 1)]
    run.started = time.monotonic() - done * seconds_per_step


def told(run: LiveRun) -> list[dict]:
    return [json.loads(d) for name, d in run.events if name == "queue"]


def test_ordinals_in_english():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st",
        "111th"]  # fmt: skip


def test_waits_lay_the_runs_on_the_slots_in_order():
    # One slot: each waits for the one training, then for every one ahead of it.
    assert waits([10.0], [5.0, 7.0, 1.0], slots=1) == [10.0, 15.0, 22.0]
    # Two slots: the first to free is taken first.
    assert waits([10.0, 4.0], [5.0, 7.0, 1.0], slots=2) == [4.0, 9.0, 10.0]
    # A free slot starts a run at once; nothing is ever negative.
    assert waits([], [5.0], slots=1) == [0.0]
    assert waits([-3.0], [-1.0, 2.0], slots=1) == [0.0, 0.0]


def test_a_waiting_run_never_starts_before_its_owners_training_run_ends():
    # Two slots, one free: a's second run waits for a's first (10 s), b's takes the free slot.
    assert waits([10.0], [5.0, 7.0], slots=2, ahead_owners=["a"], owners=["a", "b"]) == [
        10.0, 0.0]  # fmt: skip
    # Nobody else waits: the slot stays free until a's run ends.
    assert waits([10.0], [5.0], slots=3, ahead_owners=["a"], owners=["a"]) == [10.0]
    # A run the rule does not bind (the operator's: None) starts at once.
    assert waits([10.0], [5.0], slots=2, ahead_owners=["a"], owners=[None]) == [0.0]
    # One slot: when a's run ends, a's second is free to start, and first in line; b's after.
    assert waits([10.0], [5.0, 7.0], slots=1, ahead_owners=["a"], owners=["a", "b"]) == [
        10.0, 15.0]  # fmt: skip
    # A run started from the line binds its owner too. Two slots, c's run training for 3 s,
    # two of a's waiting, then b's: a's first starts at
    # once, a's second once it ends (5 s), though c's slot frees at 3 s: b's takes that one.
    assert waits([3.0], [5.0, 1.0, 2.0], slots=2, ahead_owners=["c"],
                 owners=["a", "a", "b"]) == [0.0, 5.0, 3.0]  # fmt: skip
    # More training than there are slots (the slots were lowered): a slot frees only when
    # fewer than the slots train.
    assert waits([2.0, 4.0, 6.0], [1.0], slots=2) == [4.0]


def test_pop_takes_the_first_whose_owner_has_no_run_training():
    q = RunQueue(bound=4)
    a2, b1, a3 = live("a"), live("b"), live("a")
    for r in (a2, b1, a3):
        q.add(r)
    going = live("a", state="running")
    assert q.pop([going]) is b1  # a's runs wait for a's training one
    assert q.pop([going]) is None
    assert q.pop([]) is a2 and q.pop([]) is a3
    # The operator's runs are bound by no rule: they start beside their owner's.
    mine = live("a")
    mine.exempt = True
    q.add(mine)
    assert q.pop([going]) is mine


def test_places_are_first_come_first_served_and_a_cancel_moves_them_up():
    q = RunQueue(bound=3)
    a, b, c = (live(o, state="running") for o in "abc")
    assert [q.add(r) for r in (a, b, c)] == [1, 2, 3]
    assert all(r.state == "queued" for r in (a, b, c))
    assert [q.place(r) for r in (a, b, c)] == [1, 2, 3] and q.full
    assert q.remove(b) and not q.remove(b)  # cancelled: out of the line, once
    assert [q.place(r) for r in (a, b, c)] == [1, None, 2] and not q.full
    assert q.pop() is a and q.pop() is c and q.pop() is None and len(q) == 0


def test_each_waiting_run_is_told_its_place_and_estimate_when_they_change():
    q = RunQueue(bound=8)
    ahead = live("x", steps=100)
    progress(ahead, 50, 0.1)  # 50 steps left at 0.1 s: about 5 s
    waiting = [live(o, steps=100) for o in "abc"]
    for r in waiting:
        q.add(r)
    q.update([ahead], slots=1, max_seconds=MAX_S, step_s=0.1)
    got = [(r.place, r.wait_s) for r in waiting]
    assert [p for p, _ in got] == [1, 2, 3]
    assert [w for _, w in got] == [5, 15, 25]  # 5 s, then 10 s each at the measured pace
    assert [told(r)[-1] for r in waiting] == [
        {"state": "queued", "place": p, "wait_s": w} for p, w in got
    ]
    # Nothing changed: nothing more is sent.
    q.update([ahead], slots=1, max_seconds=MAX_S, step_s=0.1)
    assert [len(told(r)) for r in waiting] == [1, 1, 1]

    # The one ahead trains on: every estimate is shorter, the places the same.
    progress(ahead, 90, 0.1)
    q.update([ahead], slots=1, max_seconds=MAX_S, step_s=0.1)
    later = [(r.place, r.wait_s) for r in waiting]
    assert [p for p, _ in later] == [1, 2, 3]
    assert all(0 <= w2 < w1 for (_, w1), (_, w2) in zip(got, later, strict=True))

    # It finishes; the first in line starts (told: running, no place); the rest move up.
    first = q.pop()
    assert first is waiting[0]
    from attnviz.services.training.queue import tell

    tell(first, None, None)
    assert first.state == "running" and told(first)[-1] == {
        "state": "running", "place": None, "wait_s": None}  # fmt: skip
    progress(first, 0, 0.1)
    q.update([first], slots=1, max_seconds=MAX_S, step_s=0.1)
    assert [(r.place, r.wait_s) for r in waiting[1:]] == [(1, 10), (2, 20)]
    assert all(w >= 0 for _, w in [(r.place, r.wait_s) for r in waiting[1:]])


def test_an_estimate_keeps_within_the_time_limit_and_is_never_negative():
    q = RunQueue(bound=8)
    ahead = live("x", steps=5000)
    progress(ahead, 1, 1.0)  # a slow run: 4,999 s left at its pace, but the limit is 120 s
    long = live("a", steps=5000)
    q.add(long)
    q.add(live("b", steps=10))
    q.update([ahead], slots=1, max_seconds=MAX_S, step_s=1.0)
    assert long.wait_s is not None and long.wait_s <= MAX_S
    # A run past its time limit (it is stopping): no time left, never less.
    ahead.started -= 10 * MAX_S
    q.update([ahead], slots=1, max_seconds=MAX_S, step_s=1.0)
    assert long.wait_s == 0 and q.waiting[1].wait_s == MAX_S
    # Nothing measured yet: a guessed pace, still whole seconds.
    q.update([], slots=1, max_seconds=MAX_S, step_s=0.0)
    assert [r.wait_s for r in q.waiting] == [0, MAX_S]


def test_each_visitor_has_one_run_going_and_one_waiting():
    def refusal(runs, caller):  # no address cap in the way: each visitor's rule alone
        return RunQueue(bound=8).refusal(runs, caller, per_address=100, retry=lambda _: 1)

    a = Caller("a")
    going = live("a", state="running")
    waiting = live("a", state="queued")
    others = [live("b", state="running"), live("c", state="queued")]
    assert refusal([*others], a) is None
    assert refusal([going, *others], a) is None  # a second: it may wait
    refused = refusal([going, waiting, *others], a)
    assert isinstance(refused, TooManyRuns)
    assert str(refused).startswith(
        "train: you already have a run training and one waiting; wait for one to finish or "
        "cancel it"
    )
    # One waiting (none going: the slots are another's) is the bound too: two would wait.
    assert "a run waiting" in str(refusal([waiting], a))
    # Ended runs do not count; the operator is exempt.
    done = live("a", state="done")
    assert refusal([done, going], a) is None
    assert refusal([going, waiting], Caller("a", operator=True)) is None
    # A second run waits while the first trains, even where a slot is free (it never trains
    # beside it); the operator's does not.
    assert RunQueue.must_wait([going, *others], a)
    assert not RunQueue.must_wait(others, a)
    assert not RunQueue.must_wait([going], Caller("a", operator=True))


@pytest.mark.parametrize("bound", [0, 1, 3])
def test_the_line_is_bounded(bound):
    q = RunQueue(bound=bound)
    for i in range(bound):
        assert not q.full
        q.add(live(str(i)))
    assert q.full and len(q) == bound


def test_the_ticker_tells_again_while_someone_waits_then_stops():
    calls: list[int] = []

    def tick() -> bool:
        calls.append(1)
        return len(calls) < 3  # nobody waits after the third

    t = Ticker(0.01, tick)
    t.wake()
    t.wake()  # one thread at most
    assert t.thread is not None
    t.thread.join(timeout=5)
    assert len(calls) == 3 and not t.thread.is_alive()
    t.wake()  # woken again (a run queued): it ticks again
    t.thread.join(timeout=5)
    assert len(calls) == 4
