"""The Learn progress the server keeps, over HTTP (each TestClient a visitor with its own cookie
jar): a check's answer recorded as the server gave it (a task done only when the server found
it done; tried only once the learner changed the lab), never crediting what is not the
learner's own (the state a Learn link carried, another visitor's run), "stuck" as the class
view's rule says it (tries at a task, over time, not done), the nickname and its rules (a 422
naming the field and the rule), the caps (learners kept, the bytes of one), the operator-only
class view (403 for anyone else, never an id; the operator's own browser no learner), a restart
over the same data directory, and the file's schema version (a file of no version or of
version 1 migrated, a newer one left as it is)."""

from __future__ import annotations

import copy
import json
import sqlite3
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from attnviz.api.visitor import COOKIE, Visitors
from attnviz.app import create_app
from attnviz.learn import service
from attnviz.learn.classroom import STUCK_S, STUCK_TRIES
from attnviz.learn.steps import BY_ID, STEPS
from attnviz.limits import LIMITS
from attnviz.services.datadir import server_secret
from attnviz.services.progress_store import FILE, MIGRATIONS, VERSION, migrate, record_bytes
from attnviz.settings import Settings
from tests.support.servers import served

OPERATOR = "the-operators-token-for-the-class"
AS_OPERATOR = {"Authorization": f"Bearer {OPERATOR}"}


def make_app(data_dir, **settings):
    s = Settings(device="cpu", builtin_model=False, data_dir=data_dir, **settings)
    return create_app(s)


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path, admin_token=OPERATOR)


def visitor(app) -> TestClient:
    """A browser: its first request gets the cookie it keeps."""
    c = TestClient(app)
    assert c.get("/healthz").status_code == 200 and COOKIE in c.cookies
    return c


def start(app, step_id: str) -> dict:
    """A toy step's check as the page sends it when the step opens (its starting table and
    view, from GET /api/learn)."""
    step = next(s for s in TestClient(app).get("/api/learn").json()["steps"] if s["id"] == step_id)
    toy = step["toy"]
    view = {k: toy["view"][k] for k in ("layer", "head", "vlayer", "a", "b")}
    table = {k: toy[k] for k in ("tokens", "axes", "embeddings", "config")}
    return {"toy": table, "view": view}


def edited(body: dict, row: int, col: int, value: float) -> dict:
    out = copy.deepcopy(body)
    out["toy"]["embeddings"][row][col] = value
    return out


def check(client: TestClient, step_id: str, body: dict) -> dict:
    r = client.post(f"/api/learn/{step_id}/check", json=body)
    assert r.status_code == 200, r.text
    return {t["id"]: t["done"] for t in r.json()["tasks"]}


def the_class(app) -> dict:
    r = TestClient(app).get("/api/learn/class", headers=AS_OPERATOR)
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "no-store"
    return r.json()


def test_a_check_is_recorded_as_the_server_answered_it(app):
    a = visitor(app)
    assert a.get("/api/learn/progress").json() == {
        "kept": False, "nickname": None, "last": None, "steps": {}, "watched": True,
        "note": None,
    }  # fmt: skip
    body = start(app, "dot-products")
    # The step opens: its starting state is checked, and is no try of the learner's.
    assert check(a, "dot-products", body) == {"apple-to-banana": False}
    got = a.get("/api/learn/progress").json()
    assert got["kept"] and got["last"] == "dot-products"
    assert got["steps"] == {"dot-products": {"done": [], "tried": []}}
    # A change that does not do it: tried, not done; one try is not stuck.
    assert check(a, "dot-products", edited(body, 4, 0, 0.5)) == {"apple-to-banana": False}
    assert a.get("/api/learn/progress").json()["steps"]["dot-products"] == {
        "done": [], "tried": ["apple-to-banana"],
    }  # fmt: skip
    row = the_class(app)["learners"][0]
    assert row["label"] == "Learner 1" and not row["named"]
    assert row["on"] == {"n": 2, "id": "dot-products", "title": STEPS[1].title}
    assert row["done"] == [] and row["stuck"] == []
    # The change that does it (banana's fruit up to 2): done.
    assert check(a, "dot-products", edited(body, 4, 1, 2.0)) == {"apple-to-banana": True}
    row = the_class(app)["learners"][0]
    assert row["done"] == [2] and row["stuck"] == []
    # Done stays done when the table goes back (as in the browser).
    assert check(a, "dot-products", body) == {"apple-to-banana": False}
    assert the_class(app)["learners"][0]["done"] == [2]
    # A view other than the start is a try too (step 7: a head chosen).
    heads = start(app, "heads")
    check(a, "heads", {**heads, "view": {**heads["view"], "head": 1}})
    assert a.get("/api/learn/progress").json()["steps"]["heads"]["tried"] == ["street-head"]


