"""A trace's meta is one model (``attnviz.schemas.trace_meta``): the suite has every answer's meta
checked against it before it is sent (``ATTNVIZ_CHECK_META``, set in tests/conftest.py), so
each key a trace says must be declared there; these tests show that the check refuses what it
should, and that the response models (the OpenAPI document) are the same model."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from attnviz.schemas.trace import TextTraceRequest, TextTraceResponse, ToyTraceRequest, TraceQuery
from attnviz.schemas.trace_meta import TextMeta, check_meta

TOY = ToyTraceRequest(tokens=["a", "b"], embeddings=[[1.0, 0.5], [0.25, -2.0]])


def test_the_suite_checks_every_answer(app):
    assert app.state.traces.settings.check_meta


def test_a_toy_answers_meta_is_its_model_and_nothing_else(app):
    traces = app.state.traces
    whole = traces.part(TOY, TraceQuery(), compact=False).meta
    part = traces.part(TOY, TraceQuery(fields="view", layer=0), compact=True).meta
    check_meta(whole, part=False)
    check_meta(part, part=True)
    with pytest.raises(ValidationError, match="fields"):
        check_meta(part, part=False)  # a part's own keys are not the whole trace's
    with pytest.raises(ValidationError, match="extra"):
        check_meta({**whole, "extra": 1}, part=False)
    with pytest.raises(ValidationError, match="layers"):
        check_meta({**whole, "layers": "two"}, part=False)


def test_a_text_answers_meta_is_its_model(app):
    req = TextTraceRequest(model="tiny-gpt2", text="The bank of the river.", generate={"steps": 2})
    meta = app.state.traces.part(req, TraceQuery(fields="thumbs"), compact=True).meta
    check_meta(meta, part=True)
    with pytest.raises(ValidationError, match="generated"):
        check_meta({**meta, "generated": {"start": 1}}, part=True)


def test_the_response_models_are_the_meta_and_the_arrays():
    from attnviz.capture.fields import REGISTRY

    described = set(TextTraceResponse.model_fields)
    assert set(TextMeta.model_fields) | set(REGISTRY.full()) == described
    assert {"images", "vision", "mrope"} <= described  # said of a trace with images


def test_every_field_whose_value_is_an_object_declares_its_members(tiny_gpt2_dir):
    """The fields whose value is an object (arrays and numbers) are those that declare their
    members, each model's keys exactly the members that are not arrays, on a causal model
    that has them all."""
    import attnviz
    from attnviz.capture.fields import REGISTRY
    from attnviz.wire.compact import decode

    declared = {f.name: f.members for f in REGISTRY if f.members is not None}
    trace = attnviz.trace(model=str(tiny_gpt2_dir), text="the cat sat on the mat", fields="entropy")
    asks = {"thumbs": {"thumb": 4}, "top_k": {"pos_start": 1, "pos_count": 2},
            "lens": {"pos_start": 1, "pos_count": 2},
            "qk_attribution": {"layer": 1, "head": 0, "query": 3, "key": 1, "top": 3},
            "logit_attribution": {"position": 3}}  # fmt: skip
    objects = set()
    for f in REGISTRY:
        if f.tower:
            continue  # (a text without a picture has no vision tower's array)
        meta, _ = decode(trace.source({"fields": f.name, **asks.get(f.name, {})}))
        if isinstance(meta.get(f.name), dict):
            objects.add(f.name)
            assert set(meta[f.name]) == set(declared[f.name].model_fields), f.name
    assert objects == set(declared)
