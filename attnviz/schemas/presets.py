"""``GET /api/presets``: the toy lab's example tables, the caps, the config defaults and the
glossary (the page's bootstrap)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from attnviz.glossary import Term
from attnviz.limits import Limits
from attnviz.schemas.common import ToyConfig


class Preset(BaseModel):
    id: str
    name: str
    about: str = Field(description="One or two sentences on what the preset teaches.")
    source: str = Field(
        description="Which of the articles attnviz grew out of the example comes from, by its "
        "title, and what attnviz added"
    )
    tokens: list[str]
    axes: list[str]
    embeddings: list[list[float]]
    config: ToyConfig


class PresetList(BaseModel):
    presets: list[Preset]
    limits: Limits
    config_defaults: ToyConfig = Field(description="The config a table gets when it names none")
    glossary: list[Term] = Field(
        description="Every term the page marks, with its explanation (attnviz/glossary.py)"
    )
