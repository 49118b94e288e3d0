"""POST /api/trace: the numbers, the shapes, and every way a request can be wrong."""

import math

import pytest
import torch

from attnviz.errors import TraceError
from attnviz.schemas.trace import ToyTraceRequest
from attnviz.services.toy_trace import build_toy_model, run_toy_trace
from tests.support import reference
from tests.support.models import engine_captures, recomputed


def close(got, want, atol: float = 1e-12) -> bool:
    return torch.allclose(
        torch.tensor(got, dtype=torch.float64), torch.tensor(want, dtype=torch.float64), atol=atol
    )


def trace(client, body: dict) -> dict:
    r = client.post("/api/trace", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_worked_example_over_http(client, apple_request):
    t = trace(client, apple_request)
    assert t["tokens"] == ["An", "apple", "and", "a", "banana"]
    assert t["axes"] == ["tech", "fruit", "grammar"]
    assert (t["n"], t["d"], t["layers"], t["heads"], t["head_dim"]) == (5, 3, 1, 1, 3)
    assert t["hidden_states"][0] == apple_request["embeddings"]
    after = t["hidden_states"][1]
    assert [round(v, 2) for v in after[1]] == [0.21, 0.42, 0.39]
    assert [round(v, 2) for v in after[4]] == [0.17, 0.39, 0.42]
    assert [round(v, 2) for v in after[0]] == [0.10, 0.23, 0.61]
    assert round(t["distances"][0][1][4], 3) == 0.700
    assert round(t["distances"][1][1][4], 3) == 0.059
    assert t["projection"] is None  # d = 3 is drawn in its own axes
    assert t["positional"] is None
    assert t["config"]["projections"] == "identity"


def test_trace_equals_the_reference_to_the_last_digit(client):
    body = {
        "tokens": ["a", "b", "c", "d"],
        "embeddings": [[0.1, 0.9, -0.3, 0.4], [0.5, -0.2, 0.8, 0.0], [-0.7, 0.3, 0.2, 0.6], [0.2, 0.2, -0.9, 0.1]],
        "config": {"layers": 3, "heads": 2, "projections": "random", "seed": 3, "residual": True,
                   "norm": "pre", "ffn": True, "mask": "causal", "positional": "sinusoidal"},
    }  # fmt: skip
    t = trace(client, body)
    req = ToyTraceRequest.model_validate(body)
    weights = {
        k: v.tolist()
        for k, v in build_toy_model(req.config, 4, torch.device("cpu")).state_dict().items()
    }
    cfg = body["config"]
    ref = reference.forward(
        body["embeddings"], weights, layers=3, heads=2, residual=True, norm="pre", ffn=True,
        causal=True, positional="sinusoidal",
    )  # fmt: skip
    for got, want in zip(t["hidden_states"], ref["hidden"], strict=True):
        assert close(got, want)
    for layer in range(cfg["layers"]):
        assert close(t["attentions"][layer], ref["pattern"][layer])
        for h in range(2):
            for i in range(4):
                for j in range(4):
                    s = t["scores"][layer][h][i][j]
                    if j > i:
                        assert s is None and t["attentions"][layer][h][i][j] == 0.0
                    else:
                        assert s == pytest.approx(ref["scores"][layer][h][i][j], abs=1e-12)
    assert t["axes"] == ["x1", "x2", "x3", "x4"]
    assert t["positional"][1][0] == pytest.approx(math.sin(1.0), abs=1e-15)


def test_queries_keys_and_values_rebuild_the_scores(client):
    body = {"tokens": ["p", "q", "r"], "embeddings": [[1, 0, 2, 1], [0, 1, 1, 0], [2, 1, 0, 1]],
            "config": {"heads": 2, "projections": "random", "positional": "rope"}}  # fmt: skip
    t = trace(client, body)
    for h in range(2):
        q, k = t["queries"][0][h], t["keys"][0][h]
        for i in range(3):
            for j in range(3):
                dot = sum(a * b for a, b in zip(q[i], k[j], strict=True))
                assert t["scores"][0][h][i][j] == pytest.approx(dot / math.sqrt(2), abs=1e-14)
    assert len(t["values"][0][1][2]) == t["head_dim"] == 2


def test_entropy_and_distances_follow_the_trace(client, apple_request):
    t = trace(client, {**apple_request, "config": {"layers": 2}})
    for layer in range(2):
        row = t["attentions"][layer][0][1]
        h = -sum(p * math.log(p) for p in row if p > 0)
        assert t["entropy"][layer][0][1] == pytest.approx(h, abs=1e-14)
        assert t["entropy_mean"][layer][0] == pytest.approx(
            sum(t["entropy"][layer][0]) / 5, abs=1e-14
        )
    for layer in range(3):
        hs = t["hidden_states"][layer]
        assert t["distances"][layer][2][3] == pytest.approx(math.dist(hs[2], hs[3]), abs=1e-14)


def test_projection_when_d_is_not_three(client):
    body = {"tokens": ["a", "b", "c"], "embeddings": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1]],
            "config": {"layers": 2}}  # fmt: skip
    t = trace(client, body)
    p = t["projection"]
    assert p["components"] == 3
    assert len(p["coords"]) == 3 and len(p["coords"][0]) == 3 and len(p["coords"][0][0]) == 3
    # Coordinates are the centred hidden states on the principal axes, the same for every frame.
    for layer in range(3):
        for i in range(3):
            centred = [a - m for a, m in zip(t["hidden_states"][layer][i], p["mean"], strict=True)]
            for c in range(3):
                want = sum(a * b for a, b in zip(centred, p["axes"][c], strict=True))
                assert p["coords"][layer][i][c] == pytest.approx(want, abs=1e-13)
    assert sum(p["explained_variance_ratio"]) == pytest.approx(1.0)


