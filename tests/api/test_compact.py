"""The compact form and the parts of a trace: the same numbers as the JSON trace, exact where
they are exact (float32 / float64) and within the quantisation step for thumbnails; JSON by
default; one forward per input, from the cache afterwards."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
import zstandard

from attnviz.capture.fields import REGISTRY
from attnviz.pretrained.registry import BUILTIN_NAME
from attnviz.schemas.trace import TraceQuery
from attnviz.wire.compact import decode, header
from attnviz.wire.constants import COMPACT_MEDIA_TYPE
from tests.support.oracles import token_view_oracle

TRACE_FIELDS = REGISTRY.full()
COMPACT = {"accept": COMPACT_MEDIA_TYPE}
TEXT = "Unbelievably, the fisherman's tokenization sat on the river bank"
BODY = {"model": BUILTIN_NAME, "text": TEXT}


def compact(client, body, **params):
    r = client.post("/api/trace", json=body, params=params, headers=COMPACT)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == COMPACT_MEDIA_TYPE
    return decode(r.content)


def as_tensor(json_value, dtype) -> torch.Tensor:
    """A JSON array as a tensor (null scores as -inf)."""

    def fix(x):
        return [fix(v) for v in x] if isinstance(x, list) else (-math.inf if x is None else x)

    return torch.tensor(fix(json_value), dtype=dtype)


@pytest.fixture(scope="module")
def full(client) -> dict:
    r = client.post("/api/trace", json=BODY)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    return r.json()


@pytest.mark.slow
def test_json_is_the_default_for_any_accept(client, full):
    for accept in ("*/*", "application/json", "text/html,*/*;q=0.8"):
        r = client.post("/api/trace", json=BODY, headers={"accept": accept})
        assert r.headers["content-type"] == "application/json"
        assert r.json() == full
    assert set(TRACE_FIELDS) <= set(full) and "fields" not in full


@pytest.mark.parametrize("body", [BODY, "toy"])
def test_compact_form_holds_the_json_traces_numbers_exactly(client, full, body, apple_request):
    if body == "toy":
        body = {**apple_request, "config": {"layers": 2, "heads": 3, "projections": "random"}}
        body["embeddings"] = [row * 2 for row in apple_request["embeddings"]]
        body["axes"] = [f"a{i}" for i in range(6)]
        body["config"]["mask"] = "causal"
        want = client.post("/api/trace", json=body).json()
        dtype = torch.float64
    else:
        want, dtype = full, torch.float32
    meta, arrays = compact(client, body)
    for key in ("tokens", "n", "d", "layers", "heads", "head_dim", "mode", "axes"):
        assert meta[key] == want[key], key
    assert meta["json_numbers"] > 0 and meta["fields"] == list(TRACE_FIELDS)
    for name in TRACE_FIELDS:
        if name == "projection":
            for key, value in want["projection"].items():
                if key == "components":
                    assert meta["projection"]["components"] == value
                else:
                    got = arrays[f"projection.{key}"]
                    assert got.dtype == dtype and torch.equal(got, as_tensor(value, dtype)), key
            continue
        if want[name] is None:
            assert meta[name] is None and name not in arrays
            continue
        got = arrays[name]
        assert got.dtype == dtype, name
        assert torch.equal(got, as_tensor(want[name], dtype)), name


def test_one_layer_and_head_in_either_form(client, full):
    meta, arrays = compact(
        client, BODY, fields="attentions,scores,queries,keys,values", layer=3, head=7
    )
    assert (meta["layer"], meta["head"]) == (3, 7)
    n = full["n"]
    assert arrays["attentions"].shape == (1, 1, n, n)
    assert arrays["queries"].shape == (1, 1, n, 32)
    for name in ("attentions", "scores", "queries", "keys", "values"):
        assert torch.equal(arrays[name][0, 0], as_tensor(full[name][3][7], torch.float32)), name
    r = client.post("/api/trace", json=BODY, params={"fields": "attentions,keys", "layer": 3})
    part = r.json()
    assert set(part) >= {"attentions", "keys", "tokens", "fields"} and "scores" not in part
    assert part["attentions"] == [full["attentions"][3]] and part["keys"] == [full["keys"][3]]
    assert (part["layer"], part["head"]) == (3, None)


@pytest.mark.parametrize(
    ("hide", "merge"), [(False, False), (True, False), (False, True), (True, True)]
)
def test_view_and_thumbs_follow_the_token_options(client, full, hide, merge):
    meta, arrays = compact(
        client, BODY, fields="view,thumbs", layer=2, head=4, hide_special=hide, merge_words=merge
    )
    expected, groups = token_view_oracle(full, 2, 4, hide, merge)
    tv = meta["token_view"]
    assert tv["groups"] == groups and len(tv["labels"]) == len(groups)
    assert (tv["hide_special"], tv["merge_words"]) == (hide, merge)
    view = arrays["view"][0, 0]
    if not hide and not merge:
        assert view.dtype == torch.float32  # the weights themselves
        assert torch.equal(view, as_tensor(full["attentions"][2][4], torch.float32))
    else:
        assert view.dtype == torch.float64
        want = torch.tensor(expected, dtype=torch.float64)
        assert torch.allclose(view, want, rtol=0, atol=1e-15)
    # Thumbs: every head of every layer, under the same options, within half a step.
    values, scale = arrays["thumbs.values"], arrays["thumbs.scale"]
    m = len(groups)
    assert values.dtype == torch.uint8 and values.shape == (6, 12, m, m)
    assert meta["thumbs"] == {"pool": 1, "size": m, "layers": list(range(6))}
    for layer, head in [(2, 4), (0, 0), (5, 11)]:
        want = torch.tensor(
            token_view_oracle(full, layer, head, hide, merge)[0], dtype=torch.float64
        )
        s = scale[layer, head].item()
        assert s == pytest.approx(want.max().item(), rel=1e-6)
        got = values[layer, head].double() * s / 255
        assert (got - want).abs().max().item() <= s / 510 + 1e-6
        assert values[layer, head].max().item() == 255


@pytest.mark.slow
def test_thumbs_of_a_long_text_are_max_pooled_keeping_peaks(client):
    text = " ".join(["the river bank and the investment bank"] * 60)  # ~ 420 tokens
    body = {"model": BUILTIN_NAME, "text": text}
    meta, arrays = compact(client, body, fields="thumbs")
    n = meta["n"]
    pool = math.ceil(n / 128)
    size = math.ceil(n / pool)
    assert n > 384 and meta["thumbs"]["pool"] == pool and meta["thumbs"]["size"] == size
    values, scale = arrays["thumbs.values"], arrays["thumbs.scale"]
    assert values.shape == (6, 12, size, size)
    # Bytes: one per thumbnail pixel, and the header (the tokens and their offsets).
    r = client.post("/api/trace", json=body, params={"fields": "thumbs"}, headers=COMPACT)
    assert len(r.content) < 6 * 12 * size * size + 100 * n
    # Each pixel is the largest weight of its pool x pool block (the JSON trace, one layer).
    layer = client.post("/api/trace", json=body, params={"fields": "attentions", "layer": 4}).json()
    a = torch.tensor(layer["attentions"][0], dtype=torch.float32)  # (12, n, n)
    pooled = F.max_pool2d(a[:, None], pool, ceil_mode=True)[:, 0].double()
    got = values[4].double() * scale[4].double()[:, None, None] / 255
    assert (got - pooled).abs().max().item() <= scale[4].max().item() / 510 + 1e-6
    # thumb=0 and thumb_layer: one layer, every token.
    meta, arrays = compact(client, body, fields="thumbs", thumb=0, thumb_layer=4)
    assert meta["thumbs"] == {"pool": 1, "size": n, "layers": [4]}
    got = (
        arrays["thumbs.values"][0].double()
        * arrays["thumbs.scale"][0].double()[:, None, None]
        / 255
    )
    assert (got - a.double()).abs().max().item() <= 1 / 510 + 1e-6


@pytest.mark.slow
def test_the_json_form_is_capped_in_numbers_and_says_what_to_ask_for(client):
    text = " ".join(["the river bank and the investment bank"] * 60)
    r = client.post("/api/trace", json={"model": BUILTIN_NAME, "text": text})
    assert r.status_code == 422
    message = r.json()["message"]
    assert message.startswith("fields: this JSON trace would carry ")
    assert "over this server's cap of 10,000,000" in message and COMPACT_MEDIA_TYPE in message
    assert r.json()["detail"][0]["loc"] == ["query", "fields"]
    # A part fits; the compact form is not capped.
    part = {"fields": "attentions,hidden_states", "layer": 0, "head": 0}
    r = client.post("/api/trace", json={"model": BUILTIN_NAME, "text": text}, params=part)
    assert r.status_code == 200 and len(r.json()["attentions"][0][0]) == r.json()["n"]
    r = client.post("/api/trace", json={"model": BUILTIN_NAME, "text": text}, headers=COMPACT)
    assert r.status_code == 200 and header(r.content)["attentions"]["shape"][0] == 6


def test_score_range_and_entropy(client, full):
    meta, arrays = compact(client, BODY, fields="score_range,entropy_mean,entropy")
    scores = as_tensor(full["scores"], torch.float32)
    finite = scores.masked_fill(torch.isneginf(scores), 0).abs().amax(dim=(-2, -1))
    assert torch.equal(arrays["score_range"], finite)
    assert torch.equal(arrays["entropy_mean"], as_tensor(full["entropy_mean"], torch.float32))
    assert torch.equal(arrays["entropy"], as_tensor(full["entropy"], torch.float32))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"layer": 6}, "layer: 6 is out of range (6 layers: 0 to 5)"),
        ({"head": 12}, "head: 12 is out of range (12 heads: 0 to 11)"),
        (
            {"fields": "thumbs", "thumb_layer": 9},
            "thumb_layer: 9 is out of range (6 layers: 0 to 5)",
        ),
        ({"layer": -1}, "layer: Input should be greater than or equal to 0"),
        ({"fields": "attentions,nope"}, "fields: no array named 'nope'"),
        ({"fields": " , "}, "fields: name at least one array"),
        ({"thumb": 5000}, "thumb: Input should be less than or equal to 1024"),
        ({"hide_special": "maybe"}, "hide_special: Input should be a valid boolean"),
        ({"colour": "red"}, "colour: Extra inputs are not permitted"),
    ],
)
def test_bad_parameters_name_the_parameter_and_the_rule(client, params, message):
    for headers in ({}, COMPACT):
        r = client.post("/api/trace", json=BODY, params=params, headers=headers)
        assert r.status_code == 422, r.text
        assert r.json()["message"].startswith(message)
        assert r.json()["detail"][0]["loc"][0] == "query"


def test_one_forward_per_input_and_a_miss_recomputes(client, app):
    cache = app.state.traces.cache
    body = {"model": BUILTIN_NAME, "text": "A sentence the cache has never seen"}
    misses, hits = cache.stats.misses, cache.stats.hits
    first = compact(client, body, fields="thumbs")[1]["thumbs.values"]
    second = compact(client, body, fields="attentions", layer=1)[1]["attentions"]
    assert (cache.stats.misses, cache.stats.hits) == (misses + 1, hits + 1)
    cache.clear()
    again = compact(client, body, fields="attentions", layer=1)[1]["attentions"]
    assert cache.stats.misses == misses + 2
    assert torch.equal(again, second)
    assert torch.equal(compact(client, body, fields="thumbs")[1]["thumbs.values"], first)


def test_openapi_documents_both_forms_and_the_parameters(client):
    spec = client.get("/openapi.json").json()
    op = spec["paths"]["/api/trace"]["post"]
    assert COMPACT_MEDIA_TYPE in op["responses"]["200"]["content"]
    assert "application/json" in op["responses"]["200"]["content"]
    params = {p["name"]: p for p in op["parameters"]}
    assert set(params) == set(TraceQuery.model_fields)
    assert {"fields", "layer", "head", "query", "hide_special", "merge_words"} <= set(params)
    assert params["layer"]["schema"]["anyOf"][0]["minimum"] == 0
    assert params["thumb"]["schema"]["maximum"] == 1024


def test_thumbnails_are_compressed_and_floats_are_not(client):
    """8-bit thumbnails shrink several-fold under gzip; float32 arrays barely do, and cost time."""
    gz = {**COMPACT, "accept-encoding": "gzip, deflate"}
    plain = {**COMPACT, "accept-encoding": "identity"}
    body = {
        "model": BUILTIN_NAME,
        "text": " ".join(["the river bank and the investment bank"] * 30),
    }
    thumbs = client.post("/api/trace", json=body, params={"fields": "thumbs"}, headers=gz)
    assert thumbs.headers["content-encoding"] == "gzip"
    same = client.post("/api/trace", json=body, params={"fields": "thumbs"}, headers=plain)
    assert "content-encoding" not in same.headers
    assert thumbs.content == same.content  # (httpx undoes the gzip)
    assert int(thumbs.headers["content-length"]) < len(same.content) / 2
    # Browsers that accept zstd get it: as small, three times faster to make.
    zstd = {**COMPACT, "accept-encoding": "gzip, deflate, br, zstd"}
    raw = client.build_request(
        "POST", "/api/trace", json=body, params={"fields": "thumbs"}, headers=zstd
    )
    packed = client.send(raw, stream=True)
    assert packed.headers["content-encoding"] == "zstd"
    wire = b"".join(packed.iter_raw())  # as sent, not decoded
    assert zstandard.ZstdDecompressor().decompressobj().decompress(wire) == same.content
    floats = client.post("/api/trace", json=BODY, params={"fields": "attentions"}, headers=zstd)
    assert floats.status_code == 200 and "content-encoding" not in floats.headers
    assert "Accept-Encoding" in floats.headers["vary"]
    # Where the time went: waiting for the compute thread, and computing; and the computing's
    # phases (added on purpose, for `attnviz bench`'s breakdown of the first request): the
    # trace computed, the part chosen, the body written.
    timing = dict(t.split(";dur=") for t in floats.headers["server-timing"].split(", "))
    phases = ("forward", "part", "encode")
    assert set(timing) == {"queue", "compute", *phases} and float(timing["compute"]) > 0
    assert sum(float(timing[p]) for p in phases) <= float(timing["compute"]) + 0.3  # rounding
