"""Why not an RNN: compare the training lab's transformer with an LSTM and a GRU on one task
(accuracy against the distance to remember, time per training step against the length).

Whoever holds a comparison's id may read it; only its owner or the operator may cancel it (404
for anyone else, as for one that does not exist)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Path, Response, status
from fastapi.sse import EventSourceResponse, ServerSentEvent

from attnviz.api.deps import CallerDep, RecurrentDep
from attnviz.api.train import A_START, gone, not_yours
from attnviz.schemas.recurrent import (
    RecurrentOptions,
    RecurrentRequest,
    RecurrentRun,
    RecurrentRuns,
)
from attnviz.services.recurrent import LiveComparison

router = APIRouter(prefix="/api/recurrent", tags=["recurrent"])

RunId = Annotated[str, Path(max_length=64, description="The id POST /api/recurrent answered")]

GONE = gone("comparison")
NOT_YOURS = not_yours("comparison", "cancel")


def _comparison(run_id: RunId, recurrent: RecurrentDep, caller: CallerDep) -> LiveComparison:
    """The comparison the path names, opened by the caller (404 where there is none)."""
    return recurrent.open(run_id, caller)


ComparisonDep = Annotated[LiveComparison, Depends(_comparison)]


@router.get("/options")
def options(recurrent: RecurrentDep) -> RecurrentOptions:
    """The tasks a comparison runs on (with their steps and the distances measured), the
    default one, the lengths a step is timed at, and the seeds allowed."""
    return recurrent.options()


@router.get("")
def comparisons(recurrent: RecurrentDep, caller: CallerDep) -> RecurrentRuns:
    """The caller's comparisons this server keeps (those it started, those it opened by their
    id; every one for the operator), newest first: each one's state, task, seed, progress and
    whether it is the caller's. The Learn path's step 1 reopens the learner's newest from it."""
    return recurrent.summaries(caller)


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    responses={
        **A_START,
        429: {
            "description": "The caller has a comparison running and one waiting, or its "
            "address has ATTNVIZ_TRAIN_PER_ADDRESS running or waiting: come back after "
            "`Retry-After`"
        },
        503: {
            "description": "Every slot is taken and the line is full, or the server's data "
            "directory is in use by a newer attnviz (it cannot save runs): come back after "
            "`Retry-After`"
        },
    },
)
def start(
    req: RecurrentRequest, recurrent: RecurrentDep, caller: CallerDep, response: Response
) -> RecurrentRun:
    """Start a comparison: the transformer, an LSTM and a GRU trained one after the other on
    the task's batches (the same for the three, by the seed), each one's accuracy measured at
    growing distances, then a training step of each timed at growing lengths. Answers at once,
    `running`, or `queued` where every slot is taken (it starts by itself; `place` and `wait_s`
    say when); follow it at `GET /api/recurrent/{id}/events`, or read its progress, and at the
    end its claims, at `GET /api/recurrent/{id}`. It is the caller's; `token` is the caller as a
    bearer token, for a client that keeps no cookie."""
    run = recurrent.start(req, caller)
    response.headers["Location"] = f"/api/recurrent/{run.id}"
    return run


@router.get("/{run_id}", responses=GONE)
def read(run_id: RunId, recurrent: RecurrentDep, caller: CallerDep) -> RecurrentRun:
    """The comparison as it stands: waiting in line (its place and wait), or each model's
    accuracy per distance and step time per length as far as measured, what it is doing, and
    once done its claims and what it showed. Anyone with the id may read it; its events say
    the same as it changes."""
    return recurrent.get(run_id, caller)


@router.get(
    "/{run_id}/events",
    response_class=EventSourceResponse,
    responses={
        **GONE,
        200: {
            "description": "Server-sent events: `state` (the whole comparison, first), then "
            "`progress` (the whole comparison but `yours` and `can_cancel`, whenever it changes: "
            "its place in line, each model begun, measured or timed, and at most five a second "
            "while it trains) and `end` (the same, last). Each has an `id`; reconnecting with "
            "`Last-Event-ID` goes on after it, without the state."
        },
    },
)
async def events(
    live: ComparisonDep,
    recurrent: RecurrentDep,
    caller: CallerDep,
    last_event_id: Annotated[int | None, Header(ge=0)] = None,
) -> AsyncIterator[ServerSentEvent]:
    async for seq, name, data in recurrent.stream(live, last_event_id, caller):
        yield ServerSentEvent(raw_data=data, event=name, id=str(seq))


@router.delete("/{run_id}", responses=NOT_YOURS)
def cancel(run_id: RunId, recurrent: RecurrentDep, caller: CallerDep) -> RecurrentRun:
    """Cancel a running comparison (it stops within a step; what it measured stays), or
    forget an ended one: its owner or the operator; 404 for anyone else."""
    return recurrent.cancel(run_id, caller)
