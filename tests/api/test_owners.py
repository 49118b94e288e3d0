"""Two visitors over real HTTP (two cookie jars), and the operator: a run and a comparison are
their starter's (only they, or the operator, cancel; anyone else gets the 404 of a run that does
not exist), their link is a capability (B reads A's run by its id, and then has it listed, but
without cancel), the lists show a visitor its own, the opened and the shared runs; the cookie
(signed, HttpOnly, SameSite=Strict, Secure over https), a forged or tampered one (a new visitor,
never an error), the secret kept in the data directory, and the bearer token a start answers."""

from __future__ import annotations

import http.cookies
import io
import json
import re
import stat
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from fastapi.testclient import TestClient

from attnviz.api.visitor import COOKIE
from attnviz.app import create_app
from attnviz.services.datadir import SECRET_FILE
from attnviz.settings import Settings
from tests.api.test_recurrent import small
from tests.support.servers import served
from tests.support.waits import until

TINY = {"layers": 2, "heads": 2, "d_model": 16}
OPERATOR = "the-operators-token-for-this-test"
UNKNOWN = "f" * 32  # an id of the right shape that no run has


def make_app(tmp_path, **settings):
    from attnviz.services.recurrent import RecurrentService

    s = Settings(device="cpu", builtin_model=False, data_dir=tmp_path, admin_token=OPERATOR,
                 train_slots=2, **settings)  # fmt: skip
    app = create_app(s)
    app.state.recurrent = RecurrentService(s, small(steps=2000))
    return app


@contextmanager
def visitors(app, n: int = 3) -> Iterator[tuple[str, list[httpx.Client], httpx.Client]]:
    """The app served, ``n`` visitors (each its own cookie jar) and the operator."""
    with served(app) as url:
        clients = [httpx.Client(base_url=url, timeout=60) for _ in range(n)]
        op = httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {OPERATOR}"})
        try:
            for c in clients:
                assert c.get("/healthz").status_code == 200 and COOKIE in c.cookies
            yield url, clients, op
        finally:
            for c in [*clients, op]:
                c.close()


def set_cookie(r: httpx.Response) -> http.cookies.Morsel | None:
    values = r.headers.get_list("set-cookie")
    if not values:
        return None
    jar: http.cookies.SimpleCookie = http.cookies.SimpleCookie()
    jar.load(values[0])
    return jar[COOKIE]


def listed(client: httpx.Client) -> dict[str, dict]:
    return {r["id"]: r for r in client.get("/api/train").json()["runs"]}


def models(client: httpx.Client) -> list[str]:
    return [m["name"] for m in client.get("/api/models").json()["models"]]


def first_event(client: httpx.Client, run_id: str) -> tuple[str, str]:
    """The first event of the run's stream (its state), then the stream is let go."""
    with client.stream("GET", f"/api/train/{run_id}/events") as r:
        assert r.status_code == 200
        fields: dict[str, str] = {}
        for line in r.iter_lines():
            if not line:
                if fields:
                    return fields["event"], fields["data"]
                continue
            key, _, value = line.partition(": ")
            fields[key] = value
    raise AssertionError("no event")


def ended(client: httpx.Client, path: str) -> dict:
    return until(lambda: client.get(path).json(), lambda s: s["state"] != "running", "its end")


