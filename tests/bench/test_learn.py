"""``attnviz bench --learn`` walks the steps in Chromium and prints its figures (the test runs
it once over the first three steps, a Train step and two toy ones, without the comparisons;
every step's opening is tests/browser/test_learn.py's; the figures are never asserted against a
target)."""

from __future__ import annotations

import json

from attnviz.bench import learn as bench
from attnviz.learn.steps import STEPS
from tests.browser.conftest import CHROMIUM


def test_the_learn_bench_opens_the_steps_and_reports_them(browser):
    rows, done = figures = bench.run(CHROMIUM, opens=1, comparisons=False, browser=browser,
                                     first=3)  # fmt: skip
    assert [(r.n, r.id) for r in rows] == [(i + 1, s.id) for i, s in enumerate(STEPS[:3])]
    assert [r.lab for r in rows] == ["train", "toy", "toy"]
    assert all(len(r.link_s) == 1 and r.link_s[0] > 0 for r in rows)
    assert rows[0].next_s is None and all(r.next_s and r.next_s > 0 for r in rows[1:])
    assert done == []
    table = bench.table(figures)
    assert all(f"| {r.n} {r.id} | {r.lab} |" in table for r in rows)
    assert json.loads(bench.as_json(figures))["steps"][2]["id"] == STEPS[2].id
