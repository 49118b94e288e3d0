"""The training queue over real HTTP, several visitors (each its own cookie jar), one slot: a
start past the slot waits in line (202, ``queued``, its place 1, 2, ...), past the line 503 with
Retry-After, a visitor's third start 429 naming the rule, cancelling a waiting run moves those
behind it up, a waiting run starts when the one ahead ends (in order), and a trace is answered
while a run trains and others wait."""

from __future__ import annotations

import json
import signal

import httpx
import pytest

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.api.test_train import TINY, events, wait
from tests.support.servers import served
from tests.support.waits import until

QUICK = {"arch": TINY, "opt": {"steps": 20}, "checkpoints": 1}
LONG = {"arch": TINY, "opt": {"steps": 5000}, "checkpoints": 2}


def make_app(tmp_path, **settings):
    return create_app(Settings(device="cpu", builtin_model=False, data_dir=tmp_path,
                               train_slots=1, **settings))  # fmt: skip


def post(client: httpx.Client, body: dict) -> httpx.Response:
    return client.post("/api/train", json=body)


def training(client: httpx.Client, run_id: str) -> None:
    """Until the run has trained a step (it holds the slot)."""
    until(lambda: client.get(f"/api/train/{run_id}").json()["variants"][0]["history"]["step"],
          bool, f"run {run_id}'s first step", every=0.02)  # fmt: skip


@pytest.mark.slow
def test_a_start_past_the_slot_waits_in_line_and_starts_when_the_slot_frees(tmp_path):
    app = make_app(tmp_path, train_queue=4)
    app.state.training.ticker.every = 0.2
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as a, \
            httpx.Client(base_url=url, timeout=60) as b:  # fmt: skip
        first = post(a, LONG).json()
        assert first["state"] == "running" and first["place"] is None
        training(a, first["id"])
        r = post(b, QUICK)
        assert r.status_code == 202, r.text
        queued = r.json()
        assert queued["state"] == "queued" and queued["place"] == 1
        state = b.get(f"/api/train/{queued['id']}").json()
        assert state["state"] == "queued" and state["place"] == 1 and state["wait_s"] >= 0
        assert all(v["state"] == "waiting" and not v["history"]["step"] for v in state["variants"])
        load = a.get("/healthz").json()["load"]
        assert (load["training"], load["queued"]) == (1, 1)
        # While it waits its estimate is worked out again as the run ahead goes on (every
        # TICK_S; shorter here), and told in a queue event where it changed.
        live = app.state.training.get(queued["id"])
        until(lambda: [n for n, _ in live.events], lambda names: names.count("queue") >= 2,
              "a second queue event")  # fmt: skip
        told = [json.loads(d) for n, d in live.events if n == "queue"]
        assert all(t["place"] == 1 and t["wait_s"] >= 0 for t in told), told
        # It cannot be exported while it waits.
        r = b.get(f"/api/train/{queued['id']}/export")
        assert r.status_code == 409 and "waiting for a training slot" in r.json()["message"]
        # The one ahead ends (cancelled by its owner): the waiting one starts and trains.
        assert a.delete(f"/api/train/{first['id']}").status_code == 200
        seen = events(b, queued["id"], last=0)
        names = [n for _, n, _ in seen]
        assert names[0] == "queue" and names[-1] == "end" and seen[-1][2]["state"] == "done"
        start = next(d for _, n, d in seen if n == "queue" and d["state"] == "running")
        assert start == {"state": "running", "place": None, "wait_s": None}
        assert names.index("steps") > names.index("queue")
        done = wait(b, queued["id"])
        assert done["state"] == "done" and done["place"] is None and done["wait_s"] is None
        assert done["variants"][0]["history"]["step"] == list(range(1, 21))
        assert a.get("/healthz").json()["load"]["queued"] == 0


