"""The JSON encoder that goes one array at a time writes exactly what encoding the whole body
at once writes, and it is JSON; thumbnails' max-pooling is torch's."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from attnviz.capture.thumbs import max_pool
from attnviz.schemas.trace import TextTraceRequest, ToyTraceRequest, TraceQuery
from attnviz.services.parts import json_body, json_bytes
from attnviz.services.trace_service import TraceService
from attnviz.wire.jsonarrays import dumps


@pytest.mark.parametrize(
    "params",
    [{}, {"layer": 0, "head": 1}, {"fields": "view,thumbs,score_range", "merge_words": True}],
)
def test_json_bytes_is_dumps_of_the_whole_body(app, params):
    traces: TraceService = app.state.traces
    for req in (
        TextTraceRequest(model="tiny-gpt2", text="The bank of the river, unbelievably."),
        ToyTraceRequest(
            tokens=["a", "b"], embeddings=[[1.0, 0.5], [0.25, -2.0]], config={"heads": 2}
        ),
    ):
        if isinstance(req, ToyTraceRequest) and params.get("merge_words"):
            continue
        part = traces.part(req, TraceQuery(**params), compact=False)
        body = json_bytes(part)
        assert body == dumps(json_body(part))
        assert list(json.loads(body)) == [
            *part.meta,
            *(k for k in part.arrays if k not in part.meta),
        ]


@pytest.mark.parametrize("m", [1, 5, 6, 7, 64, 97, 130])
@pytest.mark.parametrize("pool", [1, 2, 3, 6, 7])
def test_max_pool_is_torchs_with_the_last_blocks_holding_what_is_left(m, pool):
    """Each pool x pool block's largest value, the last blocks smaller (ceil_mode), negative
    values too: exactly max_pool2d's."""
    g = torch.Generator().manual_seed(m * 10 + pool)
    for dtype in (torch.float32, torch.float64):
        x = torch.randn(3, m, m, generator=g, dtype=dtype)
        want = F.max_pool2d(x[:, None], pool, ceil_mode=True)[:, 0]
        got = max_pool(x, pool)
        assert got.shape == want.shape == (3, -(-m // pool), -(-m // pool))
        assert torch.equal(got, want)
