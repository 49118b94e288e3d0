from typing import Annotated

from fastapi import APIRouter, Query

from attnviz.api.deps import CallerDep, RegistryDep, SettingsDep, TrainingDep
from attnviz.limits import LIMITS
from attnviz.pretrained.registry import BUILTIN_MISSING
from attnviz.schemas.models import CorpusLimits, ImageLimits, ModelList
from attnviz.services.corpus import projections
from attnviz.services.pointers import example_heads
from attnviz.services.text_trace import EXAMPLES, model_info, predicting

router = APIRouter(prefix="/api", tags=["models"])


@router.get("/models")
def models(
    registry: RegistryDep,
    settings: SettingsDep,
    training: TrainingDep,
    caller: CallerDep,
    open: Annotated[
        str | None,
        Query(
            max_length=200,
            description="A trained run's model that a link names: its name is the capability "
            "to open it, so it is listed too (and its run remembered as opened by the caller)",
        ),
    ] = None,
) -> ModelList:
    """The pretrained models this server runs on text, the models of the caller's trained runs
    (its own, those it opened by their link, the shared ones), and example sentences."""
    if open and open not in registry.models:
        training.load_model(open)  # a finished run's, kept in the store (another replica's)
    wanted = registry.models.get(open) if open else None
    if wanted is not None and wanted.run is not None:
        training.remember(wanted.run, caller)
    training.refresh(caller)  # the caller's finished runs in the store (another replica's)
    listed = [m for m in registry.models.values() if m.run is None or training.lists(m.run, caller)]
    return ModelList(
        models=[model_info(m, settings.max_text_tokens) for m in listed],
        default=registry.default,
        predicting=predicting(listed),
        examples=EXAMPLES,
        max_text_chars=LIMITS.max_text_chars,
        max_generate=LIMITS.max_generate,
        max_ablate=LIMITS.max_ablate,
        max_json_values=settings.max_json_values,
        install=BUILTIN_MISSING,
        example_heads=example_heads(registry),
        corpus=CorpusLimits(
            max_tokens=LIMITS.max_corpus_tokens,
            default_tokens=LIMITS.default_corpus_tokens,
            max_chars=LIMITS.max_corpus_chars,
            projections=projections(),
        ),
        images=ImageLimits(max_bytes=settings.max_image_bytes),
    )
