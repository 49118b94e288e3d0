"""What several resources' schemas share: the strict base of every request, the field types
of a toy table, the toy model's config (a trace's, a preset's, a Learn step's), a run's state
and what the caller may do with it (a training run's, a recurrent comparison's).

Every size a request can ask for has a cap (``attnviz.limits``); every rule a request can break
has a message that names the field, e.g. ``config.heads: 2 does not divide d = 3``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    FiniteFloat,
    StringConstraints,
    model_validator,
)
from pydantic import Strict as StrictMode
from pydantic_core import PydanticCustomError

from attnviz.engine.config import Norm, Positional
from attnviz.limits import LIMITS


def char_class(chars: Iterable[str]) -> str:
    """``chars`` (no surrogate among them) as the inside of a class of a JSON Schema pattern, in
    ranges: a character of the Basic Multilingual Plane as a ``\\uXXXX`` escape, one past it as
    itself (no escape of it is read alike by JSON Schema's, Python's and Rust's engines, and no
    such character is special in a class)."""

    def one(p: int) -> str:
        return f"\\u{p:04X}" if p < 0x10000 else chr(p)

    points = sorted(map(ord, chars))
    out: list[str] = []
    start = prev = points[0]
    for p in [*points[1:], -1]:
        if p != prev + 1:
            out.append(one(start) + (f"-{one(prev)}" if prev > start else ""))
            start = p
        prev = p
    return "".join(out)


def characters() -> Iterable[str]:
    """Every character a string field's pattern may be about, in order: all of Unicode but the
    surrogates, which no pattern can name (JSON Schema's engines read characters, never halves
    of one)."""
    return (chr(i) for i in range(0x110000) if not 0xD800 <= i <= 0xDFFF)


def _no_boolean(value: object) -> object:
    """What lax int takes (a whole float, numpy's integers) less what is no number: true and
    false, which Python counts as 1 and 0, and text."""
    if isinstance(value, (bool, str, bytes)):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


# A number in a request's body: a JSON number and nothing else. Pydantic's lax mode would take
# true and false for 1 and 0 (and "3" for 3); these refuse them with a 422 naming the field
# (``config.seed: Input should be a valid integer, not false``). Every int and float of a body
# is one of them (tests/schemas/test_numbers.py); query parameters, which come as text, are not.
# A float is pydantic's strict one (an integer is a float too, numpy's included).
Int = Annotated[int, BeforeValidator(_no_boolean)]
Float = Annotated[float, StrictMode()]
Value = Annotated[
    FiniteFloat, StrictMode(), Field(ge=-LIMITS.max_abs_value, le=LIMITS.max_abs_value)
]


def kind_of(value: object) -> str:
    """What a JSON value is, in words: "a number", "a string", "a list of 3 numbers", ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        kinds = {kind_of(v).removeprefix("a ").removeprefix("an ") for v in value}
        if not value:
            return "an empty list"
        what = f"{kinds.pop()}s" if len(kinds) == 1 else "values"
        return f"a list of {len(value)} {what}"
    return type(value).__name__


def rows_of_numbers(shape: str, row_max: int | None = None) -> BeforeValidator:
    """A table of numbers' refusal when it is not a list of rows (each of 1 to ``row_max``
    values): the shape expected (``shape``, e.g. "d rows of d numbers (d x d)") and what came,
    in one error for the field instead of one "Input should be a valid list" per row."""

    def rows(value: object) -> object:
        if not isinstance(value, list) or not value:
            raise PydanticCustomError("list_type", f"{shape}, got {kind_of(value)}")
        for i, row in enumerate(value):
            long = isinstance(row, list) and row_max is not None and len(row) > row_max
            if not isinstance(row, list) or not row or long:
                most = f", at most {row_max} numbers a row" if long else ""
                raise PydanticCustomError(
                    "list_type", f"{shape}{most}, got {kind_of(row)} as row {i}"
                )
        return value

    return BeforeValidator(rows)


# d x d: d is the toy table's width (its embeddings' values per row).
Matrix = Annotated[
    list[list[Value]],
    rows_of_numbers("d rows of d numbers (d x d, d the embeddings' values per row)"),
]
Token = Annotated[str, StringConstraints(max_length=LIMITS.max_token_chars)]
AxisName = Annotated[str, StringConstraints(max_length=LIMITS.max_token_chars)]

Projections = Literal["identity", "random", "custom"]
Mask = Literal["none", "causal"]
# A training run's or a recurrent comparison's state: "queued" while it waits in line for a
# slot (services.line), "running", an end, or "interrupted": it was going when the server
# stopped, and is kept as of its last checkpoint (services.store).
RunState = Literal["queued", "running", "done", "cancelled", "failed", "interrupted"]


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

    layers: Int = Field(1, ge=1, le=LIMITS.max_layers)
    heads: Int = Field(1, ge=1, le=LIMITS.max_heads, description="Must divide d.")
    projections: Projections = "identity"
    weights: CustomWeights | None = Field(None, description='Only with projections "custom".')
    scale: bool = Field(True, description="Divide the logits by sqrt(d / heads).")
    mask: Mask = "none"
    positional: Positional = "none"
    residual: bool = False
    norm: Norm = "none"
    ffn: bool = False
    seed: Int = Field(0, ge=0, le=2**31 - 1)

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
