"""Training runs: start one, read its state, follow its events, rename it, cancel it, download
a model, export an ended run as one HTML file, share it (the operator).

Whoever holds a run's id may read it (and is remembered as having opened it); only its owner or
the operator may rename or cancel it, and only the operator share it: to anyone else those
answer 404, as for a run that does not exist (``services.ownership``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Path, Query, Response, status
from fastapi.sse import EventSourceResponse, ServerSentEvent

from attnviz.api.deps import CallerDep, TrainingDep
from attnviz.schemas.train import (
    TrainAccepted,
    TrainDecoded,
    TrainDecodeRequest,
    TrainOptions,
    TrainRename,
    TrainRequest,
    TrainRun,
    TrainRuns,
)
from attnviz.services.training import LiveRun

router = APIRouter(prefix="/api/train", tags=["train"])

RunId = Annotated[str, Path(max_length=64, description="The id POST /api/train answered")]

Responses = dict[int | str, dict[str, Any]]


def gone(what: str) -> Responses:
    """The 404 of a ``what`` (a run, a comparison) that is not here, in the API's docs."""
    return {
        404: {
            "description": f"No such {what} here: never started, removed (the message says "
            "when), or forgotten by its owner"
        }
    }


def not_yours(what: str, change: str) -> Responses:
    """The 404 of a control endpoint: not here, or not the caller's to ``change``."""
    return {
        404: {
            "description": f"No such {what} here, or not the caller's to {change} (the same "
            "answer, so that its existence is not revealed)"
        }
    }


def attachment(data: bytes | str, media_type: str, filename: str) -> Response:
    """A file to download, named ``filename``."""
    disposition = f'attachment; filename="{filename}"'
    return Response(data, media_type=media_type, headers={"Content-Disposition": disposition})


# A start's body (a run's, a comparison's) refused.
A_START: Responses = {
    400: {"description": "The body could not be read as JSON (UTF-8 text)"},
    413: {"description": "The body is over the server's cap"},
    422: {"description": "A field breaks a rule or a server bound; see message"},
}
GONE: Responses = {
    **gone("run"),
    503: {
        "description": "Another server on the data directory trains the run or keeps it in line: "
        "come back after `Retry-After` seconds"
    },
}
NOT_YOURS = not_yours("run", "change")


def _run(run_id: RunId, training: TrainingDep, caller: CallerDep) -> LiveRun:
    return training.open(run_id, caller)


RunDep = Annotated[LiveRun, Depends(_run)]


@router.get("/options")
def options(training: TrainingDep) -> TrainOptions:
    """The tasks with their default architecture and optimiser, the ablation presets, the
    switches and their values, and this server's bounds on a run."""
    return training.options()


@router.get("")
def runs(training: TrainingDep, caller: CallerDep) -> TrainRuns:
    """The caller's runs this server keeps (running, and the last finished ones): those it
    started, those it opened by their link, those the operator shared (every one for the
    operator), newest first: each one's state, whether the caller may cancel it, and its
    variants' steps, held-out loss and model name."""
    return training.summaries(caller)


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    responses={
        **A_START,
        429: {
            "description": "The caller already has a run training and one waiting, or its "
            "address has ATTNVIZ_TRAIN_PER_ADDRESS runs going or waiting: come back after "
            "`Retry-After`"
        },
        503: {
            "description": "Every training slot is taken and the line is full "
            "(ATTNVIZ_TRAIN_QUEUE), or the server's data directory is in use by a newer "
            "attnviz (it cannot save runs): come back after `Retry-After`"
        },
    },
)
def start(
    req: TrainRequest, training: TrainingDep, caller: CallerDep, response: Response
) -> TrainAccepted:
    """Start training: one model, the variants of one switch (`compare`), or an ablation
    `preset`; the run is the caller's. Answers at once with the run's id; follow it at `events`
    (server-sent events) or read it at `url`. Each variant, once finished, is a model in
    /api/models (named by the run id, with the variant's label after it when there are
    several). When every training slot is taken, or the caller has a run training, the run waits
    in line (`state` `queued`, its `place`; it starts when a slot frees and the caller's other
    run has ended). `token` is the caller as a bearer token, for a
    client that keeps no cookie."""
    run = training.start(req, caller)
    url = f"/api/train/{run.id}"
    response.headers["Location"] = url
    state = training.state(run, caller)
    return TrainAccepted(id=run.id, state=state.state, place=state.place, events=f"{url}/events",
                         url=url, token=caller.token)  # fmt: skip


@router.get("/{run_id}", responses=GONE)
def read(run: RunDep, training: TrainingDep, caller: CallerDep) -> TrainRun:
    """The run's state: every variant's loss and gradient norms per step, its checkpoints
    (held-out loss and every head's attention on the task's probe, 8-bit), its model, and
    whether the caller may cancel it. Anyone with the id may read it."""
    return training.state(run, caller)


