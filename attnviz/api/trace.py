from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, HTTPException, Path, Query, Request, status
from fastapi.responses import JSONResponse, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent

from attnviz.api.deps import CallerDep, JobsDep, TracesDep
from attnviz.api.responses import sliced_response
from attnviz.capture.fields import REGISTRY
from attnviz.schemas.trace import (
    FieldCatalogue,
    FieldInfo,
    TextTraceResponse,
    TraceQuery,
    TraceRequest,
    TraceResponse,
)
from attnviz.services.jobs import JobGone, TraceJob
from attnviz.services.trace_answer import Asked, decide
from attnviz.services.trace_service import Body as TraceBody
from attnviz.wire.constants import COMPACT_MEDIA_TYPE

router = APIRouter(prefix="/api", tags=["trace"])


TraceBodyParam = Annotated[TraceRequest, Body()]

COMPACT_DOC = (
    f"With `Accept: {COMPACT_MEDIA_TYPE}`: the same arrays as one safetensors file (an 8-byte "
    "little-endian header length, a JSON header of names, dtypes, shapes and offsets, then the "
    'raw arrays). The header\'s `__metadata__["attnviz"]` is the JSON of every other field. '
    "Models send float32, the toy float64, thumbs uint8; masked scores are -inf."
)


@router.get("/fields")
def list_fields() -> FieldCatalogue:
    """Every array a trace request can name in `fields` (POST /api/trace), in the order of the
    wire: what it holds, the query parameters it reads, whether it is drawn under the token
    options or by the measure, what of a model it needs, and the rules `meta.rules` states."""
    return FieldCatalogue(fields=[FieldInfo.model_validate(f) for f in REGISTRY])


@router.post(
    "/trace",
    response_model=TraceResponse | TextTraceResponse,
    responses={
        200: {
            "description": "The trace, as JSON (the default) or in the compact form.",
            "content": {COMPACT_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}},
        },
        400: {"description": "The body could not be read as JSON (UTF-8 text)"},
        404: {"description": "No model of that name"},
        413: {"description": "The body is over the server's cap"},
        422: {"description": "A field or parameter breaks a rule; see message"},
        429: {
            "description": "A job asked for (`Prefer: respond-async`) while the caller's address "
            "has ATTNVIZ_TRACE_JOBS_PER_ADDRESS jobs computing or waiting: come back after "
            "`Retry-After` seconds"
        },
        503: {"description": "Busy: come back after `Retry-After` seconds"},
        202: {
            "description": "With `Prefer: respond-async`, a text trace expected to take longer "
            "than ATTNVIZ_TRACE_JOB_AFTER_S or the request limit (ATTNVIZ_REQUEST_TIMEOUT_S): a "
            "job, its state as GET /api/trace/jobs/{id} "
            "answers it (`Location` too); its `result` is this request's answer once done"
        },
    },
    description="Run the toy transformer on a table, or a pretrained model on a text, and return "
    "every layer's attention, scores, queries, keys, values and hidden states. The query "
    "parameters ask for a part: some arrays (`fields`), one `layer` or `head` of the per-head "
    "ones, the attention under the token options (`view`) and thumbnails of every head "
    "(`thumbs`). A JSON trace is capped in numbers (see /api/models). " + COMPACT_DOC,
)
async def trace(
    req: TraceBodyParam,
    query: Annotated[TraceQuery, Query()],
    request: Request,
    traces: TracesDep,
    jobs: JobsDep,
    caller: CallerDep,
) -> Response:
    asked = Asked(
        compact=COMPACT_MEDIA_TYPE in request.headers.get("accept", ""),
        encodings=request.headers.get("accept-encoding", ""),
        client=request.client.host if request.client else "",
        caller=caller,
        job="respond-async" in request.headers.get("prefer", ""),
    )
    decision = await decide(traces, jobs, req, query, asked)
    if decision.over_limit_s is not None:
        return _over_limit(decision.over_limit_s, jobs.request_s)
    if decision.job is not None:
        if decision.settled:
            return _settled(decision.job, caller.token)
        return _accepted(decision.job, caller.token)
    assert decision.body is not None
    return _answer(decision.body)


def _over_limit(expected_s: float, limit_s: float) -> JSONResponse:
    """A plain request whose trace would compute past the request limit: 422, before any work,
    with the estimate and how to ask for it as a job."""
    message = (
        f"text: this trace is expected to take about {expected_s:.0f} s to compute here, over "
        f"this server's limit of {limit_s:g} s for one request; "
        "ask for it as a job with the header Prefer: respond-async (answered 202 at once, "
        "its progress and its result at the job's URL), or send a shorter text"
    )
    detail = [{"loc": ["body", "text"], "msg": message, "type": "request_limit"}]
    content = {
        "message": message,
        "detail": detail,
        "estimate_s": round(expected_s, 1),
        "limit_s": limit_s,
    }
    return JSONResponse(content, status_code=422, headers={"Vary": "Prefer"})


def _settled(job: TraceJob, token: str) -> Response:
    """A job's answer when it has ended (its error as ``job_result`` says it), else 202."""
    if job.state == "done" and job.body is not None:
        job.read = True
        return _answer(job.body)
    if job.state in ("cancelled", "failed"):
        job.read = True
        return _failed(job)
    return _accepted(job, token)


