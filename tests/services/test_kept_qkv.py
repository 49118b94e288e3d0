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