def test_what_is_not_the_servers_answer_is_not_recorded(app):
    a = visitor(app)
    body = start(app, "dot-products")
    # A refused check records nothing; nor does a route take a claim of progress.
    r = a.post("/api/learn/dot-products/check", json={"run": "abc"})
    assert r.status_code == 422
    assert a.get("/api/learn/progress").json()["kept"] is False
    r = a.put("/api/learn/progress/nickname", json={"nickname": "Ada", "steps": {"rnn": {}}})
    assert r.status_code == 422 and r.json()["message"].startswith("steps: Extra inputs")
    # A client that keeps no cookie is a new visitor at every request: nothing kept.
    a.cookies.clear()
    check(a, "dot-products", edited(body, 4, 1, 2.0))
    # Nor for the operator's token, which names no learner.
    check(TestClient(app, headers=AS_OPERATOR), "dot-products", edited(body, 4, 1, 2.0))
    assert the_class(app)["learners"] == []
    r = TestClient(app).put("/api/learn/progress/nickname", json={"nickname": "Ada"})
    assert r.status_code == 200 and r.json()["kept"] is False
    assert "without the cookie" in r.json()["note"]
    assert the_class(app)["learners"] == []


def test_the_step_a_learner_has_open_is_the_one_the_class_sees_them_on(app):
    """Opening a step tells the server (POST /api/learn/{id}/open, 204): the class view's "on
    step N" is the step open, also one with nothing to check yet (a train step with no run),
    and a late check of the step left (an answer still on its way) does not move it back. It
    credits nothing; unknown steps are a 404 naming the field; nothing is kept for a client
    without the cookie, nor for the operator's token."""
    a = visitor(app)
    body = start(app, "dot-products")
    check(a, "dot-products", body)
    check(a, "dot-products", edited(body, 4, 0, 0.5))
    assert the_class(app)["learners"][0]["on"]["n"] == 2
    r = a.post("/api/learn/encoder-decoder/open")
    assert r.status_code == 204 and r.content == b""
    row = the_class(app)["learners"][0]
    assert row["on"] == {"n": 11, "id": "encoder-decoder", "title": BY_ID["encoder-decoder"].title}
    # The check of step 2 the page asked before it left: seen, and the learner still on 11.
    check(a, "dot-products", edited(body, 4, 0, 0.4))
    assert the_class(app)["learners"][0]["on"]["n"] == 11
    # Opened: nothing credited (the progress is the checks' alone).
    got = a.get("/api/learn/progress").json()
    assert got["steps"] == {"dot-products": {"done": [], "tried": ["apple-to-banana"]}}
    assert got["last"] == "dot-products"
    assert a.post("/api/learn/dot-products/open").status_code == 204
    assert the_class(app)["learners"][0]["on"]["n"] == 2
    r = a.post("/api/learn/no-such-step/open")
    assert r.status_code == 404 and r.json()["message"].startswith(
        "step_id: no step 'no-such-step'"
    )
    # A learner who only opened a step is on it, having tried nothing.
    b = visitor(app)
    assert b.post("/api/learn/rnn/open").status_code == 204
    row = next(x for x in the_class(app)["learners"] if x["label"] == "Learner 2")
    assert row["on"]["n"] == 1 and (row["started"], row["looked"]) == (False, False)
    assert (row["done"], row["stuck"]) == ([], [])
    # No cookie, or the operator's token: 204, nothing kept.
    assert TestClient(app).post("/api/learn/rnn/open").status_code == 204
    r = TestClient(app, headers=AS_OPERATOR).post("/api/learn/rnn/open")
    assert r.status_code == 204
    assert len(the_class(app)["learners"]) == 2


