"""Why not an RNN over real HTTP: a comparison starts (202), reports its progress, ends with its
claims and what it showed (the numbers ``recurrent.compare`` gives for the same seed); past the
slots it waits in the line training runs wait in (``services.line``: its place, an estimate, a
cancel, a restart), past the line the server answers 503 with Retry-After; a comparison stops at
the time limit, bounds are 422s naming the field, and a comparison that is gone is a 404.

The server here compares on small setups (a few steps, short lengths: about a second each); the
shipped ones, and their claims, are tests/training/test_recurrent.py's."""

from __future__ import annotations

import threading
import typing
from dataclasses import replace

import httpx
import pytest

from attnviz.app import create_app
from attnviz.schemas.recurrent import RecurrentTask
from attnviz.services.recurrent import RecurrentService
from attnviz.settings import Settings
from attnviz.training import recurrent as R
from attnviz.training.trainer import Optimiser
from tests.api.test_train import events
from tests.support.servers import served
from tests.support.waits import until


def small(steps: int = 10) -> dict[str, R.Setup]:
    return {
        name: replace(s, opt=replace(s.opt, steps=steps), lengths=(4, 8, 16, 32))
        for name, s in R.SETUPS.items()
    }


def make_app(setups: dict[str, R.Setup] | None = None, **settings):
    s = Settings(device="cpu", builtin_model=False, **settings)
    app = create_app(s)
    app.state.recurrent = RecurrentService(s, small() if setups is None else setups)
    return app


def start(client: httpx.Client, **body) -> dict:
    r = client.post("/api/recurrent", json=body)
    assert r.status_code == 202, r.text
    state = r.json()
    assert r.headers["location"] == f"/api/recurrent/{state['id']}"
    return state


def wait(client: httpx.Client, run_id: str, seen: list[dict] | None = None) -> dict:
    """Poll until the comparison ends (every state read kept in ``seen``)."""
    kept = [] if seen is None else seen

    def look() -> dict:
        kept.append(client.get(f"/api/recurrent/{run_id}").json())
        return kept[-1]

    return until(look, lambda state: state["state"] not in ("queued", "running"),
                 "the comparison's end")  # fmt: skip


@pytest.mark.slow
def test_a_comparison_runs_to_its_claims_and_gives_the_numbers_compare_gives():
    setups = small()
    with served(make_app(setups)) as url, httpx.Client(base_url=url, timeout=60) as client:
        first = start(client, task="induction", seed=4)
        assert first["state"] == "running" and first["task"] == "induction" and first["seed"] == 4
        assert first["claims"] is None and first["shows"] == ""
        assert [m["name"] for m in first["models"]] == ["transformer", "lstm", "gru"]
        assert [m["params"] for m in first["models"]] == list(
            R.params(setups["induction"]).values()
        )
        seen: list[dict] = []
        done = wait(client, first["id"], seen)
    assert done["state"] == "done" and done["reason"] is None
    assert done["progress"] == 1.0 and done["doing"] == ""
    progress = [s["progress"] for s in seen]
    assert progress == sorted(progress)  # it only ever goes forward
    s = setups["induction"]
    assert done["distances"] == list(s.distances) and done["lengths"] == [4, 8, 16, 32]
    assert done["distance"] == s.distance
    # The server's numbers are compare's for the same seed (one thread: the same, number for
    # number), rounded for the wire.
    c = R.compare("induction", 4, setup=s)
    for got, m in zip(done["models"], c.models, strict=True):
        assert got["steps"] == 10 and got["loss"] == round(m.history[-1].loss, 4)
        assert got["accuracy"] == [round(a, 4) for a in m.accuracy]
        assert len(got["step_seconds"]) == 4 and all(t > 0 for t in got["step_seconds"])
        assert got["train_seconds"] > 0
    claims = R.CLAIMS["induction"]
    assert [x["claim"] for x in done["claims"]] == [str(c) for c in claims]
    for x, claim in zip(done["claims"], claims, strict=True):
        assert x["holds"] == claim.holds_for(x["value"])
    assert done["shows"].startswith("Induction, seed 4, 10 training steps each")


