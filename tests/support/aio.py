"""Coroutines run to their end from a test, whatever loop the test's thread holds."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T], timeout: float = 60) -> T:
    """``asyncio.run(coroutine)`` on a thread of its own: the test's thread may hold a running
    loop already (Playwright's sync API keeps one once a browser test has run in this process,
    whatever the order the tests came in)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result(timeout=timeout)