@router.get(
    "/{run_id}/events",
    response_class=EventSourceResponse,
    responses={
        **GONE,
        200: {
            "description": "Server-sent events: `state` (the whole run, first), then, while it "
            "waits for a slot, `queue` (its `state`, `place` and `wait_s`, whenever they change; "
            "`state` `running`, `place` null once it starts), then `steps` "
            "(batched, about ten a second), `checkpoint`, `variant` (a variant started or "
            "finished), `claims` (a preset's, measured) and `end` (the last). Each has an "
            "`id`; reconnecting with `Last-Event-ID` goes on after it, without the state."
        },
    },
)
async def events(
    run: RunDep,
    training: TrainingDep,
    caller: CallerDep,
    last_event_id: Annotated[int | None, Header(ge=0)] = None,
) -> AsyncIterator[ServerSentEvent]:
    async for seq, name, data in training.stream(run, last_event_id, caller):
        yield ServerSentEvent(raw_data=data, event=name, id=str(seq))


@router.get(
    "/{run_id}/model.zip",
    response_class=Response,
    responses={
        **GONE,
        200: {
            "description": "The variant's model folder, zipped: config.json, model.safetensors "
            "and tokenizer.json; unzipped, `attnviz serve --model FOLDER` serves it",
            "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
        },
        422: {"description": "No such variant, or it has not finished"},
    },
)
def download(
    run: RunDep, training: TrainingDep, variant: Annotated[int, Query(ge=0)] = 0
) -> Response:
    """A finished variant's model as a Hugging Face-style folder (zip)."""
    name, data = training.folder_zip(run, variant)
    return attachment(data, "application/zip", name)


@router.get(
    "/{run_id}/export",
    response_class=Response,
    responses={
        **GONE,
        200: {
            "description": "The run as one self-contained HTML file (an attachment): Train "
            "mode's views of its loss, gradient norms and every head at each checkpoint, with "
            "the slider to scrub them, drawn offline from the run's state inside the file",
            "content": {"text/html": {"schema": {"type": "string"}}},
        },
        409: {"description": "The run is still running (or waiting): export it once it has ended"},
    },
)
def export(run: RunDep, training: TrainingDep) -> Response:
    """An ended run (done, cancelled or failed) as one HTML file that opens from ``file://``
    with the network off: ``attnviz export --server URL --run ID`` writes the same file."""
    from attnviz.python.html import ExportError, run_html

    state = training.state(run)
    if state.state in ("queued", "running"):
        doing = "still running" if state.state == "running" else "waiting for a training slot"
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"run_id: run {run.id} is {doing}; export it once it has ended "
            "(done, cancelled or failed)",
        )
    saved = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    try:
        html = run_html(state.model_dump_json(), saved=saved)
    except ExportError as exc:  # over the file's cap
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    return attachment(html, "text/html; charset=utf-8", f"attnviz-run-{run.id}.html")


@router.post(
    "/{run_id}/decode",
    responses={
        **GONE,
        400: {"description": "The body could not be read as JSON (UTF-8 text)"},
        413: {"description": "The body is over the server's cap"},
        422: {"description": "Not an encoder-decoder run, or a source it cannot read"},
    },
)
def decode(run: RunDep, training: TrainingDep, req: TrainDecodeRequest) -> TrainDecoded:
    """Ask a finished encoder-decoder variant (tasks reverse and copy) to write its answer for
    a string of lowercase letters (greedy), with every head's attention, exact: the encoder's,
    the decoder's own and its cross-attention to the source."""
    return training.decode(run, req)


@router.patch(
    "/{run_id}",
    responses={
        **not_yours("run", "rename"),
        400: {"description": "The body could not be read as JSON (UTF-8 text)"},
        413: {"description": "The body is over the server's cap"},
        422: {
            "description": "`title` empty once trimmed, over max_title_chars, or holding a "
            "control character; see message"
        },
    },
)
def rename(run_id: RunId, req: TrainRename, training: TrainingDep, caller: CallerDep) -> TrainRun:
    """Name the run (`{"title": "my induction model"}`; `null` gives it back the name of what
    it trains), whatever its state: the run's owner (its cookie, or the bearer token its start
    answered) or the operator; 404 for anyone else. The name is trimmed of spaces, 1 to
    `max_title_chars` characters (/api/train/options), with no control characters; the run
    and its models are listed under it from then on (`named` true), across restarts."""
    run = training.rename(run_id, req.title, caller)
    return training.state(run, caller)


@router.delete("/{run_id}", responses=NOT_YOURS)
def cancel(run_id: RunId, training: TrainingDep, caller: CallerDep) -> TrainRun:
    """Cancel a running run (it stops within a step and keeps what it learned: its models
    stay), or a waiting one (it leaves the line, and those behind it move up), or forget a
    finished one and its models: the run's owner (its cookie, or the bearer token its start
    answered) or the operator; 404 for anyone else."""
    run = training.cancel(run_id, caller)
    return training.state(run, caller)


@router.post("/{run_id}/share", responses=NOT_YOURS)
def share(run_id: RunId, training: TrainingDep, caller: CallerDep) -> TrainRun:
    """The operator (`Authorization: Bearer <ATTNVIZ_ADMIN_TOKEN>`) shares the run with every
    visitor: it is then in everyone's runs list, and its models in everyone's model list. 404
    for anyone else."""
    run = training.share(run_id, caller)
    return training.state(run, caller)
