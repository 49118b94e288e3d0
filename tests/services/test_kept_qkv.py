"""The trace cache's budget decides whether a trace keeps its q, k and v: past half of it they
are recomputed for the one layer a part needs, and every part reads the same numbers."""

from __future__ import annotations

import torch

from attnviz.capture.fields.entropy import entropy
from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services.trace_service import TraceService

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
    assert first.forward_pattern is not None and first.derived("entropy") is None
    first.release()
    assert first.forward_pattern is None and first.derived("entropy") is not None
    later = model.trace(ids)
    later.forward_pattern = None  # every layer's weights recomputed from q and k
    want = entropy(later)
    assert want.shape == (later.layers, later.heads, len(ids))
    assert torch.equal(entropy(first), want)
    # Through the service: the newest trace holds its forward's weights after its first part
    # (the entropy is not on the way to the first screen) until entropy_mean asks for it, or
    # until another trace is computed.
    req = TextTraceRequest(model="tiny-gpt2", text=TEXT + " once more")
    traces.part(req, TraceQuery(fields="thumbs"), compact=True)
    trace, cached = traces.computed(req)
    assert cached and trace.tensors.forward_pattern is not None
    assert trace.tensors.derived("entropy") is None
    got = traces.part(req, TraceQuery(fields="entropy_mean"), compact=True).arrays
    assert trace.tensors.forward_pattern is None and trace.tensors.derived("entropy") is not None
    fresh = model.trace(model.tokenizer(req.text).ids)
    fresh.forward_pattern = None
    assert torch.equal(got["entropy_mean"], entropy(fresh).mean(-1))


def test_only_the_newest_trace_holds_its_forwards_weights(app):
    """Another trace computed drops the weights the last one held: at most one trace holds
    weights the cache does not count; its later parts are the same numbers either way."""
    traces: TraceService = app.state.traces
    first = TextTraceRequest(model="tiny-gpt2", text=TEXT + " first")
    second = TextTraceRequest(model="tiny-gpt2", text=TEXT + " second")
    view = TraceQuery(fields="view", layer=1, head=0)
    held = traces.part(first, view, compact=True).arrays["view"]
    a, _ = traces.computed(first)
    assert a.tensors.forward_pattern is not None
    traces.part(second, TraceQuery(fields="thumbs"), compact=True)
    b, _ = traces.computed(second)
    assert a.tensors.forward_pattern is None and b.tensors.forward_pattern is not None
    # Not taken from them on the way: the next text does not pay for it.
    assert a.tensors.derived("entropy") is None
    fresh = traces.registry.get("tiny-gpt2")
    assert fresh is not None
    want = fresh.trace(fresh.tokenizer(first.text).ids)
    want.forward_pattern = None
    assert torch.equal(entropy(a.tensors), entropy(want))  # from q and k, the same numbers
    assert torch.equal(traces.part(first, view, compact=True).arrays["view"], held)


def test_a_long_traces_square_tensors_never_keep_it_out_of_the_cache(app, monkeypatch):
    """Past KEEP_SQUARE_BYTES the distances and the rollout are computed again when asked, not
    kept, and not counted: the trace (its states) still fits the cache, and its parts come from
    it; the numbers are the same either way."""
    from attnviz.capture import tensors

    roomy: TraceService = app.state.traces
    req = TextTraceRequest(model="all-MiniLM-L6-v2", text=TEXT * 3 + " squares")  # 180 tokens
    whole = roomy.part(req, TraceQuery(fields="distances,rollout"), compact=True).arrays
    kept, _ = roomy.computed(req)
    counted = kept.tensors.nbytes()
    assert {"distances", "rollout"} <= kept.tensors._derived.keys()

    monkeypatch.setattr(tensors, "KEEP_SQUARE_BYTES", 1024)
    L1, T, _ = kept.tensors.states.shape
    # distances, and the rollouts of the weights and of the value-weighted norms
    squares = L1 * T * T * 4 + 2 * (L1 - 1) * T * T * 8
    assert kept.tensors.nbytes() == counted - squares
    t = kept.tensors
    alone = t.nbytes() - sum(x.numel() * x.element_size() for x in (*t.q, *t.k, *t.v))
    budget_mb = -(-alone // 2**20)  # room for its states (q, k and v then recomputed)
    assert budget_mb * 2**20 < alone + squares  # which the squares' room would not leave
    tight = TraceService(
        roomy.settings.model_copy(update={"trace_cache_mb": budget_mb}), roomy.device,
        roomy.registry,
    )  # fmt: skip
    got = tight.part(req, TraceQuery(fields="distances,rollout"), compact=True).arrays
    trace, cached = tight.computed(req)
    assert cached and not {"distances", "rollout"} & trace.tensors._derived.keys()
    for name in ("distances", "rollout"):
        assert torch.equal(got[name], whole[name])
