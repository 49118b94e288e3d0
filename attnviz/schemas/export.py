"""``POST /api/export``: a trace request (as ``POST /api/trace`` takes it) and the selection
the exported file opens on."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from attnviz.schemas.common import Int, Strict
from attnviz.schemas.trace import TraceRequest

ExportView = Literal["model", "head", "qk", "traj", "gen", "why", "lens", "picture"]


class ToyExportView(Strict):
    """The toy lab's view besides the heatmaps' head: the vectors' layer, the distance pair and
    the trajectories (core/state.js ToyView)."""

    vlayer: Int | None = Field(None, ge=0, description="The vectors' layer (0: the input)")
    a: Int | None = Field(None, ge=0, description="The distance's first token")
    b: Int | None = Field(None, ge=0, description="The distance's second token")
    trails: bool = True


class ExportSelection(Strict):
    """What the file shows first: the layer and head (0-based), and for a text the query token,
    the token options and the views; for the toy lab its view."""

    layer: Int = Field(0, ge=0)
    head: Int = Field(0, ge=0)
    query: Int | None = Field(None, ge=0, description="A text's query (default: the first word)")
    key: Int | None = Field(
        None, ge=0, description="Why this score's key (default: the query's winning key)"
    )
    hide_special: bool = False
    merge_words: bool = False
    views: list[ExportView] | None = Field(
        None,
        min_length=1,
        max_length=len(get_args(ExportView)),
        description="A text's views (all by default)",
    )
    view: ToyExportView | None = Field(None, description="The toy lab's view")


class ExportRequest(Strict):
    """POST /api/export: the trace request (a toy table or a model on a text, as POST
    /api/trace takes it) and the selection the file opens on."""

    trace: TraceRequest
    selection: ExportSelection = Field(default_factory=ExportSelection)
