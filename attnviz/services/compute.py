"""One thread for every tensor operation of the server, one computation at a time.

torch spreads one operation over every core already; several at once only fight over them.
And its OpenMP thread pools belong to the thread that starts them: a second thread doing tensor
work (loading a model, encoding a response) leaves a pool behind that competes with the
computing one. Measured on a 2-core machine, a 128-token forward took 48 ms on a thread other
than the one that loaded the model, 28 ms on the same one. So the models are loaded, traces
computed and responses encoded here, and request threads only wait.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_PREFIX = "attnviz-compute"
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=_PREFIX)


def run(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)`` on the compute thread (directly when already on it); its
    exception, if any, is raised here."""
    if threading.current_thread().name.startswith(_PREFIX):
        return fn(*args, **kwargs)
    return _executor.submit(fn, *args, **kwargs).result()


async def run_async(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)`` on the compute thread, awaited: requests are queued in the order
    they arrive (a page's parts, asked for in the order it draws them, are served so)."""
    return await asyncio.wrap_future(_executor.submit(fn, *args, **kwargs))