def test_a_browser_that_only_opened_someones_link_shows_as_having_tried_nothing(app):
    """A teacher who opens a learner's link in a browser without the token is a visitor like
    any: the class view lists it, and says it has tried nothing of its own (``started`` false)
    and looked at someone else's work (``looked``), never stuck however often it looks."""
    clock = Clock(app)
    body = start(app, "dot-products")
    ada = visitor(app)
    check(ada, "dot-products", edited(body, 4, 1, 2.0))
    teacher = visitor(app)
    teacher.post("/api/learn/dot-products/open")
    for k in range(STUCK_TRIES + 1):
        clock.t += STUCK_S
        check(teacher, "dot-products", {**edited(body, 4, 0, 0.5 - 0.04 * k), "from_link": True})
    rows = {x["label"]: x for x in the_class(app)["learners"]}
    assert (rows["Learner 1"]["started"], rows["Learner 1"]["looked"]) == (True, False)
    assert (rows["Learner 2"]["started"], rows["Learner 2"]["looked"]) == (False, True)
    assert rows["Learner 2"]["stuck"] == [] and rows["Learner 2"]["done"] == []
    # Its own change is its own: then it has started.
    check(teacher, "dot-products", edited(body, 4, 0, 0.3))
    rows = {x["label"]: x for x in the_class(app)["learners"]}
    assert (rows["Learner 2"]["started"], rows["Learner 2"]["looked"]) == (True, True)


class Clock:
    """The class's clock (``Classroom.clock``), moved by the test: each check, look and try
    happens at the time it says, as the server records it."""

    def __init__(self, app, t: float | None = None) -> None:
        self.t = time.time() if t is None else t
        app.state.classroom.clock = self

    def __call__(self) -> float:
        return self.t


def stuck_of(app) -> dict[str, list[dict]]:
    return {r["label"]: r["stuck"] for r in the_class(app)["learners"]}


def test_stuck_is_tries_at_a_task_over_minutes_not_one_wrong_try(app):
    clock = Clock(app)
    t0 = clock.t
    body = start(app, "dot-products")
    # Different states of the lab that do not do the task (banana less fruity each time).
    states = [edited(body, 4, 0, 0.5 - 0.04 * i) for i in range(STUCK_TRIES + 2)]
    ada, bo = visitor(app), visitor(app)

    def at(t: float, who: TestClient, state: dict) -> None:
        clock.t = t0 + t
        assert check(who, "dot-products", state) == {"apple-to-banana": False}

    # Ada: one try short of the rule, over minutes; the same state again is no new try, nor is
    # the step's start.
    for k in range(STUCK_TRIES - 1):
        at(k, ada, states[k])
    # Bo: more tries than the rule asks, within seconds.
    for k in range(STUCK_TRIES + 1):
        at(10 + k, bo, states[k])
    at(STUCK_S + 4, ada, body)
    at(STUCK_S + 5, ada, states[STUCK_TRIES - 2])
    assert stuck_of(app) == {"Learner 1": [], "Learner 2": []}
    shown = the_class(app)
    assert (shown["stuck_tries"], shown["stuck_s"]) == (STUCK_TRIES, STUCK_S)
    # Ada's next different state, STUCK_S after her first: stuck, her tries said.
    at(STUCK_S + 6, ada, states[STUCK_TRIES - 1])
    task = {"prompt": STEPS[1].tasks[0].prompt, "tries": STUCK_TRIES, "first_try": t0,
            "last_try": t0 + STUCK_S + 6}  # fmt: skip
    assert stuck_of(app) == {
        "Learner 1": [{"n": 2, "id": "dot-products", "title": STEPS[1].title, "tasks": [task]}],
        "Learner 2": [],
    }
    # Bo, long after his quick tries: not stuck until he tries again, STUCK_S after his first.
    clock.t = t0 + 10 * STUCK_S
    assert stuck_of(app)["Learner 2"] == []
    at(10 + STUCK_S, bo, states[STUCK_TRIES + 1])
    [row] = stuck_of(app)["Learner 2"]
    assert [(t["tries"], t["first_try"]) for t in row["tasks"]] == [(STUCK_TRIES + 2, t0 + 10)]
    # Done: no longer stuck, whatever the tries.
    clock.t = t0 + 11 * STUCK_S
    assert check(ada, "dot-products", edited(body, 4, 1, 2.0)) == {"apple-to-banana": True}
    rows = {r["label"]: r for r in the_class(app)["learners"]}
    assert (rows["Learner 1"]["stuck"], rows["Learner 1"]["done"]) == ([], [2])