@pytest.mark.slow
def test_the_largest_request_is_served(client):
    g = torch.Generator().manual_seed(0)
    body = {
        "tokens": [f"t{i}" for i in range(64)],
        "embeddings": (torch.randn(64, 64, generator=g, dtype=torch.float64) * 3).tolist(),
        "config": {"layers": 12, "heads": 16, "projections": "random", "mask": "causal", "ffn": True,
                   "residual": True, "norm": "post", "positional": "rope"},
    }  # fmt: skip
    t = trace(client, body)
    assert len(t["attentions"]) == 12 and len(t["attentions"][0]) == 16
    assert len(t["attentions"][11][15]) == 64 and len(t["hidden_states"]) == 13
    assert len(t["projection"]["coords"][12]) == 64


BAD = [
    (
        {"tokens": ["a", "b"], "embeddings": [[1, 2], [3]]},
        "embeddings: one row per token, each a list of d numbers (n x d, d = 2 from row 0), "
        "got 1 number in row 1",
    ),
    (
        {"tokens": ["a", "b"], "embeddings": [[1, 2]]},
        "embeddings: 2 rows of 2 numbers (n x d: one row per token), got 1 row",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1, 2], [3, 4]]},
        "embeddings: 1 row of 2 numbers (n x d: one row per token), got 2 rows",
    ),
    ({"tokens": [], "embeddings": []}, "tokens: List should have at least 1 item"),
    (
        {"tokens": ["a"] * 65, "embeddings": [[1.0]] * 65},
        "tokens: List should have at most 64 items",
    ),
    (
        {"tokens": ["a"], "embeddings": [[0.5] * 65]},
        "embeddings: one row per token, each a list of d numbers (n x d), at most 64 numbers a "
        "row, got a list of 65 numbers as row 0",
    ),
    (
        {"tokens": ["a"], "embeddings": [[]]},
        "embeddings: one row per token, each a list of d numbers (n x d), got an empty list as row 0",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1e9]]},
        "embeddings[0][0]: Input should be less than or equal to 1000",
    ),
    ({"tokens": ["a"], "embeddings": [["x"]]}, "embeddings[0][0]: Input should be a valid number"),
    (
        {"tokens": ["a" * 41], "embeddings": [[1]]},
        "tokens[0]: String should have at most 40 characters",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1, 2]], "axes": ["x"]},
        "axes: 1 names for d = 2 dimensions",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1, 2, 3]], "config": {"heads": 2}},
        "config.heads: 2 does not divide d = 3",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1]], "config": {"heads": 17}},
        "config.heads: Input should be less than or equal to 16",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1]], "config": {"layers": 13}},
        "config.layers: Input should be less than or equal to 12",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1]], "config": {"layers": 0}},
        "config.layers: Input should be greater than or equal to 1",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1]], "config": {"mask": "future"}},
        "config.mask: Input should be 'none' or 'causal'",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1]], "config": {"norm": "mid"}},
        "config.norm: Input should be 'none', 'pre' or 'post'",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1]], "config": {"positional": "alibi"}},
        "config.positional: Input should be",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1]], "config": {"projections": "learned"}},
        "config.projections: Input should be",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1]], "config": {"heads": "two"}},
        "config.heads: Input should be a valid integer",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1]], "config": {"seed": -1}},
        "config.seed: Input should be greater than or equal to 0",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1]], "config": {"layer": 2}},
        "config.layer: Extra inputs are not permitted",
    ),
    (
        {"tokens": ["a"], "embeddings": [[1]], "config": {"projections": "custom"}},
        'config.weights: required when config.projections is "custom"',
    ),
    (
        {
            "tokens": ["a"],
            "embeddings": [[1]],
            "config": {"weights": {"q": [[1]], "k": [[1]], "v": [[1]]}},
        },
        "config.weights: only allowed when",
    ),
    (
        {
            "tokens": ["a"],
            "embeddings": [[1, 2]],
            "config": {
                "projections": "custom",
                "weights": {"q": [[1]], "k": [[1, 0], [0, 1]], "v": [[1, 0], [0, 1]]},
            },
        },
        "config.weights.q: 2 rows of 2 numbers (d x d, d = 2: the embeddings' values per row), "
        "got 1 row of 1 number",
    ),
    (
        {
            "tokens": ["a"],
            "embeddings": [[1, 2]],
            "config": {
                "projections": "custom",
                "weights": {
                    "q": [[1, 0], [0, 1]],
                    "k": [[1, 0], [0, 1]],
                    "v": [[1, 0], [0, 1]],
                    "o": [[1, 0], [0]],
                },
            },
        },
        "config.weights.o: 2 rows of 2 numbers (d x d, d = 2: the embeddings' values per row), "
        "got 2 rows of 1 and 2 numbers",
    ),
    (
        {
            "tokens": ["a"],
            "embeddings": [[1, 2]],
            "config": {
                "projections": "custom",
                "weights": {"q": [[1, 0], [0, 1]], "k": [[1, 0], [0, 1]]},
            },
        },
        "config.weights.v: Field required",
    ),
    ({"tokens": ["a"]}, "embeddings: Field required"),
    ({"embeddings": [[1]]}, "tokens: Field required"),
    (
        {"tokens": ["a"], "embeddings": [[1]], "colour": "red"},
        "colour: Extra inputs are not permitted",
    ),
]


