"""The trace cache's budget decides whether a trace keeps its q, k and v: past half of it they
are recomputed for the one layer a part needs, and every part reads the same numbers."""

from __future__ import annotations

import torch

from attnviz.schemas import TextTraceRequest, TraceQuery
from attnviz.services.traces import TraceService

TEXT = "The animal didn't cross the street because it was too tired. " * 4


def test_a_trace_over_the_budget_recomputes_its_qkv_layer_by_layer(app):
    roomy: TraceService = app.state.traces
    # MiniLM's q, k and v of 60 tokens take 3 x 6 x 60 x 384 x 4 bytes = 1.6 MB: over half of 1 MB
    tight = TraceService(
        roomy.settings.model_copy(update={"trace_cache_mb": 1}), roomy.device, roomy.registry
    )
    req = TextTraceRequest(model="all-MiniLM-L6-v2", text=TEXT)
    kept, _ = roomy.computed(req)
    lazy, _ = tight.computed(req)
    assert kept.tensors.q is not None
    assert lazy.tensors.q is None and lazy.tensors.has_qk
    for fields in ("queries,keys,values,scores,attentions", "thumbs,score_range"):
        query = TraceQuery(fields=fields)
        a = roomy.part(req, query, compact=True).arrays
        b = tight.part(req, query, compact=True).arrays
        assert a.keys() == b.keys()
        for name in a:
            x, y = a[name], b[name]
            if isinstance(x, torch.Tensor):
                assert torch.equal(x, y), name


def test_the_first_response_keeps_each_rows_entropy_from_the_forwards_weights(app):
    """Before the forward's weights are dropped, every layer's row entropy is taken from them:
    the very numbers that recomputing every layer's weights from q and k gives (the page asks
    for their mean right after its first part)."""
    traces: TraceService = app.state.traces
    model = traces.registry.get("tiny-gpt2")
    assert model is not None
    ids = model.tokenizer(TEXT).ids
    first = model.trace(ids)  # as a first response holds it: with the forward's weights
    assert first.forward_pattern is not None and "entropy" not in first._derived
    first.release()
    assert first.forward_pattern is None and "entropy" in first._derived
    later = model.trace(ids)
    later.forward_pattern = None  # every layer's weights recomputed from q and k
    want = later.entropy()
    assert want.shape == (later.layers, later.heads, len(ids))
    assert torch.equal(first.entropy(), want)
    # Through the service: the first part's trace has it, and entropy_mean is its mean.
    req = TextTraceRequest(model="tiny-gpt2", text=TEXT + " once more")
    traces.part(req, TraceQuery(fields="thumbs"), compact=True)
    trace, cached = traces.computed(req)
    assert cached and "entropy" in trace.tensors._derived
    got = traces.part(req, TraceQuery(fields="entropy_mean"), compact=True).arrays
    fresh = model.trace(model.tokenizer(req.text).ids)
    fresh.forward_pattern = None
    assert torch.equal(got["entropy_mean"], fresh.entropy().mean(-1))
