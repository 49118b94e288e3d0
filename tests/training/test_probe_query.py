"""Where each task's probe is read from (issue 28, 5.13): its ``query``, the token a page opens
the trained model on, is one whose row shows what the task teaches, never a causal model's first
token (whose row is all its own), and the run's state carries it for the page."""

from __future__ import annotations

import pytest

from attnviz.training.tasks import CharLM, Induction, Reverse, charlm_query


@pytest.mark.parametrize("task", [Induction(), Induction(min_len=4, max_len=6)])
def test_inductions_probe_is_read_from_the_repeats_first_letter(task):
    p = task.probe()
    n = (len(p.ids) + 1) // 2  # a string of n letters, then its repeat less the last letter
    assert p.ids[:n - 1] == p.ids[n:2 * n - 1]  # fmt: skip
    assert p.query == n
    # Its row can reach back to the letter after its earlier occurrence (token 1), and the
    # letter it predicts is known: it is the repeat's second, the string's second.
    assert p.labels[p.query] == p.labels[0]
    assert f"tokens {n + 1} to" in p.look  # the look names the same token, 1-based


def test_a_charlm_probe_is_read_inside_its_second_word():
    task = CharLM()
    p = task.probe()
    text = task.vocab.decode(p.ids)
    assert 0 < p.query < len(p.ids)
    assert text[p.query - 2] == " " and text[p.query - 1] != " "
    assert charlm_query("abc") == 1  # no second word: the middle
    assert charlm_query("ab c") == 2  # a second word too short for a second letter: the middle


def test_a_reversers_probe_is_read_from_the_first_letter_written():
    p = Reverse().probe()
    assert p.query == 0 and p.source is not None
