"""How far a long computation has got, told to whoever asked (a trace job, ``services.jobs``).

A computation that has a listener (``reporting``) says, after each layer of each of its passes,
``(stage, done, total)``: ``("forward", 3, 30)`` once block 3 of 30 has run, then
``("thumbnails", 3, 30)`` as each layer's thumbnails are made. The listener may raise to stop
the computation there (the job was cancelled or ran past its limit): the exception goes up
through the forward like any other, and every hook is removed on the way.

The listener is the calling thread's own (the compute thread's, for the one job computing on
it), so that nothing is said to anyone else; without one, nothing is registered and the fast
path costs one attribute read."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Listener = Callable[[str, int, int], None]  # (stage, done, total)
Sayer = Callable[[str], None]  # a remote deployment's status, in words

_local = threading.local()


def listener() -> Listener | None:
    """The calling thread's listener, or None."""
    return getattr(_local, "listener", None)


@contextmanager
def reporting(listen: Listener, hear: Sayer | None = None) -> Iterator[None]:
    """``listen`` hears this thread's progress for the block's length, and ``hear`` what a
    remote deployment says of it (``say``)."""
    before, said = listener(), getattr(_local, "hear", None)
    _local.listener, _local.hear = listen, hear
    try:
        yield
    finally:
        _local.listener, _local.hear = before, said


def say(words: str) -> None:
    """Tell this thread's listener, if any, where a remote deployment has got (NDIF's queue,
    loading the model, running it), in words the page shows."""
    hear = getattr(_local, "hear", None)
    if hear is not None:
        hear(words)


def report(stage: str, done: int, total: int) -> None:
    """Tell this thread's listener, if any, that ``done`` of ``total`` of ``stage`` are done."""
    listen = listener()
    if listen is not None:
        listen(stage, done, total)
