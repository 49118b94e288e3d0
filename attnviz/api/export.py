"""POST /api/export: one self-contained HTML file of what the page shows (a toy table's trace,
or a model's trace of a text), as ``attnviz export`` writes it, computed through the same
admission and caps as a trace (503 with Retry-After when busy)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from attnviz.api.deps import TracesDep
from attnviz.api.responses import SlicedResponse
from attnviz.errors import TraceError
from attnviz.schemas.export import ExportRequest
from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services.text_trace import find_model

router = APIRouter(prefix="/api", tags=["export"])


def build(traces: Any, body: ExportRequest) -> str:
    """The file's HTML (on the compute thread): the trace's parts asked of the trace service as
    POST /api/trace asks them; a selection the trace lacks raises TraceError naming
    ``selection.<field>``."""
    from attnviz.python.html import DEFAULT_BUDGET, ExportError, standalone_html, toy_html
    from attnviz.python.pictures import previews_of
    from attnviz.python.trace import Trace
    from attnviz.services.parts import compact_body

    req = body.trace

    def source(params: Mapping[str, Any]) -> bytes:
        # A part past a bound of work is a TraceError, which the file leaves out (``choose``).
        return compact_body(traces.part(req, TraceQuery(**params), compact=True))

    sel = body.selection
    try:
        if isinstance(req, TextTraceRequest):
            if sel.view is not None:
                raise ExportError("view: a text's file has none (the toy lab's view)")
            pictures = previews_of(req.images)  # each drawn offline from the file
            trace = Trace.from_compact(source({"fields": "thumbs", "thumb": 1}), source, pictures)
            return standalone_html(trace, layer=sel.layer, head=sel.head, query=sel.query,
                                   key=sel.key, hide_special=sel.hide_special,
                                   merge_words=sel.merge_words, views=sel.views,
                                   budget=DEFAULT_BUDGET)  # fmt: skip
        for name in ("query", "key", "views"):
            if getattr(sel, name) is not None:
                raise ExportError(f"{name}: a toy table's file has none (its view: layer, head, "
                                  "view)")  # fmt: skip
        if sel.hide_special or sel.merge_words:
            raise ExportError("hide_special: a toy table has no special tokens nor words")
        trace = Trace.from_compact(source({"fields": "embeddings"}), source)
        view = {} if sel.view is None else sel.view.model_dump(exclude_none=True)
        return toy_html(trace, layer=sel.layer, head=sel.head, view=view)
    except ExportError as exc:
        raise TraceError(f"selection.{exc}") from None


@router.post(
    "/export",
    response_class=Response,
    responses={
        200: {
            "description": "One HTML file that opens offline (no server, no network)",
            "content": {"text/html": {"schema": {"type": "string"}}},
        },
        400: {"description": "The body could not be read as JSON (UTF-8 text)"},
        404: {"description": "No model of that name"},
        413: {"description": "The body is over the server's cap"},
        422: {"description": "A field breaks a rule; see message"},
        503: {"description": "Busy: come back after `Retry-After` seconds"},
    },
    description="The page's views of a trace as one self-contained HTML file (its modules, a "
    "partial bundle of Plotly and the trace's parts inline; it opens from file:// with the network "
    "off): the toy lab's for a toy table (every head exact), sentence mode's for a text (the "
    "parts the views draw first, then more heads exact while the file stays within the "
    "default budget). `selection`: the layer, head, query, token options and views it opens "
    "on.",
)
async def export(body: ExportRequest, request: Request, traces: TracesDep) -> Response:
    req = body.trace
    if isinstance(req, TextTraceRequest):
        find_model(traces.registry, req.model)  # 404 before waiting for a turn
    client = request.client.host if request.client else ""
    cheap = traces.cache.holds(traces.key(req))
    html = await traces.admission.run(client, lambda: build(traces, body), cheap=cheap)
    kind = "sentence" if isinstance(req, TextTraceRequest) else "toy"
    name = f"attnviz-{kind}-layer{body.selection.layer + 1}-head{body.selection.head + 1}.html"
    return SlicedResponse(
        html.encode("utf-8"),
        media_type="text/html; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