@pytest.mark.slow
def test_places_in_order_the_bounds_cancel_and_traces_while_runs_train_and_wait(tmp_path):
    # Four visitors on one machine: the per-address cap (test_address_limits) raised past them.
    app = make_app(tmp_path, train_queue=3, train_per_address=8)
    with served(app) as url:
        a, b, c, d = (httpx.Client(base_url=url, timeout=60) for _ in range(4))
        try:
            # A model to trace, trained first.
            model = post(d, QUICK).json()["id"]
            assert wait(d, model)["state"] == "done"

            long = post(a, LONG).json()["id"]
            training(a, long)
            accepted = [post(b, QUICK), post(c, QUICK), post(a, QUICK)]
            assert [r.status_code for r in accepted] == [202, 202, 202]
            assert [(r.json()["state"], r.json()["place"]) for r in accepted] == [
                ("queued", 1), ("queued", 2), ("queued", 3)]  # fmt: skip
            bq, cq, aq = (r.json()["id"] for r in accepted)
            states = [client.get(f"/api/train/{i}").json()
                      for client, i in ((b, bq), (c, cq), (a, aq))]  # fmt: skip
            assert [s["place"] for s in states] == [1, 2, 3]
            waits = [s["wait_s"] for s in states]
            assert all(w >= 0 for w in waits) and waits == sorted(waits), waits
            listed = {r["id"]: r for r in a.get("/api/train").json()["runs"]}
            assert listed[aq]["state"] == "queued" and listed[aq]["place"] == 3

            # A visitor with a run training and one waiting: a third start is refused, 429.
            r = post(a, QUICK)
            assert r.status_code == 429, r.text
            assert r.json()["message"].startswith(
                "train: you already have a run training and one waiting; wait for one to "
                "finish or cancel it"
            )
            # B has one waiting: another would wait too, so it is refused as well.
            assert post(b, QUICK).status_code == 429
            # The line is full: 503 with Retry-After, to a visitor with nothing going.
            r = post(d, QUICK)
            assert r.status_code == 503, r.text
            assert int(r.headers["retry-after"]) >= 1 and "busy" in r.json()["message"]

            # A trace is answered while a run trains and three wait (its own admission).
            r = d.post("/api/trace?fields=attentions", json={"model": model, "text": "abcab"})
            assert r.status_code == 200, r.text
            # Answered while the run trains, not after it: it is still training, short of its end.
            now = a.get(f"/api/train/{long}").json()
            assert now["state"] == "running" and now["variants"][0]["history"]["step"][-1] < 5000

            # Another visitor cannot cancel a waiting run; its owner can: those behind move up.
            assert d.delete(f"/api/train/{cq}").status_code == 404
            r = c.delete(f"/api/train/{cq}")
            assert r.status_code == 200 and r.json()["state"] == "cancelled"
            assert r.json()["place"] is None
            assert "waiting in line" in r.json()["reason"]
            assert a.get(f"/api/train/{aq}").json()["place"] == 2
            assert b.get(f"/api/train/{bq}").json()["place"] == 1

            # The long run ends; the line starts in order: B's, then A's second.
            assert a.delete(f"/api/train/{long}").status_code == 200
            for client, i in ((b, bq), (a, aq)):
                assert wait(client, i)["state"] == "done"
            live = app.state.training
            assert live.get(bq).started < live.get(aq).started
            assert (live.get(bq).ended or 0) <= live.get(aq).started
            # The places A's second run was told, in order: 3, 2 (C cancelled), 1 (B started),
            # then none (it started).
            told = [dd["place"] for _, n, dd in events(a, aq, last=0) if n == "queue"]
            assert [p for i, p in enumerate(told) if i == 0 or p != told[i - 1]] == [
                3, 2, 1, None]  # fmt: skip
            # The queue's events (and the end) are in the run's state, as for any run.
            assert events(a, aq, last=0)[-1][2]["state"] == "done"
        finally:
            for client in (a, b, c, d):
                client.close()


@pytest.mark.slow
def test_with_slots_free_a_visitors_second_run_waits_for_their_first(tmp_path):
    """Two slots: a's second run waits (queued, 1st in line) while a's first trains, though a
    slot is free; b's run takes that slot, ahead of it; when a's first ends, a's second starts.
    (Before, a visitor could have two runs training where slots were free.)"""
    app = create_app(Settings(device="cpu", builtin_model=False, data_dir=tmp_path,
                              train_slots=2, train_queue=4))  # fmt: skip
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as a, \
            httpx.Client(base_url=url, timeout=60) as b:  # fmt: skip
        first = post(a, LONG).json()["id"]
        training(a, first)
        second = post(a, QUICK).json()
        assert (second["state"], second["place"]) == ("queued", 1)
        load = a.get("/healthz").json()["load"]
        assert (load["training"], load["queued"]) == (1, 1)
        # Its estimate waits for a's first run, not for the free slot.
        state = a.get(f"/api/train/{second['id']}").json()
        assert state["state"] == "queued" and state["wait_s"] >= 1
        # b's run passes it: b has nothing training, and a slot is free.
        other = post(b, QUICK).json()
        assert other["state"] == "running"
        assert wait(b, other["id"])["state"] == "done"
        assert a.get(f"/api/train/{second['id']}").json()["state"] == "queued"
        # A third is refused, 429; a's first ends: a's second starts.
        assert post(a, QUICK).status_code == 429
        assert a.delete(f"/api/train/{first}").status_code == 200
        assert wait(a, second["id"])["state"] == "done"
        live = app.state.training
        assert (live.get(first).ended or 0) <= live.get(second["id"]).started


