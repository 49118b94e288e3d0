from fastapi import APIRouter, Request

from attnviz.api.deps import RegistryDep, SettingsDep, TracesDep
from attnviz.schemas.atlas import AtlasResponse
from attnviz.services.atlas import ATLASES
from attnviz.services.text_trace import find_model, token_cap

router = APIRouter(prefix="/api", tags=["models"])


@router.get(
    "/models/{name:path}/atlas",
    responses={
        404: {"description": "No model of that name"},
        422: {"description": "The model cannot be probed (too few positions or tokens)"},
        503: {"description": "Busy: come back after `Retry-After` seconds"},
    },
)
async def atlas(
    name: str, request: Request, registry: RegistryDep, settings: SettingsDep, traces: TracesDep
) -> AtlasResponse:
    """Every head of the model scored on fixed probes (TransformerLens's head detectors, Olsson
    et al.'s prefix matching): previous-token, first-token (sink), duplicate-token, induction and
    positional, each a layers x heads grid, with the probe's text and tokens. Computed once per
    model on the compute thread, then kept."""
    m = find_model(registry, name)
    cap = token_cap(m, settings.max_text_tokens)
    client = request.client.host if request.client else ""
    cheap = ATLASES.get(m, cap) is not None
    got = await traces.admission_for(name).run(client, lambda: ATLASES.atlas(m, cap), cheap=cheap)
    return got.response()
