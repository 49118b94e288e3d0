from fastapi import APIRouter, Request

from attnviz.api.deps import RegistryDep, SettingsDep, TracesDep
from attnviz.schemas.corpus import CorpusRequest, CorpusResponse
from attnviz.services.corpus import CORPORA, check
from attnviz.services.text_trace import find_model, token_cap

router = APIRouter(prefix="/api", tags=["models"])


@router.post(
    "/models/{name:path}/corpus",
    responses={
        400: {"description": "The body could not be read as JSON (UTF-8 text)"},
        404: {"description": "No model of that name"},
        413: {"description": "The body is over the server's cap"},
        422: {"description": "A field out of range for the model or this server (named)"},
        503: {"description": "Busy: come back after `Retry-After` seconds"},
    },
)
async def corpus(
    name: str,
    body: CorpusRequest,
    request: Request,
    registry: RegistryDep,
    settings: SettingsDep,
    traces: TracesDep,
) -> CorpusResponse:
    """One head's queries and keys of every token of a set of texts (the model's examples,
    sentences of Python's documentation, or an upload), normalised as AttentionViz does (every
    softmax unchanged) and projected together into 2-D (PCA, or UMAP when installed), the
    user's own sentence placed into the set's map; every head clustered by the cosine similarity
    of its patterns on the set. The set is run once on the compute thread, then kept."""
    m = find_model(registry, name)
    check(m, body)  # a 422 before any wait in the queue
    cap = token_cap(m, settings.max_text_tokens)
    client = request.client.host if request.client else ""
    cheap = CORPORA.cheap(m, body, cap)
    return await traces.admission_for(m.name).run(
        client, lambda: CORPORA.corpus(m, body, cap), cheap=cheap
    )