def test_a_try_at_a_task_is_a_change_to_a_part_it_reads(app):
    """Issue 41: a learner who edits only W_V over minutes tries step 6's first task, never its
    second (which reads W_Q and W_K): stuck on the first alone; a W_Q edit is a try at the
    second, and a W_V edit after it no new one."""
    clock = Clock(app)
    t0 = clock.t
    body = start(app, "qkv")
    ada = visitor(app)

    def at(t: float, state: dict) -> None:
        clock.t = t0 + t
        assert check(ada, "qkv", state) == {"quiet-values": False, "determiner-finds-a": False}

    def w(state: dict, m: str, i: int, j: int, value: float) -> dict:
        out = copy.deepcopy(state)
        out["toy"]["config"]["weights"][m][i][j] = value
        return out

    for k in range(STUCK_TRIES):
        at(k * STUCK_S, w(body, "v", 0, 0, 0.5 - 0.1 * k))
    got = ada.get("/api/learn/progress").json()["steps"]["qkv"]
    assert got == {"done": [], "tried": ["quiet-values"]}
    [row] = stuck_of(app)["Learner 1"]
    assert [t["prompt"] for t in row["tasks"]] == [STEPS[5].tasks[0].prompt]
    # W_Q edited: a try at the second task; W_V edits after it are no more tries at it.
    q = w(body, "q", 2, 2, 1.0)
    for k in range(STUCK_TRIES):
        at((STUCK_TRIES + k) * STUCK_S, w(q, "v", 0, 0, 0.2 - 0.1 * k))
    got = ada.get("/api/learn/progress").json()["steps"]["qkv"]
    assert got == {"done": [], "tried": ["quiet-values", "determiner-finds-a"]}
    [row] = stuck_of(app)["Learner 1"]
    assert [t["prompt"] for t in row["tasks"]] == [STEPS[5].tasks[0].prompt]


def test_a_links_state_is_seen_and_only_the_learners_own_change_is_credited(app):
    clock = Clock(app)
    body = start(app, "dot-products")
    solved = edited(body, 4, 1, 2.0)  # Ada's lab, as the link she shared carries it
    bo = visitor(app)
    # Bo opens it: the check is answered as any (done), and credits him nothing.
    assert check(bo, "dot-products", {**solved, "from_link": True}) == {"apple-to-banana": True}
    got = bo.get("/api/learn/progress").json()
    assert got["kept"] and got["last"] == "dot-products"
    assert got["steps"] == {"dot-products": {"done": [], "tried": []}}
    # Links of states not done, checked over minutes: no try, so never stuck.
    for k in range(STUCK_TRIES + 1):
        clock.t += STUCK_S
        unsolved = {**edited(body, 4, 0, 0.5 - 0.04 * k), "from_link": True}
        assert check(bo, "dot-products", unsolved) == {"apple-to-banana": False}
    row = the_class(app)["learners"][0]
    assert (row["done"], row["stuck"]) == ([], [])
    assert row["on"] == {"n": 2, "id": "dot-products", "title": STEPS[1].title}
    # His own change to the link's state (more fruit still) is his: credited.
    assert check(bo, "dot-products", edited(solved, 4, 1, 3.0)) == {"apple-to-banana": True}
    assert bo.get("/api/learn/progress").json()["steps"]["dot-products"] == {
        "done": ["apple-to-banana"], "tried": ["apple-to-banana"],
    }  # fmt: skip
    assert the_class(app)["learners"][0]["done"] == [2]


