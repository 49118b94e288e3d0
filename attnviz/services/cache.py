"""A short-lived cache of the last traces, so that a page's later requests (one head, one layer,
the trajectories) read the forward it already paid for.

Keyed by a hash of the input (the model and the text, or the toy table and its config); bounded
in bytes and in age. A miss recomputes, it never errors. Concurrent requests for the same input
wait for the one forward that is running instead of starting their own.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


def input_key(kind: str, canonical_json: str) -> str:
    """The cache key of an input: its kind and a sha256 of its canonical JSON."""
    return f"{kind}:{hashlib.sha256(canonical_json.encode()).hexdigest()}"


@dataclass
class _Entry(Generic[T]):
    value: T
    size: int
    expires: float


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    joined: int = 0  # waited for a forward another request was running
    evicted: int = 0


# A value over the whole budget but at most this many times it is kept, alone.
LONE_FACTOR = 4


class TraceCache(Generic[T]):
    """Least-recently-used entries, at most ``max_bytes`` in all and ``ttl_s`` seconds old; or
    one entry alone, of at most ``LONE_FACTOR`` x ``max_bytes``.

    ``max_bytes = 0`` keeps nothing (every request computes; concurrent ones still share).
    """

    def __init__(
        self,
        max_bytes: int,
        ttl_s: float,
        size_of: Callable[[T], int],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self.size_of = size_of
        self.clock = clock
        self.stats = CacheStats()
        self._entries: OrderedDict[str, _Entry[T]] = OrderedDict()
        self._running: dict[str, Future[T]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def holds(self, key: str) -> bool:
        """Whether ``key`` is kept and fresh, or being computed (a request for it is cheap)."""
        with self._lock:
            entry = self._entries.get(key)
            return key in self._running or (entry is not None and entry.expires > self.clock())

    def get_or_compute(self, key: str, compute: Callable[[], T]) -> tuple[T, bool]:
        """The value for ``key`` and whether it was already there (or being computed)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.expires > self.clock():
                self._entries.move_to_end(key)
                self.stats.hits += 1
                return entry.value, True
            if entry is not None:
                self._drop(key)
            running = self._running.get(key)
            if running is None:
                future: Future[T] = Future()
                self._running[key] = future
            else:
                self.stats.joined += 1
        if running is not None:
            return running.result(), True
        try:
            value = compute()
        except BaseException as exc:
            future.set_exception(exc)
            with self._lock:
                del self._running[key]
            raise
        with self._lock:
            del self._running[key]
            self.stats.misses += 1
            self._insert(key, value)
        future.set_result(value)
        return value, False

    def _insert(self, key: str, value: T) -> None:
        size = self.size_of(value)
        if size > self.max_bytes * LONE_FACTOR:
            return  # far larger than the whole cache: served, not kept
        if size > self.max_bytes:
            # A long text's trace (Llama 3.2 1B's at 2,048 tokens: 0.3 GB of hidden states) is
            # kept alone, so that the page's next parts of it do not run the model again.
            for old in list(self._entries):
                self._drop(old)
                self.stats.evicted += 1
        self._entries[key] = _Entry(value, size, self.clock() + self.ttl_s)
        self._bytes += size
        now = self.clock()
        for old in [k for k, e in self._entries.items() if e.expires <= now]:
            self._drop(old)
        while self._bytes > self.max_bytes and len(self._entries) > 1:  # a lone one stays
            oldest = next(iter(self._entries))
            self._drop(oldest)
            self.stats.evicted += 1
        log.debug("trace cache: %d entries, %.1f MB", len(self._entries), self._bytes / 1e6)

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key)
        self._bytes -= entry.size