def test_the_options_name_the_tasks_and_the_servers_slots():
    with served(make_app(train_slots=3)) as url:
        o = httpx.get(f"{url}/api/recurrent/options", timeout=60).json()
    assert [t["name"] for t in o["tasks"]] == list(R.SETUPS) == list(typing.get_args(RecurrentTask))
    assert o["default"] == "copy" and o["slots"] == 3 and o["max_seed"] == 2**31 - 1
    assert o["lengths"] == [4, 8, 16, 32]
    for t in o["tasks"]:
        assert t["steps"] == 10 and len(t["distances"]) == 5 and len(t["about"]) > 100


def long_copy(steps: int = 5000) -> dict[str, R.Setup]:
    """The small setups, but copy's trains ``steps``: it runs until the time limit stops it."""
    return {**small(), "copy": replace(small()["copy"], opt=Optimiser(steps=steps))}


def visitors(url: str, n: int) -> list[httpx.Client]:
    return [httpx.Client(base_url=url, timeout=60) for _ in range(n)]


@pytest.mark.slow
def test_past_the_slots_a_comparison_waits_in_line_and_past_the_line_it_is_a_503():
    app = make_app(long_copy(), train_slots=1, train_queue=1, train_max_seconds=60)
    with served(app) as url:
        a, b, c = visitors(url, 3)
        long = start(a, task="copy")
        assert (long["state"], long["place"], long["wait_s"]) == ("running", None, None)
        waiting = start(b, task="reverse")
        assert (waiting["state"], waiting["place"]) == ("queued", 1)
        # The one ahead has measured little yet: at most its whole time limit.
        assert 0 <= waiting["wait_s"] <= 60 and waiting["doing"] == "waiting for a slot"
        assert waiting["progress"] == 0 and all(m["steps"] == 0 for m in waiting["models"])
        load = a.get("/healthz").json()["load"]
        assert (load["comparing"], load["comparisons_queued"]) == (1, 1)
        busy = c.post("/api/recurrent", json={"task": "reverse"})
        assert busy.status_code == 503, busy.text
        assert int(busy.headers["retry-after"]) >= 1
        assert busy.json()["message"].startswith(
            "busy: this server runs 1 comparison(s) at once and 1 wait in line"
        )
        assert a.delete(f"/api/recurrent/{long['id']}").status_code == 200
        assert wait(a, long["id"])["state"] == "cancelled"
        # The one waiting took the slot, by itself, and ran to its end.
        done = wait(b, waiting["id"])
        assert done["state"] == "done" and done["claims"] and done["place"] is None
        # Its slot is free again.
        assert start(c, task="reverse")["state"] == "running"


@pytest.mark.slow
def test_a_comparison_stops_at_the_time_limit():
    app = make_app(long_copy(), train_max_seconds=1.5)
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        ended = wait(client, start(client, task="copy")["id"])
        assert ended["state"] == "cancelled"
        assert ended["reason"] == "stopped at this server's time limit of 1.5 s a run"
        assert 0 < ended["models"][0]["steps"] < 5000 and ended["claims"] is None


@pytest.mark.slow
def test_one_cancelled_in_line_never_runs_and_each_visitor_has_one_going_and_one_waiting():
    app = make_app(long_copy(), train_slots=2, train_queue=4, train_max_seconds=60)
    with served(app) as url:
        a, b = visitors(url, 2)
        long = start(a, task="copy")
        # A's second waits while its first runs, though a slot is free; a third is refused.
        second = start(a, task="reverse")
        assert (second["state"], second["place"]) == ("queued", 1)
        third = a.post("/api/recurrent", json={"task": "induction"})
        assert third.status_code == 429, third.text
        assert third.json()["message"].startswith(
            "task: you already have a comparison running and one waiting; wait for one to "
            "finish or cancel it"
        )
        assert int(third.headers["retry-after"]) >= 1
        # Another visitor takes the free slot.
        assert start(b, task="induction")["state"] == "running"
        # Cancelled while it waits: it ends, never having run.
        gone = a.delete(f"/api/recurrent/{second['id']}")
        assert gone.status_code == 200, gone.text
        assert (gone.json()["state"], gone.json()["reason"]) == (
            "cancelled", "cancelled while waiting in line")  # fmt: skip
        kept = a.get(f"/api/recurrent/{second['id']}").json()
        assert kept["state"] == "cancelled" and all(m["steps"] == 0 for m in kept["models"])
        assert a.delete(f"/api/recurrent/{long['id']}").status_code == 200
        assert wait(a, long["id"])["state"] == "cancelled"
        # Nothing of it ever started: it is still cancelled, with nothing trained.
        assert a.get(f"/api/recurrent/{second['id']}").json() == kept


