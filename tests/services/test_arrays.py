"""The JSON encoder that goes one array at a time writes exactly what encoding the whole body
at once writes, and it is JSON."""

from __future__ import annotations

import json

import pytest

from attnviz.schemas import TextTraceRequest, ToyTraceRequest, TraceQuery
from attnviz.services.arrays import json_body, json_bytes
from attnviz.services.traces import TraceService
from attnviz.services.wire import dumps


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
