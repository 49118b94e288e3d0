"""A long trace on disk, in a folder of its own: ``meta.json`` (a schema version, the text's
length, the plan, the spans, each layer's arrays' shapes and dtypes) and one raw file per
array, which ``load`` maps into memory rather than reading, so that a restart reopens a 16k-token
trace's 1.5 GB of queries and keys in milliseconds and pages in only the windows read.

The model's rule is not stored: ``load`` takes the config of the model the trace was made by,
and refuses one whose fingerprint differs (a window read by another rule would be wrong)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import fields
from pathlib import Path

import torch

from attnviz.engine import TransformerConfig
from attnviz.long.attend import LayerRecord, Plan
from attnviz.long.trace import LongTrace

SCHEMA = 1
ARRAYS = ("q", "k", "lse", "sink", "local")  # and "entropy" where the forward made it
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class StoreError(ValueError):
    """A stored long trace that cannot be read: its schema, its model, or a missing file."""


def fingerprint(cfg: TransformerConfig) -> str:
    """A digest of what a model's rule reads, to tell a trace's model from another."""
    return hashlib.sha256(repr(cfg).encode()).hexdigest()[:16]


def _dtype_name(dtype: torch.dtype) -> str:
    return next(name for name, d in DTYPES.items() if d == dtype)


def save_layer(folder: Path, layer: int, rec: LayerRecord) -> LayerRecord:
    """Write one layer's arrays under ``folder`` and give them back mapped from there (the
    memory they took in the process is then freed)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in _arrays(rec):
        t = getattr(rec, name).contiguous().cpu()
        path = folder / f"{name}.{layer}.bin"
        t.view(torch.uint8).numpy().tofile(path)  # type: ignore[no-untyped-call]
        out[name] = _mapped(path, t.dtype, tuple(t.shape))
    return LayerRecord(**out, fused=rec.fused)


def _arrays(rec: LayerRecord) -> tuple[str, ...]:
    return ARRAYS if rec.entropy is None else (*ARRAYS, "entropy")


def _mapped(path: Path, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
    n = 1
    for s in shape:
        n *= s
    if not path.is_file() or path.stat().st_size != n * torch.empty(0, dtype=dtype).element_size():
        raise StoreError(f"{path.name} is missing or not the size its meta says")
    return torch.from_file(str(path), shared=False, size=n, dtype=dtype).view(shape)


def save_meta(trace: LongTrace, folder: Path) -> None:
    """Write ``meta.json`` for the layers already saved (``save_layer``), atomically."""
    layers = {
        str(i): {
            "fused": rec.fused,
            "arrays": {
                n: {
                    "dtype": _dtype_name(getattr(rec, n).dtype),
                    "shape": list(getattr(rec, n).shape),
                }
                for n in _arrays(rec)
            },
        }
        for i, rec in sorted(trace.layers.items())
    }
    plan = {f.name: getattr(trace.plan, f.name) for f in fields(trace.plan)}
    plan["keep"] = _dtype_name(trace.plan.keep)
    meta = {
        "schema": SCHEMA,
        "model": fingerprint(trace.cfg),
        "T": trace.T,
        "plan": plan,
        "spans": [list(s) for s in trace.spans],
        "layers": layers,
    }
    tmp = folder / "meta.json.tmp"
    tmp.write_text(json.dumps(meta), encoding="utf-8")
    os.replace(tmp, folder / "meta.json")


def migrate(meta: dict) -> dict:
    """``meta`` at the current schema (there is one so far; a newer one is refused)."""
    schema = meta.get("schema")
    if schema != SCHEMA:
        raise StoreError(f"a long trace of schema {schema!r}; this attnviz reads {SCHEMA}")
    return meta


def load(folder: Path, cfg: TransformerConfig) -> LongTrace:
    """The long trace saved in ``folder``, its arrays mapped, read by ``cfg``'s rule."""
    try:
        meta = migrate(json.loads((folder / "meta.json").read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError) as e:
        raise StoreError(f"no readable meta.json in {folder.name}: {e}") from None
    if meta["model"] != fingerprint(cfg):
        raise StoreError("this long trace was made by another model")
    p = meta["plan"]
    plan = Plan(tuple(p["bounds"]), tuple(p["sinks"]), int(p["local"]), DTYPES[p["keep"]])
    spans = tuple((int(a), int(b)) for a, b in meta["spans"])
    trace = LongTrace(cfg, plan, int(meta["T"]), spans)
    for key, layer in meta["layers"].items():
        arrays = {
            n: _mapped(folder / f"{n}.{key}.bin", DTYPES[a["dtype"]], tuple(a["shape"]))
            for n, a in layer["arrays"].items()
        }
        trace.layers[int(key)] = LayerRecord(**arrays, fused=bool(layer["fused"]))
    return trace
