"""The page's JavaScript: its unit tests (Node's own runner on tests/js), its JSDoc types
(`tsc --checkJs --noEmit`, TypeScript from npm as a development tool), and the compact form
decoded by static/js/compact.js in Node exactly as Python reads it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import torch

from attnviz.compact import decode
from attnviz.schemas import COMPACT_MEDIA_TYPE

ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node")
TSC = ROOT / "node_modules" / ".bin" / "tsc"


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    assert NODE, "node is not installed (make install-dev installs what the tests need)"
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300, **kwargs)


def test_node_unit_tests_pass():
    done = run(NODE, "--test", "tests/js/")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# pass 0" not in done.stdout


def test_the_modules_type_check():
    assert TSC.exists(), "TypeScript is missing: run `make install-dev` (npm ci)"
    done = run(str(TSC), "-p", "tsconfig.json")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


DECODE = """
import { readFileSync } from "node:fs";
import { decodeCompact } from "./static/js/compact.js";
const file = readFileSync(process.argv[1]);
const { meta, arrays } = decodeCompact(file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength));
const out = {};
for (const [name, a] of Object.entries(arrays)) {
  out[name] = { dtype: a.dtype, shape: a.shape, values: Array.from(a.data, (v) => (v === -Infinity ? "-inf" : v)) };
}
console.log(JSON.stringify({ meta, arrays: out }));
"""


def test_node_decodes_what_the_server_sends_as_python_does(client, tmp_path):
    body = {"model": "tiny-gpt2", "text": "I sat on the river bank"}  # causal: -inf scores
    params = {"fields": "thumbs,scores,queries,hidden_states", "layer": 1, "head": 2}
    r = client.post("/api/trace", json=body, params=params, headers={"accept": COMPACT_MEDIA_TYPE})
    assert r.status_code == 200
    path = tmp_path / "trace.safetensors"
    path.write_bytes(r.content)
    done = run(NODE, "--input-type=module", "-e", DECODE, str(path))
    assert done.returncode == 0, done.stderr
    js = json.loads(done.stdout)
    meta, arrays = decode(r.content)
    assert js["meta"] == meta
    assert (
        set(js["arrays"])
        == set(arrays)
        == {"thumbs.values", "thumbs.scale", "scores", "queries", "hidden_states"}
    )
    dtypes = {torch.float32: "F32", torch.float64: "F64", torch.uint8: "U8"}
    for name, tensor in arrays.items():
        got = js["arrays"][name]
        assert got["dtype"] == dtypes[tensor.dtype] and got["shape"] == list(tensor.shape)
        values = [-float("inf") if v == "-inf" else v for v in got["values"]]
        assert torch.equal(torch.tensor(values, dtype=tensor.dtype), tensor.flatten()), name
    assert (arrays["scores"] == -float("inf")).any()
