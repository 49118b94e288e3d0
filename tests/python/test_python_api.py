"""``attnviz.trace`` (in this process) and ``attnviz.Client`` (a live server over HTTP) give the
HTTP JSON trace's numbers, array for array, as numpy; parts are the API's parts; refusals name
the field."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

import attnviz
from tests.support.servers import served

TEXT = "The animal didn't cross the street because it was too tired"
TOY = {"tokens": ["apple", "fruit", "phone"], "embeddings": [[1.0, 0.5], [0.9, 0.4], [-1.0, 2.0]],
       "config": {"heads": 2, "layers": 2, "ffn": True, "residual": True}}  # fmt: skip


@pytest.fixture(scope="module")
def live(app):
    with served(app) as url:
        yield url


def as_numbers(value, dtype) -> np.ndarray:
    """A JSON array as numpy, null (a masked score) as -inf."""

    def walk(v):
        return [walk(x) for x in v] if isinstance(v, list) else (-math.inf if v is None else v)

    return np.asarray(walk(value), dtype=dtype)


def assert_json_equals(trace: attnviz.Trace, body: dict) -> None:
    """Every array of ``trace`` is the JSON body's, number for number, and so are the fields."""
    assert trace.arrays
    for name, array in trace.arrays.items():
        field, _, member = name.partition(".")
        value = body[field][member] if member else body[field]
        want = as_numbers(value, array.dtype)
        assert want.shape == array.shape, name
        assert np.array_equal(want, array), name
    for key in ("tokens", "layers", "heads", "n", "d", "mode"):
        assert trace.meta[key] == body[key]


@pytest.mark.parametrize("kind", ["text", "toy"])
def test_a_trace_in_this_process_is_the_json_trace(client, kind):
    request = {"model": "all-MiniLM-L6-v2", "text": TEXT} if kind == "text" else TOY
    trace = attnviz.trace(**request)
    body = client.post("/api/trace", json=request).json()
    assert_json_equals(trace, body)
    if kind == "text":
        assert trace["attentions"].shape == (6, 12, len(trace.tokens), len(trace.tokens))
        assert trace["attentions"].dtype == np.float32


def test_a_part_is_the_apis_part(client):
    trace = attnviz.trace(model="all-MiniLM-L6-v2", text=TEXT)
    part = trace.part(layer=3, head=5, fields="attentions,queries")
    assert sorted(part.arrays) == ["attentions", "queries"]
    assert np.array_equal(part["attentions"][0, 0], trace["attentions"][3, 5])
    body = client.post("/api/trace?layer=3&head=5&fields=attentions,queries",
                       json={"model": "all-MiniLM-L6-v2", "text": TEXT}).json()  # fmt: skip
    assert_json_equals(part, body)
    merged = trace.part(fields="view", layer=0, head=0, merge_words=True, hide_special=True)
    assert merged["view"].shape[-1] < len(trace.tokens)  # words, without [CLS] and [SEP]


def test_a_parts_attributions_are_the_apis_and_sum_to_the_trace(client):
    """``trace.part`` asks for the attributions as the page does (issue 29): the QK matrix sums
    to the trace's score at that cell, the logit attribution's values to its logit (an encoder
    has none: the reason is said), and both are the API's numbers."""
    trace = attnviz.trace(model="all-MiniLM-L6-v2", text=TEXT)
    ask = {"fields": "qk_attribution", "layer": 2, "head": 3, "query": 5, "key": 2}
    part = trace.part(**ask)
    matrix, qk = part["qk_attribution.matrix"], part.meta["qk_attribution"]
    assert matrix.shape == (len(qk["components"]),) * 2
    assert abs(float(matrix.sum()) - float(trace["scores"][2, 3, 5, 2])) < 1e-4
    assert abs(float(matrix.sum()) - qk["score"]) < 1e-9
    query = "&".join(f"{k}={v}" for k, v in ask.items())
    body = client.post(f"/api/trace?{query}", json={"model": "all-MiniLM-L6-v2", "text": TEXT})
    assert_json_equals(part, body.json())
    with pytest.raises(attnviz.TraceError, match="logit_attribution"):
        trace.part(fields="logit_attribution")


def test_the_client_of_a_live_server_gives_the_same_trace(live):
    c = attnviz.Client(live)
    assert "all-MiniLM-L6-v2" in [m["name"] for m in c.models()]
    for request in ({"model": "all-MiniLM-L6-v2", "text": TEXT}, TOY):
        remote, here = c.trace(**request), attnviz.trace(**request)
        assert remote.arrays.keys() == here.arrays.keys()
        for name in here.arrays:
            assert np.array_equal(remote[name], here[name]), name
        assert remote.tokens == here.tokens
    tiny = c.trace(model="tiny-gpt2", text=TEXT, layer=1)
    assert tiny["attentions"].shape[:2] == (1, 4)
    assert np.array_equal(tiny.part(layer=0, head=2, fields="scores")["scores"][0, 0],
                          c.trace(model="tiny-gpt2", text=TEXT)["scores"][0, 2])  # fmt: skip


def test_refusals_name_the_field(live, tiny_gpt2_dir, tmp_path):
    with pytest.raises(attnviz.TraceError, match="layer: 99 is out of range"):
        attnviz.trace(text=TEXT, layer=99)
    with pytest.raises(attnviz.TraceError, match="model: no model named 'nope'"):
        attnviz.trace(model="nope", text=TEXT)
    with pytest.raises(attnviz.TraceError, match=r"^422: .*layer"):
        attnviz.Client(live).trace(model="all-MiniLM-L6-v2", text=TEXT, layer=99)
    # A model folder's path loads it here, once.
    a = attnviz.trace(model=str(tiny_gpt2_dir), text=TEXT, fields="attentions")
    b = attnviz.trace(model=str(tiny_gpt2_dir), text=TEXT, fields="attentions")
    assert a.meta["model"] == b.meta["model"] == "tiny-gpt2"
    assert np.array_equal(a["attentions"], b["attentions"])
    # Another folder of the same name is refused, naming both (model names are folder names),
    # and the first stays loaded.
    other = tmp_path / "elsewhere" / tiny_gpt2_dir.name
    shutil.copytree(tiny_gpt2_dir, other)
    with pytest.raises(attnviz.TraceError) as refused:
        attnviz.trace(model=str(other), text=TEXT)
    said = str(refused.value)
    assert said.startswith(f"model: {other}: a model named 'tiny-gpt2' is already loaded from "), (
        said
    )
    assert str(tiny_gpt2_dir) in said and "rename the folder" in said
    assert attnviz.trace(model=str(tiny_gpt2_dir), text=TEXT).meta["model"] == "tiny-gpt2"