@pytest.mark.slow
def test_one_waiting_when_the_server_stops_waits_again_after_a_restart_and_runs(
    tmp_path, monkeypatch
):
    # The app's own service compares on the small setups: it is the one that restores.
    monkeypatch.setattr("attnviz.app.RecurrentService", lambda s: RecurrentService(s, long_copy()))

    def app_here():
        s = Settings(device="cpu", builtin_model=False, train_slots=1, train_max_seconds=60,
                     data_dir=tmp_path)  # fmt: skip
        return create_app(s)

    first = app_here()
    with served(first) as url:
        a, b = visitors(url, 2)
        long = start(a, task="copy")
        waiting = start(b, task="reverse")
        assert waiting["state"] == "queued"
        # The server stops with it in line: this process forgets it, its row says queued.
        service = first.state.recurrent
        with service.lock:
            service.line.waiting.clear()
        assert a.delete(f"/api/recurrent/{long['id']}").status_code == 200
        assert wait(a, long["id"])["state"] == "cancelled"
    with served(app_here()) as url:
        again = httpx.Client(base_url=url, timeout=60, cookies=b.cookies)
        done = wait(again, waiting["id"])
        assert done["state"] == "done" and done["claims"] and done["yours"]
        listed = again.get("/api/recurrent").json()["comparisons"]
        assert [(c["id"], c["state"]) for c in listed if c["id"] == waiting["id"]] == [
            (waiting["id"], "done")
        ]


@pytest.mark.parametrize(
    ("settings", "body", "field", "rule"),
    [
        ({}, {"task": "charlm"}, "task", "'copy', 'reverse' or 'induction'"),
        ({}, {"seed": -1}, "seed", "greater than or equal to 0"),
        ({}, {"seed": 2**31}, "seed", "less than or equal to 2147483647"),
        ({}, {"seed": "one"}, "seed", "valid integer"),
        ({}, {"task": "copy", "steps": 5}, "steps", "Extra inputs are not permitted"),
        ({"train_max_steps": 9}, {}, "task", "it trains at most 9 steps a run"),
        ({"train_max_params": 1000}, {"task": "reverse"}, "task", "at most 1,000 parameters"),
        ({"train_slots": 0}, {}, "task", "its host has turned training off"),
    ],
)
def test_a_request_over_a_bound_is_refused_naming_the_field(settings, body, field, rule):
    with served(make_app(**settings)) as url:
        r = httpx.post(f"{url}/api/recurrent", json=body, timeout=60)
        assert r.status_code == 422, r.text
        message = r.json()["message"]
        assert message.startswith(f"{field}: ") and rule in message, message
        assert "ATTNVIZ_" not in message  # a learner reads it: never a setting's name
        assert httpx.get(f"{url}/healthz", timeout=60).status_code == 200


