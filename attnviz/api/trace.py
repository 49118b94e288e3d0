from typing import Annotated, Any

from fastapi import APIRouter, Body
from pydantic import Discriminator, Tag

from attnviz.api.deps import DeviceDep, RegistryDep, SettingsDep
from attnviz.schemas import TextTraceRequest, TextTraceResponse, ToyTraceRequest, TraceResponse
from attnviz.services.text_trace import run_text_trace
from attnviz.services.trace import run_toy_trace

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


@router.post(
    "/trace",
    responses={
        404: {"description": "No model of that name"},
        422: {"description": "A field breaks a rule; see message"},
    },
)
def trace(
    req: TraceRequest, device: DeviceDep, registry: RegistryDep, settings: SettingsDep
) -> TraceResponse | TextTraceResponse:
    """Run the toy transformer on a table, or a pretrained model on a text, and return every
    layer's attention, scores, queries, keys, values and hidden states."""
    if isinstance(req, TextTraceRequest):
        return run_text_trace(req, registry, settings.max_text_tokens)
    return run_toy_trace(req, device)
