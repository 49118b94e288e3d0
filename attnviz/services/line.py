"""The line that long work waits in for a slot, the same for every kind that trains on a thread
of its own (training runs, ``services.training``; recurrent comparisons, ``services.recurrent``):
a first-come line, bounded, each waiting one's place (1-based) and an estimate of its wait, and
the per-visitor and per-address rules.

A kind keeps its own slots (``train_slots`` of each) and its own line. Something that finds
every slot taken waits in the line in state ``queued``; it holds no slot and no thread. Each
visitor may have one going and one waiting (the operator is exempt): a visitor's second waits
while their first goes, even where a slot is free (``must_wait``), and more is ``TooManyRuns``
(429 with Retry-After). One client address may have ``per_address`` going or waiting (a client
that keeps no cookie is a new visitor at every request: the address is what bounds it); more is
``TooManyRuns`` too. When a slot frees, the first in line whose owner has nothing going starts
(``pop``). Past the bound a start is ``Busy`` (503 with Retry-After, ``full``).

The estimate (``lay``) is what the ones ahead say: their remaining seconds and the waiting ones'
whole lengths (each kind says how it measures them), laid on the slots in order (``waits``):
whole seconds, never negative, and never a start before its owner's running one ends.

What the line holds is anything with the members of ``Waiting``; the caller keeps the line under
a lock of its own."""

from __future__ import annotations

import heapq
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from attnviz.services.admission import Busy
from attnviz.services.ownership import Caller, Ownership
from attnviz.services.store import RunStore, claimed

log = logging.getLogger(__name__)


class Waiting(Protocol):
    """What the line reads of what waits in it (a training run, a comparison)."""

    id: str
    state: str  # "queued" while in line, "running" once started, then its end
    exempt: bool  # the operator's: no per-visitor or per-address rule binds it
    address: str  # the client address that started it ("": none)
    access: Ownership

    @property
    def finished(self) -> bool: ...


W = TypeVar("W", bound=Waiting)


@dataclass(frozen=True)
class Words:
    """How a kind's refusals name it: the request's ``field`` ("train", "task"), ``one`` of
    it ("run", "comparison"), and what it does while it ``goes`` ("training", "running")."""

    field: str
    one: str
    goes: str


class TooManyRuns(Exception):
    """The caller (a visitor, or a client address) already has as many going as the rule
    allows: 429, naming the rule, with ``retry_after`` (seconds until one of theirs should
    end)."""

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


def waits(ahead: Iterable[float], lengths: Iterable[float], slots: int, *,
          ahead_owners: Iterable[str | None] | None = None,
          owners: Iterable[str | None] | None = None) -> list[float]:  # fmt: skip
    """When each waiting one starts, in seconds from now: the slots free after ``ahead`` (the
    running ones' remaining seconds; a slot not taken is free now), and whenever one frees, the
    first waiting one in order whose owner has none running takes it for its ``lengths``.
    ``ahead_owners``, ``owners``: whose the running and the waiting ones are (None, or not
    given: one the rule does not bind, the operator's)."""
    ahead = [max(0.0, a) for a in ahead]
    lengths = [max(0.0, x) for x in lengths]
    ahead_owners = [None] * len(ahead) if ahead_owners is None else list(ahead_owners)
    owners = [None] * len(lengths) if owners is None else list(owners)
    ends = [(a, i, o) for i, (a, o) in enumerate(zip(ahead, ahead_owners, strict=True))]
    heapq.heapify(ends)
    busy = Counter(o for o in ahead_owners if o is not None)
    idle = max(1, slots) - len(ahead)  # below 0 while more run than there are slots
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
        t, _, owner = heapq.heappop(ends)  # the next to end frees its slot and its owner
        idle += 1
        if owner is not None:
            busy[owner] -= 1
    return out


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st (the page says "next in line" for 1)."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def bound(w: Waiting) -> str | None:
    """The visitor whose rule binds ``w``: its owner, or None (the operator's, or nobody's)."""
    return None if w.exempt or not w.access.owner else w.access.owner