@pytest.mark.slow
def test_b_cannot_cancel_or_list_as_run_but_opens_it_and_the_operator_shares_it(tmp_path):
    with visitors(make_app(tmp_path)) as (_, (a, b, c), op):
        r = a.post("/api/train", json={"arch": TINY, "opt": {"steps": 5000}, "checkpoints": 2})
        assert r.status_code == 202, r.text
        run = r.json()["id"]
        assert len(run) == 32 and int(run, 16) >= 0  # 128 bits, hex: unguessable
        until(lambda: a.get(f"/api/train/{run}").json()["variants"][0]["history"]["step"],
              bool, "its first step", 0.02)  # fmt: skip
        # B cannot cancel it: the very 404 of a run that does not exist.
        unknown = b.delete(f"/api/train/{UNKNOWN}")
        refused = b.delete(f"/api/train/{run}")
        assert refused.status_code == unknown.status_code == 404
        assert refused.json()["message"] == unknown.json()["message"].replace(UNKNOWN, run)
        assert b.post(f"/api/train/{run}/share").status_code == 404  # nor share it
        assert b.post(f"/api/train/{run}/share").json() == refused.json()
        # ... and it is still training; B's and C's lists do not show it.
        assert a.get(f"/api/train/{run}").json()["state"] == "running"
        assert listed(b) == {} and listed(c) == {}
        assert list(listed(a)) == [run] and listed(a)[run]["can_cancel"] is True
        assert listed(a)[run]["yours"] is True and listed(a)[run]["shared"] is False
        # B opens it by its link: it reads it (not B's to cancel), its events too.
        state = b.get(f"/api/train/{run}").json()
        assert state["id"] == run and state["state"] == "running"
        assert (state["yours"], state["can_cancel"], state["shared"]) == (False, False, False)
        mine = a.get(f"/api/train/{run}").json()
        assert (mine["yours"], mine["can_cancel"]) == (True, True)
        name, data = first_event(b, run)
        assert name == "state" and json.loads(data)["can_cancel"] is False
        assert json.loads(first_event(a, run)[1])["can_cancel"] is True
        # Now B has it listed, without cancel; C still has nothing.
        assert list(listed(b)) == [run] and listed(b)[run]["can_cancel"] is False
        assert listed(c) == {}
        # A cancels it (A's own): it keeps its model.
        assert a.delete(f"/api/train/{run}").status_code == 200
        state = ended(b, f"/api/train/{run}")
        assert state["state"] == "cancelled" and state["variants"][0]["model"] == run
        # B opened it: its model is in B's model list, and B downloads it; C sees neither.
        assert models(b) == [run] and models(c) == [] and models(a) == [run]
        z = b.get(f"/api/train/{run}/model.zip")
        assert z.status_code == 200
        assert f"{run}/config.json" in zipfile.ZipFile(io.BytesIO(z.content)).namelist()
        assert b.get(f"/api/train/{run}/export").status_code == 200
        # A trace of it works for whoever has the name (its id).
        trace = c.post("/api/trace?fields=attentions", json={"model": run, "text": "abcab"})
        assert trace.status_code == 200
        # A link to its model in sentence mode asks the list for it: a fresh visitor D then has
        # it (and its run, remembered as opened); an unknown name adds nothing.
        with httpx.Client(base_url=a.base_url, timeout=60) as d:
            assert [m["name"] for m in d.get("/api/models?open=nope").json()["models"]] == []
            opened = d.get("/api/models", params={"open": run}).json()["models"]
            assert [m["name"] for m in opened] == [run] and models(d) == [run]
            assert listed(d)[run]["can_cancel"] is False
        # An unknown model's message names no run's model (their names are capabilities).
        gone = c.post("/api/trace", json={"model": "nope", "text": "abc"})
        assert gone.status_code == 404 and run not in gone.json()["message"]
        # The operator lists every run, shares this one: then C has it, as a run and a model.
        assert list(listed(op)) == [run] and listed(op)[run]["can_cancel"] is True
        shared = op.post(f"/api/train/{run}/share")
        assert shared.status_code == 200 and shared.json()["shared"] is True
        assert models(c) == [run] and listed(c)[run]["shared"] is True
        assert listed(c)[run]["can_cancel"] is False
        assert c.delete(f"/api/train/{run}").status_code == 404  # shared is not C's to cancel
        assert op.post(f"/api/train/{UNKNOWN}/share").status_code == 404
        # The operator cancels any run: this one, ended, is forgotten with its model.
        assert op.delete(f"/api/train/{run}").status_code == 200
        assert a.get(f"/api/train/{run}").status_code == 404 and models(c) == []


@pytest.mark.slow
def test_the_operator_cancels_a_running_run_and_its_token_is_compared_whole(tmp_path):
    with visitors(make_app(tmp_path), n=1) as (url, (a,), op):
        run = a.post("/api/train", json={"arch": TINY, "opt": {"steps": 5000}}).json()["id"]
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {OPERATOR}x"}, timeout=60
        ) as near:
            assert near.delete(f"/api/train/{run}").status_code == 404
            assert listed(near) == {}
        r = op.delete(f"/api/train/{run}")
        assert r.status_code == 200 and r.json()["yours"] is False
        assert ended(a, f"/api/train/{run}")["reason"] == "cancelled"


