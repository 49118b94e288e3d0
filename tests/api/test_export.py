"""POST /api/export: the page's views as one HTML file (a toy table's or a text's), answered as
an attachment; bad input 422 naming the field; through the trace admission (503 with
Retry-After when busy, over real HTTP)."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from attnviz.pretrained.registry import BUILTIN_NAME
from tests.api.test_hosting import capped, long_text  # noqa: F401  (the capped server)
from tests.python.offline import parts_of


def config_of(html: str) -> dict:
    found = re.search(r'id="attnviz-config">([^<]*)<', html)
    assert found
    return json.loads(found.group(1))


def test_a_toy_table_exports_as_the_toy_labs_file(client, apple_request):
    body = {"trace": {**apple_request, "config": {"layers": 2, "heads": 1}},
            "selection": {"layer": 1, "head": 0, "view": {"vlayer": 1, "a": 0, "b": 4}}}  # fmt: skip
    r = client.post("/api/export", json=body)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert (
        r.headers["content-disposition"] == 'attachment; filename="attnviz-toy-layer2-head1.html"'
    )
    html = r.text
    assert 'data-mode="toy"' in html
    config = config_of(html)
    assert config["entry"] == "offline/toy.js"
    assert config["view"] == {"layer": 1, "head": 0, "vlayer": 1, "a": 0, "b": 4, "trails": True}
    assert config["request"]["axes"] == apple_request["axes"]
    assert config["preset"] == "apple-banana"  # the apple table is the first preset's
    # The first screen at the chosen head, then every other head exact.
    params = parts_of(html)
    assert params[0]["layer"] == 1 and params[0]["head"] == 0
    assert sorted((p["layer"], p["head"]) for p in params[1:]) == [(0, 0)]


def test_a_text_exports_as_sentence_modes_file(client):
    body = {"trace": {"model": BUILTIN_NAME, "text": "The cat sat on the mat"},
            "selection": {"layer": 2, "head": 5, "query": 3, "views": ["model", "qk"]}}  # fmt: skip
    r = client.post("/api/export", json=body)
    assert r.status_code == 200, r.text
    assert r.headers["content-disposition"].endswith(
        'filename="attnviz-sentence-layer3-head6.html"'
    )
    config = config_of(r.text)
    assert config["selection"]["views"] == ["model", "qk"]
    assert config["selection"]["query"] == 3
    fields = {p["fields"] for p in parts_of(r.text)}
    assert "projection" not in fields  # the trajectories are not among the views: not drawn


def test_bad_input_is_422_naming_the_field(client, apple_request):
    cases = [
        ({"trace": {"model": BUILTIN_NAME, "text": "a cat"}, "selection": {"layer": 99}},
         "selection.layer: 99 is out of range"),
        ({"trace": {"model": BUILTIN_NAME, "text": "a cat"}, "selection": {"views": ["nope"]}},
         "selection.views[0]"),
        ({"trace": apple_request, "selection": {"query": 1}}, "selection.query: a toy table"),
        ({"trace": apple_request, "selection": {"view": {"vlayer": 5}}},
         "selection.view.vlayer: 5 is out of range"),
        ({"trace": {**apple_request, "embeddings": [[1]]}}, "embeddings: 5 rows of 1 number (n x d: one row per token), got 1 row"),
        ({"trace": {"model": BUILTIN_NAME, "text": "a cat"}, "budget": 10**9}, "budget"),
    ]  # fmt: skip
    for body, field in cases:
        r = client.post("/api/export", json=body)
        assert r.status_code == 422, (body, r.text)
        assert field in r.json()["message"], (field, r.json()["message"])
    r = client.post("/api/export", json={"trace": {"model": "no-such-model", "text": "a"}})
    assert r.status_code == 404


@pytest.mark.slow
def test_a_crowd_of_exports_gets_503_with_retry_after(capped):  # noqa: F811
    """The export waits its turn as a trace does: past the queue, 503 with Retry-After."""

    def ask(i: int) -> tuple[int, str | None]:
        body = {"trace": {"model": BUILTIN_NAME, "text": long_text(400, 5000 + i)}}
        r = httpx.post(f"{capped}/api/export", json=body, timeout=120)
        return r.status_code, r.headers.get("retry-after")

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(ask, range(6)))
    statuses = sorted(s for s, _ in results)
    assert statuses.count(200) >= 1 and statuses.count(503) >= 1, statuses
    assert set(statuses) <= {200, 503}
    assert all(int(retry) >= 1 for status, retry in results if status == 503)
