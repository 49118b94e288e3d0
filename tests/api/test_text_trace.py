"""POST /api/trace with {"model", "text"}: the same names and shapes as the toy lab."""

from __future__ import annotations

import gzip
import json
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import torch
import zstandard

from attnviz.pretrained.registry import BUILTIN_NAME
from attnviz.wire.jsonarrays import dumps
from tests.support.models import engine_captures

TEXT = "The animal didn't cross the street because it was too tired"


def _trace(client, text=TEXT, model=BUILTIN_NAME) -> dict:
    r = client.post("/api/trace", json={"model": model, "text": text})
    assert r.status_code == 200, r.text
    return r.json()


def test_minilm_trace_shapes_and_token_fields(client):
    t = _trace(client)
    n, L, H, hs, d = t["n"], 6, 12, 32, 384
    assert (t["mode"], t["model"], t["family"], t["causal"], t["text"]) == (
        "text",
        BUILTIN_NAME,
        "bert",
        False,
        TEXT,
    )
    assert (t["layers"], t["heads"], t["head_dim"], t["d"], t["device"]) == (L, H, hs, d, "cpu")
    assert t["tokens"][:3] == ["[CLS]", "the", "animal"] and t["tokens"][-1] == "[SEP]"
    assert len(t["token_ids"]) == len(t["offsets"]) == len(t["special"]) == len(t["words"]) == n
    assert t["special"][0] and t["special"][-1] and not any(t["special"][1:-1])
    for tok, (a, b), sp in zip(t["tokens"], t["offsets"], t["special"], strict=True):
        assert sp or TEXT[a:b].lower() == tok.removeprefix("##")
    assert len(t["axes"]) == d
    shapes = {
        "attentions": (L, H, n, n),
        "scores": (L, H, n, n),
        "queries": (L, H, n, hs),
        "keys": (L, H, n, hs),
        "values": (L, H, n, hs),
        "hidden_states": (L + 1, n, d),
        "distances": (L + 1, n, n),
        "entropy": (L, H, n),
        "entropy_mean": (L, H),
        "embeddings": (n, d),
        "positional": (n, d),
    }
    for name, shape in shapes.items():
        assert tuple(torch.tensor(t[name]).shape) == shape, name
    p = t["projection"]
    assert p["components"] == 3
    assert tuple(torch.tensor(p["coords"]).shape) == (L + 1, n, 3)
    rows = torch.tensor(t["attentions"]).sum(-1)
    assert torch.allclose(rows, torch.ones_like(rows), atol=1e-5)


@pytest.mark.slow
def test_trace_numbers_are_the_engines(client, app):
    """What the API sends is what the engine's forward computed, on the first request (the
    forward's own weights) and from the cache (weights recomputed from q and k): float32 values,
    sent in full."""
    text = "The engine computes every number it sends, once"
    first = _trace(client, text)
    again = _trace(client, text)
    m = app.state.registry.get(BUILTIN_NAME)
    ref = engine_captures(m.model, torch.tensor([first["token_ids"]]))
    for name in ("attentions", "scores", "queries", "keys", "values", "hidden_states"):
        assert first[name] == json.loads(dumps(ref[name])), name
        assert again[name] == first[name], name
    # the token embedding rows are W_E's rows, the positional rows W_pos's first n: the JSON
    # numbers give back the exact float32 values
    f32 = torch.float32
    assert torch.equal(
        torch.tensor(first["embeddings"], dtype=f32), m.model.W_E[first["token_ids"]]
    )
    assert torch.equal(torch.tensor(first["positional"], dtype=f32), m.model.W_pos[: first["n"]])


def test_causal_model_sends_masked_scores_as_null(client):
    t = _trace(client, model="tiny-gpt2")
    assert (t["family"], t["causal"]) == ("gpt2", True)
    assert not any(t["special"])
    n = t["n"]
    for layer in t["scores"]:
        for head in layer:
            for i, row in enumerate(head):
                assert all(v is None for v in row[i + 1 :])
                assert all(isinstance(v, float) for v in row[: i + 1])
    pattern = torch.tensor(t["attentions"])
    assert torch.equal(pattern.triu(1), torch.zeros(2, 4, n, n))


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"model": BUILTIN_NAME, "text": ""}, 422, "text: String should have at least 1 character"),
        ({"model": BUILTIN_NAME, "text": " \n\t "}, 422, "text: must not be empty"),
        ({"model": BUILTIN_NAME}, 422, "text: Field required"),
        ({"text": "hello"}, 422, "model: Field required"),
        ({"model": "", "text": "hello"}, 422, "model: String should have at least 1 character"),
        ({"model": 3, "text": "hello"}, 422, "model: Input should be a valid string"),
        ({"model": BUILTIN_NAME, "text": ["a"]}, 422, "text: Input should be a valid string"),
        (
            {"model": BUILTIN_NAME, "text": "a" * 20001},
            422,
            "text: String should have at most 20000 characters",
        ),
        (
            {"model": BUILTIN_NAME, "text": "hi", "layers": 2},
            422,
            "layers: Extra inputs are not permitted",
        ),
        (
            {"model": "gpt-17", "text": "hello"},
            404,
            "model: no model named 'gpt-17' (available: all-MiniLM-L6-v2, charlm-pydoc, tiny-gpt2)",
        ),
        (
            {"model": BUILTIN_NAME, "text": "word " * 600},
            422,
            "text: 602 tokens exceed the cap of 512 (model all-MiniLM-L6-v2 allows 512)",
        ),
    ],
)
def test_bad_text_requests_name_the_field_and_the_rule(client, body, status, message):
    r = client.post("/api/trace", json=body)
    assert r.status_code == status, r.text
    got = r.json()
    assert got["message"] == message
    assert got["detail"] and "input" not in got["detail"][0]


