"""While tensors are computed the server's malloc thresholds are raised, and after it they are
back and the heaps' free pages returned; without the server's setting nothing is touched."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services import heap
from attnviz.services.trace_service import TraceService


class RecordingLibc:
    """Stands in for glibc: records the calls (the test process's own malloc is left alone)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("malloc_trim", pad))
        return 1


RAISED = [
    ("mallopt", heap.M_MMAP_THRESHOLD, heap.ROOMY_MMAP),
    ("mallopt", heap.M_TRIM_THRESHOLD, heap.ROOMY_TRIM),
]
BACK = [
    ("mallopt", heap.M_MMAP_THRESHOLD, 2**20),
    ("mallopt", heap.M_TRIM_THRESHOLD, 3 * 2**20),
    ("malloc_trim", 0),
]


@pytest.fixture
def libc(monkeypatch) -> RecordingLibc:
    fake = RecordingLibc()
    monkeypatch.setattr(heap, "_libc", None)
    monkeypatch.setattr(heap, "_fixed", None)
    heap.fixed(2**20, 3 * 2**20, fake)  # type: ignore[arg-type]
    return fake


def test_nothing_is_touched_without_the_servers_setting(monkeypatch):
    monkeypatch.setattr(heap, "_libc", None)
    monkeypatch.setattr(heap, "_fixed", None)
    with heap.roomy():
        pass  # (no libc to call: an AttributeError on None otherwise)


def test_raised_while_computing_then_back_and_trimmed(libc):
    with heap.roomy():
        assert libc.calls == RAISED
    assert libc.calls == RAISED + BACK


def test_back_after_an_error_too(libc):
    with pytest.raises(ValueError, match="text"), heap.roomy():
        raise ValueError("text: ...")
    assert libc.calls == RAISED + BACK


def test_nothing_raised_when_no_block_would_be_mapped_anyway(libc):
    """A forward whose blocks are all under the server's threshold (1 MiB here) gains nothing."""
    with heap.roomy(128, largest=2**20 - 1):
        assert libc.calls == []
    with heap.roomy(128, largest=2**20):
        assert libc.calls == RAISED
    assert libc.calls == RAISED + BACK


def test_overlapping_computations_put_it_back_once_the_last_ends(libc):
    """Two compute threads (ATTNVIZ_WORKERS=2): the first to finish leaves it raised."""
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with heap.roomy():
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=other)
    t.start()
    assert inside.wait(10)
    with heap.roomy():
        pass
    assert libc.calls == RAISED  # the other one still computes
    leave.set()
    t.join(10)
    assert libc.calls == RAISED + BACK


def test_a_short_texts_forward_is_roomy_and_a_long_ones_not(app, libc, monkeypatch):
    """TraceService: a text's forward under the raised thresholds, its encoding (the compact
    body, JSON text) after they are back; past ROOMY_TOKENS, nothing raised."""
    traces: TraceService = app.state.traces
    model = traces.registry.get("tiny-gpt2")
    assert model is not None
    # (the periodic trim after a response is the next test's: none here)
    monkeypatch.setattr(heap, "_trimmed", float("inf"))
    seen: list[list] = []
    real = model.trace

    def trace(*args: Any) -> Any:
        seen.append(list(libc.calls))
        return real(*args)

    monkeypatch.setattr(model, "trace", trace)
    req = TextTraceRequest(model="tiny-gpt2", text="The heap while a part is computed.")
    traces._respond(req, TraceQuery(fields="thumbs"), True, "")
    assert seen == [[]] and libc.calls == []  # a tiny model's blocks: under 1 MiB, unmapped
    heap.fixed(1024, 3 * 2**20, libc)  # type: ignore[arg-type]  (a threshold they pass)
    raised, back = RAISED, [("mallopt", heap.M_MMAP_THRESHOLD, 1024), *BACK[1:]]
    again = TextTraceRequest(model="tiny-gpt2", text="The heap while a part is computed?")
    body = traces._respond(again, TraceQuery(fields="thumbs"), True, "")
    assert body.content and seen[-1] == raised
    assert libc.calls == raised + back
    n = len(model.tokenizer(again.text).ids)
    monkeypatch.setattr(heap, "ROOMY_TOKENS", n - 1)
    longer = TextTraceRequest(model="tiny-gpt2", text="The heap while a part is computed!")
    assert len(model.tokenizer(longer.text).ids) == n
    traces._respond(longer, TraceQuery(fields="thumbs"), True, "")
    assert seen[-1] == raised + back and libc.calls == raised + back  # nothing more


def test_after_a_response_the_heaps_are_trimmed_once_a_second_at_most(app, libc, monkeypatch):
    """The holes evicted traces leave in the heaps are returned after a response, at most every
    TRIM_EVERY_S: two responses within it trim once, one after it again."""
    from attnviz.services import trace_service

    traces: TraceService = app.state.traces
    clock = [1000.0]
    monkeypatch.setattr(heap.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(heap, "_trimmed", 0.0)
    for k in range(2):
        req = TextTraceRequest(model="tiny-gpt2", text=f"Holes in the heap, {k}.")
        traces._respond(req, TraceQuery(fields="thumbs"), True, "")
    assert libc.calls == [("malloc_trim", 0)]
    clock[0] += trace_service.TRIM_EVERY_S
    traces._respond(req, TraceQuery(fields="thumbs"), True, "")
    assert libc.calls == [("malloc_trim", 0)] * 2
