"""``attnviz bench --export`` runs end to end (figures only: nothing about them is asserted but
that they were taken)."""

from attnviz.bench import export as bench
from tests.browser.conftest import CHROMIUM


def test_the_export_bench_builds_opens_and_tabulates_a_file(browser):
    (row,) = bench.run([16], CHROMIUM, opens=1, browser=browser)
    assert row.tokens == 16 and row.bytes > 500_000 and len(row.drawn_s) == 1
    assert row.drawn_s[0] > 0 and row.build_s > 0
    table = bench.table([row])
    assert f"| 16 | {row.bytes:,} bytes |" in table
    assert '"tokens": 16' in bench.as_json([row])
