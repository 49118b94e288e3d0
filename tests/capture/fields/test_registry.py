"""The trace's fields (``attnviz.capture.fields``): each declaration is true of what its field
computes. Its count of numbers (the JSON cap's, before anything is computed) is the numbers its
array holds; the query parameters it declares are the only ones that change its array; the
catalogue the page reads (``GET /api/fields``) is the registry, and every parameter a field
names is one the query takes."""

from __future__ import annotations

import pytest
import torch

from attnviz.capture import ComputedTrace, capture_trace
from attnviz.capture.fields import REGISTRY, TraceField
from attnviz.capture.fields.base import Registry
from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services import compute
from attnviz.services.parts import json_numbers, select
from tests.support.models import make_model

X = torch.tensor(
    [[0.3, -1.2, 0.5, 0.8], [1.0, 0.4, -0.7, 0.1], [-0.5, 0.9, 0.2, -1.1], [0.6, 0.6, 1.3, -0.2],
     [0.1, 0.2, -0.3, 0.4]],
    dtype=torch.float64,
)  # fmt: skip
SENTENCE = "The bank of the river, unbelievably."
# A model that predicts tokens, and one whose tokenizer adds special tokens (hide_special hides
# them) and splits a word into pieces (merge_words joins them).
TEXT = TextTraceRequest(model="tiny-gpt2", text=SENTENCE)
PIECES = TextTraceRequest(model="all-MiniLM-L6-v2", text=SENTENCE)
# The fields a toy trace gives: no readout, no clean run, no vision tower.
TOY_FIELDS = [f.name for f in REGISTRY if f.needs not in ("readout", "clean run") and not f.tower]


def numbers_in(value: object) -> int:
    """The numbers an array holds: a tensor's, or the tensors' of an object of them."""
    if isinstance(value, torch.Tensor):
        return value.numel()
    if isinstance(value, dict):
        return sum(numbers_in(v) for v in value.values() if not isinstance(v, dict))
    return 0


@pytest.fixture(scope="module")
def toy() -> ComputedTrace:
    model = make_model(d_model=4, n_layers=2, n_heads=2, projections="random", seed=5,
                       causal=True)  # fmt: skip
    return ComputedTrace({"mode": "toy", "tokens": list("abcde")}, capture_trace(model, X[None]))


@pytest.mark.parametrize("name", TOY_FIELDS)
@pytest.mark.parametrize(
    "params",
    [{}, {"layer": 1}, {"layer": 1, "head": 0, "query": 2}, {"thumb": 2, "thumb_layer": 0},
     {"measure": "value_weighted"}],
)  # fmt: skip
def test_a_fields_count_is_the_numbers_it_sends(toy, name, params):
    query = TraceQuery(fields=name, **params)
    part = select(toy, query)
    assert numbers_in(part.arrays[name]) == json_numbers(toy, query)
    assert json_numbers(toy, query) > 0 or part.arrays[name] is None  # no positional table


def test_the_predictions_and_attributions_count_what_they_send(app):
    traces = app.state.traces
    trace, _ = compute.run(traces.computed, TEXT)
    asks = [{"fields": "top_k", "k": 3, "pos_start": 2, "pos_count": 4},
            {"fields": "lens", "pos_start": 1},
            {"fields": "qk_attribution", "layer": 1, "head": 0, "query": 5, "key": 2, "top": 4},
            {"fields": "logit_attribution", "position": 4}]  # fmt: skip
    for ask in asks:
        query = TraceQuery(**ask)
        part = traces.part(TEXT, query, compact=False)
        got, counted = numbers_in(part.arrays[ask["fields"]]), json_numbers(trace, query)
        assert 0 < got <= counted, ask
        if REGISTRY[ask["fields"]].needs == "readout":
            assert got == counted, ask  # the keys the query sees: at most every token


# A value other than the default, for each parameter a field may read.
VARIED = {"layer": 1, "head": 1, "query": 5, "hide_special": True, "merge_words": True,
          "thumb": 4, "thumb_layer": 1, "k": 2, "pos_start": 1, "pos_count": 3, "key": 1,
          "top": 3, "position": 3, "token": 5, "versus": 6, "measure": "value_weighted"}  # fmt: skip
# What a field needs to be computed at all.
NEEDED = {"qk_attribution": {"layer": 1, "head": 0, "query": 4, "key": 2}}  # past layer 0: heads


def same(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("field", [f for f in REGISTRY if not f.tower], ids=lambda f: f.name)
def test_a_field_reads_only_the_parameters_it_declares(app, field: TraceField):
    traces = app.state.traces
    req = PIECES if "hide_special" in field.params else TEXT
    base = {"fields": field.name, **NEEDED.get(field.name, {})}
    first = traces.part(req, TraceQuery(**base), compact=False).arrays[field.name]
    changed = []
    for param, value in VARIED.items():
        if param in base:
            continue
        part = traces.part(req, TraceQuery(**base, **{param: value}), compact=False)
        if not same(part.arrays[field.name], first):
            changed.append(param)
    assert sorted(changed) == sorted(p for p in field.params if p in changed)
    # and what it declares is read: each changes the array, or it is one the base fixes
    unread = [p for p in field.params if p not in changed and p not in base]
    assert unread == [], f"{field.name} declares {unread} but does not change with them"


def test_every_declared_parameter_is_the_querys():
    for f in REGISTRY:
        assert set(f.params) <= set(TraceQuery.model_fields) - {"fields"}, f.name


def test_the_catalogue_is_the_registry_in_the_order_of_the_wire(client):
    got = client.get("/api/fields").json()["fields"]
    assert [f["name"] for f in got] == list(REGISTRY.names())
    for entry, f in zip(got, REGISTRY, strict=True):
        assert entry["params"] == list(f.params) and entry["shape"] == f.shape
        assert (entry["rule"], entry["value_rule"], entry["needs"], entry["over_heads"]) == (
            f.rule, f.value_rule, f.needs, f.over_heads)  # fmt: skip
    # the full trace's arrays first, in its order: fields' default
    assert [f["name"] for f in got if f["full"]] == TraceQuery().names()


def test_a_field_is_registered_once():
    registry = Registry()
    field = REGISTRY["entropy"]
    registry.add(field)
    with pytest.raises(ValueError, match="registered twice"):
        registry.add(field)


def test_a_part_is_asked_for_by_what_its_fields_read():
    """``REGISTRY.ask`` (the export's plan; the page's core/fields.js ask reads the same
    declarations): the choices the named fields read, the rest and None left out."""
    choices = {"layer": 1, "head": 2, "query": None, "hide_special": True, "measure": "weights"}
    assert REGISTRY.ask("value_weighted_sum", **choices) == {
        "fields": "value_weighted_sum", "layer": 1, "hide_special": True}  # fmt: skip
    assert REGISTRY.ask("queries,view", **choices) == {
        "fields": "queries,view", "layer": 1, "head": 2, "hide_special": True,
        "measure": "weights"}  # fmt: skip
    assert REGISTRY.ask("entropy_mean", **choices) == {"fields": "entropy_mean"}
    with pytest.raises(KeyError):
        REGISTRY.ask("nope")