def test_a_shared_links_verdict_is_answered_counted_for_no_one_and_says_whose(app):
    """Issue 41: Ada's step 2, done, as her link carries it. Bo's check of it, from_link, is
    answered (done, with the engine's words) and says so: not credited, whose lab it is and what
    makes it his (``seen``); his progress and the class view agree that he has done and tried
    nothing. His own change that still passes is his: credited, no ``seen``, and all three say
    done. A from_link that is not a boolean is a 422 naming it, as ever."""
    solved = edited(start(app, "dot-products"), 4, 1, 2.0)
    bo = visitor(app)
    r = bo.post("/api/learn/dot-products/check", json={**solved, "from_link": True})
    assert r.status_code == 200, r.text
    shown = r.json()
    assert [(t["id"], t["done"], t["tried"]) for t in shown["tasks"]] == [
        ("apple-to-banana", True, True)
    ]
    assert shown["credited"] is False and shown["seen"] == service.SEEN_LAB
    assert "count it as yours" in shown["seen"] and "start this step again" in shown["seen"]
    assert bo.get("/api/learn/progress").json()["steps"] == {
        "dot-products": {"done": [], "tried": []}
    }
    [row] = the_class(app)["learners"]
    assert (row["done"], row["started"], row["looked"]) == ([], False, True)
    # The same lab, not from a link (his own, had he made it): the same verdict, credited.
    mine = edited(solved, 4, 1, 3.0)  # his change: banana's fruit up to 3, still done
    r = bo.post("/api/learn/dot-products/check", json=mine)
    assert r.status_code == 200, r.text
    own = r.json()
    assert [t["done"] for t in own["tasks"]] == [True]
    assert own["credited"] is True and own["seen"] is None
    assert bo.get("/api/learn/progress").json()["steps"]["dot-products"]["done"] == [
        "apple-to-banana"
    ]
    [row] = the_class(app)["learners"]
    assert (row["done"], row["started"]) == ([2], True)
    # The step's untouched start is no one's work either, but no one else's: nothing to say.
    r = visitor(app).post("/api/learn/dot-products/check", json=start(app, "dot-products"))
    assert r.status_code == 200 and (r.json()["credited"], r.json()["seen"]) == (False, None)
    # Bad input stays a 422 naming the field.
    r = bo.post("/api/learn/dot-products/check", json={**solved, "from_link": "yes please"})
    assert r.status_code == 422 and "from_link" in r.json()["message"], r.text


def test_a_run_counts_for_the_visitor_who_started_it(tmp_path):
    """Another learner's run (a Learn link to it) is seen; its owner's check of it credited."""
    app = make_app(tmp_path, admin_token=OPERATOR)
    step = BY_ID["induction"]
    with (
        served(app) as url,
        httpx.Client(base_url=url, timeout=60) as ada,
        httpx.Client(base_url=url, timeout=60) as bo,
    ):
        for c in (ada, bo):
            assert c.get("/healthz").status_code == 200 and COOKIE in c.cookies
        r = ada.post("/api/train", json={"task": "induction", "opt": {"steps": 20},
                                         "arch": {"layers": 2, "heads": 2, "d_model": 16}})  # fmt: skip
        assert r.status_code == 202, r.text
        run = r.json()["id"]
        while ada.get(f"/api/train/{run}").json()["state"] in ("queued", "running"):
            time.sleep(0.05)
        body = {"run": run, "view": {"variant": 0, "layer": 0, "head": 1}}
        answers = {}
        for who, c in (("bo", bo), ("ada", ada)):
            r = c.post(f"/api/learn/{step.id}/check", json=body)
            assert r.status_code == 200, r.text
            answers[who] = r.json()
        # The same answer for both, credited to the run's owner only; Bo's says whose it is.
        assert answers["bo"].pop("credited") is False and answers["ada"].pop("credited") is True
        assert answers["bo"].pop("seen") == service.SEEN_RUN
        assert answers["ada"].pop("seen") is None
        assert answers["bo"] == answers["ada"]
        done = [t["id"] for t in answers["ada"]["tasks"] if t["done"]]
        assert bo.get("/api/learn/progress").json()["steps"] == {step.id: {"done": [], "tried": []}}
        assert ada.get("/api/learn/progress").json()["steps"] == {
            step.id: {"done": done, "tried": [t.id for t in step.tasks]}
        }
        # The class sees Bo (who checked first: Learner 1) as one who looked at another's run
        # and tried nothing of his own.
        rows = {x["label"]: x for x in the_class(app)["learners"]}
        assert (rows["Learner 1"]["started"], rows["Learner 1"]["looked"]) == (False, True)
        assert (rows["Learner 2"]["started"], rows["Learner 2"]["looked"]) == (True, False)


def test_the_operators_own_browser_is_no_learner_of_the_class(app):
    browser = visitor(app)
    body = start(app, "dot-products")
    # Before it holds the token, a browser like any other: a learner.
    check(browser, "dot-products", edited(body, 4, 0, 0.5))
    # The tab that opened the class sends the token with its checks: nothing kept for them.
    scaling = start(app, "scaling")
    r = browser.post("/api/learn/scaling/check", headers=AS_OPERATOR,
                     json={**scaling, "toy": {**scaling["toy"], "config": {
                         **scaling["toy"]["config"], "scale": False}}})  # fmt: skip
    assert r.status_code == 200 and all(t["done"] for t in r.json()["tasks"]), r.text
    other = visitor(app)
    check(other, "dot-products", edited(body, 4, 1, 2.0))
    # Its own class view leaves it out, even for what it did before; another's shows it as
    # it was before the token.
    r = browser.get("/api/learn/class", headers=AS_OPERATOR)
    assert r.status_code == 200 and [x["label"] for x in r.json()["learners"]] == ["Learner 2"]
    rows = {x["label"]: x for x in the_class(app)["learners"]}
    assert rows["Learner 1"]["on"]["id"] == "dot-products" and rows["Learner 1"]["done"] == []
    assert rows["Learner 2"]["done"] == [2]