@pytest.mark.slow
def test_the_operator_is_not_bound_by_the_visitor_rule(tmp_path):
    token = "an-operators-token-for-this-test"
    app = create_app(Settings(device="cpu", builtin_model=False, data_dir=tmp_path,
                              train_slots=1, train_queue=4, admin_token=token))  # fmt: skip
    with (
        served(app) as url,
        httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as op,
    ):
        ids = [post(op, b).json()["id"] for b in (LONG, LONG, LONG)]
        assert [op.get(f"/api/train/{i}").json()["state"] for i in ids] == [
            "running", "queued", "queued"]  # fmt: skip
        for i in ids:
            assert op.delete(f"/api/train/{i}").status_code == 200
        assert all(wait(op, i)["state"] == "cancelled" for i in ids)


# -- a restart: the line is kept ------------------------------------------------------------


@pytest.mark.slow
def test_a_waiting_run_is_stored_and_waits_again_after_a_restart_in_order(tmp_path):
    """In one process (the slow test below restarts a real one): the runs waiting when a second
    server starts on the data directory come back in line in their order, with their ids and
    owners; one whose settings no longer fit the new bounds ends failed, saying so."""
    from fastapi.testclient import TestClient

    from attnviz.services.store import RunStore

    first = make_app(tmp_path, train_queue=4)
    a, b, c, d = (TestClient(first) for _ in range(4))
    long = a.post("/api/train", json=LONG).json()["id"]
    row = RunStore(tmp_path).row(long)  # stored before its start was answered
    assert row is not None and row.state == "running"
    training(a, long)
    bq, cq, dq = (client.post("/api/train", json=body).json()["id"] for client, body in (
        (b, QUICK), (c, {**QUICK, "opt": {"steps": 30}}), (d, QUICK)))  # fmt: skip
    try:
        store = RunStore(tmp_path)
        rows = {i: store.row(i) for i in (bq, cq, dq)}
        assert all(r is not None and r.state == "queued" and r.finished is None
                   for r in rows.values())  # fmt: skip
        assert rows[bq].owner != rows[cq].owner and rows[bq].owner  # type: ignore[union-attr]
        assert store.read_json(bq, "run.json")["state"] == "queued"
        assert store.read_json(bq, "request.json")["opt"]["steps"] == 20

        # The second server: the run training is interrupted (its slot free), the line starts.
        second = make_app(tmp_path, train_queue=4, train_max_steps=25)
        second.state.training.ticker.every = 0.2
        b2, c2, d2 = (TestClient(second, cookies=x.cookies) for x in (b, c, d))
        stranger = TestClient(second)
        failed = c2.get(f"/api/train/{cq}").json()
        assert failed["state"] == "failed" and failed["yours"], failed
        assert "no longer fit this server's bounds" in failed["reason"]
        assert "it trains at most 25 steps a run" in failed["reason"]
        assert "ATTNVIZ_" not in failed["reason"]
        assert all(v["state"] == "cancelled" for v in failed["variants"])
        waiting = d2.get(f"/api/train/{dq}").json()
        if waiting["state"] == "queued":  # b's run ahead of it has not ended yet
            assert waiting["place"] == 1 and waiting["yours"] and waiting["wait_s"] >= 0
            assert stranger.delete(f"/api/train/{dq}").status_code == 404
        assert wait(b2, bq)["state"] == "done" and b2.get(f"/api/train/{bq}").json()["yours"]
        done = wait(d2, dq)
        assert done["state"] == "done" and done["yours"] and done["place"] is None
        live = second.state.training
        assert (live.get(bq).ended or 0) <= live.get(dq).started
        assert [r.state for r in (store.row(bq), store.row(cq), store.row(dq))] == [
            "done", "failed", "done"]  # fmt: skip
        # Its failure is kept too: a third server reads it as it ended.
        third = TestClient(make_app(tmp_path, train_queue=4), cookies=c.cookies)
        assert third.get(f"/api/train/{cq}").json()["reason"] == failed["reason"]
    finally:
        for client, i in ((a, long), (b, bq), (c, cq), (d, dq)):
            client.delete(f"/api/train/{i}")


