"""``to_csv``: a trace's tables as CSV. Read back with the standard csv module and ``float``, every
number is the trace's own (a float32 spelled with the same digits as the JSON trace), awkward
token labels come back whole, a layer's mean is the API's mean of its heads, and a toy table
read back is the request it came from. Bad arguments name the argument and the rule."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.python.tables import js_number, to_csv
from attnviz.python.trace import Trace
from attnviz.wire.constants import COMPACT_MEDIA_TYPE as COMPACT

TEXT = 'The animal didn\'t cross the street, because it was "too tired"'
# Labels a CSV writer must quote, or a reader could take for something else.
AWKWARD = ["a,b", 'say "hi"', "two\nlines", "cr\rlf", " lead", "trail ", "3", "-1e5", "",
           "=SUM(A1)", "naïve ☃", "x\r\ny", '"', ","]  # fmt: skip


def toy_rows() -> list[list[float]]:
    rows = np.random.default_rng(7).uniform(-3, 3, size=(len(AWKWARD), 4)).tolist()
    rows[0][0], rows[1][1], rows[2][2] = 1e-7, 0.1, 999.25
    return rows


TOY = {"tokens": AWKWARD, "embeddings": toy_rows(), "axes": ["a x", "b,y", 'c"z', "4"],
       "config": {"heads": 2, "layers": 2, "residual": True}}  # fmt: skip


def read(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def numbers(rows: list[list[str]], dtype) -> np.ndarray:
    return np.array([[dtype(float(c)) for c in r[1:]] for r in rows[1:]], dtype=dtype)


@pytest.fixture(scope="module")
def text_trace():
    return attnviz.trace(model="all-MiniLM-L6-v2", text=TEXT)


@pytest.fixture(scope="module")
def toy_trace(client):
    """A toy trace with awkward labels and axis names, over HTTP in the compact form
    (``attnviz.trace`` takes no ``axes``)."""
    return Trace.from_compact(compact(client, TOY, {}), lambda p: compact(client, TOY, p))


def compact(client, body: dict, params: dict) -> bytes:
    """The compact form of a part, as the page gets it."""
    r = client.post("/api/trace", params=params, json=body, headers={"Accept": COMPACT})
    assert r.status_code == 200, r.text
    return r.content


@pytest.mark.parametrize(("layer", "head"), [(0, 0), (3, 5), (5, 11)])
def test_a_heads_weights_read_back_exactly_with_the_json_traces_digits(client, text_trace,
                                                                      layer, head):  # fmt: skip
    text = to_csv(text_trace, "attention", layer=layer, head=head)
    assert text.endswith("\r\n")
    rows = read(text)
    tokens = text_trace.tokens
    assert rows[0] == ["query \\ key", *tokens]
    assert [r[0] for r in rows[1:]] == tokens
    want = text_trace["attentions"][layer, head]
    assert want.dtype == np.float32
    assert np.array_equal(numbers(rows, np.float32), want)
    # The digits are the JSON trace's (the shortest that read back as the float32).
    raw = client.post(f"/api/trace?fields=attentions&layer={layer}&head={head}",
                      json={"model": "all-MiniLM-L6-v2", "text": TEXT})  # fmt: skip
    spelled = json.loads(raw.content, parse_float=str, parse_int=str)["attentions"][0][0]
    for got, json_row in zip(rows[1:], spelled, strict=True):
        assert [Decimal(c) for c in got[1:]] == [Decimal(c) for c in json_row]
    assert any(len(c) < 12 for r in rows[1:] for c in r[1:])  # float32s, not float64 widenings


def test_float64_numbers_read_back_exactly(toy_trace):
    for layer in range(toy_trace.layers + 1):
        rows = read(to_csv(toy_trace, "hidden_states", layer=layer))
        assert rows[0] == ["token", "d0", "d1", "d2", "d3"]
        want = toy_trace["hidden_states"][layer]
        assert want.dtype == np.float64
        assert np.array_equal(numbers(rows, float), want)
    rows = read(to_csv(toy_trace, "attention", layer=1, head=1))
    assert np.array_equal(numbers(rows, float), toy_trace["attentions"][1, 1])


def test_hidden_states_of_a_text_trace(text_trace):
    last = text_trace.layers
    rows = read(to_csv(text_trace, "hidden_states", layer=last))
    d = text_trace["hidden_states"].shape[-1]
    assert rows[0] == ["token", *(f"d{j}" for j in range(d))]
    assert np.array_equal(numbers(rows, np.float32), text_trace["hidden_states"][last])


def test_awkward_token_labels_round_trip(toy_trace):
    for what, kw in (("attention", {"layer": 0, "head": 1}), ("layer_mean", {"layer": 1}),
                     ("hidden_states", {"layer": 0}), ("table", {})):  # fmt: skip
        rows = read(to_csv(toy_trace, what, **kw))
        assert len(rows) == len(AWKWARD) + 1, what
        assert [r[0] for r in rows[1:]] == AWKWARD, what
        if what in ("attention", "layer_mean"):
            assert rows[0][1:] == AWKWARD


def test_text_is_quoted_and_numbers_are_bare(toy_trace):
    lines = to_csv(toy_trace, "table").split("\r\n")
    assert lines[0] == '"token","a x","b,y","c""z","4"'
    assert lines[1].startswith('"a,b",1e-7,')


def test_a_layers_mean_is_the_mean_of_its_heads(text_trace, toy_trace):
    for trace in (text_trace, toy_trace):
        for layer in range(trace.layers):
            rows = read(to_csv(trace, "layer_mean", layer=layer))
            mean = numbers(rows, float)
            heads = trace["attentions"][layer].astype(np.float64)
            # The API's head_mean, number for number, and the closed form sum_h A_h / H.
            api = trace.part(fields="head_mean", layer=layer)["head_mean"][0]
            assert np.array_equal(mean, api)
            assert np.allclose(mean, heads.sum(0) / heads.shape[0], rtol=0, atol=1e-15)
            assert np.allclose(mean.sum(-1), 1.0, atol=1e-6)
            if trace is text_trace:
                assert not np.array_equal(mean, heads[0])  # a mean, not one head


def test_a_toy_table_reads_back_as_its_request(toy_trace):
    rows = read(to_csv(toy_trace, "embeddings"))
    assert rows[0] == ["token", "a x", "b,y", 'c"z', "4"]
    request = {"tokens": [r[0] for r in rows[1:]], "axes": rows[0][1:],
               "embeddings": [[float(c) for c in r[1:]] for r in rows[1:]]}  # fmt: skip
    assert request["tokens"] == toy_trace.tokens
    assert np.array_equal(np.array(request["embeddings"]), toy_trace["embeddings"])
    assert to_csv(toy_trace, "table") == to_csv(toy_trace, "embeddings")


def test_a_part_gives_the_same_csv_as_the_whole_trace(text_trace):
    part = text_trace.part(layer=3, head=5, fields="attentions")
    assert to_csv(part, "attention", layer=3, head=5) == to_csv(text_trace, "attention",
                                                                layer=3, head=5)  # fmt: skip
    one = text_trace.part(layer=2, query=4, fields="attentions")
    rows = read(to_csv(one, "attention", layer=2, head=7))
    assert [r[0] for r in rows[1:]] == [text_trace.tokens[4]]
    assert np.array_equal(numbers(rows, np.float32)[0], text_trace["attentions"][2, 7, 4])


def test_path_writes_the_same_bytes(toy_trace, tmp_path):
    target = tmp_path / "head.csv"
    text = to_csv(toy_trace, "attention", layer=0, head=0, path=target)
    assert target.read_bytes() == text.encode("utf-8")
    assert b"\r\n" in target.read_bytes()


@pytest.mark.parametrize(
    ("what", "kw", "message"),
    [
        ("heads", {}, "what: must be one of attention, layer_mean, hidden_states, embeddings, "),
        ("attention", {"head": 0}, "layer: required for what='attention' (0 to 5)"),
        ("attention", {"layer": 0}, "head: required for what='attention' (0 to 11)"),
        ("attention", {"layer": 6, "head": 0}, "layer: 6 is out of range: the trace has 6 layers"),
        ("attention", {"layer": 0, "head": -1}, "head: -1 is out of range: the trace has 12 heads"),
        ("attention", {"layer": "1", "head": 0}, "layer: must be an integer, got str"),
        ("layer_mean", {"layer": 0, "head": 1}, "head: not used by what='layer_mean'"),
        ("hidden_states", {"layer": 7}, "layer: 7 is out of range: hidden states run from 0"),
        ("hidden_states", {}, "layer: required for what='hidden_states'"),
        ("table", {"layer": 1}, "layer: not used by what='table'"),
    ],
)
def test_bad_arguments_name_the_argument_and_the_rule(text_trace, what, kw, message):
    with pytest.raises(attnviz.TraceError) as caught:
        to_csv(text_trace, what, **kw)
    assert str(caught.value).startswith(message)


def test_a_part_refuses_what_it_does_not_hold(text_trace):
    part = text_trace.part(layer=3, head=5, fields="attentions")
    with pytest.raises(attnviz.TraceError, match=r"^layer: this part holds layer 3 alone, not 2"):
        to_csv(part, "attention", layer=2, head=5)
    with pytest.raises(attnviz.TraceError, match=r"^what: 'layer_mean' needs every head"):
        to_csv(part, "layer_mean", layer=3)
    with pytest.raises(attnviz.TraceError, match=r"^what: 'hidden_states' needs the "):
        to_csv(part, "hidden_states", layer=3)


@pytest.mark.parametrize(
    ("shortest", "spelled"),
    [("1e-07", "1e-7"), ("1e+16", "10000000000000000"), ("1e+21", "1e+21"), ("0.1", "0.1"),
     ("-0.0", "0"), ("1e-06", "0.000001"), ("1.5e-07", "1.5e-7"), ("100.0", "100"),
     ("-123.456", "-123.456"), ("1.234567e+300", "1.234567e+300"), ("inf", "Infinity")],
)  # fmt: skip
def test_numbers_are_spelled_as_javascript_spells_them(shortest, spelled):
    assert js_number(shortest) == spelled
    assert float(spelled) == float(shortest)


# The page's CSV (static/js/core/csv.js in Node, from the compact parts the page asks for) is
# to_csv's, byte for byte.
NODE_CSV = """
import { readFileSync } from "node:fs";
import { decodeCompact } from "./static/js/core/compact.js";
import { partCsv } from "./static/js/core/csv.js";
const read = (path) => { const f = readFileSync(path); return decodeCompact(f.buffer.slice(f.byteOffset, f.byteOffset + f.byteLength)); };
const [att, mean, states, ...layers] = process.argv.slice(1);
console.log(JSON.stringify({ attention: partCsv("attention", read(att)),
  layer_mean: partCsv("layer_mean", read(mean)),
  hidden_states: layers.map((l) => partCsv("hidden_states", read(states), +l)) }));