@pytest.mark.parametrize(
    ("nickname", "rule"),
    [
        ("x" * (LIMITS.max_nickname_chars + 1),
         f"nickname: {LIMITS.max_nickname_chars + 1} characters is over the cap of "
         f"{LIMITS.max_nickname_chars} (LIMITS.max_nickname_chars)"),
        ("Ada\u0007", "nickname: U+0007 is a control or format character"),
        ("Ada\nLovelace", "nickname: U+000A is a control or format character"),
        ("\u202eadA", "nickname: U+202E is a control or format character"),
        ("learner  3", "nickname: 'learner 3' is how the class view names a learner"),
        (7, "nickname: Input should be a valid string"),
    ],
)  # fmt: skip
def test_a_nickname_breaking_a_rule_is_a_422_naming_it(app, nickname, rule):
    r = visitor(app).put("/api/learn/progress/nickname", json={"nickname": nickname})
    assert r.status_code == 422, r.text
    assert r.json()["message"].startswith(rule), r.json()
    assert r.json()["detail"][0]["loc"] == ["body", "nickname"]


def test_a_nickname_is_trimmed_kept_shown_and_cleared(app):
    a = visitor(app)
    longest = "É" * LIMITS.max_nickname_chars
    r = a.put("/api/learn/progress/nickname", json={"nickname": longest})
    assert r.status_code == 200 and r.json()["nickname"] == longest
    r = a.put("/api/learn/progress/nickname", json={"nickname": "  Ada   Lovelace "})
    assert r.json()["nickname"] == "Ada Lovelace" and r.json()["kept"]
    row = the_class(app)["learners"][0]
    assert row["label"] == "Ada Lovelace" and row["named"] and row["on"] is None
    for blank in ("   ", None):
        r = a.put("/api/learn/progress/nickname", json={"nickname": blank})
        assert r.status_code == 200 and r.json()["nickname"] is None
    assert the_class(app)["learners"][0]["label"] == "Learner 1"


@pytest.mark.slow
def test_the_openapi_schema_states_the_rule_of_a_nickname(app):
    """The schema's pattern for a nickname (what a client's validator and the fuzzer read)
    agrees with the server's rule on every character, alone and after 'Learner ' (where a
    space or a digit makes the name the class view gives); lone surrogates, which no pattern can name, are the server's alone to
    refuse."""
    import re

    import jsonschema_rs
    from pydantic import ValidationError

    from attnviz.schemas.learn import LearnNickname

    schema = TestClient(app).get("/openapi.json").json()["components"]["schemas"]
    valid = jsonschema_rs.validator_for(schema["LearnNickname"]["properties"]["nickname"]).is_valid

    def accepted(nickname: str) -> bool:
        try:
            LearnNickname(nickname=nickname)
        except ValidationError:
            return False
        return True

    assert valid("Ada Lovelace") and valid(None) and valid("  ") and not valid(" learner 7 ")
    # The pattern spells "learner" in either case: no other character is one of its letters.
    letters = [c for i in range(0x110000) if re.fullmatch("[learner]", c := chr(i), re.I)]
    assert sorted(letters) == sorted(set("learnerLEARNER"))
    for i in range(0x110000):
        if 0xD800 <= i <= 0xDFFF:
            continue
        c = chr(i)
        for nickname in (c, f"Learner {c}{c}"):
            assert valid(nickname) == accepted(nickname), (hex(i), nickname)


