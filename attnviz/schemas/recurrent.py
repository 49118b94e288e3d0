"""Why not an RNN: ``POST /api/recurrent``, ``GET /api/recurrent/{id}``, ``GET /api/recurrent``:
the training lab's transformer against an LSTM and a GRU on one task."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from attnviz.schemas.common import Int, Owned, RunState, Strict
from attnviz.schemas.train import TrainClaim

RecurrentTask = Literal["copy", "reverse", "induction"]
RecurrentKind = Literal["transformer", "lstm", "gru"]
RECURRENT_MAX_SEED = 2**31 - 1


class RecurrentRequest(Strict):
    """A comparison of the training lab's transformer with an LSTM and a GRU on one task."""

    task: RecurrentTask = "copy"
    seed: Int = Field(0, ge=0, le=RECURRENT_MAX_SEED, description="Starting weights and data order")


class RecurrentTaskInfo(BaseModel):
    name: RecurrentTask
    title: str
    about: str
    steps: int = Field(description="Training steps of each model")
    distances: list[int]
    distance: str = Field(description="What a distance counts")


class RecurrentOptions(BaseModel):
    tasks: list[RecurrentTaskInfo]
    default: RecurrentTask
    lengths: list[int] = Field(description="The sequence lengths a training step is timed at")
    max_seed: int
    slots: int = Field(
        description="Comparisons this server runs at once (ATTNVIZ_TRAIN_SLOTS); another "
        "waits in line"
    )
    queue: int = Field(
        description="Comparisons that may wait in line for a slot (ATTNVIZ_TRAIN_QUEUE; 503 "
        "past it)"
    )
    per_address: int = Field(
        description="Comparisons one client address may have running or waiting at once "
        "(ATTNVIZ_TRAIN_PER_ADDRESS; 429 past it)"
    )


class RecurrentModel(BaseModel):
    name: RecurrentKind
    params: int
    accuracy: list[float] = Field(description="Per distance, once trained; [] before")
    step_seconds: list[float] = Field(description="Per length, once timed; [] before")
    loss: float | None = Field(None, description="Its last training batch's loss, nats")
    steps: int = Field(0, description="Training steps done")
    train_seconds: float | None = Field(None, description="Its training's wall time, once done")


class RecurrentRun(Owned):
    token: str | None = Field(
        None,
        description="POST's answer only: the caller's visitor token, sent as `Authorization: "
        "Bearer <token>` to be this visitor again (a client that keeps no cookie)",
    )
    state: RunState
    reason: str | None = Field(None, description="Why it stopped, when not done")
    place: int | None = Field(
        None, description="While queued: its place in line, 1 the next to start; else null"
    )
    wait_s: int | None = Field(
        None,
        description="While queued: about how many seconds until it starts (from the "
        "comparisons ahead: their work left at their pace, within the time limit); else null",
    )
    task: RecurrentTask
    seed: int
    distances: list[int] = Field(description="Where accuracy is measured")
    distance: str = Field(description="What a distance counts (the accuracy plot's axis)")
    lengths: list[int] = Field(description="The sequence lengths a step is timed at")
    models: list[RecurrentModel]
    claims: list[TrainClaim] | None = Field(None, description="Measured once it is done")
    shows: str = Field("", description="What it showed, in words, once it is done")
    progress: float = Field(0.0, description="The share of the work done, 0 to 1")
    doing: str = Field("", description="What it is doing now")


class RecurrentSummary(Owned):
    """One comparison in the caller's list (GET /api/recurrent)."""

    created: float = Field(description="When it started (epoch seconds)")
    state: RunState
    task: RecurrentTask
    seed: int
    progress: float = Field(0.0, description="The share of the work done, 0 to 1")


class RecurrentRuns(BaseModel):
    comparisons: list[RecurrentSummary] = Field(
        description="The caller's comparisons this server keeps (those it started, those it "
        "opened by their id; every one for the operator), newest first"
    )
