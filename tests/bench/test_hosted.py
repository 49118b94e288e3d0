"""A bounded load on a real server process (loopback only; it stops by itself after a fixed
time): a crowd that never waits gets 200s and 503s with Retry-After, nothing else, no failure,
and the server's resident memory stays within 10% of its value after warm-up (the cache
filled, then the same crowd for a few seconds, then ten seconds of it). Figures for the full-size load come from
``attnviz bench --hosted``; nothing here is timed."""

from __future__ import annotations

import pytest

from attnviz.bench.harness import Server
from attnviz.bench.hosted import Texts, load, rss_mb, server_load, warm_up
from attnviz.pretrained.registry import BUILTIN_NAME
from attnviz.pretrained.tokenize import TextTokenizer

CROWD = 24  # clients at once, none of them waiting on a 503


@pytest.mark.slow
def test_a_crowd_gets_answers_or_503s_and_memory_stays_flat(minilm_dir):
    texts = Texts(TextTokenizer.from_file(minilm_dir / "tokenizer.json"))
    # A short bound on waiting, so that this small crowd meets it; a cache small enough to fill.
    env = {"ATTNVIZ_DEVICE": "cpu", "ATTNVIZ_MAX_WAIT_S": "0.25", "ATTNVIZ_TRACE_CACHE_MB": "32"}
    with Server([], env=env) as server:
        pid = server.proc.pid
        warm_up(server.port, BUILTIN_NAME, texts, clients=8, most_s=600, round_s=1.0)
        state = server_load(server.port)
        assert state["cache_mb"] >= 0.9 * state["cache_max_mb"], "the trace cache did not fill"
        # Then a few seconds of the crowd itself: what its 24 requests in flight at once cost
        # (their buffers, the allocator's arenas) is steady state too, as the bench's soak
        # warms up with its own crowd. What must not grow is what comes after.
        load(server.port, BUILTIN_NAME, texts, CROWD, 3, honour_retry_after=False)
        settled = rss_mb(pid)
        crowd = load(server.port, BUILTIN_NAME, texts, CROWD, 10, pid=pid, honour_retry_after=False)
        assert server.proc.poll() is None
    assert crowd.failures == []
    assert set(crowd.statuses) == {200, 503}, crowd.statuses
    assert crowd.busy_without_retry_after == 0
    assert crowd.statuses[200] >= 20
    top = max(crowd.rss_mb)
    assert top <= 1.10 * settled, f"{settled:.0f} MB after warm-up, then up to {top:.0f} MB"