def test_the_model_limit_applies_when_below_the_server_cap(tiny_gpt2_dir):
    from fastapi.testclient import TestClient

    from attnviz.app import create_app
    from attnviz.settings import Settings

    settings = Settings(
        device="cpu", builtin_model=False, models=str(tiny_gpt2_dir), max_text_tokens=1000
    )
    with TestClient(create_app(settings)) as c:
        info = c.get("/api/models").json()["models"][0]
        assert (info["max_tokens"], info["model_max_tokens"]) == (256, 256)
        text = "Attention is all you need. " * 40
        r = c.post("/api/trace", json={"model": "tiny-gpt2", "text": text})
        assert r.status_code == 422
        assert r.json()["message"].endswith("(model tiny-gpt2 allows 256, this server 1000)")


@pytest.mark.slow
def test_concurrent_requests_on_one_model_do_not_mix(client):
    """capture() hooks the shared module; the per-model lock keeps requests apart."""
    texts = ["I sat on the river bank", "I went to the investment bank", TEXT, "a b c"] * 3
    alone = {text: _trace(client, text)["attentions"] for text in set(texts)}
    with ThreadPoolExecutor(6) as pool:
        together = list(pool.map(lambda s: _trace(client, s)["attentions"], texts))
    for text, att in zip(texts, together, strict=True):
        assert att == alone[text]


def test_toy_requests_still_work_and_say_toy(client, apple_request):
    t = client.post("/api/trace", json=apple_request).json()
    assert t["mode"] == "toy" and t["config"]["layers"] == 1
    assert math.isclose(t["distances"][1][1][4], 0.0592, abs_tol=5e-4)


@pytest.mark.parametrize("encoding", ["zstd", "gzip"])
def test_a_json_trace_compressed_as_it_is_written_reads_back_as_the_plain_one(client, encoding):
    """The JSON trace is compressed array by array as it is written (never held whole): what
    the client decodes is byte for byte the uncompressed body."""
    body = {"model": BUILTIN_NAME, "text": "Compressed as it is written, one array at a time"}
    plain = client.post("/api/trace", json=body, headers={"accept-encoding": "identity"})
    raw = client.build_request("POST", "/api/trace", json=body,
                               headers={"accept-encoding": encoding})  # fmt: skip
    packed = client.send(raw, stream=True)
    assert plain.status_code == packed.status_code == 200
    assert "content-encoding" not in plain.headers
    assert packed.headers["content-encoding"] == encoding
    wire = b"".join(packed.iter_raw())  # as sent, not decoded
    assert len(wire) < len(plain.content) / 2
    if encoding == "zstd":  # as a browser reads it: a stream (no size in the frame)
        assert zstandard.ZstdDecompressor().decompressobj().decompress(wire) == plain.content
    else:
        assert gzip.decompress(wire) == plain.content
    trace = json.loads(plain.content)
    assert trace["n"] == len(trace["tokens"]) and len(trace["attentions"]) == trace["layers"]


@pytest.mark.parametrize("encoding", ["identity", "zstd", "gzip"])
def test_a_large_json_trace_is_sent_while_it_is_written(client, monkeypatch, encoding):
    """Past STREAM_AFTER bytes written (1 MiB; lowered here) the JSON trace is sent as it is
    written (chunked: its length is not known when it starts), byte for byte the body that is
    sent whole once written, in each encoding."""
    import attnviz.services.trace_service as service

    body = {"model": BUILTIN_NAME, "text": f"Sent while it is written ({encoding})"}

    def ask() -> tuple[httpx.Response, bytes]:
        raw = client.build_request("POST", "/api/trace", json=body,
                                   headers={"accept-encoding": encoding})  # fmt: skip
        response = client.send(raw, stream=True)
        assert response.status_code == 200
        return response, b"".join(response.iter_raw())  # as sent, not decoded

    monkeypatch.setattr(service, "STREAM_AFTER", 1 << 40)
    whole, sent_whole = ask()
    monkeypatch.setattr(service, "STREAM_AFTER", 4096)
    # The writer (on the compute thread) waits past the first 4096 bytes until the response
    # has its headers: a body written whole before the event loop looks is sent whole (with
    # its length), and from the cache that can happen before it looks.
    answered, write = threading.Event(), service.Stream.write

    def held(stream, piece):
        write(stream, piece)
        if stream.written >= service.STREAM_AFTER:
            answered.wait(timeout=10)

    monkeypatch.setattr(service.Stream, "write", held)
    raw = client.build_request("POST", "/api/trace", json=body,
                               headers={"accept-encoding": encoding})  # fmt: skip
    streamed = client.send(raw, stream=True)  # (the trace from the cache: only its writing)
    answered.set()
    assert streamed.status_code == 200
    sent_streamed = b"".join(streamed.iter_raw())
    assert whole.headers["content-length"] == str(len(sent_whole))
    assert "content-length" not in streamed.headers
    assert streamed.headers.get("content-encoding") == whole.headers.get("content-encoding")
    timing = dict(t.split(";dur=") for t in streamed.headers["server-timing"].split(", "))
    assert set(timing) == {"queue", "compute"}  # until it started: no phases
    assert sent_streamed == sent_whole  # the same compressor, the same pieces: the same bytes
    text = sent_whole
    if encoding == "zstd":
        text = zstandard.ZstdDecompressor().decompressobj().decompress(sent_whole)
    elif encoding == "gzip":
        text = gzip.decompress(sent_whole)
    assert len(text) > 40 * 4096 and json.loads(text)["text"] == body["text"]
