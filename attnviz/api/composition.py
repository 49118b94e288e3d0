from fastapi import APIRouter, Request

from attnviz.api.deps import RegistryDep, TracesDep
from attnviz.schemas.composition import CompositionResponse
from attnviz.services.composition import COMPOSITIONS
from attnviz.services.text_trace import find_model

router = APIRouter(prefix="/api", tags=["models"])


@router.get(
    "/models/{name:path}/composition",
    responses={
        404: {"description": "No model of that name"},
        422: {"description": "A model run through transformers, or an encoder-decoder"},
        503: {"description": "Busy: come back after `Retry-After` seconds"},
    },
)
async def composition(
    name: str, request: Request, registry: RegistryDep, traces: TracesDep
) -> CompositionResponse:
    """Q-, K- and V-composition scores (Elhage et al. 2021) of every earlier head into every
    later one, from the weights alone, as TransformerLens's ``all_composition_scores`` computes
    them (with its weight processing, stated in ``processing``): ``kinds.q[lb][hb]`` lists the
    later head (lb, hb)'s scores from the heads of layers 0 .. lb - 1, in the order of ``names``.
    Computed once per model on the compute thread, then kept."""
    m = find_model(registry, name)
    client = request.client.host if request.client else ""
    cheap = COMPOSITIONS.get(m) is not None
    return await traces.admission_for(m.name).run(
        client, lambda: COMPOSITIONS.answer(m), cheap=cheap
    )
