"""What ``POST /api/trace`` answers, decided here rather than in the route: the trace's body
now, a job (202, or its end when it is done in time), or the refusal of a plain request that
would compute past the request limit. The route parses the request, calls ``decide`` and turns
its ``Decision`` into a response."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

from attnviz.schemas.trace import TextTraceRequest, TraceQuery, TraceRequest
from attnviz.services.jobs import TraceJob, TraceJobs, Work
from attnviz.services.ownership import Caller
from attnviz.services.trace_service import Body, TraceService


@dataclass(frozen=True)
class Asked:
    """How the request asks: its form (``compact``), the codings it takes, the client's
    address, who asks, and whether it takes a job (``Prefer: respond-async``)."""

    compact: bool
    encodings: str
    client: str
    caller: Caller
    job: bool


@dataclass(frozen=True)
class Decision:
    """One of: ``body`` (the answer), ``job`` (202 with it; with ``settled``, its end when it
    has ended), or ``over_limit_s`` (a plain request expected to compute this long, past the
    request limit: refused before any work)."""

    body: Body | None = None
    job: TraceJob | None = None
    settled: bool = False
    over_limit_s: float | None = None


async def decide(
    traces: TraceService, jobs: TraceJobs, req: TraceRequest, query: TraceQuery, asked: Asked
) -> Decision:
    """The answer to a trace request. What a plain request would refuse without computing (an
    unknown model, a text over the token cap, a layer out of range) is refused at once (a
    TraceError), never accepted as a job first."""
    work = None
    if isinstance(req, TextTraceRequest):
        if not traces.cache.holds(traces.key(req)):
            work = jobs.admit(req, query, asked.compact, asked.encodings)
        again = await _asked_again(traces, jobs, req, query, asked) if asked.job else None
        if again is not None:
            return again
    measured = None
    if work is not None and isinstance(req, TextTraceRequest):
        # A trace to compute: a plain request that would run past the request limit (its
        # forward and its answer's encoding) is refused before it waits (ask for a job); the
        # caller's job on another text stops; a long one, or one past the request limit, is a
        # job when asked.
        expected = None if asked.job else jobs.over_request_limit(work)
        if expected is not None:
            return Decision(over_limit_s=expected)
        jobs.supersede(asked.caller, traces.key(req))
        if asked.job and jobs.wants_job(work):
            job = jobs.start(req, query, asked.compact, asked.encodings, asked.client,
                             asked.caller, work)  # fmt: skip
            return Decision(job=job)
        measured = partial(jobs.measured, work)  # once it is encoded, streamed or not
    body = await traces.respond(req, query, asked.compact, asked.encodings, asked.client,
                                measured)  # fmt: skip
    return Decision(body=body)


async def _asked_again(
    traces: TraceService, jobs: TraceJobs, req: TextTraceRequest, query: TraceQuery, asked: Asked
) -> Decision | None:
    """A job's request asked again: the same job while it computes, its answer once done (the
    page loaded again); a part of a remote model's kept trace, which may need a trip to its
    deployment (a layer's q and k, predictions), is a job answered here when done in time."""
    key = traces.key(req)
    asked_for = jobs.asked_for(query, asked.compact, asked.encodings)
    running = jobs.active(asked.caller, key, asked_for)
    if running is not None:
        return Decision(job=running)
    done = jobs.answered(asked.caller, key, asked_for)
    if done is not None and traces.registry.get(req.model) is not None:
        return Decision(body=done)
    if traces.remote(req.model) and traces.cache.holds(key):
        jobs.admit(req, query)
        job = jobs.start(req, query, asked.compact, asked.encodings, asked.client, asked.caller,
                         Work(math.inf))  # fmt: skip
        await jobs.wait(job, jobs.after_s)
        return Decision(job=job, settled=True)
    return None
