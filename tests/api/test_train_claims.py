"""Two real servers (``attnviz serve``) on one data directory, without ATTNVIZ_REPLICA, and a
SIGKILL of one mid-run: one writer per run. The second server neither interrupts the first's
training run nor takes its waiting runs while the first is there: it answers their owners that
another server holds them (503, in words, with Retry-After) and warns that another server
shares the directory. Once the first is killed, the second takes its runs over without waiting
for a restart, as a restart would: the training run interrupted, its folder final (only the
checkpoint its run.json names) and counted as ``du`` counts it; the waiting runs trained there,
each once; the second's own finished run kept once."""

from __future__ import annotations

import json
import threading
from contextlib import ExitStack

import httpx
import pytest

import attnviz.services.training.service as service
from attnviz.services.store import HOST, SCHEMA_VERSION, RunStore
from tests.api.test_train import wait
from tests.api.test_train_queue import LONG, QUICK, make_app, post, training
from tests.services.test_disk_budget import du
from tests.services.test_store import serving
from tests.support.servers import served
from tests.support.waits import until

LEASE = {"ATTNVIZ_DATA_LEASE_S": "2"}  # a survivor looks for a stopped holder every 2/3 s


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
            url, first = stack.enter_context(serving(data, tmp_path / "first.log", **LEASE))
            for x in (a, b, c):
                x.base_url = httpx.URL(url)
            long = post(a, {**LONG, "checkpoints": 50}).json()["id"]  # its weights often
            until(lambda: a.get(f"/api/train/{long}").json()["variants"][0]["checkpoints"],
                  bool, "the long run's first checkpoint")  # fmt: skip
            bq, cq = post(b, slower).json()["id"], post(c, QUICK).json()["id"]
            assert c.get(f"/api/train/{cq}").json()["place"] == 2

            second_log = tmp_path / "second.log"
            url2, second = stack.enter_context(serving(data, second_log, **LEASE))
            d.base_url = httpx.URL(url2)
            # The second leaves the first's runs to it: not interrupted, not taken, and says so,
            # to the log and to their owners (the run is there: not a 404).
            assert "another attnviz server" in second_log.read_text()
            for x, i in ((a, long), (b, bq), (c, cq)):
                x.base_url = httpx.URL(url2)
                told = x.get(f"/api/train/{i}")
                x.base_url = httpx.URL(url)
                assert told.status_code == 503, told.text
                assert told.json()["message"].startswith("run: another server on this data ")
                assert i not in told.json()["message"]  # words, not its id
                assert 1 <= int(told.headers["Retry-After"]) <= 2
            assert a.get(f"/api/train/{long}").json()["state"] == "running"
            assert RunStore(data).row(long).state == "running"  # type: ignore[union-attr]
            assert {holder_pid(data, i) for i in (long, bq, cq)} == {first.pid}
            # The second trains a run of its own to its end.
            finished = post(d, QUICK).json()["id"]
            before = wait(d, finished)
            assert before["state"] == "done" and holder_pid(data, finished) == second.pid

            folder = data / "runs" / long
            until(lambda: list(folder.glob("checkpoint-*")), lambda f: len(f) >= 2,
                  "the long run's weights at two checkpoints")  # fmt: skip
            first.kill()  # SIGKILL, mid-run; nobody asks the second until it has taken over
            first.wait(timeout=10)
            until(lambda: RunStore(data).row(long), lambda r: r.state == "interrupted",
                  "the killed server's training run interrupted by the survivor")  # fmt: skip
            for x in (a, b, c):
                x.base_url = httpx.URL(url2)
            back = a.get(f"/api/train/{long}").json()
            assert back["state"] == "interrupted" and "interrupted at step" in back["reason"]
            assert back["yours"] and "its model as of step" in back["reason"]
            # Its folder is final: the checkpoint run.json names, and counted as du counts it.
            named = json.loads((folder / "run.json").read_text())["variants"][0]["weights"]
            assert [f.name for f in folder.glob("checkpoint-*")] == [named["folder"]]
            assert RunStore(data).row(long).bytes == du(folder) > 0  # type: ignore[union-attr]
            # The waiting runs are the survivor's now, each trained once.
            for client, i in ((b, bq), (c, cq)):
                done = wait(client, i)
                assert done["state"] == "done" and done["yours"]
                steps = done["variants"][0]["history"]["step"]
                assert steps == list(range(1, len(steps) + 1))  # one run of it, in order
                assert holder_pid(data, i) == second.pid
            # Each run once in the index, each in its state; the finished one kept as it was.
            rows = [r for r in RunStore(data).rows("run") if r.removed is None]
            assert sorted(r.id for r in rows) == sorted({long, bq, cq, finished})
            assert {r.id: r.state for r in rows} == {
                long: "interrupted", bq: "done", cq: "done", finished: "done"}  # fmt: skip
            assert d.get(f"/api/train/{finished}").json() == before
            assert [r["id"] for r in d.get("/api/train").json()["runs"]] == [finished]
            assert second.poll() is None  # the second went on throughout
    finally:
        for x in clients:
            x.close()


