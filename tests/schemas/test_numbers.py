"""No request body takes true or false for a number: every int and float field of every request
model (each a ``Strict``) refuses a boolean where a number goes, at that place, nested lists
included. Query parameters (``TraceQuery``), which come as text, are not bodies."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
from typing import Annotated, Any, Union, get_args, get_origin

import pytest
from pydantic import ValidationError

import attnviz.schemas
from attnviz.schemas.common import Strict
from attnviz.schemas.trace import TraceQuery

QUERY_MODELS = {TraceQuery}


def request_models() -> list[type[Strict]]:
    found = []
    for info in pkgutil.iter_modules(attnviz.schemas.__path__):
        module = importlib.import_module(f"attnviz.schemas.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Strict) and cls is not Strict and cls.__module__ == module.__name__:
                found.append(cls)
    return [m for m in found if m not in QUERY_MODELS]


def a_boolean_for(annotation: Any) -> tuple[Any, tuple] | None:
    """A value of ``annotation``'s shape with ``True`` where its number goes, and where that is
    (list indices); None for a field that holds no number."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return a_boolean_for(args[0])
    if origin in (Union, types.UnionType):
        for arg in args:
            found = a_boolean_for(arg)
            if found is not None:
                return found
        return None
    if origin is list:
        inner = a_boolean_for(args[0])
        return None if inner is None else ([inner[0]], (0, *inner[1]))
    if annotation in (int, float):
        return True, ()
    return None


NUMBER_FIELDS = [
    pytest.param(model, name, id=f"{model.__name__}.{name}")
    for model in request_models()
    for name, field in model.model_fields.items()
    if a_boolean_for(field.annotation) is not None
]


def test_the_request_models_and_their_numbers_are_found():
    names = {f"{p.values[0].__name__}.{p.values[1]}" for p in NUMBER_FIELDS}
    for expected in ("ToyConfig.seed", "ToyTraceRequest.embeddings", "CustomWeights.q",
                     "TrainOptimiser.lr", "CorpusRequest.clusters", "RecurrentRequest.seed",
                     "ExportSelection.head", "LearnView.layer", "Generate.temperature"):  # fmt: skip
        assert expected in names
    assert len(names) > 30


@pytest.mark.parametrize(("model", "name"), NUMBER_FIELDS)
@pytest.mark.parametrize("boolean", [True, False])
def test_a_boolean_is_refused_where_a_number_goes(model, name, boolean):
    found = a_boolean_for(model.model_fields[name].annotation)
    assert found is not None
    where = found[1]
    sample: Any = boolean
    for _ in where:  # nested as deep as the number
        sample = [sample]
    with pytest.raises(ValidationError) as err:
        model.model_validate({name: sample})
    at = [e for e in err.value.errors() if tuple(e["loc"]) == (name, *where)]
    assert at, err.value.errors()
    assert at[0]["type"] in ("int_type", "float_type")
