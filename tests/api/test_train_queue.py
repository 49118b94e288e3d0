"""The training queue over real HTTP, several visitors (each its own cookie jar), one slot: a
start past the slot waits in line (202, ``queued``, its place 1, 2, ...), past the line 503 with
Retry-After, a visitor's third start 429 naming the rule, cancelling a waiting run moves those
behind it up, a waiting run starts when the one ahead ends (in order), and a trace is answered
while a run trains and others wait."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.api.test_train import TINY, events, wait
from tests.support.servers import served

QUICK = {"arch": TINY, "opt": {"steps": 20}, "checkpoints": 1}
LONG = {"arch": TINY, "opt": {"steps": 5000}, "checkpoints": 2}


def make_app(tmp_path, **settings):
    return create_app(Settings(device="cpu", builtin_model=False, data_dir=tmp_path,
                               train_slots=1, **settings))  # fmt: skip


def post(client: httpx.Client, body: dict) -> httpx.Response:
    return client.post("/api/train", json=body)


def training(client: httpx.Client, run_id: str) -> None:
    """Until the run has trained a step (it holds the slot)."""
    deadline = time.monotonic() + 30
    while not client.get(f"/api/train/{run_id}").json()["variants"][0]["history"]["step"]:
        assert time.monotonic() < deadline
        time.sleep(0.02)


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
        deadline = time.monotonic() + 10
        while sum(n == "queue" for n, _ in live.events) < 2:
            assert time.monotonic() < deadline, live.events
            time.sleep(0.05)
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
    app = make_app(tmp_path, train_queue=3)
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
            t0 = time.monotonic()
            r = d.post("/api/trace?fields=attentions", json={"model": model, "text": "abcab"})
            assert r.status_code == 200, r.text
            assert time.monotonic() - t0 < 5

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