@pytest.mark.slow
def test_without_an_admin_token_there_is_no_operator(tmp_path):
    app = create_app(Settings(device="cpu", builtin_model=False, data_dir=tmp_path))
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as a:
        run = a.post("/api/train", json={"arch": TINY, "opt": {"steps": 5000}}).json()["id"]
        for header in ("Bearer", "Bearer none", f"Bearer {OPERATOR}"):
            with httpx.Client(base_url=url, headers={"Authorization": header}, timeout=60) as empty:
                assert empty.delete(f"/api/train/{run}").status_code == 404
                assert empty.post(f"/api/train/{run}/share").status_code == 404
        assert a.delete(f"/api/train/{run}").status_code == 200


@pytest.mark.slow
def test_the_bearer_token_a_start_answers_is_its_visitor(tmp_path):
    with visitors(make_app(tmp_path), n=1) as (url, (a,), _):
        r = a.post("/api/train", json={"arch": TINY, "opt": {"steps": 5000}})
        run, token = r.json()["id"], r.json()["token"]
        assert token == a.cookies[COOKIE]  # the signed visitor value itself
        # A client that keeps no cookie of A's: with the token it is A.
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60
        ) as api:
            assert listed(api)[run]["yours"] is True
            assert api.delete(f"/api/train/{run}").status_code == 200
        # A token broken by one character is no one's: a new visitor, who gets 404. (Not its
        # last character: in base64 that one carries bits no byte holds, and a change to those
        # alone reads back as the same signature.)
        k = len(token) - 5
        broken = token[:k] + ("A" if token[k] != "A" else "B") + token[k + 1 :]
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {broken}"}, timeout=60
        ) as other:
            assert listed(other) == {}
            assert other.delete(f"/api/train/{run}").status_code == 404
        assert ended(a, f"/api/train/{run}")["state"] == "cancelled"


@pytest.mark.slow
def test_a_forged_or_tampered_cookie_is_a_new_visitor_not_an_error(tmp_path):
    with visitors(make_app(tmp_path), n=1) as (url, (a,), _):
        run = a.post("/api/train", json={"arch": TINY, "opt": {"steps": 3}}).json()["id"]
        real = a.cookies[COOKIE]
        visitor, _, signature = real.rpartition(".")
        flipped = ("B" if visitor[0] == "A" else "A") + visitor[1:]
        other = create_app(Settings(device="cpu", builtin_model=False, data_dir=tmp_path / "x"))
        with TestClient(other) as elsewhere:
            foreign = elsewhere.get("/healthz").cookies[COOKIE]  # signed with another secret
        for value in ("forged", "", f"{flipped}.{signature}", f"{visitor}.{signature[::-1]}",
                      f"{real}x", foreign, "a.b.c", "é"):  # fmt: skip
            raw = http.cookies.SimpleCookie()
            raw[COOKIE] = value
            header = raw.output(header="", attrs=[]).strip()
            for path in ("/api/train", "/", "/api/models"):
                r = httpx.get(f"{url}{path}", headers={"Cookie": header}, timeout=60)
                assert r.status_code == 200, (value, path, r.text)
                fresh = set_cookie(r)
                assert fresh is not None and fresh.value not in (value, real), (value, path)
            assert (
                httpx.get(f"{url}/api/train", headers={"Cookie": header}, timeout=60).json()["runs"]
                == []
            )
        # The real one is A still: no new cookie, and its run.
        r = httpx.get(f"{url}/api/train", cookies={COOKIE: real}, timeout=60)
        assert set_cookie(r) is None and [x["id"] for x in r.json()["runs"]] == [run]