def test_the_class_is_the_operators_alone(app, tmp_path):
    a = visitor(app)
    check(a, "dot-products", edited(start(app, "dot-products"), 4, 0, 0.5))
    token = a.cookies[COOKIE]  # the signed value: as a bearer token, the same visitor
    cases = {
        "a learner": a,
        "a learner's own token": TestClient(app, headers={"Authorization": f"Bearer {token}"}),
        "a wrong token": TestClient(app, headers={"Authorization": "Bearer not-the-token"}),
        "no one": TestClient(app),
    }
    for who, client in cases.items():
        r = client.get("/api/learn/class")
        assert r.status_code == 403, who
        assert r.json()["message"].startswith(
            "class: only this server's operator, with their token (Authorization: Bearer), "
            "sees the class; a learner's own progress is at GET /api/learn/progress"
        ), who
        assert "ATTNVIZ_" not in r.json()["message"], who
        assert "Learner" not in r.text
    # The operator's: no visitor's id, no cookie, no token anywhere in it.
    r = TestClient(app).get("/api/learn/class", headers=AS_OPERATOR)
    assert r.status_code == 200 and len(r.json()["learners"]) == 1
    visitor_id = token.rsplit(".", 1)[0]
    for secret in (token, visitor_id):
        assert secret not in r.text
    # A server with no operator: no one sees it, and it says why.
    lone = make_app(tmp_path / "lone")
    r = visitor(lone).get("/api/learn/class")
    assert r.status_code == 403 and "its host set no token" in r.json()["message"]
    assert "ATTNVIZ_" not in r.json()["message"]
    assert visitor(lone).get("/api/learn/progress").json()["watched"] is False


def test_learners_past_the_cap_are_forgotten_least_recently_seen_first(tmp_path):
    app = make_app(tmp_path, admin_token=OPERATOR, learn_max_learners=3)
    body = edited(start(app, "dot-products"), 4, 0, 0.5)
    clients = [visitor(app) for _ in range(4)]
    for i, c in enumerate(clients[:3]):
        c.put("/api/learn/progress/nickname", json={"nickname": f"Pupil {i}"})
    check(clients[0], "dot-products", body)  # Pupil 0 is seen again: Pupil 1 is the oldest
    check(clients[3], "dot-products", body)
    labels = [r["label"] for r in the_class(app)["learners"]]
    assert labels == ["Learner 4", "Pupil 0", "Pupil 2"]
    assert the_class(app)["max_learners"] == 3
    assert clients[1].get("/api/learn/progress").json()["kept"] is False


def test_one_learners_record_is_within_its_cap_with_every_task_and_the_longest_name():
    every = {"last": STEPS[-1].id, "open": STEPS[-1].id, "looked": True, "steps": {
        s.id: {"done": [t.id for t in s.tasks], "tried": [t.id for t in s.tasks]} for s in STEPS
    }}  # fmt: skip
    widest = "\U0001f600" * LIMITS.max_nickname_chars  # 4 bytes each in UTF-8
    assert record_bytes(widest, every) < LIMITS.max_learner_bytes / 4


def test_the_progress_survives_a_restart(tmp_path):
    first = make_app(tmp_path, admin_token=OPERATOR)
    a = visitor(first)
    a.put("/api/learn/progress/nickname", json={"nickname": "Ada"})
    check(a, "dot-products", edited(start(first, "dot-products"), 4, 1, 2.0))
    before = a.get("/api/learn/progress").json()
    seen = the_class(first)["learners"]
    # A new app over the same data directory (its secret kept there: the cookie still holds).
    again = make_app(tmp_path, admin_token=OPERATOR)
    b = TestClient(again, cookies={COOKIE: a.cookies[COOKIE]})
    assert b.get("/api/learn/progress").json() == before
    after = the_class(again)["learners"]
    assert [(r["label"], r["done"], r["on"]) for r in after] == [
        (r["label"], r["done"], r["on"]) for r in seen
    ]
    assert after[0]["label"] == "Ada" and after[0]["done"] == [2]


