"""What a client follows of long work (a training run, a recurrent comparison), as server-sent
events: an append-only log of named events with ids, and the stream that sends it.

A stream sends the whole state first (as its reader may read it: ``GET`` answers the same),
then each event as it is logged, until the last (``end``). Each event has an id (``seq``): a
client that reconnects with ``Last-Event-ID`` goes on after it, without the state; an id the log
does not hold (one of a log before a restart) gets the state again.

A change and the event that reports it are made together (``emit``'s ``apply``, under the log's
lock): a state read between the two can never hold the change without the event counted in its
``seq`` (a stream would then deliver it twice).

Work whose state moves between its events (a trace job's time so far and time left) is also
sent as it is now (``now``) every ``TICK_S`` that nothing else came: ``progress`` with the id of
the last event, so that a reconnection goes on where it left off."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable

POLL_S = 0.1  # how often a stream looks for new events
TICK_S = 0.5  # how often a stream with a ``now`` sends it while no event comes

Event = tuple[int, str, str]  # (seq, name, JSON data)


class EventLog:
    """The events of one piece of long work. ``base``: the seq before its first event (0, or,
    for one put back in line after a restart, past every id its log had before)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []  # (event name, JSON data)
        self.base = 0
        self.lock = threading.Lock()

    @property
    def finished(self) -> bool:
        raise NotImplementedError

    def emit(self, name: str, data: dict | Callable[[], dict],
             apply: Callable[[], None] | None = None) -> None:  # fmt: skip
        """Log an event; ``apply`` makes the change it reports, at the same moment; ``data``, or
        what it answers once the change is made (it must not take the log's lock)."""
        with self.lock:
            if apply is not None:
                apply()
            text = json.dumps(data() if callable(data) else data, separators=(",", ":"))
            self.events.append((name, text))

    @property
    def seq(self) -> int:
        """The id of its last event (0: none yet)."""
        return self.base + len(self.events)

    def holds(self, seq: int) -> bool:
        """Whether ``seq`` is an id of this log (or 0 before it): a stream may go on after it."""
        return self.base <= seq <= self.seq

    def compact(self) -> None:
        """Keep the last event alone (an ended one's end), where each event carries the whole
        state: a stream still behind it gets the end next, one resumed after it nothing more,
        one after an earlier id the state again (no longer held: ``holds``), which is the end's.
        Its memory no longer grows with how long it ran."""
        with self.lock:
            self.base += max(0, len(self.events) - 1)
            del self.events[:-1]

    def events_from(self, seq: int) -> list[Event]:
        """The events after the id ``seq`` (one ``holds``), with their ids."""
        with self.lock:
            start = max(0, seq - self.base)
            return [(self.base + i + 1, n, d)
                    for i, (n, d) in enumerate(self.events[start:], start=start)]  # fmt: skip


async def follow(log: EventLog, after: int | None, state: Callable[[], tuple[int, str]],
                 now: Callable[[], str] | None = None) -> AsyncIterator[Event]:  # fmt: skip
    """(seq, event, JSON data): ``state()`` first (its seq and its JSON, sent as ``state``),
    unless resuming ``after`` an event the log holds; then each event as it comes, and
    ``now()`` as ``progress`` every ``TICK_S`` without one, until the ``end`` (or at once, where
    it had ended before the stream began: its end was sent then)."""
    if after is None or not log.holds(after):  # an id of another log: a restart's, before
        seq, data = state()
        yield seq, "state", data
        after = seq
    sent = time.monotonic()
    while True:
        finished = log.finished  # read first: its end is then in the log already
        items = log.events_from(after)
        for item in items:
            after, sent = item[0], time.monotonic()
            yield item
            if item[1] == "end":  # the last event of every one
                return
        if finished:  # its end was sent before (a resumed stream): nothing more comes
            return
        if now is not None and not items and time.monotonic() - sent >= TICK_S:
            sent = time.monotonic()
            yield after, "progress", now()
        await asyncio.sleep(POLL_S)
