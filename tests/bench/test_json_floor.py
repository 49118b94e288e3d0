"""The JSON floor of ``attnviz bench --hosted``: orjson writing the very arrays of a trace, from
numpy, gives the server's text byte for byte (so the floor writes what the server wrote)."""

from __future__ import annotations

import numpy as np
import orjson
import torch

from attnviz.bench.hosted import json_floor, json_trace_line
from attnviz.wire.jsonarrays import dumps


def test_the_floor_writes_the_same_text():
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(2, 3, 4, 4, generator=g) * 1e-6
    scores[0, 0, 0, 1:] = float("-inf")  # masked: null
    raw = dumps({
        "tokens": ["a", "b", "c", "d"], "token_ids": [5, 6, 7, 8], "words": [None, 0, 1, None],
        "n": 4, "attentions": torch.softmax(scores, -1), "scores": scores,
        "projection": {"components": 3, "coords": torch.randn(3, 4, 3, generator=g)},
        "offsets": [[0, 1], [2, 3]], "one": [0.5],
    })  # fmt: skip
    floor = json_floor(raw, repeat=1)
    assert floor["same"] is True
    assert all(floor[k] >= 0 for k in ("orjson_ms", "zstd_ms", "gzip_ms"))
    wide = raw.replace(b'"one":[0.5]', b'"one":[0.123456789012,0.5]')  # float64: not the same
    assert json_floor(wide, repeat=1)["same"] is False
    assert orjson.loads(raw)["scores"][0][0][0][1] is None and np.isfinite(scores[1].numpy()).all()


def test_the_line_says_the_floor_and_the_ratio():
    j = {"forward_ms": 17.0, "same_text": True, "load_avg": [0.5, 0.7], "orjson_write_ms": 84.0}
    for enc, ms in (("identity", 140.0), ("zstd", 250.0), ("gzip", 500.0)):
        j |= {f"{enc}_ms": ms, f"{enc}_mb": 1.0, f"{enc}_floor_ms": 101.0, f"{enc}_ratio": 1.39}
    j |= {"zstd_compress_ms": 90.0, "gzip_compress_ms": 380.0}
    line = json_trace_line(j)
    assert "forward 17 ms" in line and "orjson writing the same arrays" in line
    assert (
        "identity 140 ms (1.0 MB; floor 101 ms: 1.39x)" in line
        and "load average 0.5 to 0.7" in line
    )