"""


@pytest.mark.parametrize("kind", ["text", "toy"])
def test_the_pages_csv_is_to_csvs_byte_for_byte(client, text_trace, toy_trace, tmp_path, kind):
    node = shutil.which("node")
    assert node, "node is not installed (make install-dev installs what the tests need)"
    trace = text_trace if kind == "text" else toy_trace
    layer, head = (4, 7) if kind == "text" else (1, 1)
    asks = {"attention": {"fields": "attentions", "layer": layer, "head": head},
            "layer_mean": {"fields": "head_mean", "layer": layer},
            "hidden_states": {"fields": "hidden_states"}}  # fmt: skip
    paths = []
    for name, params in asks.items():
        path = tmp_path / f"{name}.safetensors"
        body = {"model": "all-MiniLM-L6-v2", "text": TEXT} if kind == "text" else TOY
        path.write_bytes(compact(client, body, params))  # the bytes the page reads
        paths.append(str(path))
    states = [0, trace.layers]
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([node, "--input-type=module", "-e", NODE_CSV, *paths, *map(str, states)],
                          cwd=root, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout)
    assert page["attention"] == to_csv(trace, "attention", layer=layer, head=head)
    assert page["layer_mean"] == to_csv(trace, "layer_mean", layer=layer)
    for got, at in zip(page["hidden_states"], states, strict=True):
        assert got == to_csv(trace, "hidden_states", layer=at)


def test_the_trace_method_writes_the_same_csv(text_trace, tmp_path):
    path = tmp_path / "head.csv"
    got = text_trace.to_csv("attention", layer=1, head=2, path=path)
    assert got == to_csv(text_trace, "attention", layer=1, head=2)
    assert path.read_bytes().decode() == got
    rows = list(csv.reader(io.StringIO(got)))
    assert len(rows) == len(text_trace.tokens) + 1  # a header of keys, a row per query
