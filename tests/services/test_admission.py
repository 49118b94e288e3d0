"""Bounded, fair admission to the compute thread: who runs next, who is refused, and when."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from attnviz.services.admission import Admission, Busy
from tests.support.aio import run as run_coroutine


def run(main):
    """``main()`` run to its end (tests.support.aio: on a thread of its own)."""
    return run_coroutine(main())


def job(log: list[str], name: str, seconds: float = 0.0, gate: threading.Event | None = None):
    def fn() -> str:
        if gate is not None:
            assert gate.wait(10), "the test never opened the gate"
        time.sleep(seconds)
        log.append(name)
        return name

    return fn


async def started(adm: Admission, running: int = 1) -> None:
    """Yield until ``running`` jobs are on the compute thread."""
    while adm.running < running:
        await asyncio.sleep(0.001)


async def held(adm: Admission, log: list[str], client: str, name: str):
    """A job of ``client`` that holds the compute thread until the gate opens: (gate, future)."""
    gate = threading.Event()
    future = asyncio.ensure_future(adm.run(client, job(log, name, gate=gate)))
    await started(adm)
    return gate, future


def test_a_waiting_client_goes_before_a_busy_clients_backlog():
    async def main() -> list[str]:
        adm = Admission(workers=1, max_wait_s=10, max_queue=100)
        log: list[str] = []
        gate, first = await held(adm, log, "A", "A0")
        backlog = [
            asyncio.ensure_future(adm.run("A", job(log, f"A{i}", 0.01))) for i in range(1, 5)
        ]
        await asyncio.sleep(0.01)
        late = asyncio.ensure_future(adm.run("B", job(log, "B0", 0.01)))
        await asyncio.sleep(0.01)
        gate.set()
        await asyncio.gather(first, *backlog, late)
        return log

    log = run(main)
    # A has used the thread already; B, arriving last, goes next. A's own order is kept.
    assert log == ["A0", "B0", "A1", "A2", "A3", "A4"]


def test_turns_follow_compute_time_not_request_count():
    async def main() -> list[str]:
        adm = Admission(workers=1, max_wait_s=10, max_queue=100)
        log: list[str] = []
        gate, first = await held(adm, log, "gate", "gate")
        long = [asyncio.ensure_future(adm.run("L", job(log, "L", 0.06))) for _ in range(3)]
        short = [asyncio.ensure_future(adm.run("S", job(log, "S", 0.01))) for _ in range(8)]
        gate.set()
        await asyncio.gather(first, *long, *short)
        return log[1:]

    log = run(main)
    # One 60 ms job of L buys S about six 10 ms jobs: every S is done before L's third.
    assert log.index("L", log.index("L") + 1) > log.index("S")
    assert max(i for i, name in enumerate(log) if name == "S") < len(log) - 1
    assert log[-1] == "L"


@pytest.mark.parametrize(
    ("bounds", "why"),
    [
        ({"max_wait_s": 10, "max_queue": 2}, "2 requests are waiting"),
        # Three ahead (one running, two waiting) at 0.2 s each: 0.6 s, over 0.5 s.
        ({"max_wait_s": 0.5, "max_queue": 100, "first_guess_s": 0.2}, "expected wait is 0.6 s"),
    ],
)
def test_a_request_past_a_bound_is_refused_at_once_with_retry_after(bounds, why):
    async def main() -> tuple[Busy, float, list[str], int]:
        adm = Admission(workers=1, **bounds)
        log: list[str] = []
        gate, running = await held(adm, log, "A", "A")
        waiting = [asyncio.ensure_future(adm.run(c, job(log, c))) for c in "BC"]
        await asyncio.sleep(0.01)
        with pytest.raises(Busy) as refused:
            await adm.run("D", job(log, "D"))
        expired = adm.stats.expired
        gate.set()
        await asyncio.gather(running, *waiting)
        return refused.value, expired, log, adm.stats.refused

    busy, expired, log, refused = run(main)
    # Answered at once, not after a wait: refused by the bound, none of the waits ran out.
    assert why in str(busy) and busy.retry_after >= 1 and refused == 1 and expired == 0
    assert sorted(log) == ["A", "B", "C"]  # D never ran


def test_the_estimate_follows_measured_times(monkeypatch):
    """Ten requests measured at 0.1 s each (on a clock the test moves): from the first guess
    of 0.01 s towards 0.1 s, an average that weighs the last ones most (``_EWMA``)."""
    from attnviz.services import admission

    clock = [0.0]

    class Clock:  # the admission's time module: perf_counter is the test's, the rest real
        def __getattr__(self, name):
            return getattr(time, name)

        @staticmethod
        def perf_counter() -> float:
            return clock[0]

    def measured() -> None:
        clock[0] += 0.1

    monkeypatch.setattr(admission, "time", Clock())

    async def main() -> float:
        adm = Admission(workers=1, max_wait_s=10, max_queue=10, first_guess_s=0.01)
        for _ in range(10):
            await adm.run("A", measured)
        return adm.per_request_s

    want = 0.01
    for _ in range(10):
        want += admission._EWMA * (0.1 - want)
    assert run(main) == pytest.approx(want, rel=1e-9)
    assert 0.09 < want < 0.1


def test_a_request_that_does_not_start_in_time_gets_busy_and_never_runs():
    async def main() -> tuple[float, list[str], int]:
        adm = Admission(workers=1, max_wait_s=0.2, max_queue=100)
        log: list[str] = []
        gate, running = await held(adm, log, "A", "A")
        t0 = time.perf_counter()
        with pytest.raises(Busy):
            await adm.run("B", job(log, "B"))
        waited = time.perf_counter() - t0
        before = list(log)  # what had run when B was refused
        gate.set()
        await running
        await asyncio.sleep(0.05)
        return waited, before, log, adm.stats.expired

    waited, before, log, expired = run(main)
    assert waited >= 0.2  # it waited its turn for max_wait_s
    assert before == []  # and was refused while A still held the thread, not after it
    assert log == ["A"] and expired == 1


def test_cheap_requests_go_first_and_are_never_refused_for_the_miss_queue():
    async def main() -> list[str]:
        adm = Admission(workers=1, max_wait_s=10, max_queue=1)
        log: list[str] = []
        gate, running = await held(adm, log, "A", "A")
        miss = asyncio.ensure_future(adm.run("B", job(log, "miss")))
        await asyncio.sleep(0.01)
        hits = [asyncio.ensure_future(adm.run("C", job(log, "hit"), cheap=True)) for _ in range(3)]
        await asyncio.sleep(0.01)
        gate.set()
        await asyncio.gather(running, miss, *hits)
        return log

    assert run(main) == ["A", "hit", "hit", "hit", "miss"]


def test_an_error_reaches_its_caller_and_the_queue_goes_on():
    def boom() -> None:
        raise ValueError("no")

    async def main() -> str:
        adm = Admission(workers=1, max_wait_s=10, max_queue=10)
        with pytest.raises(ValueError, match="no"):
            await adm.run("A", boom)
        return await adm.run("A", lambda: "after")

    assert run(main) == "after"


def test_idle_clients_are_not_kept():
    async def main() -> int:
        adm = Admission(workers=1, max_wait_s=10, max_queue=10)
        for i in range(200):
            await adm.run(f"client-{i}", lambda: None)
        return len(adm._clients)

    assert run(main) <= 1


def test_two_workers_run_two_at_once():
    from attnviz.services import compute

    # Each waits for the other to have started: one after the other, they would never meet.
    both = threading.Barrier(2, timeout=30)

    async def main() -> list[int]:
        adm = Admission(workers=2, max_wait_s=60, max_queue=10)
        return await asyncio.gather(*(adm.run(c, both.wait) for c in "AB"))

    compute.configure(2)
    try:
        assert sorted(run(main)) == [0, 1]
    finally:
        compute.configure(1)
