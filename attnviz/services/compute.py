"""One thread for every tensor operation of the server, one computation at a time.

torch spreads one operation over every core already; several at once only fight over them.
And its OpenMP thread pools belong to the thread that starts them: a second thread doing tensor
work (loading a model, encoding a response) leaves a pool behind that competes with the
computing one. Measured on a 2-core machine, a 128-token forward took 48 ms on a thread other
than the one that loaded the model, 28 ms on the same one. So the models are loaded, traces
computed and responses encoded here, and request threads only wait.

A host with a GPU (or many cores) may run more at once: ``configure(workers)`` before the first
use (the setting ``ATTNVIZ_WORKERS``). Which request runs when is decided by ``admission.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_PREFIX = "attnviz-compute"
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=_PREFIX)
_workers = 1


def configure(workers: int) -> None:
    """Run up to ``workers`` computations at once from now on."""
    global _executor, _workers
    if workers != _workers:
        old = _executor
        _executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=_PREFIX)
        _workers = workers
        old.shutdown(wait=False)


def submit(fn: Callable[[], R]) -> Future[R]:
    """Start ``fn()`` on a compute thread."""
    return _executor.submit(fn)


def run(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)`` on the compute thread (directly when already on it); its
    exception, if any, is raised here."""
    if threading.current_thread().name.startswith(_PREFIX):
        return fn(*args, **kwargs)
    return _executor.submit(fn, *args, **kwargs).result()
