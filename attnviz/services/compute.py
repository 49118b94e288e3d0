"""One thread for every tensor operation of the server, one computation at a time.

torch spreads one operation over every core already; several at once only fight over them.
And its OpenMP thread pools belong to the thread that starts them: a second thread doing tensor
work (loading a model, encoding a response) leaves a pool behind that competes with the
computing one. Measured on a 2-core machine, a 128-token forward took 48 ms on a thread other
than the one that loaded the model, 28 ms on the same one. So the models are loaded, traces
computed and responses encoded here, and request threads only wait.

Training runs compute on threads of their own, each on one core (``training/trainer.py``), and
while they do (``beside()``) the compute thread takes that many fewer threads: its OpenMP
threads wait for each other by spinning, and with one of them short of a core a forward took
ten times as long (a six-word trace: 130 ms instead of 12 ms while a run trained on the other
core, 2-core machine) and slowed the run as well. (torch's thread count is per thread: each
computation here sets the compute thread's own before it starts.)

A host with a GPU (or many cores) may run more at once: ``configure(workers)`` before the first
use (the setting ``ATTNVIZ_WORKERS``). Which request runs when is decided by ``admission.py``.

A remote model's computation (NDIF's: ``pretrained/ndif``) mostly waits: for the deployment's
queue, for the model to load there, for the answer to come back, seconds to minutes, and a
local trace behind it would wait as long. So it runs on threads of its own (``submit_remote``,
``ATTNVIZ_REMOTE_WORKERS`` of them), each with one torch thread for the little arithmetic it
does here (a head's weights from the q and k NDIF sent, the encoding): they never hold the
compute thread, and never spread an OpenMP pool over its cores.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

import torch

from attnviz.settings import REMOTE_WORKERS

P = ParamSpec("P")
R = TypeVar("R")

_PREFIX = "attnviz-compute"  # every computing thread's name starts so: ``run`` runs inline
_REMOTE_PREFIX = f"{_PREFIX}-remote"
_threads = torch.get_num_threads()  # a compute thread's own count (torch's default: the cores)
_beside = 0  # threads computing beside the compute threads, each on a core (training runs)
_beside_lock = threading.Lock()


@contextmanager
def beside() -> Iterator[None]:
    """The calling thread computes on a core of its own for the block's length (a training
    run): computations started meanwhile take one thread fewer (one at least)."""
    global _beside
    with _beside_lock:
        _beside += 1
    try:
        yield
    finally:
        with _beside_lock:
            _beside -= 1


def _sized(fn: Callable[[], R], one: bool = False) -> Callable[[], R]:
    """``fn`` on the calling thread's torch threads: its share of the cores, or ``one``."""

    def call() -> R:
        want = 1 if one else max(1, _threads - _beside)
        if torch.get_num_threads() != want:
            torch.set_num_threads(want)
        return fn()

    return call


_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=_PREFIX)
_workers = 1
_remote = ThreadPoolExecutor(max_workers=REMOTE_WORKERS, thread_name_prefix=_REMOTE_PREFIX)
_remote_workers = REMOTE_WORKERS


def configure(workers: int, remote_workers: int = REMOTE_WORKERS) -> None:
    """Run up to ``workers`` computations at once from now on, and up to ``remote_workers``
    remote models' computations beside them."""
    global _executor, _workers, _remote, _remote_workers
    if workers != _workers:
        old = _executor
        _executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=_PREFIX)
        _workers = workers
        old.shutdown(wait=False)
    if remote_workers != _remote_workers:
        old = _remote
        _remote = ThreadPoolExecutor(max_workers=remote_workers, thread_name_prefix=_REMOTE_PREFIX)
        _remote_workers = remote_workers
        old.shutdown(wait=False)


def submit(fn: Callable[[], R]) -> Future[R]:
    """Start ``fn()`` on a compute thread."""
    return _executor.submit(_sized(fn))


def submit_remote(fn: Callable[[], R]) -> Future[R]:
    """Start ``fn()`` (a remote model's computation, which mostly waits for its deployment) on
    a thread of the remote ones, with one torch thread."""
    return _remote.submit(_sized(fn, one=True))


def run(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)`` on the compute thread (directly when already on it); its
    exception, if any, is raised here."""
    if threading.current_thread().name.startswith(_PREFIX):
        return fn(*args, **kwargs)
    return _executor.submit(_sized(lambda: fn(*args, **kwargs))).result()