@pytest.mark.slow
def test_the_cookie_is_httponly_samesite_strict_and_secure_only_over_https(tmp_path):
    app = make_app(tmp_path)
    with served(app) as url:
        plain = set_cookie(httpx.get(f"{url}/", timeout=60))
        assert plain is not None and len(plain.value) > 22  # 128 bits and a signature
        assert plain["httponly"] and plain["samesite"] == "Strict" and plain["path"] == "/"
        assert not plain["secure"] and int(plain["max-age"]) > 30 * 24 * 3600
        proxied = set_cookie(
            httpx.get(f"{url}/api/train", headers={"X-Forwarded-Proto": "https"}, timeout=60)
        )
        assert proxied is not None and proxied["secure"] and proxied["httponly"]
        assert proxied["samesite"] == "Strict"
        # Two visitors are two ids.
        assert proxied.value != plain.value
        # A cross-site navigation comes without the (Strict) cookie: none is set over it.
        assert (
            set_cookie(httpx.get(f"{url}/", headers={"Sec-Fetch-Site": "cross-site"}, timeout=60))
            is None
        )
        # Nor on the static files, which caches keep.
        page = httpx.get(f"{url}/", timeout=60).text
        asset = re.search(r'"(/static/[^"]+)"', page)
        assert asset and set_cookie(httpx.get(f"{url}{asset.group(1)}", timeout=60)) is None
    with TestClient(app, base_url="https://testserver") as tls:
        secure = set_cookie(tls.get("/healthz"))
        assert secure is not None and secure["secure"] and secure["samesite"] == "Strict"


def test_the_secret_is_generated_once_kept_0600_and_read_by_the_next_server(tmp_path):
    first = make_app(tmp_path)
    secret = tmp_path / SECRET_FILE
    assert secret.is_file() and stat.S_IMODE(secret.stat().st_mode) == 0o600
    kept = secret.read_bytes()
    assert len(kept) >= 32 and [p.name for p in tmp_path.iterdir()] == [SECRET_FILE]
    with TestClient(first) as a:
        cookie = a.get("/healthz").cookies[COOKIE]
    # A second server on the same data directory: the same secret, so the same visitor.
    with TestClient(make_app(tmp_path)) as again:
        r = again.get("/api/train", headers={"Cookie": f"{COOKIE}={cookie}"})
        assert r.status_code == 200 and set_cookie(r) is None
    assert secret.read_bytes() == kept
    # ATTNVIZ_SECRET wins, and nothing is written then.
    given = tmp_path / "given"
    app = create_app(Settings(device="cpu", builtin_model=False, data_dir=given,
                              secret="a secret shared by the replicas"))  # fmt: skip
    assert not given.exists()
    with TestClient(app) as c:
        assert set_cookie(c.get("/api/train", headers={"Cookie": f"{COOKIE}={cookie}"}))


@pytest.mark.slow
def test_a_comparison_is_its_starters_to_cancel_and_anyones_to_read(tmp_path):
    with visitors(make_app(tmp_path)) as (url, (a, b, _), op):
        r = a.post("/api/recurrent", json={"task": "copy"})
        assert r.status_code == 202, r.text
        started = r.json()
        run, token = started["id"], started["token"]
        assert len(run) == 32 and token == a.cookies[COOKIE]
        assert (started["yours"], started["can_cancel"]) == (True, True)
        unknown = b.delete(f"/api/recurrent/{UNKNOWN}")
        refused = b.delete(f"/api/recurrent/{run}")
        assert refused.status_code == unknown.status_code == 404
        assert refused.json()["message"] == unknown.json()["message"].replace(UNKNOWN, run)
        seen = b.get(f"/api/recurrent/{run}").json()
        assert seen["id"] == run and (seen["yours"], seen["can_cancel"]) == (False, False)
        assert seen["token"] is None  # a read carries no token
        assert a.get(f"/api/recurrent/{run}").json()["can_cancel"] is True
        assert op.get(f"/api/recurrent/{run}").json()["can_cancel"] is True
        # Its starter's bearer token cancels it, from a client with no cookie of A's.
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60
        ) as api:
            assert api.delete(f"/api/recurrent/{run}").status_code == 200
        state = ended(b, f"/api/recurrent/{run}")
        assert state["state"] == "cancelled" and state["reason"] == "cancelled"
        # The operator cancels (forgets) any: B's own, ended.
        mine = b.post("/api/recurrent", json={"task": "copy"}).json()["id"]
        assert a.delete(f"/api/recurrent/{mine}").status_code == 404
        assert op.delete(f"/api/recurrent/{mine}").status_code == 200
        ended(b, f"/api/recurrent/{mine}")
        assert op.delete(f"/api/recurrent/{mine}").status_code == 200  # ended: forgotten
        assert b.get(f"/api/recurrent/{mine}").status_code == 404
