"""Waiting for a server's state in tests: ``until`` polls until the state is reached, and
fails as a hang (with the last state seen) after a number of polls; it never asserts how long
anything took (timings belong in ``attnviz bench``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

POLLS = 2400  # a hang guard: far past any run the tests start, on a loaded 2-core machine


def until(probe: Callable[[], T], done: Callable[[T], bool], what: str, every: float = 0.05) -> T:
    """``probe()`` again every ``every`` seconds until ``done`` holds of it: that value."""
    value = probe()
    for _ in range(POLLS):
        if done(value):
            return value
        time.sleep(every)
        value = probe()
    pytest.fail(f"{what}: a hang, still {value!r} after {POLLS} looks")
