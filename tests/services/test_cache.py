"""The trace cache: bounded in bytes and age, least recently used out first, one computation per
input however many ask at once, and failures never kept."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from attnviz.services.cache import TraceCache, input_key


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make(max_bytes=100, ttl=60.0, clock=None) -> TraceCache:
    return TraceCache(max_bytes, ttl, size_of=len, clock=clock or time.monotonic)


def test_second_ask_is_a_hit_and_computes_nothing():
    cache = make()
    calls = []
    value, hit = cache.get_or_compute("a", lambda: calls.append(1) or "xxxx")
    assert (value, hit) == ("xxxx", False)
    value, hit = cache.get_or_compute("a", lambda: calls.append(1) or "yyyy")
    assert (value, hit) == ("xxxx", True)
    assert calls == [1] and (cache.stats.hits, cache.stats.misses) == (1, 1)


def test_bytes_bound_evicts_the_least_recently_used():
    cache = make(max_bytes=10)
    cache.get_or_compute("a", lambda: "aaaa")
    cache.get_or_compute("b", lambda: "bbbb")
    cache.get_or_compute("a", lambda: "!")  # a is now the most recent
    cache.get_or_compute("c", lambda: "cccc")  # 12 bytes: b goes
    assert cache.bytes == 8 and len(cache) == 2
    assert cache.get_or_compute("a", lambda: "new")[1] is True
    assert cache.get_or_compute("b", lambda: "BBBB") == ("BBBB", False)  # recomputed
    assert cache.stats.evicted >= 1


def test_a_value_larger_than_the_cache_is_kept_alone_up_to_four_times_it():
    cache = make(max_bytes=3)
    assert cache.get_or_compute("a", lambda: "abc") == ("abc", False)
    assert cache.get_or_compute("b", lambda: "toolong") == ("toolong", False)  # 7 <= 4 x 3
    assert len(cache) == 1 and cache.bytes == 7 and cache.holds("b") and not cache.holds("a")
    assert cache.get_or_compute("b", lambda: "other") == ("toolong", True)
    assert cache.get_or_compute("c", lambda: "c") == ("c", False)  # a small one: the lone goes
    assert len(cache) == 1 and cache.holds("c")


def test_a_value_far_larger_than_the_cache_is_served_not_kept():
    cache = make(max_bytes=3)
    assert cache.get_or_compute("a", lambda: "much too long") == ("much too long", False)
    assert len(cache) == 0 and cache.bytes == 0
    zero = make(max_bytes=0)
    assert zero.get_or_compute("a", lambda: "x") == ("x", False)
    assert zero.get_or_compute("a", lambda: "y") == ("y", False)


def test_entries_expire():
    clock = Clock()
    cache = make(ttl=10, clock=clock)
    cache.get_or_compute("a", lambda: "old")
    clock.now = 9.9
    assert cache.get_or_compute("a", lambda: "new") == ("old", True)
    clock.now = 10.0
    assert cache.get_or_compute("a", lambda: "new") == ("new", False)
    assert cache.bytes == 3


def test_concurrent_asks_for_one_input_compute_once():
    cache = make()
    started = threading.Event()
    release = threading.Event()
    calls = []

    def slow():
        calls.append(1)
        started.set()
        assert release.wait(5)
        return "done"

    with ThreadPoolExecutor(8) as pool:
        first = pool.submit(cache.get_or_compute, "k", slow)
        assert started.wait(5)
        others = [pool.submit(cache.get_or_compute, "k", slow) for _ in range(7)]
        time.sleep(0.05)
        release.set()
        results = [first.result(5), *(f.result(5) for f in others)]
    assert calls == [1]
    assert results[0] == ("done", False) and all(r == ("done", True) for r in results[1:])
    assert cache.stats.joined == 7


def test_a_failure_reaches_every_waiter_and_is_not_kept():
    cache = make()
    started = threading.Event()
    release = threading.Event()

    def fails():
        started.set()
        assert release.wait(5)
        raise ValueError("text: no")

    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(cache.get_or_compute, "k", fails)
        assert started.wait(5)
        second = pool.submit(cache.get_or_compute, "k", fails)
        time.sleep(0.05)
        release.set()
        for f in (first, second):
            with pytest.raises(ValueError, match="text: no"):
                f.result(5)
    assert len(cache) == 0
    assert cache.get_or_compute("k", lambda: "fine") == ("fine", False)


def test_keys_are_the_kind_and_a_hash_of_the_input():
    a = input_key("text", '{"model":"m","text":"a"}')
    assert a == input_key("text", '{"model":"m","text":"a"}')
    assert a != input_key("text", '{"model":"m","text":"b"}')
    assert a != input_key("toy", '{"model":"m","text":"a"}')
    assert a.startswith("text:") and len(a) == len("text:") + 64
