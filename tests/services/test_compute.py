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
