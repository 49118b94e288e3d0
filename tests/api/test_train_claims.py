"""Two real servers (``attnviz serve``) on one data directory, without ATTNVIZ_REPLICA, and a
SIGKILL of one mid-run: one writer per run. The second server neither interrupts the first's
training run nor takes its waiting runs (it warns that another server shares the directory);
the first, killed and started again, finds its training run interrupted and trains its waiting
runs, each once; the second's finished run is kept once."""

from __future__ import annotations

from contextlib import ExitStack

import httpx
import pytest

from attnviz.services.store import RunStore
from tests.api.test_train import wait
from tests.api.test_train_queue import LONG, QUICK, post
from tests.services.test_store import serving
from tests.support.waits import until


def holder_pid(data, run_id: str) -> int:
    row = RunStore(data).row(run_id)
    assert row is not None and row.claimer
    return int(row.claimer.split(":")[1])


@pytest.mark.slow
def test_two_servers_on_one_directory_train_each_run_once_across_a_sigkill(tmp_path):
    data = tmp_path / "data"
    clients = [httpx.Client(timeout=60) for _ in range(4)]
    a, b, c, d = clients  # a, b, c: visitors of the first server; d: of the second
    slower = {**QUICK, "opt": {"steps": 300}}
    try:
        with ExitStack() as stack:
            url, first = stack.enter_context(serving(data, tmp_path / "first.log"))
            for x in (a, b, c):
                x.base_url = httpx.URL(url)
            long = post(a, LONG).json()["id"]
            until(lambda: a.get(f"/api/train/{long}").json()["variants"][0]["checkpoints"],
                  bool, "the long run's first checkpoint")  # fmt: skip
            bq, cq = post(b, slower).json()["id"], post(c, QUICK).json()["id"]
            assert c.get(f"/api/train/{cq}").json()["place"] == 2

            second_log = tmp_path / "second.log"
            url2, second = stack.enter_context(serving(data, second_log))
            d.base_url = httpx.URL(url2)
            # The second leaves the first's runs to it: not interrupted, not taken, and says so.
            assert "another attnviz server" in second_log.read_text()
            assert [d.get(f"/api/train/{i}").status_code for i in (long, bq, cq)] == [404] * 3
            assert a.get(f"/api/train/{long}").json()["state"] == "running"
            assert RunStore(data).row(long).state == "running"  # type: ignore[union-attr]
            assert {holder_pid(data, i) for i in (long, bq, cq)} == {first.pid}
            # The second trains a run of its own to its end.
            finished = post(d, QUICK).json()["id"]
            before = wait(d, finished)
            assert before["state"] == "done" and holder_pid(data, finished) == second.pid

            first.kill()  # SIGKILL, mid-run
            first.wait(timeout=10)
            url3, again = stack.enter_context(serving(data, tmp_path / "again.log"))
            for x in (a, b, c):
                x.base_url = httpx.URL(url3)
            back = a.get(f"/api/train/{long}").json()
            assert back["state"] == "interrupted" and "interrupted at step" in back["reason"]
            # The waiting runs are the restarted server's: the second never holds them.
            for client, i in ((b, bq), (c, cq)):
                told = d.get(f"/api/train/{i}")
                assert told.status_code == 404 or told.json()["state"] == "done", told.text
                done = wait(client, i)
                assert done["state"] == "done" and done["yours"]
                steps = done["variants"][0]["history"]["step"]
                assert steps == list(range(1, len(steps) + 1))  # one run of it, in order
                assert holder_pid(data, i) == again.pid
            # Each run once in the index, each in its state; the finished one kept as it was.
            rows = [r for r in RunStore(data).rows("run") if r.removed is None]
            assert sorted(r.id for r in rows) == sorted({long, bq, cq, finished})
            assert {r.id: r.state for r in rows} == {
                long: "interrupted", bq: "done", cq: "done", finished: "done"}  # fmt: skip
            assert d.get(f"/api/train/{finished}").json() == before
            d.base_url = httpx.URL(url3)
            assert [r["id"] for r in d.get("/api/train").json()["runs"]] == [finished]
            assert second.poll() is None  # the second went on throughout
    finally:
        for x in clients:
            x.close()
