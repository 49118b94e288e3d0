from fastapi import APIRouter

from attnviz.presets import presets
from attnviz.schemas import LIMITS, PresetList, ToyConfig

router = APIRouter(prefix="/api", tags=["presets"])


@router.get("/presets")
def list_presets() -> PresetList:
    """Named toy tables with a suggested config and what each teaches, plus the request caps."""
    return PresetList(presets=presets(), limits=LIMITS, config_defaults=ToyConfig())
