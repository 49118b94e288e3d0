from fastapi import APIRouter

from attnviz.glossary import GLOSSARY
from attnviz.limits import LIMITS
from attnviz.presets import presets
from attnviz.schemas.common import ToyConfig
from attnviz.schemas.presets import PresetList

router = APIRouter(prefix="/api", tags=["presets"])


@router.get("/presets")
def list_presets() -> PresetList:
    """Named toy tables with a suggested config and what each teaches, plus the request caps and
    the glossary of the terms the page marks."""
    return PresetList(
        presets=presets(), limits=LIMITS, config_defaults=ToyConfig(), glossary=list(GLOSSARY)
    )
