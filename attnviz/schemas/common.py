"""What several resources' schemas share: the strict base of every request, the field types
of a toy table, the toy model's config (a trace's, a preset's, a Learn step's), a run's state
and what the caller may do with it (a training run's, a recurrent comparison's).

Every size a request can ask for has a cap (``attnviz.limits``); every rule a request can break
has a message that names the field, e.g. ``config.heads: 2 does not divide d = 3``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, StringConstraints, model_validator

from attnviz.engine.config import Norm, Positional
from attnviz.limits import LIMITS

Value = Annotated[FiniteFloat, Field(ge=-LIMITS.max_abs_value, le=LIMITS.max_abs_value)]
Matrix = list[list[Value]]
Token = Annotated[str, StringConstraints(max_length=LIMITS.max_token_chars)]
AxisName = Annotated[str, StringConstraints(max_length=LIMITS.max_token_chars)]

Projections = Literal["identity", "random", "custom"]
Mask = Literal["none", "causal"]
# A training run's or a recurrent comparison's state; "interrupted": it was going when the
# server stopped, and is kept as of its last checkpoint (services.store).
RunState = Literal["running", "done", "cancelled", "failed", "interrupted"]


class Owned(BaseModel):
    """What a run (a training run, a comparison) says of its id and of what the caller may do
    with it (``services.ownership``)."""

    id: str
    yours: bool = Field(False, description="The caller started it")
    can_cancel: bool = Field(
        False,
        description="The caller may cancel it (or, once ended, forget it): its owner or the "
        "operator; to anyone else DELETE answers 404",
    )


class Strict(BaseModel):
    """A request (a body or the query parameters): a field it does not know is refused (422)."""

    model_config = ConfigDict(extra="forbid")


class CustomWeights(Strict):
    """User matrices for ``projections = "custom"``, each d x d, shared by all layers.

    Rows index the input dimension: ``Q = X @ q``. ``o`` is the identity when absent.
    """

    q: Matrix
    k: Matrix
    v: Matrix
    o: Matrix | None = None


class ToyConfig(Strict):
    """How the toy transformer is wired. The defaults are the article's raw self-attention."""

    layers: int = Field(1, ge=1, le=LIMITS.max_layers)
    heads: int = Field(1, ge=1, le=LIMITS.max_heads, description="Must divide d.")
    projections: Projections = "identity"
    weights: CustomWeights | None = Field(None, description='Only with projections "custom".')
    scale: bool = Field(True, description="Divide the logits by sqrt(d / heads).")
    mask: Mask = "none"
    positional: Positional = "none"
    residual: bool = False
    norm: Norm = "none"
    ffn: bool = False
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @model_validator(mode="after")
    def _weights_match_projections(self) -> ToyConfig:
        if self.projections == "custom" and self.weights is None:
            raise ValueError('config.weights: required when config.projections is "custom"')
        if self.projections != "custom" and self.weights is not None:
            raise ValueError(
                f'config.weights: only allowed when config.projections is "custom" '
                f'(it is "{self.projections}")'
            )
        return self