@pytest.mark.parametrize(("body", "message"), BAD, ids=[m[:40] for _, m in BAD])
def test_bad_input_is_a_422_naming_the_field(client, body, message):
    r = client.post("/api/trace", json=body)
    assert r.status_code == 422, r.text
    got = r.json()
    assert message in got["message"], got["message"]
    assert "Traceback" not in r.text
    assert all("input" not in e for e in got["detail"])  # the body is not echoed back


@pytest.mark.parametrize(
    ("rows", "where"),
    [
        ("[[1, 1], [NaN, 1]]", "[1][0]"),
        ("[[1, Infinity], [1, 1]]", "[0][1]"),
        ("[[-Infinity, 1], [1, 1]]", "[0][0]"),
    ],
)
def test_non_finite_numbers_are_refused(client, rows, where):
    text = f'{{"tokens": ["a", "b"], "embeddings": {rows}}}'
    r = client.post("/api/trace", content=text, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["message"] == f"embeddings{where}: Input should be a finite number"


def test_broken_json_and_wrong_types_are_422(client):
    r = client.post(
        "/api/trace", content='{"tokens": [', headers={"content-type": "application/json"}
    )
    assert r.status_code == 422 and r.json()["message"].startswith("body: not valid JSON")
    r = client.post("/api/trace", json=[1, 2, 3])
    assert r.status_code == 422 and r.json()["message"].startswith(
        "body: Input should be a valid dict"
    )


def test_overflow_is_a_422_not_a_500():
    req = ToyTraceRequest.model_construct(
        tokens=["a", "b"], embeddings=[[1e200, 1e200], [1e200, -1e200]], axes=None,
        config=ToyTraceRequest.model_fields["config"].default_factory(),
    )  # fmt: skip
    with pytest.raises(TraceError, match="embeddings: the computation overflowed"):
        run_toy_trace(req, torch.device("cpu"))


def test_service_uses_the_engine_captures(apple_request):
    req = ToyTraceRequest.model_validate(
        {**apple_request, "config": {"layers": 2, "heads": 3, "projections": "random"}}
    )
    model = build_toy_model(req.config, 3, torch.device("cpu"))
    ref = engine_captures(
        model, torch.tensor(apple_request["embeddings"], dtype=torch.float64)[None]
    )
    t = run_toy_trace(req, torch.device("cpu")).tensors
    assert torch.equal(torch.stack(t.forward_pattern), ref["attentions"])
    # Once cached, weights are recomputed from q and k: the very same numbers.
    again = recomputed(t)
    for name, value in ref.items():
        assert torch.equal(again[name], value), name


def test_large_traces_are_sent_compressed(client):
    g = torch.Generator().manual_seed(2)
    body = {
        "tokens": [f"t{i}" for i in range(32)],
        "embeddings": torch.randn(32, 8, generator=g).tolist(),
    }
    r = client.post("/api/trace", json=body, headers={"accept-encoding": "gzip"})
    assert r.status_code == 200 and r.headers["content-encoding"] == "gzip"
    assert len(r.json()["attentions"][0][0]) == 32
    # The client's weights decide (RFC 9110): a coding it weighs 0 is never sent.
    for accept, sent in [("zstd;q=0, gzip", "gzip"), ("gzip;q=0.5, zstd", "zstd"),
                         ("gzip;q=0", None), ("*;q=0.2, zstd;q=0", "gzip")]:  # fmt: skip
        r = client.post("/api/trace", json=body, headers={"accept-encoding": accept})
        assert r.headers.get("content-encoding") == sent, accept


def test_an_unexpected_failure_is_a_plain_500_without_a_stack_trace(
    app, apple_request, monkeypatch
):
    from fastapi.testclient import TestClient

    import attnviz.services.trace_service as service

    def boom(*_args):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(service, "run_toy_trace", boom)
    app.state.traces.cache.clear()  # a cached trace would be served without computing
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.post("/api/trace", json=apple_request)
    assert r.status_code == 500
    assert r.json() == {"message": "internal error", "detail": []}
    assert "secret" not in r.text and "Traceback" not in r.text
