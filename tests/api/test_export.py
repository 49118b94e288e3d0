"""POST /api/export: the page's views as one HTML file (a toy table's or a text's), answered as
an attachment; bad input 422 naming the field, refused before any work as POST /api/trace
refuses it (a body over the cap 413 before it is read, a text over the token cap or a selection
out of the model's range before the forward, a trace past the request limit before it waits);
through the trace admission (503 with Retry-After when busy, over real HTTP)."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from attnviz.pretrained.registry import BUILTIN_NAME
from tests.api.test_hosting import capped, long_text, raw_http  # noqa: F401  (the capped server)
from tests.api.test_trace_jobs import client_of, small_smollm, text_of
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


# What is refused before any work (no forward, no turn waited for): the body, the status and
# what the message says.
REFUSED_AT_ONCE = {
    "a text over the token cap": (
        {"trace": {"model": BUILTIN_NAME, "text": long_text(600, 1)}}, 422,
        "text: 6", "tokens exceed the cap of 512"),
    "a layer past the model's": (
        {"trace": {"model": BUILTIN_NAME, "text": "An export asked past its layers"},
         "selection": {"layer": 6}}, 422, "selection.layer: 6 is out of range (0 to 5)", ""),
    "a head past the model's": (
        {"trace": {"model": BUILTIN_NAME, "text": "An export asked past its heads"},
         "selection": {"head": 12}}, 422, "selection.head: 12 is out of range (0 to 11)", ""),
    "a query past the text": (
        {"trace": {"model": BUILTIN_NAME, "text": "An export asked past its text"},
         "selection": {"query": 40}}, 422, "selection.query: 40 is out of range", ""),
    "a key past the text": (
        {"trace": {"model": BUILTIN_NAME, "text": "An export asked past its keys"},
         "selection": {"key": 40, "views": ["why"]}}, 422, "selection.key: 40 is out of range", ""),
    "an unknown model": (
        {"trace": {"model": "no-such-model", "text": "a"}}, 404, "model: no model named", ""),
    "a toy layer past its config": (
        {"trace": "apple", "selection": {"layer": 1}}, 422,
        "selection.layer: 1 is out of range (0 to 0)", ""),
}  # fmt: skip


@pytest.mark.parametrize("case", list(REFUSED_AT_ONCE))
def test_what_a_trace_refuses_is_refused_before_the_export_computes(
    client, apple_request, forwards, case
):
    body, status, starts, has = REFUSED_AT_ONCE[case]
    if body["trace"] == "apple":
        body = {**body, "trace": apple_request}
    before = client.app.state.traces.admission.stats.admitted
    r = client.post("/api/export", json=body)
    assert r.status_code == status, r.text
    assert r.json()["message"].startswith(starts) and has in r.json()["message"], r.json()
    assert forwards == []  # no forward run for it
    assert client.app.state.traces.admission.stats.admitted == before  # no turn taken


@pytest.fixture(scope="module")
def smol(tmp_path_factory) -> Path:
    return small_smollm(tmp_path_factory.mktemp("models") / "smol")


@pytest.mark.slow
def test_an_export_past_the_request_limit_is_refused_before_the_work(smol, forwards):
    """2,000 tokens of the SmolLM2-135M shape are estimated at several seconds before any trace
    is measured, past a request limit of 2 s: refused at once, as POST /api/trace refuses it,
    and never cut off by the limit half way."""
    body = {"trace": {"model": "smol", "text": text_of(smol, 2000)}}
    with client_of(smol, request_timeout_s=2) as c:
        r = c.post("/api/export", json=body)
        assert r.status_code == 422, r.text
        message = r.json()["message"]
        assert message.startswith("text: this file's trace is expected to take about")
        assert "over this server's limit of 2 s for one request" in message
        assert forwards == []


@pytest.mark.parametrize("sent", ["declared", "streamed"])
def test_a_body_over_the_cap_gets_413_before_it_is_read(capped, sent):  # noqa: F811
    if sent == "declared":
        head = (b"POST /api/export HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000000\r\n\r\n")  # fmt: skip
        reply = raw_http(capped, head)  # no byte of the body is ever sent
        status, _, rest = reply.partition(b"\r\n")
        assert status == b"HTTP/1.1 413 Request Entity Too Large", reply
        message = json.loads(rest.split(b"\r\n\r\n", 1)[1])["message"]
    else:
        chunks = (b'{"trace": {"text": "' + b"a" * 1000 for _ in range(100))
        r = httpx.post(f"{capped}/api/export", content=chunks, timeout=10)
        assert r.status_code == 413
        message = r.json()["message"]
    assert message.startswith("body: larger than this server's cap of 4,096 bytes")


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
