"""The JSON body sent while it is written (``trace_service.Stream``): the writer, on another
thread, wakes the event loop only when the response waits for a piece (and always at its end),
and no piece is lost, reordered or left unsent however the two interleave."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest

import attnviz.services.trace_service as service
from tests.support.aio import run


async def _received(pieces: list[bytes], pause: float, seed: int) -> list[bytes]:
    stream = service.Stream(asyncio.get_running_loop())
    rng = random.Random(seed)

    def write() -> None:
        for piece in pieces:
            if rng.random() < pause:
                time.sleep(rng.random() / 2000)  # up to 0.5 ms: the reader catches up, waits
            stream.write(piece)
        stream.finish()

    writer = threading.Thread(target=write)
    writer.start()
    got = []
    async for piece in stream:
        got.append(piece)
        if rng.random() < pause:
            await asyncio.sleep(rng.random() / 2000)  # the writer runs ahead
    writer.join()
    return got


@pytest.mark.slow
@pytest.mark.parametrize("pause", [0.0, 0.3, 1.0])
def test_every_piece_arrives_in_order_however_writer_and_reader_interleave(pause):
    pieces = [bytes([i % 256]) * (1 + i % 7) for i in range(200)]
    for seed in range(5):
        got = run(asyncio.wait_for(_received(pieces, pause, seed), timeout=20))
        assert got == pieces, f"seed {seed}"


def test_started_is_done_once_stream_after_bytes_are_written(monkeypatch):
    monkeypatch.setattr(service, "STREAM_AFTER", 10)

    async def main() -> tuple[bool, bool]:
        stream = service.Stream(asyncio.get_running_loop())
        stream.write(b"12345")
        await asyncio.sleep(0.01)
        before = stream.started.done()
        threading.Thread(target=stream.write, args=(b"67890",)).start()
        await asyncio.wait_for(stream.started, timeout=10)
        return before, stream.started.done()

    assert run(main()) == (False, True)
