"""Bounded, fair admission to the compute thread(s).

Every trace is computed on the compute thread (``compute.py``), one at a time. Without a bound,
a crowd queues there forever and everyone waits seconds; here a request waits at most
``max_wait_s`` to start, and one whose expected wait is already longer is refused at once with
:class:`Busy` (503 with ``Retry-After``), so a client learns in milliseconds to come back.

Who goes next is fair between clients, not first come first served: each client's compute
seconds are counted, and the waiting client that has used the least goes next (start-time fair
queueing over measured service times). A client that sends 128-token texts back to back gets
its share of the thread, and a client with a six-word sentence still goes within one request.
A client that was idle comes back at the virtual time of the last job started, so idle time is
not banked; when nobody waits, every debt is forgiven (and forgotten: memory stays bounded).
Requests whose trace is already cached are cheap (one head recomputed, an encoding): they go
before every miss, and are never refused for a long queue of misses.

A trace job (``jobs.py``: a long text, followed by the page) is admitted as a miss that is
``patient``: it waits for its turn however long, and while it computes it says how long it has
left (``left``), which is what a request behind it is told to wait (every one of them is refused
at once with that ``Retry-After`` when it would not start in time); its time does not enter the
running estimate of a miss.

Remote models (NDIF's) have an admission of their own, on threads of their own
(``compute.submit_remote``): their waits for the deployment never hold the compute thread.

Everything here runs on the event loop's thread; only ``fn`` runs on the compute thread.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from attnviz.services import compute

log = logging.getLogger(__name__)

R = TypeVar("R")

# The expected time of a computation before any has been measured, and how fast the running
# estimate follows new measurements.
_FIRST_GUESS_S = 0.05
_EWMA = 0.2
# Idle clients whose use is remembered, at most.
_MAX_CLIENTS = 4096


class Busy(Exception):
    """The server cannot start this request in time: answer 503, come back in ``retry_after``
    seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(eq=False)
class _Job(Generic[R]):
    client: str
    fn: Callable[[], R]
    cheap: bool
    arrived: float
    done: asyncio.Future[R]
    left: Callable[[], float] | None = None  # a job's seconds to go, while it computes
    started: bool = False
    seconds: float = 0.0  # on the compute thread


@dataclass
class _Client:
    used: float = 0.0  # compute seconds, shifted so idle time is not banked
    waiting: deque[_Job[Any]] = field(default_factory=deque)
    running: int = 0


@dataclass
class AdmissionStats:
    admitted: int = 0
    refused: int = 0  # answered 503 at once (expected wait too long or queue full)
    expired: int = 0  # waited max_wait_s without starting, then 503
    max_waiting: int = 0


