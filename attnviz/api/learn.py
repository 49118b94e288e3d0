"""The Learn mode: the steps of the path, and a step's check of the learner's trace or run."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Request, status
from fastapi.exceptions import RequestValidationError

from attnviz.api.deps import DeviceDep, RecurrentDep, TracesDep, TrainingDep
from attnviz.learn import service
from attnviz.learn.path import LearnRefused
from attnviz.learn.steps import BY_ID
from attnviz.schemas.learn import LearnCheck, LearnCheckRequest, LearnSteps

router = APIRouter(prefix="/api/learn", tags=["learn"])

StepId = Annotated[str, Path(max_length=40, description="A step's id, from GET /api/learn")]


@router.get("")
def steps(device: DeviceDep) -> LearnSteps:
    """Every step of the path in order: its text, formula (MathML and plain text), starting
    state in the toy lab or the Train tab, tasks, and the article's numbers beside the
    engine's, computed from the step's starting state."""
    return service.learn_steps(device)


@router.post(
    "/{step_id}/check",
    responses={
        400: {"description": "The body could not be read as JSON (UTF-8 text)"},
        404: {"description": "No step of that id; or the run (comparison) is not kept here"},
        413: {"description": "The body is over the server's cap"},
        422: {"description": "A field breaks a rule, or is the wrong lab's for the step"},
        503: {"description": "Busy: come back after `Retry-After` seconds"},
    },
)
async def check(
    step_id: StepId,
    body: LearnCheckRequest,
    request: Request,
    traces: TracesDep,
    training: TrainingDep,
    recurrent: RecurrentDep,
) -> LearnCheck:
    """Check the step's tasks on what the learner has now: a toy step's table (validated as
    POST /api/trace validates it) and view, a train step's run and view, or step 1's recurrent
    comparison. Each task answers whether it is done and says why, with the numbers."""
    step = BY_ID.get(step_id)
    if step is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"step_id: no step {step_id!r} (one of {', '.join(BY_ID)})",
        )
    try:
        return await service.check(
            step,
            body,
            traces=traces,
            training=training,
            recurrent=recurrent,
            client=request.client.host if request.client else "",
        )
    except LearnRefused as exc:
        loc = ("body", *exc.field.split("."))
        raise RequestValidationError(
            [{"loc": loc, "msg": str(exc), "type": "value_error"}]
        ) from None
