"""What a client follows of long work (``services.events``), without a server: the state first,
then each event in order with rising ids, a resumed stream after an id, the state again for an
id the log does not hold, an ended one's stream its state alone, and, for work whose state
moves between events, its state now every ``TICK_S`` without one, with the last event's id; an
ended log of whole states keeps its end alone."""

from __future__ import annotations

import json
import threading

import pytest

from attnviz.services import events
from attnviz.services.events import EventLog, follow
from tests.support import aio


class Work(EventLog):
    def __init__(self) -> None:
        super().__init__()
        self.step = 0
        self.over = False

    @property
    def finished(self) -> bool:
        return self.over

    def state(self) -> tuple[int, str]:
        seq = self.seq  # read first, as the services do
        return seq, json.dumps({"step": self.step})

    def now(self) -> str:
        return json.dumps({"step": self.step})

    def advance(self) -> None:
        self.emit("progress", lambda: {"step": self.step}, apply=self._next)

    def _next(self) -> None:
        self.step += 1

    def end(self) -> None:
        self.emit("end", {"step": self.step}, apply=lambda: setattr(self, "over", True))


def collect(work: Work, after: int | None = None, now: bool = False) -> list[tuple[int, str, dict]]:
    async def run() -> list[tuple[int, str, dict]]:
        out = []
        async for seq, name, data in follow(work, after, work.state, work.now if now else None):
            out.append((seq, name, json.loads(data)))
        return out

    return aio.run(run())  # whatever loop this thread holds (a browser test's, before)


def test_the_state_then_each_event_then_the_end_and_a_resumed_stream_goes_on_after_an_id():
    work = Work()
    work.advance()  # seq 1, before the stream: in its state

    def later() -> None:
        for _ in range(3):
            work.advance()
        work.end()

    threading.Timer(0.3, later).start()
    seen = collect(work)
    assert seen == [
        (1, "state", {"step": 1}),
        (2, "progress", {"step": 2}),
        (3, "progress", {"step": 3}),
        (4, "progress", {"step": 4}),
        (5, "end", {"step": 4}),
    ]
    assert collect(work, after=3) == seen[3:]  # after an id it holds: the events after it
    # An id of another log (before a restart), or none: the state again; ended: nothing more.
    assert collect(work, after=99) == [(5, "state", {"step": 4})]
    assert collect(work) == [(5, "state", {"step": 4})]


def test_work_whose_state_moves_between_events_is_sent_as_it_is_now_with_the_last_id(
    monkeypatch,
):
    monkeypatch.setattr(events, "TICK_S", 0.1)
    work = Work()
    threading.Timer(0.55, work.end).start()
    seen = collect(work, now=True)
    assert seen[0] == (0, "state", {"step": 0}) and seen[-1] == (1, "end", {"step": 0})
    ticks = seen[1:-1]
    assert len(ticks) >= 3 and {t[:2] for t in ticks} == {(0, "progress")}
    # Without ``now``, none.
    quiet = Work()
    threading.Timer(0.35, quiet.end).start()
    assert [name for _, name, _ in collect(quiet)] == ["state", "end"]


def test_a_change_and_its_event_are_made_together():
    """A state read while an event is logged never holds the change without the event: its seq
    read first, a stream from it sends the event again (the same whole state), never loses it."""
    work = Work()
    seq, data = work.state()
    work.advance()
    assert (seq, json.loads(data)) == (0, {"step": 0})
    assert work.events_from(seq) == [
        (1, "progress", json.dumps({"step": 1}, separators=(",", ":")))
    ]
    with pytest.raises(NotImplementedError):
        _ = EventLog().finished


def test_an_ended_log_of_whole_states_keeps_its_end_alone():
    work = Work()
    for _ in range(4):
        work.advance()
    work.end()
    end = work.events_from(4)
    work.compact()
    assert (work.base, work.seq) == (4, 5) and work.events_from(4) == end
    assert not work.holds(3) and work.holds(4) and work.holds(5)
    # After the event before the end: the end; after an earlier one: the state, the end's.
    assert collect(work, after=4) == [(5, "end", {"step": 4})]
    assert collect(work, after=2) == [(5, "state", {"step": 4})]