def user_version(path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("PRAGMA user_version").fetchone()[0]


def test_a_file_of_no_version_is_migrated_and_a_newer_one_left_as_it_is(tmp_path):
    # Version 0: a file that has no table yet (another process made it and stopped).
    (tmp_path / "old").mkdir()
    with sqlite3.connect(tmp_path / "old" / FILE) as conn:
        conn.execute("CREATE TABLE notes (note TEXT)")
    conn.close()
    assert user_version(tmp_path / "old" / FILE) == 0
    app = make_app(tmp_path / "old", admin_token=OPERATOR)
    a = visitor(app)
    check(a, "dot-products", edited(start(app, "dot-products"), 4, 1, 2.0))
    assert user_version(tmp_path / "old" / FILE) == VERSION
    assert the_class(app)["learners"][0]["done"] == [2]
    # A newer attnviz's file: left exactly as it is; checks answered; nothing kept, and said.
    newer = tmp_path / "newer"
    newer.mkdir()
    with sqlite3.connect(newer / FILE) as conn:
        conn.execute("CREATE TABLE learners (who TEXT, what TEXT)")
        conn.execute("INSERT INTO learners VALUES ('someone', 'something')")
        conn.execute(f"PRAGMA user_version = {VERSION + 1}")
    conn.close()
    was = (newer / FILE).read_bytes()
    app = make_app(newer, admin_token=OPERATOR)
    a = visitor(app)
    assert check(a, "dot-products", edited(start(app, "dot-products"), 4, 1, 2.0))
    got = a.get("/api/learn/progress").json()
    assert got["kept"] is False and "written by a newer attnviz" in got["note"]
    shown = the_class(app)
    assert shown["learners"] == [] and "written by a newer attnviz" in shown["note"]
    assert str(newer) not in shown["note"]
    r = a.put("/api/learn/progress/nickname", json={"nickname": "Ada"})
    assert r.status_code == 503 and r.json()["message"].startswith("nickname: not kept")
    assert (newer / FILE).read_bytes() == was
    assert user_version(newer / FILE) == VERSION + 1


def test_a_version_1_file_is_migrated_each_task_tried_and_not_done_one_try(tmp_path):
    settings = Settings(device="cpu", builtin_model=False, data_dir=tmp_path,
                        admin_token=OPERATOR)  # fmt: skip
    seen = time.time() - 3600
    conn = sqlite3.connect(tmp_path / FILE, isolation_level=None)
    migrate(conn, MIGRATIONS[:1])  # the file as version 1 wrote it
    ada = {"last": "qkv", "steps": {
        "qkv": {"done": ["quiet-values"], "tried": ["quiet-values", "determiner-finds-a"]},
        "dot-products": {"done": [], "tried": ["apple-to-banana"]},
        "scaling": {"done": [], "tried": []},
    }}  # fmt: skip
    odd = {"steps": {"qkv": "x", "scaling": {"tried": [7, "unscaled-one-hot"], "done": "y"}}}
    for visitor_id, progress in (("ada", json.dumps(ada)), ("odd", json.dumps(odd)),
                                 ("broken", "{not json")):  # fmt: skip
        conn.execute(
            "INSERT INTO learners (visitor, nickname, first_seen, last_seen, progress) "
            "VALUES (?, ?, ?, ?, ?)",
            (visitor_id, "Ada" if visitor_id == "ada" else None, seen - 60, seen, progress),
        )
    conn.close()
    assert user_version(tmp_path / FILE) == 1
    app = create_app(settings)
    clock = Clock(app, seen)
    rows = {r["label"]: r for r in the_class(app)["learners"]}
    assert user_version(tmp_path / FILE) == VERSION
    assert rows["Ada"]["on"]["id"] == "qkv" and rows["Ada"]["done"] == []
    assert all(r["stuck"] == [] for r in rows.values())  # one try each, as far as v1 knew
    with sqlite3.connect(tmp_path / FILE) as conn:
        tries = conn.execute(
            "SELECT l.visitor, t.step, t.task, t.tries, t.first_try, t.last_try "
            "FROM tries AS t JOIN learners AS l ON l.n = t.learner ORDER BY 1, 2, 3"
        ).fetchall()
    conn.close()
    assert tries == [
        ("ada", "dot-products", "apple-to-banana", 1, seen, seen),
        ("ada", "qkv", "determiner-finds-a", 1, seen, seen),
        ("odd", "scaling", "unscaled-one-hot", 1, seen, seen),
    ]
    # Ada comes back (the same cookie): her tries go on from the one v1 knew.
    cookie = Visitors(app, server_secret(settings)).sign("ada")
    back = TestClient(app, cookies={COOKIE: cookie})
    body = start(app, "dot-products")
    for k in range(1, STUCK_TRIES):
        clock.t = seen + STUCK_S * k
        assert check(back, "dot-products", edited(body, 4, 0, 0.5 - 0.04 * k)) == {
            "apple-to-banana": False
        }
    [stuck] = {r["label"]: r for r in the_class(app)["learners"]}["Ada"]["stuck"]
    assert [(t["tries"], t["first_try"]) for t in stuck["tasks"]] == [(STUCK_TRIES, seen)]
