"""What a trace job promises before it starts: a job asked for (``Prefer: respond-async``) is
refused at once for whatever a plain request refuses, never accepted as 202 and failed later; a
plain request that would run past the request limit is refused before any work, with the
estimate and the header that asks for a job; a job's URL after the server restarted says so.

The model is test_trace_jobs.py's: the SmolLM2-135M shape (30 layers, 9 heads) at reduced
widths."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services.jobs import Work
from tests.api.test_trace_jobs import ASYNC, FIRST, client_of, follow, small_smollm, text_of


@pytest.fixture(scope="module")
def smol(tmp_path_factory) -> Path:
    return small_smollm(tmp_path_factory.mktemp("models") / "smol")


# (what is asked: body changes, query parameters), the status and what the message says.
REFUSED = {
    "text over the token cap": ({"long": 80}, {}, 422, "tokens exceed the cap of 50 (model smol allows 8192, this server 50)"),
    "layer out of range": (
        {}, {"fields": "attentions", "layer": 30}, 422,
        "layer: 30 is out of range (30 layers: 0 to 29)",
    ),
    "head out of range": (
        {}, {"fields": "attentions", "head": 9}, 422,
        "head: 9 is out of range (9 heads: 0 to 8)",
    ),
    "thumb layer out of range": (
        {}, {**FIRST, "thumb_layer": 31}, 422, "thumb_layer: 31 is out of range",
    ),
    "query past the text": ({}, {"fields": "attentions", "query": 500}, 422, "query: 500 is out"),
    "unknown model": ({"model": "no-such-model"}, {}, 404, "model: no model named 'no-such-model'"),
    "a knocked-out head past the layers": (
        {"ablate": [{"layer": 30, "head": 0}]}, {}, 422,
        "ablate[0].layer: 30 is past model smol's 30 layers (0 to 29)",
    ),
    "generating past the cap": (
        {"long": 40, "generate": {"steps": 20}}, {}, 422,
        "tokens and 20 more exceed the cap of 50",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_job_is_refused_at_once_for_what_a_plain_request_refuses(smol, forwards, case):
    changes, params, status, message = REFUSED[case]
    changes = dict(changes)
    long = changes.pop("long", 20)
    body = {"model": "smol", "text": text_of(smol, long), **changes}
    params = {**FIRST, **params}
    # Every trace asked as a job would be one (after 0 s); texts capped at 50 tokens.
    with client_of(smol, trace_job_after_s=0, max_text_tokens=50) as c:
        asked = c.post("/api/trace", params=params, json=body, headers=ASYNC)
        plain = c.post("/api/trace", params=params, json=body)
        assert asked.status_code == status, asked.text
        assert message in asked.json()["message"], asked.json()
        # The same refusal a plain request gets, and nothing computed for either.
        assert (plain.status_code, plain.json()["message"]) == (status, asked.json()["message"])
        assert forwards == []
        assert c.app.state.trace_jobs.running == []


@pytest.mark.slow
def test_a_plain_request_past_the_request_limit_is_refused_before_the_work(smol, forwards):
    """2,000 tokens of this shape are estimated at several seconds before any trace is measured,
    past a request limit of 2 s: refused at once with the estimate, and the same request with
    ``Prefer: respond-async`` is a job."""
    body = {"model": "smol", "text": text_of(smol, 2000)}
    with client_of(smol, request_timeout_s=2) as c:
        r = c.post("/api/trace", params=FIRST, json=body)
        assert r.status_code == 422, r.text
        answer = r.json()
        assert answer["limit_s"] == 2 and answer["estimate_s"] > 2
        assert answer["message"].startswith("text: this trace is expected to take about")
        assert "over this server's limit of 2 s for one request" in answer["message"]
        assert "Prefer: respond-async" in answer["message"]
        assert answer["detail"][0]["loc"] == ["body", "text"]
        assert forwards == []  # refused before the work
        job = c.post("/api/trace", params=FIRST, json=body, headers=ASYNC)
        assert job.status_code == 202, job.text
        assert c.delete(job.json()["url"]).status_code == 200
        assert follow(c, job.json())["state"] == "cancelled"
        # A short text is under the limit: answered.
        short = c.post("/api/trace", json={"model": "smol", "text": "x = 1"})
        assert short.status_code == 200


# The phase the injected measurements say is slow, and its time for 10 G units of the forward and
# 10 M numbers of a compact answer: paces of 2e8 units a second (about 7 s for 100 tokens of
# this shape) or 1e6 numbers a second (seconds for the whole compact answer); and whether a
# part of few numbers, its answer small, is still over the limit.
SLOW = {
    "the forward": ("forward", 50_000.0, True),
    "the part chosen": ("part", 10_000.0, False),
    "the answer's encoding": ("encode", 10_000.0, False),
}


@pytest.mark.parametrize("slow", list(SLOW))
def test_the_estimate_counts_the_forward_and_the_answers_encoding(smol, forwards, slow):
    """Issue 42: the estimate is the forward at the pace of computing and the answer's numbers
    at the pace of writing them (both measured from traces' phases), so that a server whose
    measurements say either is slow refuses a plain request early (422 with ``estimate_s``,
    never a 503 once the limit cuts it off) and makes an async one a job, although its
    estimate is under ``trace_job_after_s``: past the request limit is enough."""
    phase, slow_ms, small_too = SLOW[slow]
    body = {"model": "smol", "text": text_of(smol, 100)}
    compact = {"Accept": ASYNC["Accept"]}
    with client_of(smol, request_timeout_s=2, trace_job_after_s=60) as c:
        # At the first paces, this trace and its whole answer are well within the limit.
        first = c.post("/api/trace", json=body, headers=compact)
        assert first.status_code == 200, first.text
        jobs = c.app.state.trace_jobs
        # Traces measured slow (injected, as a slow machine's would be), from the first paces.
        ms = {"forward": 0.0, "part": 0.0, "encode": 0.0, phase: slow_ms}
        for _ in range(30):
            jobs.measured(Work(10e9, 10_000_000, "compact"), tuple(ms.items()))
        other = {**body, "text": text_of(smol, 100, start=7)}  # not kept: computed if answered
        r = c.post("/api/trace", json=other, headers=compact)
        assert r.status_code == 422, r.text
        assert r.json()["limit_s"] == 2 and r.json()["estimate_s"] > 2
        assert "Prefer: respond-async" in r.json()["message"]
        assert r.json()["estimate_s"] == round(jobs.expected_s(jobs.admit(
            TextTraceRequest(**other), TraceQuery(), True)), 1)  # fmt: skip
        # A part of few numbers: still over when the forward is slow, answered when only the
        # encoding is.
        few = c.post("/api/trace", params={"fields": "score_range"}, json=other, headers=compact)
        assert few.status_code == (422 if small_too else 200), few.text
        assert forwards == [body["text"]] + ([] if small_too else [other["text"]])
        # Asked for a job: one, although its estimate is under trace_job_after_s (60 s).
        job = c.post("/api/trace", json={**other, "text": text_of(smol, 100, start=13)},
                     headers=ASYNC)  # fmt: skip
        assert job.status_code == 202, job.text
        assert 2 < job.json()["estimate_s"] < 60
        assert c.delete(job.json()["url"]).status_code == 200
        assert follow(c, job.json())["state"] in ("cancelled", "done")


def test_a_jobs_url_after_a_restart_says_the_server_restarted(smol):
    body = {"model": "smol", "text": text_of(smol, 20)}
    with client_of(smol, trace_job_after_s=0) as before:
        job = before.post("/api/trace", params=FIRST, json=body, headers=ASYNC)
        assert job.status_code == 202, job.text
        job = job.json()
        assert follow(before, job)["state"] == "done"
        assert before.get(job["url"]).status_code == 200
    with client_of(smol, trace_job_after_s=0) as after:  # a new server process: jobs are gone
        after.cookies = before.cookies  # the same visitor
        for method, url in (("GET", job["url"]), ("DELETE", job["url"]), ("GET", job["result"])):
            r = after.request(method, url)
            assert r.status_code == 404, r.text
            message = r.json()["message"]
            assert message.startswith("job_id: this server restarted since that job was started")
            assert message.endswith("ask for the trace again")
        # An id this server never issued in any form: both possibilities said.
        r = after.get("/api/trace/jobs/not-a-job")
        assert r.status_code == 404
        assert "this server restarted since" in r.json()["message"]
        assert "or the job expired" in r.json()["message"]
        # One of this server's own jobs, for another visitor: no restart said (nor that it
        # exists).
        own = after.post("/api/trace", params=FIRST, json=body, headers=ASYNC).json()
        follow(after, own)
        after.cookies = type(after.cookies)()
        r = after.get(own["url"])
        assert r.status_code == 404
        assert "restarted" not in r.json()["message"]
        assert "it is not yours" in r.json()["message"]
