from fastapi import APIRouter

from attnviz.api.deps import CallerDep, RegistryDep, SettingsDep, TrainingDep
from attnviz.limits import LIMITS
from attnviz.presets import example_heads
from attnviz.pretrained.registry import BUILTIN_INSTALL
from attnviz.schemas.models import CorpusLimits, ModelList
from attnviz.services.corpus import projections
from attnviz.services.text_trace import EXAMPLES, model_info

router = APIRouter(prefix="/api", tags=["models"])


@router.get("/models")
def models(
    registry: RegistryDep, settings: SettingsDep, training: TrainingDep, caller: CallerDep
) -> ModelList:
    """The pretrained models this server runs on text, the models of the caller's trained runs
    (its own, those it opened by their link, the shared ones), and example sentences."""
    listed = [m for m in registry.models.values() if m.run is None or training.lists(m.run, caller)]
    return ModelList(
        models=[model_info(m, settings.max_text_tokens) for m in listed],
        default=registry.default,
        examples=EXAMPLES,
        max_text_chars=LIMITS.max_text_chars,
        max_generate=LIMITS.max_generate,
        max_ablate=LIMITS.max_ablate,
        max_json_values=settings.max_json_values,
        install=BUILTIN_INSTALL,
        example_heads=[e for e in example_heads() if e.model in registry.models],
        corpus=CorpusLimits(
            max_tokens=LIMITS.max_corpus_tokens,
            default_tokens=LIMITS.default_corpus_tokens,
            max_chars=LIMITS.max_corpus_chars,
            projections=projections(),
        ),
    )
