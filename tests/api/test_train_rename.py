"""Renaming a training run over real HTTP (PATCH /api/train/{id}): its owner and the operator
may, anyone else gets the 404 of a run that does not exist; the name is trimmed, capped and
free of control characters (else a 422 naming the field and the rule); the run, the runs list
and its models are named by it from then on, across a restart and on another replica that
shares the data directory; null gives back the name of what it trains."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.limits import LIMITS
from attnviz.settings import Settings
from tests.api.test_train import wait
from tests.support.servers import served

TINY = {"layers": 2, "heads": 2, "d_model": 16}
OPERATOR = "the-operators-token-for-this-test"
UNKNOWN = "f" * 32  # an id of the right shape that no run has
CAP = LIMITS.max_run_title_chars


def make_app(data_dir, **settings):
    return create_app(Settings(device="cpu", builtin_model=False, data_dir=data_dir,
                               admin_token=OPERATOR, **settings))  # fmt: skip


def train(client, **opt) -> str:
    r = client.post("/api/train", json={"arch": TINY, "opt": opt, "checkpoints": 2})
    assert r.status_code == 202, r.text
    return r.json()["id"]


def ended(client, run_id: str) -> dict:
    return wait(client, run_id)  # the run's end, as tests/api/test_train.py waits for it


def rename(client, run_id: str, title: object, **headers: str) -> httpx.Response:
    return client.patch(f"/api/train/{run_id}", json={"title": title}, headers=headers)


def names(client) -> tuple[dict[str, tuple[str, bool]], dict[str, tuple[str, bool]]]:
    """The runs list's and the model list's names: id -> (title, named), model -> (title,
    named)."""
    runs = {r["id"]: (r["title"], r["named"]) for r in client.get("/api/train").json()["runs"]}
    models = {m["name"]: (m["title"], m["named"])
              for m in client.get("/api/models").json()["models"] if m["run"]}  # fmt: skip
    return runs, models


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[tuple[str, str, dict]]:
    """A server, and a finished tiny run of its first visitor: (URL, run id, its cookies)."""
    app = make_app(tmp_path_factory.mktemp("rename-data"))
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as owner:
        run_id = train(owner, steps=5)
        assert ended(owner, run_id)["state"] == "done"
        yield url, run_id, dict(owner.cookies)


@pytest.mark.slow
def test_the_owner_renames_a_run_and_every_list_names_it_so(server):
    url, run_id, cookies = server
    with (
        httpx.Client(base_url=url, timeout=60, cookies=cookies) as owner,
        httpx.Client(base_url=url, timeout=60) as viewer,
        httpx.Client(
            base_url=url, timeout=60, headers={"Authorization": f"Bearer {OPERATOR}"}
        ) as op,  # fmt: skip
    ):
        before = owner.get(f"/api/train/{run_id}").json()
        assert before["title"] == "induction, 2 layers" and before["named"] is False
        assert before["can_rename"] is True

        r = rename(owner, run_id, "  my first induction model  ")
        assert r.status_code == 200, r.text
        assert (r.json()["title"], r.json()["named"]) == ("my first induction model", True)
        state = owner.get(f"/api/train/{run_id}").json()
        assert (state["title"], state["named"]) == ("my first induction model", True)
        runs, models = names(owner)
        assert runs[run_id] == ("my first induction model", True)
        assert models[run_id] == ("my first induction model", True)

        # Another visitor with the link reads the name, and may not change it: the 404 of a
        # run that does not exist, word for word.
        seen = viewer.get(f"/api/train/{run_id}").json()
        assert (seen["title"], seen["named"], seen["can_rename"]) == (
            "my first induction model", True, False)  # fmt: skip
        assert names(viewer)[0][run_id] == ("my first induction model", True)
        refused, unknown = rename(viewer, run_id, "mine now"), rename(viewer, UNKNOWN, "x")
        assert refused.status_code == unknown.status_code == 404
        assert refused.json()["message"] == unknown.json()["message"].replace(UNKNOWN, run_id)
        assert owner.get(f"/api/train/{run_id}").json()["title"] == "my first induction model"

        # The operator may; a name of exactly the cap is kept whole.
        longest = "ü" * CAP
        r = rename(op, run_id, longest)
        assert r.status_code == 200 and r.json()["title"] == longest
        assert r.json()["can_rename"] is True
        assert names(owner) == ({run_id: (longest, True)}, {run_id: (longest, True)})

        # null: back to the name of what it trains.
        r = rename(owner, run_id, None)
        assert r.status_code == 200
        assert (r.json()["title"], r.json()["named"]) == ("induction, 2 layers", False)
        assert names(owner) == ({run_id: ("induction, 2 layers", False)},
                                {run_id: ("induction, 2 layers", False)})  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "rule"),
    [
        ({"title": ""}, "title: a run's name needs at least one character that is not a space"),
        (
            {"title": " \t "},
            "title: a run's name needs at least one character that is not a space",
        ),  # fmt: skip
        (
            {"title": "x" * (CAP + 1)},
            f"title: {CAP + 1} characters; a run's name has at most {CAP}",
        ),
        ({"title": "two\nlines"}, "title: a run's name cannot hold a control character"),
        ({"title": "a\tb"}, "it has U+0009"),
        ({"title": "bell\x07"}, "it has U+0007"),
        ({"title": "abc\u202edcba"}, "it has U+202E"),  # a right-to-left override
        ({"title": "a\u2028b"}, "it has U+2028"),  # a line separator
        (b'{"title": "a\\ud800b"}', "it has U+D800"),  # a lone surrogate: no character at all
        ({"title": 5}, "title: Input should be a valid string"),
        ({}, "title: Field required"),
        ({"title": "x", "label": "y"}, "label: Extra inputs are not permitted"),
    ],
)
def test_a_bad_name_is_refused_naming_the_field_and_the_rule(server, body, rule):
    url, run_id, cookies = server
    with httpx.Client(base_url=url, timeout=60, cookies=cookies) as owner:
        before = owner.get(f"/api/train/{run_id}").json()["title"]
        if isinstance(body, bytes):
            r = owner.patch(f"/api/train/{run_id}", content=body,
                            headers={"content-type": "application/json"})  # fmt: skip
        else:
            r = owner.patch(f"/api/train/{run_id}", json=body)
        assert r.status_code == 422, r.text
        assert rule in r.json()["message"]
        assert r.json()["detail"][0]["loc"][1] in ("title", "label")
        assert owner.get(f"/api/train/{run_id}").json()["title"] == before
        r = owner.patch(f"/api/train/{run_id}", content=b"{not json",
                        headers={"content-type": "application/json"})  # fmt: skip
        assert r.status_code == 422 and r.json()["message"].startswith("body: not valid JSON")


@pytest.mark.slow
def test_a_run_renamed_while_it_trains_names_its_model_and_a_forgotten_one_is_gone(tmp_path):
    client = TestClient(make_app(tmp_path))
    run_id = train(client, steps=5000)
    assert rename(client, run_id, "a long one").status_code == 200
    assert client.get(f"/api/train/{run_id}").json()["state"] in ("queued", "running")
    assert client.delete(f"/api/train/{run_id}").status_code == 200  # cancelled: keeps its model
    state = ended(client, run_id)
    assert state["state"] == "cancelled" and (state["title"], state["named"]) == (
        "a long one",
        True,
    )
    assert names(client)[1] == {run_id: ("a long one", True)}
    # Forgotten by its owner: the name goes with it, and a rename is the 404 of the others.
    assert client.delete(f"/api/train/{run_id}").status_code == 200
    r = rename(client, run_id, "back?")
    assert r.status_code == 404 and f"no run '{run_id}'" in r.json()["message"]


@pytest.mark.slow
def test_a_name_survives_a_restart_and_reaches_another_replica(tmp_path):
    a = TestClient(make_app(tmp_path, replica="r1"))
    first = train(a, steps=5)
    assert ended(a, first)["state"] == "done"
    app_b = make_app(tmp_path, replica="r2")  # started before the rename
    b = TestClient(app_b, cookies=a.cookies)  # one secret in one directory: one visitor
    assert names(b)[0] == {first: ("induction, 2 layers", False)}  # read in by b's list
    assert rename(a, first, "renamed on r1").status_code == 200
    # b holds the run already: its lists take the name from the index.
    assert names(b) == ({first: ("renamed on r1", True)}, {first: ("renamed on r1", True)})
    # A restart (a new app on the same directory) keeps it.
    again = TestClient(make_app(tmp_path, replica="r1"), cookies=a.cookies)
    state = again.get(f"/api/train/{first}").json()
    assert (state["title"], state["named"], state["yours"]) == ("renamed on r1", True, True)
    assert names(again) == ({first: ("renamed on r1", True)}, {first: ("renamed on r1", True)})


def test_the_cap_reaches_the_page_through_the_options():
    client = TestClient(create_app(Settings(device="cpu", builtin_model=False)))
    assert client.get("/api/train/options").json()["limits"]["max_title_chars"] == CAP
    schema = client.get("/openapi.json").json()["components"]["schemas"]["TrainRename"]
    assert schema["properties"]["title"]["maxLength"] == CAP


@pytest.mark.slow
def test_the_openapi_schema_states_the_rule_of_a_name(tmp_path):
    """The schema's pattern for a name (what a client's validator and the fuzzer read) agrees
    with the server's rule, trim included, on every character, alone and after a letter; lone
    surrogates, which no pattern can name, are the server's alone to refuse."""
    import jsonschema_rs

    from attnviz.schemas.train import title_refused

    client = TestClient(make_app(tmp_path))
    schema = client.get("/openapi.json").json()["components"]["schemas"]["TrainRename"]
    valid = jsonschema_rs.validator_for(schema["properties"]["title"]).is_valid
    assert valid("my induction model") and valid(None) and not valid("   ") and not valid("a\nb")
    for i in range(0x110000):
        if 0xD800 <= i <= 0xDFFF:
            continue
        for name in (chr(i), f"x{chr(i)}"):
            assert valid(name) == (title_refused(name.strip()) is None), (hex(i), name)
