from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import Response
from pydantic import Discriminator, Tag

from attnviz.api.deps import TracesDep
from attnviz.api.responses import sliced_response
from attnviz.schemas.trace import (
    TextTraceRequest,
    TextTraceResponse,
    ToyTraceRequest,
    TraceQuery,
    TraceResponse,
)
from attnviz.wire.constants import COMPACT_MEDIA_TYPE

router = APIRouter(prefix="/api", tags=["trace"])


def _kind(body: Any) -> str:
    """A body with "text" or "model" asks for a pretrained model; anything else is a toy table."""
    if isinstance(body, dict):
        return "text" if "text" in body or "model" in body else "toy"
    return "text" if isinstance(body, TextTraceRequest) else "toy"


TraceRequest = Annotated[
    Annotated[ToyTraceRequest, Tag("toy")] | Annotated[TextTraceRequest, Tag("text")],
    Discriminator(_kind),
    Body(),
]

COMPACT_DOC = (
    f"With `Accept: {COMPACT_MEDIA_TYPE}`: the same arrays as one safetensors file (an 8-byte "
    "little-endian header length, a JSON header of names, dtypes, shapes and offsets, then the "
    'raw arrays). The header\'s `__metadata__["attnviz"]` is the JSON of every other field. '
    "Models send float32, the toy float64, thumbs uint8; masked scores are -inf."
)


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
        503: {"description": "Busy: come back after `Retry-After` seconds"},
    },
    description="Run the toy transformer on a table, or a pretrained model on a text, and return "
    "every layer's attention, scores, queries, keys, values and hidden states. The query "
    "parameters ask for a part: some arrays (`fields`), one `layer` or `head` of the per-head "
    "ones, the attention under the token options (`view`) and thumbnails of every head "
    "(`thumbs`). A JSON trace is capped in numbers (see /api/models). " + COMPACT_DOC,
)
async def trace(
    req: TraceRequest,
    query: Annotated[TraceQuery, Query()],
    request: Request,
    traces: TracesDep,
) -> Response:
    compact = COMPACT_MEDIA_TYPE in request.headers.get("accept", "")
    client = request.client.host if request.client else ""
    body = await traces.respond(
        req, query, compact, request.headers.get("accept-encoding", ""), client
    )
    headers = {
        "Vary": "Accept, Accept-Encoding",
        # Where the time went, for the browser's developer tools and `attnviz bench`.
        "Server-Timing": f"queue;dur={body.queued_ms:.1f}, compute;dur={body.compute_ms:.1f}"
        + "".join(f", {name};dur={ms:.1f}" for name, ms in body.phases),
    }
    if body.encoding:
        headers["Content-Encoding"] = body.encoding
    return sliced_response(body.content, body.media_type, headers)