class Admission:
    """At most ``workers`` computations at once; a miss waits at most ``max_wait_s`` to start,
    and at most ``max_queue`` misses wait at once."""

    def __init__(
        self,
        workers: int,
        max_wait_s: float,
        max_queue: int,
        first_guess_s: float = _FIRST_GUESS_S,
        submit: Callable[[Callable[[], Any]], Future] = compute.submit,
    ) -> None:
        self.workers = workers
        self.submit = submit  # where a computation runs (the compute thread, or a remote one's)
        self.max_wait_s = max_wait_s
        self.max_queue = max_queue
        self.stats = AdmissionStats()
        self._clients: dict[str, _Client] = {}
        self._running = 0
        self._jobs: set[_Job[Any]] = set()  # running, with a ``left``
        self._waiting_misses = 0
        self._waiting_cheap = 0
        self._miss_s = first_guess_s  # running estimate of one miss's compute time
        self._vtime = 0.0  # the ``used`` of the client whose job started last

    # -- what the server reads ----------------------------------------------------------------

    @property
    def running(self) -> int:
        return self._running

    @property
    def waiting(self) -> int:
        return self._waiting_misses + self._waiting_cheap

    @property
    def per_request_s(self) -> float:
        """The running estimate of one miss's compute time."""
        return self._miss_s

    def expected_wait_s(self) -> float:
        """How long a new miss would wait to start, by the running estimate (and the time the
        jobs computing say they have left)."""
        ahead = self._waiting_misses + self._running - len(self._jobs)
        return (ahead * self._miss_s + self._jobs_left_s()) / self.workers

    def _jobs_left_s(self) -> float:
        """The running jobs' time to go, together; when they hold every worker, at least the
        shortest of them (nothing starts before one of them ends)."""
        lefts = [max(0.0, job.left()) for job in self._jobs if job.left is not None]
        if not lefts:
            return 0.0
        if len(lefts) >= self.workers:
            return max(sum(lefts), min(lefts) * self.workers)
        return sum(lefts)

    def check(self, cheap: bool = False) -> None:
        """:class:`Busy` now if a request would be refused at once (``run``'s first test)."""
        if not cheap:
            if self._waiting_misses >= self.max_queue:
                self._refuse(f"{self._waiting_misses} requests are waiting")
            if self._running >= self.workers and self.expected_wait_s() > self.max_wait_s:
                self._refuse(f"the expected wait is {self.expected_wait_s():.1f} s")
        elif self._jobs and self._running >= self.workers:
            # Every worker computing, jobs among them: a cached part waits for one to end.
            wait = self._jobs_left_s() / self.workers if len(self._jobs) >= self.workers else 0
            if wait > self.max_wait_s:
                self._refuse(f"a long trace is computing, {wait:.0f} s to go")

    def retry_after(self) -> int:
        """Whole seconds after which the work in the queue now is expected to be done."""
        return max(1, math.ceil(self.expected_wait_s()))

    # -- the one entry point ------------------------------------------------------------------

    async def run(
        self,
        client: str,
        fn: Callable[[], R],
        *,
        cheap: bool = False,
        left: Callable[[], float] | None = None,
    ) -> R:
        """``fn()`` on the compute thread, when this client's turn comes; :class:`Busy` when it
        would not start within ``max_wait_s``. With ``left`` (a job's seconds to go), it waits
        for its turn however long (``check`` first for a refusal at once)."""
        if left is None:
            self.check(cheap)
        loop = asyncio.get_running_loop()
        job: _Job[R] = _Job(client, fn, cheap, time.monotonic(), loop.create_future(), left)
        # A client that went away leaves its result unread: read it so nothing is logged.
        job.done.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._enqueue(job)
        self._dispatch()
        if cheap:
            return await job.done
        if left is not None:
            try:
                return await job.done
            except asyncio.CancelledError:
                if not job.started:
                    self._remove(job)
                raise
        try:
            return await asyncio.wait_for(asyncio.shield(job.done), self.max_wait_s)
        except TimeoutError:
            if job.started:  # started in time, then ran long: wait for it
                return await job.done
            self._remove(job)
            self.stats.expired += 1
            raise Busy(
                f"busy: waited {self.max_wait_s:g} s for a turn; try again in "
                f"{self.retry_after()} s",
                self.retry_after(),
            ) from None
        except asyncio.CancelledError:  # the client went away
            if not job.started:
                self._remove(job)
            raise

    # -- the queue ----------------------------------------------------------------------------

    def _refuse(self, why: str) -> None:
        self.stats.refused += 1
        after = self.retry_after()
        raise Busy(f"busy: {why}; try again in {after} s", after)

    def _enqueue(self, job: _Job[Any]) -> None:
        state = self._clients.get(job.client)
        if state is None:
            state = self._clients[job.client] = _Client()
        if not state.waiting and not state.running:
            # Back from idle: no credit for the time away.
            state.used = max(state.used, self._vtime)
        state.waiting.append(job)
        if job.cheap:
            self._waiting_cheap += 1
        else:
            self._waiting_misses += 1
        self.stats.admitted += 1
        self.stats.max_waiting = max(self.stats.max_waiting, self.waiting)

    def _remove(self, job: _Job[Any]) -> None:
        state = self._clients.get(job.client)
        if state is None or job not in state.waiting:
            return
        state.waiting.remove(job)
        self._count_out(job)
        self._forget_if_idle(job.client)

    def _count_out(self, job: _Job[Any]) -> None:
        if job.cheap:
            self._waiting_cheap -= 1
        else:
            self._waiting_misses -= 1

    def _forget_if_idle(self, client: str) -> None:
        state = self._clients[client]
        if state.waiting or state.running:
            return
        # An idle client at or behind the virtual time is the same as a new one. Those ahead of
        # it are kept so a quick return does not wipe their use, but never more than a bound.
        if state.used <= self._vtime or len(self._clients) > _MAX_CLIENTS:
            del self._clients[client]

    def _next(self) -> _Job[Any] | None:
        """The oldest job of the least served client; cheap jobs before misses."""
        for cheap in (True, False):
            best: _Client | None = None
            for state in self._clients.values():
                if any(j.cheap == cheap for j in state.waiting) and (
                    best is None or state.used < best.used
                ):
                    best = state
            if best is not None:
                job = next(j for j in best.waiting if j.cheap == cheap)
                best.waiting.remove(job)
                return job
        return None

    def _dispatch(self) -> None:
        loop = asyncio.get_running_loop()
        while self._running < self.workers:
            job = self._next()
            if job is None:
                return
            self._count_out(job)
            job.started = True
            self._running += 1
            state = self._clients[job.client]
            state.running += 1
            if job.left is not None:
                self._jobs.add(job)
            self._vtime = max(self._vtime, state.used)
            future = self.submit(self._timed(job))
            future.add_done_callback(functools.partial(self._done, loop, job))

    def _done(self, loop: asyncio.AbstractEventLoop, job: _Job[Any], future: Future) -> None:
        """On the compute thread: hand the finished job back to the event loop (unless it has
        closed meanwhile: a server stopped while a trace job computed)."""
        if not loop.is_closed():
            loop.call_soon_threadsafe(self._finish, job, future)

    @staticmethod
    def _timed(job: _Job[R]) -> Callable[[], R]:
        def timed() -> R:
            started = time.perf_counter()
            try:
                return job.fn()
            finally:
                job.seconds = time.perf_counter() - started

        return timed

    def _finish(self, job: _Job[Any], future: Any) -> None:
        seconds = job.seconds
        self._running -= 1
        self._jobs.discard(job)
        state = self._clients[job.client]
        state.running -= 1
        state.used += seconds
        if not job.cheap and job.left is None:  # a job's minutes are not a miss's pace
            self._miss_s += _EWMA * (seconds - self._miss_s)
        if not job.done.done():
            exc = future.exception()
            if exc is not None:
                job.done.set_exception(exc)
            else:
                job.done.set_result(future.result())
        self._forget_if_idle(job.client)
        self._dispatch()
        if not self._running and not self.waiting:
            self._clients.clear()  # nobody waits: no debt is worth keeping
