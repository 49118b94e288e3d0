"""POST /api/export: one self-contained HTML file of what the page shows (a toy table's trace,
or a model's trace of a text), as ``attnviz export`` writes it, computed through the same
admission and caps as a trace (503 with Retry-After when busy). As POST /api/trace, what it
would refuse without computing is refused before it waits for a turn (``admit``): a body over
the cap is the middleware's 413 before it is read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from attnviz.api.deps import JobsDep, TracesDep
from attnviz.api.responses import SlicedResponse
from attnviz.errors import TraceError
from attnviz.schemas.export import ExportRequest, ExportSelection
from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services.jobs import TraceJobs

router = APIRouter(prefix="/api", tags=["export"])


def admit(body: ExportRequest, jobs: TraceJobs) -> float:
    """Before the file's trace waits for a turn, as POST /api/trace before its own: what it
    would refuse without computing, a 404 or a TraceError naming the field. A text: an unknown
    model, a text over the token cap, images, ``generate`` or ``ablate`` the model cannot take
    (``TraceJobs.checked``), and a selection past the model's layers or heads or the trace's
    tokens (with images, the most it can have: ``TraceJobs.token_bound``); a toy table: a
    selection past its layers, heads or tokens, or one a toy file has none of. Returns the
    work of a text's trace and thumbnails (``TraceJobs.units``), 0 for a toy table's."""
    req, sel = body.trace, body.selection
    if isinstance(req, TextTraceRequest):
        if sel.view is not None:
            raise TraceError("selection.view: a text's file has none (the toy lab's view)")
        model, tokens = jobs.checked(req)
        bound = jobs.token_bound(req, model, tokens)  # with images, the cap: see token_bound
        _within(sel, model.cfg.n_layers, model.cfg.n_heads, bound)
        return jobs.units(model, tokens, thumbs=True)
    for name in ("query", "key", "views"):
        if getattr(sel, name) is not None:
            raise TraceError(f"selection.{name}: a toy table's file has none (its view: layer, "
                             "head, view)")  # fmt: skip
    if sel.hide_special or sel.merge_words:
        raise TraceError("selection.hide_special: a toy table has no special tokens nor words")
    n, layers = len(req.tokens), req.config.layers
    _within(sel, layers, req.config.heads, n)
    view = sel.view
    if view is not None:
        for key, value, top in (("vlayer", view.vlayer, layers), ("a", view.a, n - 1),
                                ("b", view.b, n - 1)):  # fmt: skip
            if value is not None and value > top:
                raise TraceError(f"selection.view.{key}: {value} is out of range (0 to {top})")
    return 0.0


def _within(sel: ExportSelection, layers: int, heads: int, tokens: int) -> None:
    """The selection's layer and head within the model's, its query and key within ``tokens``
    (a text with images: the most its trace can have; the file checks the trace's own)."""
    bounds = [("layer", sel.layer, layers), ("head", sel.head, heads),
              ("query", sel.query, tokens), ("key", sel.key, tokens)]  # fmt: skip
    for name, value, count in bounds:
        if value is not None and value >= count:
            raise TraceError(f"selection.{name}: {value} is out of range (0 to {count - 1})")


def build(traces: Any, body: ExportRequest) -> str:
    """The file's HTML (on the compute thread): the trace's parts asked of the trace service as
    POST /api/trace asks them; a selection the trace lacks (``admit`` checked the rest before)
    raises TraceError naming ``selection.<field>``."""
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
            pictures = previews_of(req.images)  # each drawn offline from the file
            trace = Trace.from_compact(source({"fields": "thumbs", "thumb": 1}), source, pictures)
            return standalone_html(trace, layer=sel.layer, head=sel.head, query=sel.query,
                                   key=sel.key, hide_special=sel.hide_special,
                                   merge_words=sel.merge_words, views=sel.views,
                                   budget=DEFAULT_BUDGET)  # fmt: skip
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
async def export(
    body: ExportRequest, request: Request, traces: TracesDep, jobs: JobsDep
) -> Response:
    req = body.trace
    units = admit(body, jobs)  # refused before waiting for a turn, as POST /api/trace
    cheap = traces.cache.holds(traces.key(req))
    expected = None if cheap else jobs.over_request_limit(units)
    if expected is not None:
        # Its trace would be cut off by the request limit with nothing to show: refused now.
        raise TraceError(
            f"text: this file's trace is expected to take about {expected:.0f} s to compute "
            f"here, over this server's limit of {jobs.request_s:g} s for one request; send a "
            "shorter text, or trace it first (a trace this server keeps exports at once)"
        )
    client = request.client.host if request.client else ""
    html = await traces.admission.run(client, lambda: build(traces, body), cheap=cheap)
    kind = "sentence" if isinstance(req, TextTraceRequest) else "toy"
    name = f"attnviz-{kind}-layer{body.selection.layer + 1}-head{body.selection.head + 1}.html"
    return SlicedResponse(
        html.encode("utf-8"),
        media_type="text/html; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
