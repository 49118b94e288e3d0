"""The compute thread: one computation at a time, on its own torch threads, one fewer for each
training run that computes beside it."""

from __future__ import annotations

import threading

import pytest
import torch

from attnviz.services import compute


def test_a_training_run_beside_it_takes_one_of_its_threads_and_gives_it_back():
    own = compute.run(torch.get_num_threads)
    assert own == compute._threads
    with compute.beside():
        assert compute.run(torch.get_num_threads) == max(1, own - 1)
        with compute.beside():
            assert compute.run(torch.get_num_threads) == max(1, own - 2)
        # Another thread's count is its own: the caller's is untouched.
        seen: list[int] = []
        t = threading.Thread(target=lambda: seen.append(compute.run(torch.get_num_threads)))
        t.start()
        t.join()
        assert seen == [max(1, own - 1)]
    assert compute.run(torch.get_num_threads) == own


def test_its_exceptions_are_raised_to_the_caller():
    def fail():
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        compute.run(fail)


def test_a_remote_models_computation_runs_beside_the_compute_thread():
    """A remote model's (NDIF's) waits run on threads of their own, with one torch thread each:
    one computes (waits) while the compute thread is held, and a ``run`` inside it stays on its
    own thread instead of queueing for the compute thread."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        held.set()
        release.wait(30)

    busy = compute.submit(hold)  # the compute thread, taken
    assert held.wait(30)
    try:
        seen = compute.submit_remote(
            lambda: (
                threading.current_thread().name,
                torch.get_num_threads(),
                compute.run(lambda: threading.current_thread().name),
            )
        ).result(timeout=30)
    finally:
        release.set()
    busy.result(timeout=30)
    name, threads, inner = seen
    assert name.startswith("attnviz-compute-remote") and inner == name and threads == 1