class Line(Generic[W]):
    """The waiting ones, first come first served, at most ``bound`` of them; ``words``: how
    its refusals name what waits."""

    def __init__(self, bound: int, words: Words) -> None:
        self.bound = bound
        self.words = words
        self.waiting: list[W] = []

    def __len__(self) -> int:
        return len(self.waiting)

    @property
    def full(self) -> bool:
        return len(self.waiting) >= self.bound

    def add(self, w: W) -> int:
        """``w`` waits at the end of the line (in state ``queued``); its place."""
        w.state = "queued"
        self.waiting.append(w)
        return len(self.waiting)

    def remove(self, w: W) -> bool:
        """Take ``w`` out of the line (it was cancelled): whether it was in it. The ones behind
        it move up (the kind tells them, ``lay``)."""
        if w in self.waiting:
            self.waiting.remove(w)
            return True
        return False

    def pop(self, running: Iterable[W] = ()) -> W | None:
        """The first in line who may start beside ``running`` (its owner has none of them),
        taken out of the line, or None."""
        busy = {bound(r) for r in running} - {None}
        for i, w in enumerate(self.waiting):
            if bound(w) not in busy:
                return self.waiting.pop(i)
        return None

    def start_free(self, slots: int, running: Callable[[], list[W]], launch: Callable[[W], None],
                   store: RunStore | None, held: dict[str, W]) -> None:  # fmt: skip
        """The first in line who may start take the free ``slots`` (``running()``: the ones
        going now), each started by ``launch`` once ``store`` says it is this server's
        (``claimed``); one another server took over meanwhile leaves ``held`` (the kind's
        table)."""
        while len(now := running()) < slots:
            w = self.pop(now)
            if w is None:
                break
            if claimed(store, w.id):
                launch(w)
                continue
            if held.get(w.id) is w:
                held.pop(w.id)  # another server runs it: it is not this one's
            log.warning("%s %s left the line: another server on the data directory took it "
                        "over", self.words.one, w.id)  # fmt: skip

    def place(self, w: W) -> int | None:
        """``w``'s place in line (1 is next), or None when it is not waiting."""
        return self.waiting.index(w) + 1 if w in self.waiting else None

    def refusal(self, going: Iterable[W], caller: Caller, *, per_address: int,
                retry: Callable[[list[W]], int]) -> TooManyRuns | None:  # fmt: skip
        """Why ``caller`` may not start another now, or None: each visitor may have one going
        and one waiting (a second waits while the first goes, ``must_wait``), and each client
        address ``per_address`` going or waiting; the operator is exempt. ``going``: every one
        the kind holds (the ended ones are passed over); ``retry``: the seconds until one of the
        given ones should end (the 429's Retry-After)."""
        if caller.operator or not caller.visitor:
            return None
        field, one, goes = self.words.field, self.words.one, self.words.goes
        going_now = [r for r in going if not r.finished and not r.exempt]
        mine = [r for r in going_now if bound(r) == caller.visitor]
        queued = sum(r.state == "queued" for r in mine)
        started = len(mine) - queued
        if queued or started >= 2:
            if started and queued:
                what = f"a {one} {goes} and one waiting"
            elif queued:
                what = f"a {one} waiting for a slot"
            else:
                what = f"{started} {one}s {goes}"
            return TooManyRuns(
                f"{field}: you already have {what}; wait for one to finish or cancel it (each "
                f"visitor may have one {one} {goes} and one waiting)",
                retry(mine),
            )
        here = [r for r in going_now if caller.address and r.address == caller.address]
        if len(here) < per_address:
            return None
        after = retry(here)
        return TooManyRuns(
            f"{field}: {len(here)} {one}s are {goes} or waiting from your network address, as "
            f"many as this server takes from one address; try again in {after} s, when one of "
            "them should have ended",
            after,
        )

    @staticmethod
    def must_wait(running: Iterable[W], caller: Caller) -> bool:
        """Whether ``caller``'s new one waits even where a slot is free: one of theirs is
        running (the operator is exempt)."""
        if caller.operator or not caller.visitor:
            return False
        return any(bound(r) == caller.visitor for r in running)

    def busy(self, running: Sequence[W], remaining: Callable[[W], float], verb: str) -> Busy:
        """The 503 of a start that finds the slots and the line full: ``remaining``, a running
        one's seconds left; ``verb``: what this server does with them ("trains")."""
        retry = max(1, math.ceil(min((remaining(r) for r in running), default=1.0)))
        one = self.words.one
        return Busy(
            f"busy: this server {verb} {len(running)} {one}(s) at once and {len(self)} wait in "
            f"line, as many as it keeps waiting; try again in {retry} s",
            retry,
        )

    def lay(self, running: Sequence[W], ahead: Sequence[float], lengths: Sequence[float],
            slots: int) -> list[tuple[W, int, int]]:  # fmt: skip
        """Each waiting one, its place and its estimate in whole seconds: ``ahead``, the
        ``running`` ones' remaining seconds; ``lengths``, the waiting ones' whole lengths (in
        the line's order)."""
        starts = waits(ahead, lengths, slots, ahead_owners=[bound(r) for r in running],
                       owners=[bound(w) for w in self.waiting])  # fmt: skip
        laid = enumerate(zip(self.waiting, starts, strict=True), start=1)
        return [(w, place, max(0, math.ceil(wait))) for place, (w, wait) in laid]


class Ticker:
    """Calls ``tick`` every ``every`` seconds, on a thread of its own (``name``), for as long as
    it answers True; ``wake`` starts it again (one thread at most, none while nobody waits)."""

    def __init__(self, every: float, tick: Callable[[], bool], name: str = "line") -> None:
        self.every, self.tick, self.name = every, tick, name
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def wake(self) -> None:
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self.thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(self.every)
            if not self.tick():
                return