def _failed(job: TraceJob) -> JSONResponse:
    """An ended job's error, with the status it would have had."""
    headers = {"Retry-After": str(job.retry_after)} if job.retry_after is not None else None
    return JSONResponse(
        {"message": job.message or job.state, "detail": []},
        status_code=job.status or 409,
        headers=headers,
    )


def _accepted(job: TraceJob, token: str) -> JSONResponse:
    """202 with the job; ``token``: the caller as a bearer token (a client that keeps no
    cookie follows its job with it)."""
    headers = {"Location": job.as_json()["url"], "Preference-Applied": "respond-async"}
    content = {**job.as_json(), "token": token}
    return JSONResponse(content, status_code=status.HTTP_202_ACCEPTED, headers=headers)


def _answer(body: TraceBody) -> Response:
    headers = {
        "Vary": "Accept, Accept-Encoding",
        # Where the time went, for the browser's developer tools and `attnviz bench`.
        "Server-Timing": f"queue;dur={body.queued_ms:.1f}, compute;dur={body.compute_ms:.1f}"
        + "".join(f", {name};dur={ms:.1f}" for name, ms in body.phases),
    }
    if body.encoding:
        headers["Content-Encoding"] = body.encoding
    return sliced_response(body.content, body.media_type, headers)


# -- trace jobs ---------------------------------------------------------------------------------

JobId = Annotated[str, Path(max_length=64, description="The id POST /api/trace answered (202)")]
JOB_GONE: dict[int | str, dict[str, Any]] = {
    404: {
        "description": "No such job here (ended a while ago, replaced by a newer one), or not "
        "the caller's (the same answer, so that its existence is not revealed)"
    }
}
JOB_DOC = (
    "`state` (`queued`, `running`, `done`, `cancelled`, `failed`), `stage` (`waiting`, "
    "`forward`, `thumbnails`, `encoding`, then the state), `layers_done` of `layers` (the "
    "forward's), `done` of `total` (every layer pass: the forward's, then the thumbnails'), "
    "`elapsed_s`, `left_s` (at the pace of the layers done so far; the estimate before the "
    "first), `estimate_s`, `limit_s`, `message` (why it was cancelled or failed), `remote` (a "
    "model on NDIF: what the deployment last said) and `status` (what `result` then answers)."
)


def _job(job_id: str, jobs: Any, caller: Any) -> TraceJob:
    try:
        return jobs.get(job_id, caller)
    except JobGone as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None


@router.get(
    "/trace/jobs/{job_id}", responses=JOB_GONE, description="A trace job's state: " + JOB_DOC
)
def job_state(job_id: JobId, jobs: JobsDep, caller: CallerDep) -> dict[str, Any]:
    return _job(job_id, jobs, caller).as_json()


def _followed(job_id: JobId, jobs: JobsDep, caller: CallerDep) -> TraceJob:
    """The job the path names, the caller's (404 where there is none)."""
    return _job(job_id, jobs, caller)


@router.get(
    "/trace/jobs/{job_id}/events",
    response_class=EventSourceResponse,
    responses={
        **JOB_GONE,
        200: {
            "description": "Server-sent events: `state` (the job's state, first), then "
            "`progress` (its state: as it starts, as each layer pass is done, as it sends its "
            "answer, as a remote deployment's words change, and every half second between them, "
            "as its time goes on) and `end` (its state, last). Each has an `id`; reconnecting "
            "with `Last-Event-ID` goes on after it, without the state."
        },
    },
    description="A trace job's state as it changes: " + JOB_DOC,
)
async def job_events(
    job: Annotated[TraceJob, Depends(_followed)],
    jobs: JobsDep,
    last_event_id: Annotated[int | None, Header(ge=0)] = None,
) -> AsyncIterator[ServerSentEvent]:
    async for seq, name, data in jobs.stream(job, last_event_id):
        yield ServerSentEvent(raw_data=data, event=name, id=str(seq))


@router.delete(
    "/trace/jobs/{job_id}",
    responses=JOB_GONE,
    description="Cancel a trace job: it stops at its next layer (at once while it waits for its "
    "turn); answers its state. Its visitor's, or the operator's.",
)
def job_cancel(job_id: JobId, jobs: JobsDep, caller: CallerDep) -> dict[str, Any]:
    try:
        job = jobs.cancel(job_id, caller)
    except JobGone as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None
    return job.as_json()


@router.get(
    "/trace/jobs/{job_id}/result",
    response_class=Response,
    responses={
        **JOB_GONE,
        200: {"description": "The answer POST /api/trace would have given, in its form"},
        409: {"description": "Not done yet (its state says how far it is), or cancelled"},
    },
    description="A done job's answer: the part of the trace its request asked for, JSON or "
    "compact as it asked; a failed one's error, with the status it would have had.",
)
def job_result(job_id: JobId, jobs: JobsDep, caller: CallerDep) -> Response:
    job = _job(job_id, jobs, caller)
    if job.state in ("queued", "running"):
        done = f"{job.done} of {job.total} layer passes done"
        raise HTTPException(status.HTTP_409_CONFLICT, f"job_id: still computing ({done})")
    job.read = True
    return _answer(job.body) if job.body is not None else _failed(job)