@pytest.mark.slow
def test_the_runs_put_back_in_line_after_a_restart_still_count_against_their_address(tmp_path):
    """Two visitors at one address fill its share of the line (ATTNVIZ_TRAIN_PER_ADDRESS=2);
    after a restart their runs wait (and train) again under that address, so a third visitor
    there is still refused, 429, while another address gets a place."""
    from fastapi.testclient import TestClient

    from attnviz.services.store import RunStore

    token = "an-operators-token-for-this-test"
    admin = {"Authorization": f"Bearer {token}"}
    here = {"X-Forwarded-For": "10.0.0.7"}
    # Every client is trusted to name its address: TestClient's peer stands for a proxy.
    given = {"train_queue": 4, "train_per_address": 2, "forwarded_allow_ips": "*",
             "admin_token": token}  # fmt: skip
    first = make_app(tmp_path, **given)
    a = TestClient(first, headers={"X-Forwarded-For": "10.0.0.1"})
    b, c, d = (TestClient(first, headers=here) for _ in range(3))
    long = a.post("/api/train", json=LONG).json()["id"]
    second = None
    try:
        training(a, long)
        bq, cq = (x.post("/api/train", json=LONG).json()["id"] for x in (b, c))
        assert d.post("/api/train", json=QUICK).status_code == 429  # the address's two
        assert {RunStore(tmp_path).row(i).address for i in (bq, cq)} == {"10.0.0.7"}  # type: ignore[union-attr]

        second = make_app(tmp_path, **given)
        back = [TestClient(second, cookies=x.cookies).get(f"/api/train/{i}").json()["state"]
                for x, i in ((b, bq), (c, cq))]  # fmt: skip
        assert back == ["running", "queued"]  # a's run interrupted: b's took the slot
        r = TestClient(second, headers=here).post("/api/train", json=QUICK)
        assert r.status_code == 429, r.text
        assert r.json()["message"].startswith(
            "train: 2 runs are training or waiting from your network address"
        )
        other = TestClient(second, headers={"X-Forwarded-For": "10.0.0.8"})
        r = other.post("/api/train", json=QUICK)
        assert r.status_code == 202 and r.json()["state"] == "queued", r.text
    finally:
        for app in (second, first):
            if app is not None:
                op = TestClient(app, headers=admin)
                for run in op.get("/api/train").json()["runs"]:
                    op.delete(f"/api/train/{run['id']}")


def test_cancelling_a_waiting_run_is_stored(tmp_path):
    from fastapi.testclient import TestClient

    from attnviz.services.store import RunStore

    app = make_app(tmp_path, train_queue=4)
    a, b = TestClient(app), TestClient(app)
    long = a.post("/api/train", json=LONG).json()["id"]
    try:
        training(a, long)
        bq = b.post("/api/train", json=QUICK).json()["id"]
        assert b.delete(f"/api/train/{bq}").json()["state"] == "cancelled"
        row = RunStore(tmp_path).row(bq)
        assert row is not None and row.state == "cancelled" and row.finished is not None
        again = TestClient(make_app(tmp_path, train_queue=4), cookies=b.cookies)
        back = again.get(f"/api/train/{bq}").json()
        assert back["state"] == "cancelled" and back["reason"] == "cancelled while waiting in line"
        assert back["yours"] and back["place"] is None
    finally:
        a.delete(f"/api/train/{long}")


