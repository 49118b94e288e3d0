"""The page's JavaScript: its unit tests (Node's own runner on tests/js), its JSDoc types
(`tsc --checkJs --noEmit`, TypeScript from npm as a development tool), the compact form
decoded by static/js/core/compact.js in Node exactly as Python reads it, and the Train tab's
event reducer (static/js/modes/train/reducer.js) fed a real run's events in Node."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
import torch

from attnviz.wire.compact import decode
from attnviz.wire.constants import COMPACT_MEDIA_TYPE

ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node")
TSC = ROOT / "node_modules" / ".bin" / "tsc"


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    assert NODE, "node is not installed (make install-dev installs what the tests need)"
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300, **kwargs)


@pytest.mark.slow
def test_node_unit_tests_pass():
    # Four files at once (Node's default is one less than the cores): several wait on timers.
    done = run(NODE, "--test", "--test-concurrency=4", "tests/js/")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# pass 0" not in done.stdout


@pytest.mark.slow
def test_the_modules_type_check():
    assert TSC.exists(), "TypeScript is missing: run `make install-dev` (npm ci)"
    # Incremental: what it learnt of the unchanged modules is kept in node_modules/.cache.
    done = run(str(TSC), "-p", "tsconfig.json")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


DECODE = """
import { readFileSync } from "node:fs";
import { decodeCompact } from "./static/js/core/compact.js";
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


REDUCE = """
import { readFileSync } from "node:fs";
import { initialState, reduce } from "./static/js/modes/train/reducer.js";
let state = initialState();
for (const [type, data] of JSON.parse(readFileSync(process.argv[1], "utf8"))) state = reduce(state, { type, data });
console.log(JSON.stringify(state));
"""


def stream(
    http: httpx.Client, run_id: str, cancel_at: str | None = None
) -> list[tuple[int, str, dict]]:
    """Every event of a run's stream, (id, name, data), to its end; Cancel is pressed when the
    first event named `cancel_at` arrives."""
    out: list[tuple[int, str, dict]] = []
    with http.stream("GET", f"/api/train/{run_id}/events") as r:
        assert r.status_code == 200
        fields: dict[str, str] = {}
        for line in r.iter_lines():
            if line.startswith(":"):
                continue  # a keep-alive comment
            if line:
                key, _, value = line.partition(": ")
                fields[key] = value
                continue
            if fields:
                out.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
                if fields["event"] == cancel_at and [n for _, n, _ in out].count(cancel_at) == 1:
                    assert http.delete(f"/api/train/{run_id}").status_code < 300
            fields = {}
    return out


@pytest.mark.slow
def test_the_train_reducer_keeps_the_copy_the_server_keeps(tmp_path):
    """A real run's events, every one through modes/train/reducer.js in Node, add up to the
    run the server sends whole: a compared switch trained to its end (state, variant, steps,
    checkpoint, end), and one cancelled while its first variant trains and its second waits."""
    from attnviz.app import create_app
    from attnviz.settings import Settings
    from tests.support.servers import served

    tiny = {"layers": 2, "heads": 2, "d_model": 16}
    app = create_app(Settings(device="cpu", builtin_model=False))
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        seen = {}
        for body, cancel_at in (
            ({"arch": tiny, "opt": {"steps": 12, "seed": 1}, "compare": "scale", "checkpoints": 2}, None),
            ({"arch": tiny, "opt": {"steps": 1000, "seed": 1}, "compare": "ffn"}, "steps"),
        ):  # fmt: skip
            r = http.post("/api/train", json=body)
            assert r.status_code == 202, r.text
            seen[r.json()["id"]] = stream(http, r.json()["id"], cancel_at)
        done, cancelled = seen
        ended = {}
        for run_id, events in seen.items():
            names = [name for _, name, _ in events]
            assert names[0] == "state" and names[-1] == "end" and names.count("end") == 1
            assert {"variant", "steps", "checkpoint"} <= set(names)
            path = tmp_path / f"{run_id}.json"
            path.write_text(json.dumps([[name, data] for _, name, data in events]))
            out = run(NODE, "--input-type=module", "-e", REDUCE, str(path))
            assert out.returncode == 0, out.stderr
            state = json.loads(out.stdout)
            mine, theirs = state["run"], http.get(f"/api/train/{run_id}").json()
            # (seq: the id of the last event the server's copy holds; the page does not keep it)
            assert theirs.pop("seq") == events[-1][0] and mine.pop("seq") == events[0][0]
            assert mine == theirs, run_id
            ended[run_id] = (theirs, state)
        assert ended[done][0]["state"] == "done"
        run_cancelled = ended[cancelled][0]
        assert run_cancelled["state"] == "cancelled"
        assert [v["state"] for v in run_cancelled["variants"]] == ["cancelled", "cancelled"]
        # Following to the end, the views show the newest checkpoint each run has.
        for theirs, state in ended.values():
            steps = {c["step"] for v in theirs["variants"] for c in v["checkpoints"]}
            assert state["follow"] is True and state["view"]["checkpoint"] == len(steps) - 1
