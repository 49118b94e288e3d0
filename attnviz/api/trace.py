from fastapi import APIRouter

from attnviz.api.deps import DeviceDep
from attnviz.schemas import ToyTraceRequest, TraceResponse
from attnviz.services.trace import run_toy_trace

router = APIRouter(prefix="/api", tags=["trace"])


@router.post("/trace", responses={422: {"description": "A field breaks a rule; see message"}})
def trace(req: ToyTraceRequest, device: DeviceDep) -> TraceResponse:
    """Run the toy transformer on a table and return every layer's attention and hidden states."""
    return run_toy_trace(req, device)