@pytest.mark.slow
def test_after_a_sigkill_every_accepted_run_is_there_for_its_owner(tmp_path):
    """The contract the class bench relies on, over a real process killed and started again:
    a finished run as it was, the one training interrupted at step N, the waiting ones waiting
    again in their order (their places in their streams, a stream resumed across the restart
    told the whole state), then training to the end."""
    from attnviz.services.store import RunStore
    from tests.services.test_disk_budget import du
    from tests.services.test_store import serving

    data, log = tmp_path / "data", tmp_path / "serve.log"
    clients = [httpx.Client(timeout=60) for _ in range(4)]
    done_client, a, b, c = clients
    try:
        with serving(data, log) as (url, proc):
            for x in clients:
                x.base_url = httpx.URL(url)
            finished = post(done_client, QUICK).json()["id"]
            before = wait(done_client, finished)
            long = post(a, {**LONG, "checkpoints": 50}).json()["id"]  # its weights often
            folder = data / "runs" / long
            until(lambda: list(folder.glob("checkpoint-*")), lambda f: len(f) >= 2,
                  "the long run's weights at two checkpoints")  # fmt: skip
            slower = {**QUICK, "opt": {"steps": 1000}}  # c still waits for it after the restart
            bq, cq = post(b, slower).json()["id"], post(c, QUICK).json()["id"]
            assert [x.get(f"/api/train/{i}").json()["place"] for x, i in ((b, bq), (c, cq))] == [
                1, 2]  # fmt: skip
            seen = b.get(f"/api/train/{bq}").json()["seq"]
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        with serving(data, log) as (url, proc):
            for x in clients:
                x.base_url = httpx.URL(url)
            assert done_client.get(f"/api/train/{finished}").json() == before
            back = a.get(f"/api/train/{long}").json()
            assert back["state"] == "interrupted" and back["yours"]
            assert "interrupted at step" in back["reason"]
            # Its folder is final: the checkpoint run.json names, counted as du counts it.
            named = json.loads((folder / "run.json").read_text())["variants"][0]["weights"]
            assert [f.name for f in folder.glob("checkpoint-*")] == [named["folder"]]
            assert RunStore(data).row(long).bytes == du(folder) > 0  # type: ignore[union-attr]
            # The waiting ones: the first took the slot the interrupted run left; the second
            # waits for it, 1st in line.
            second = c.get(f"/api/train/{cq}").json()
            assert second["yours"] and (second["state"], second["place"]) == ("queued", 1)
            assert b.get(f"/api/train/{bq}").json()["state"] == "running"
            assert a.delete(f"/api/train/{cq}").status_code == 404  # not a's to cancel
            # b's stream resumed with an id from before the restart: the state first, whole.
            resumed = events(b, bq, last=seen)
            assert resumed[0][1] == "state" and resumed[0][2]["id"] == bq
            assert resumed[-1][1] == "end" and resumed[-1][2]["state"] == "done"
            assert wait(c, cq)["state"] == "done"
            states = {r["id"]: r["state"] for r in b.get("/api/train").json()["runs"]}
            assert states == {bq: "done"}  # b lists its own run only
            assert {r["id"] for r in a.get("/api/train").json()["runs"]} == {long}
    finally:
        for x in clients:
            x.close()


@pytest.mark.slow
def test_before_any_run_has_ended_the_estimate_goes_at_the_pace_of_the_one_training(
    tmp_path, monkeypatch
):
    """No run has ended yet, so no pace has been measured at an end: the second in line's
    estimate is the run ahead's steps left at its pace so far, plus the first in line's steps
    at that pace, not at the first guess (GUESS_STEP_S a step, which made a class's first
    estimates too long). The guess is set to 1 s a step here, so that the two are far apart
    however fast this machine trains."""
    from attnviz.services.training import queue

    monkeypatch.setattr(queue, "GUESS_STEP_S", 1.0)
    # (and runs may take an hour: a waiting run's length is never put past the time limit)
    app = make_app(tmp_path, train_queue=4, train_max_seconds=3600)
    paces = []

    def pace(client, run_id) -> float:
        history = client.get(f"/api/train/{run_id}").json()["variants"][0]["history"]
        return history["seconds"][-1] / len(history["step"])

    with served(app) as url, httpx.Client(base_url=url, timeout=60) as a, \
            httpx.Client(base_url=url, timeout=60) as b, \
            httpx.Client(base_url=url, timeout=60) as c:  # fmt: skip
        first = post(a, LONG).json()
        until(lambda: a.get(f"/api/train/{first['id']}").json()["variants"][0]["history"]["step"],
              lambda steps: len(steps) >= 50, "the first run's 50th step", every=0.02)  # fmt: skip
        paces.append(pace(a, first["id"]))
        waiting = [post(who, LONG).json()["id"] for who in (b, c)]
        second = c.get(f"/api/train/{waiting[1]}").json()
        paces.append(pace(a, first["id"]))
        for who, run_id in ((c, waiting[1]), (b, waiting[0]), (a, first["id"])):
            who.delete(f"/api/train/{run_id}")
    steps = LONG["opt"]["steps"]
    assert second["place"] == 2
    assert second["wait_s"] < steps * 1.0 / 2, (second["wait_s"], paces)  # not the guess
    # The run ahead's steps left and the first in line's, at about the pace it trained at.
    assert second["wait_s"] <= 2 * steps * max(paces) * 1.5 + 5, (second["wait_s"], paces)


@pytest.mark.slow
def test_an_ended_runs_pace_for_the_line_counts_its_whole_time(tmp_path):
    """The line's estimates go at the pace of the run that ended last from its start to its end
    (its setup, checkpoints, measures and writes), never below its training steps' own pace."""
    app = make_app(tmp_path)
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as a:
        run_id = post(a, QUICK).json()["id"]
        wait(a, run_id)
    run = app.state.training.runs[run_id]
    trained = sum(len(v.history) for v in run.variants)
    assert trained == QUICK["opt"]["steps"]
    assert run.wall_step_s == pytest.approx((run.ended - run.started) / trained)
    assert run.wall_step_s >= run.step_time > 0