# The watcher's thread ending on an error is a failure (pytest warns of it, here an error).
@pytest.mark.slow
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_server_takes_over_the_runs_of_one_whose_lease_lapsed(tmp_path, monkeypatch):
    """Two servers in one process on one directory, the first as a server of another host would
    be (its holds judged by their lease alone: no process of this host to look for), with a 1 s
    lease. While it renews its leases, the second answers its runs' owners 503 in words; once it
    stops (it no longer writes to the directory: as if killed), the second takes its runs over
    as soon as their leases lapse, without a restart: the training run interrupted, the waiting
    one trained there. Its owner's page asks for the interrupted run while the second's watcher
    is reading it in (the watcher held there until the page has found it ended in the store):
    the run is read in once, and both get it (a CI run met this order: its models added twice,
    the page answered 500 and the watcher stopped)."""
    first_app = make_app(tmp_path, data_lease_s=1)
    store = first_app.state.training.store
    store.claimer = "another-host:7:feedbeef"  # a process no look on this host can find
    second_app = make_app(tmp_path, data_lease_s=1)
    asked, held = threading.Event(), threading.Event()
    looked_up, served_model = second_app.state.training.store.kept, service.served_model

    def looking(run_id: str, kind: str):
        row = looked_up(run_id, kind)
        if row is not None:
            asked.set()  # a page found an ended run in the store: it reads it in next
        return row

    def serving(*args, **kwargs):
        if threading.current_thread().name == "train-watcher":  # its model unseen
            held.set()
            asked.wait(60)  # until the page has found the run too (bounded: never a hang)
        return served_model(*args, **kwargs)

    monkeypatch.setattr(second_app.state.training.store, "kept", looking)
    monkeypatch.setattr(service, "served_model", serving)
    a, b = httpx.Client(timeout=60), httpx.Client(timeout=60)
    try:
        with served(first_app) as url, served(second_app) as url2:
            a.base_url = b.base_url = httpx.URL(url)
            long = post(a, LONG).json()["id"]
            training(a, long)
            waiting = post(b, QUICK).json()["id"]
            assert b.get(f"/api/train/{waiting}").json()["place"] == 1
            a.base_url = b.base_url = httpx.URL(url2)
            for client, i in ((a, long), (b, waiting)):
                told = client.get(f"/api/train/{i}")
                assert told.status_code == 503, told.text
                doing = "is training it" if i == long else "keeps it in line"
                assert f"another server on this data directory {doing}" in told.json()["message"]
                assert told.headers["Retry-After"] == "1"
            store.newer = SCHEMA_VERSION + 1  # the first writes nothing more, beats no more
            until(lambda: RunStore(tmp_path).row(long), lambda r: r.state == "interrupted",
                  "the lapsed holder's training run interrupted by the second")  # fmt: skip
            assert held.wait(60), "the watcher reading the interrupted run in"
            back = a.get(f"/api/train/{long}")
            assert back.status_code == 200, back.text
            assert back.json()["state"] == "interrupted" and back.json()["yours"]
            done = wait(b, waiting)
            assert done["state"] == "done" and done["yours"]
            row = RunStore(tmp_path).row(waiting)
            assert row is not None and row.claimer and row.claimer.startswith(f"{HOST}:")
            # The first's runs, which it still holds in memory (it trains on), end there.
            a.base_url = b.base_url = httpx.URL(url)
            assert b.delete(f"/api/train/{waiting}").status_code == 200
            assert a.delete(f"/api/train/{long}").status_code == 200
            until(lambda: first_app.state.training.training, lambda n: n == 0,
                  "the first's training stopped")  # fmt: skip
    finally:
        a.close()
        b.close()
