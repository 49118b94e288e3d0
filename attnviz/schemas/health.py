"""``GET /healthz``: the server's version, device and load."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from attnviz.schemas.models import Placement


class Load(BaseModel):
    """What the server is doing, for a host's monitoring (and ``attnviz bench``)."""

    running: int = Field(description="Computations running now")
    waiting: int = Field(description="Requests waiting for their turn")
    refused: int = Field(description="503s since the start: a turn would not come in time")
    cache_mb: float = Field(description="Memory the cached traces take")
    cache_max_mb: float = Field(description="Its bound (ATTNVIZ_TRACE_CACHE_MB)")
    cache_entries: int
    training: int = Field(0, description="Training runs running now (ATTNVIZ_TRAIN_SLOTS)")
    queued: int = Field(0, description="Training runs waiting for a slot (ATTNVIZ_TRAIN_QUEUE)")
    comparing: int = Field(
        0, description="Recurrent comparisons running now (as many slots of their own)"
    )
    comparisons_queued: int = Field(
        0, description="Recurrent comparisons waiting for a slot (a line of their own)"
    )


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
    device: str
    load: Load
    placement: dict[str, Placement] = Field(
        default_factory=dict,
        description="Where each loaded model's embedding, layers and head live, by its name "
        "(a trained run's model is on the device)",
    )
