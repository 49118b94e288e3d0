"""The Learn mode: the steps of the path, a step's check of the learner's trace or run (the
server's answer recorded in the learner's progress), the step a learner has open, the progress
the server keeps of the caller, their nickname, and the operator's class view."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Request, Response, status
from fastapi.exceptions import RequestValidationError

from attnviz.api.deps import (
    CallerDep,
    ClassroomDep,
    DeviceDep,
    RecurrentDep,
    TracesDep,
    TrainingDep,
)
from attnviz.learn import service
from attnviz.learn.classroom import NotOperator
from attnviz.learn.path import LearnRefused, Step
from attnviz.learn.steps import BY_ID
from attnviz.schemas.learn import (
    LearnCheck,
    LearnCheckRequest,
    LearnClass,
    LearnNickname,
    LearnProgress,
    LearnSteps,
)
from attnviz.services.progress_store import ProgressUnavailable

router = APIRouter(prefix="/api/learn", tags=["learn"])

StepId = Annotated[str, Path(max_length=40, description="A step's id, from GET /api/learn")]


def _step(step_id: str) -> Step:
    """The step of that id, else 404 naming it."""
    step = BY_ID.get(step_id)
    if step is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"step_id: no step {step_id!r} (one of {', '.join(BY_ID)})",
        )
    return step


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
    caller: CallerDep,
    classroom: ClassroomDep,
) -> LearnCheck:
    """Check the step's tasks on what the learner has now: a toy step's table (validated as
    POST /api/trace validates it) and view, a train step's run and view, or step 1's recurrent
    comparison. Each task answers whether it is done and says why, with the numbers. The
    answer is recorded in the caller's progress (GET /api/learn/progress), credited when it is
    of the caller's own work (not from_link, not another visitor's run or comparison); else
    ``seen`` says whose work it is and what makes it the caller's own."""
    step = _step(step_id)
    own = service.own(step, body, caller, training=training, recurrent=recurrent)
    looked = service.anothers(body, caller, training=training, recurrent=recurrent)
    try:
        answer = await service.check(
            step,
            body,
            traces=traces,
            training=training,
            recurrent=recurrent,
            client=request.client.host if request.client else "",
            yours=own,
        )
    except LearnRefused as exc:
        loc = ("body", *exc.field.split("."))
        raise RequestValidationError(
            [{"loc": loc, "msg": str(exc), "type": "value_error"}]
        ) from None
    await classroom.checked(
        caller,
        step,
        answer,
        own=own,
        looked=looked,
        states=service.task_states(step, body),
    )
    whose = service.seen(step, body, caller, own=own, training=training, recurrent=recurrent)
    return answer.model_copy(update={"credited": own, "seen": whose})


@router.post(
    "/{step_id}/open",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses={404: {"description": "No step of that id"}},
)
async def open_step(step_id: StepId, caller: CallerDep, classroom: ClassroomDep) -> Response:
    """The caller has this step open in the Learn path: the class view's "on step N" (a step
    opened is not always checked at once: a train step with no run yet has nothing to check).
    Credits nothing; kept for no one without the cookie or token the server gave, nor for the
    operator's token. 204, no body."""
    step = _step(step_id)
    await classroom.open(caller, step)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/progress")
async def progress(caller: CallerDep, classroom: ClassroomDep, response: Response) -> LearnProgress:
    """The caller's progress as the server keeps it: each step's tasks its checks found done
    and those tried, the step of the latest check, the nickname; whether an operator sees it."""
    response.headers["Cache-Control"] = "no-store"
    return await classroom.progress(caller)


@router.put(
    "/progress/nickname",
    responses={
        400: {"description": "The body could not be read as JSON (UTF-8 text)"},
        413: {"description": "The body is over the server's cap"},
        503: {"description": "The progress cannot be kept on this server now"},
    },
)
async def nickname(
    body: LearnNickname, caller: CallerDep, classroom: ClassroomDep, response: Response
) -> LearnProgress:
    """Give the name the operator's class view shows for the caller (null: none)."""
    response.headers["Cache-Control"] = "no-store"
    try:
        return await classroom.rename(caller, body.nickname)
    except ProgressUnavailable as exc:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc)) from None


@router.get(
    "/class",
    responses={403: {"description": "Not the operator (Authorization: Bearer <admin token>)"}},
)
async def class_view(caller: CallerDep, classroom: ClassroomDep, response: Response) -> LearnClass:
    """The operator's class view: every learner kept (their nickname, else Learner n; never an
    id), the steps each has done, where each is stuck (a task tried on stuck_tries different
    states of the lab or more, over stuck_s seconds or more, and not done), when each was last
    seen; not the operator's own browser. 403 for anyone else."""
    response.headers["Cache-Control"] = "no-store"
    try:
        return await classroom.class_view(caller)
    except NotOperator as exc:
        raise HTTPException(status.HTTP_403_FORBIDDEN, str(exc)) from None