@pytest.mark.slow
def test_a_comparison_that_is_gone_is_a_404_and_never_another_one():
    with (
        served(make_app(train_keep_runs=1)) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        first = start(client, task="copy")["id"]
        wait(client, first)
        second = start(client, task="copy", seed=1)["id"]
        assert wait(client, second)["seed"] == 1
        for gone in (first, "nope"):
            r = client.get(f"/api/recurrent/{gone}")
            assert r.status_code == 404 and gone in r.json()["message"], r.text
            assert r.json()["detail"][0]["loc"] == ["path", "run_id"]
        # Ids are 128-bit now (issue 27: "r16chars-" and 32 hex digits fit in 64).
        assert client.get(f"/api/recurrent/{'x' * 65}").status_code == 422


@pytest.mark.slow
def test_the_list_holds_the_callers_comparisons_newest_first_and_those_it_opened():
    """GET /api/recurrent: a visitor's comparisons, newest first, each marked theirs; another
    visitor's appear once opened by their id (not theirs), never before; the Learn path's
    step 1 reopens the newest one that is the learner's."""
    with (
        served(make_app(small(steps=2))) as url,
        httpx.Client(base_url=url, timeout=60) as learner,
        httpx.Client(base_url=url, timeout=60) as teacher,
    ):
        older = start(learner, task="copy", seed=1)["id"]
        wait(learner, older)
        newer = start(learner, task="reverse", seed=2)["id"]
        done = wait(learner, newer)
        listed = learner.get("/api/recurrent")
        assert listed.status_code == 200, listed.text
        got = listed.json()["comparisons"]
        assert [c["id"] for c in got] == [newer, older]
        assert [(c["task"], c["seed"], c["yours"], c["can_cancel"]) for c in got] == [
            ("reverse", 2, True, True),
            ("copy", 1, True, True),
        ]
        assert got[0]["state"] == done["state"] and got[0]["created"] >= got[1]["created"]
        assert got[0]["progress"] == done["progress"]

        # Another visitor lists none of them until it opens one by its id.
        assert teacher.get("/api/recurrent").json() == {"comparisons": []}
        assert teacher.get(f"/api/recurrent/{older}").status_code == 200
        seen = teacher.get("/api/recurrent").json()["comparisons"]
        assert [(c["id"], c["yours"], c["can_cancel"]) for c in seen] == [(older, False, False)]
        # A comparison forgotten by its owner leaves both lists.
        assert learner.delete(f"/api/recurrent/{older}").status_code == 200
        assert [c["id"] for c in learner.get("/api/recurrent").json()["comparisons"]] == [newer]
        assert teacher.get("/api/recurrent").json() == {"comparisons": []}


@pytest.mark.slow
def test_a_comparisons_events_are_its_state_then_each_change_then_its_end():
    """GET /api/recurrent/{id}/events: the state first (as GET answers it, the reader's own
    fields in it), then ``progress`` (the whole comparison, less the reader's fields) whenever
    it changes: leaving the line, then as it trains; then ``end``, the state GET then answers;
    ids rising; once ended, its end alone is kept; an ended one's stream is its state."""
    app = make_app(long_copy(), train_slots=1, train_max_seconds=60)
    with served(app) as url:
        a, b = visitors(url, 2)
        long = start(a, task="copy")
        waiting = start(b, task="reverse")
        assert waiting["state"] == "queued"
        opened, seen = threading.Event(), []
        follower = threading.Thread(
            target=lambda: seen.extend(
                events(b, waiting["id"], opened=opened.set, kind="recurrent")
            )
        )
        follower.start()
        assert opened.wait(30), "the stream's answer"
        assert a.delete(f"/api/recurrent/{long['id']}").status_code == 200  # B's starts
        follower.join(60)
        assert not follower.is_alive(), "the stream's end"
        ids, names = [e[0] for e in seen], [e[1] for e in seen]
        assert ids == sorted(set(ids)) and names[0] == "state" and names[-1] == "end", names
        assert set(names[1:-1]) <= {"progress"} and len(names) >= 4, names
        first = seen[0][2]
        assert (first["state"], first["place"], first["yours"]) == ("queued", 1, True)
        states = [e[2]["state"] for e in seen]
        assert states.index("running") < len(states) - 1 and states[-1] == "done"
        assert all("yours" not in e[2] and "can_cancel" not in e[2] for e in seen[1:])
        started = seen[states.index("running")][2]
        assert started["place"] is None and started["wait_s"] is None
        got = b.get(f"/api/recurrent/{waiting['id']}").json()
        assert seen[-1][2] == {k: v for k, v in got.items() if k not in ("yours", "can_cancel",
                                                                         "token")}  # fmt: skip
        assert got["claims"] and seen[-1][2]["claims"] == got["claims"]
        # Ended, its log keeps its end alone (each event is the whole comparison): resumed after
        # the event before it, the end; after an earlier one, the state again, the end's.
        assert events(b, waiting["id"], last=ids[-1] - 1, kind="recurrent") == [seen[-1]]
        early = events(b, waiting["id"], last=ids[1], kind="recurrent")
        assert [e[1] for e in early] == ["state"] and early[0][2] == got
        # An ended one: its state, and the stream ends.
        again = events(b, waiting["id"], kind="recurrent")
        assert [e[1] for e in again] == ["state"] and again[0][2]["state"] == "done"
        assert again[0][2] == got
        gone = b.get("/api/recurrent/nope/events")
        assert gone.status_code == 404 and "no comparison 'nope'" in gone.json()["message"]
