"""malloc's heap while the server computes tensors (glibc only).

``attnviz serve`` gives every block from 1 MiB up a mapping of its own (``cli._malloc_settings``):
freed, it goes straight back to the system, so that a hosted server's memory stays flat under a
load of large JSON responses. But a forward allocates a few dozen such blocks per layer
(activations, scores, weights) and frees them at once: each was a fresh mapping whose pages the
kernel zeroes on first touch. At 512 tokens of a 30-layer model (SmolLM2-135M's shape) that was
1.8 GB of fresh pages, 470,000 page faults, about a quarter of the first request's CPU time.

So while a text's forward runs (``roomy()``, up to ROOMY_TOKENS tokens), blocks up to 32 MB
come from the heaps and are reused from one layer to the next; after it, the server's setting is
back and every whole free page of the heaps is returned (``malloc_trim``), so that what stays
resident between requests is what the trace cache keeps (the peak while computing is a little
higher: the holes between kept blocks, 80-130 MB there). Responses are encoded after, under the
server's setting. Nothing changes unless the server fixed its thresholds (``fixed``): a library
user's process keeps malloc's own dynamic ones.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# glibc's largest mmap threshold (HEAP_MAX_SIZE / 2 on 64 bits): a larger block (a long text's
# scores) still gets a mapping of its own.
ROOMY_MMAP = 32 * 2**20
ROOMY_TRIM = 2**30  # no heap's top is returned until the computation is done
# Texts up to this many tokens are computed roomy. Past it the forward's blocks are mostly over
# ROOMY_MMAP anyway (mapped as before), its arithmetic dwarfs the page faults, and what the
# heaps would keep between the kept blocks raised the peak: Qwen2.5-0.5B's shape at 2,048
# tokens peaked at 3.9 GB roomy against 3.3 GB without.
ROOMY_TOKENS = 1024

_lock = threading.Lock()
_users = 0
_libc: ctypes.CDLL | None = None
_fixed: tuple[int, int] | None = None  # (mmap threshold, trim threshold) the server set


def fixed(mmap_threshold: int, trim_threshold: int, libc: ctypes.CDLL) -> None:
    """The server fixed malloc's thresholds to these (``mallopt``, through ``libc``): from now
    on ``roomy()`` raises them while it lasts, and puts them back after."""
    global _libc, _fixed
    _libc, _fixed = libc, (mmap_threshold, trim_threshold)


@contextmanager
def roomy(tokens: int = 0, largest: int | None = None) -> Iterator[None]:
    """While it lasts (a forward of ``tokens`` tokens whose largest block is ``largest``
    bytes), large blocks come from malloc's heaps and are reused; on leaving (the last of
    overlapping ones), the server's thresholds are back and the heaps' free pages returned.
    Does nothing unless ``fixed`` was called, nor past ROOMY_TOKENS, nor when no block would be
    mapped anyway (a short text on a small model: the hosted demo's, whose JSON load would
    otherwise meet the raised thresholds on the event loop's thread)."""
    global _users
    libc, thresholds = _libc, _fixed
    small = largest is not None and thresholds is not None and largest < thresholds[0]
    if libc is None or thresholds is None or tokens > ROOMY_TOKENS or small:
        yield
        return
    with _lock:
        _users += 1
        if _users == 1:
            libc.mallopt(M_MMAP_THRESHOLD, ROOMY_MMAP)
            libc.mallopt(M_TRIM_THRESHOLD, ROOMY_TRIM)
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                libc.mallopt(M_MMAP_THRESHOLD, thresholds[0])
                libc.mallopt(M_TRIM_THRESHOLD, thresholds[1])
                libc.malloc_trim(0)


_trimmed = 0.0  # when trim last returned pages (time.monotonic)


def trim(every_s: float = 0.0) -> None:
    """Every whole free page of every heap (each thread's arena too) back to the system, where
    the server fixed malloc's thresholds, if ``every_s`` seconds have passed since the last
    time (about 0.5 ms when there is little to return). free() returns only a heap's top: the
    holes that a trace evicted from the cache leaves among the ones kept (a short text's
    arrays are blocks under the mapping threshold, from the compute thread's arena) stay
    resident until trimmed, and under a mix of short and long texts they added up to 27 MB in
    90 s. A training run's thread kept 46 MB of freed small blocks (a tiny model's autograd
    and optimizer) the same way."""
    global _trimmed
    if _libc is None or _fixed is None:
        return
    now = time.monotonic()
    with _lock:
        if _users == 0 and now - _trimmed >= every_s:  # a roomy forward trims at its own end
            _libc.malloc_trim(0)
            _trimmed = now
