"""The compact form of a trace, written and read: one safetensors file (an 8-byte little-endian
header length, the JSON header, the raw arrays) whose header's ``__metadata__["attnviz"]`` is the
JSON of every field that is not an array. The server sends it for ``POST /api/trace`` with
``Accept: application/vnd.attnviz.trace+safetensors``; the page (``static/js/core/compact.js``),
the offline file and the Python ``Trace`` read it.

An array of an object (``projection``, ``thumbs``) is the array ``projection.coords``, its numbers
(``thumbs.pool``) stay in the object in the JSON, and an absent array is null there. Tensors keep
their dtype (float32 models, float64 toy, uint8 thumbs) and -inf for masked scores.

>>> meta, arrays = decode(response.content)
>>> meta["tokens"], arrays["thumbs.values"].shape
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from attnviz.errors import TraceError

if TYPE_CHECKING:
    import torch


def layout(body: bytes) -> tuple[dict, int]:
    """The safetensors header (every array's dtype, shape and offsets, and ``__metadata__``)
    and where the arrays' bytes begin (the offsets count from there)."""
    if len(body) < 8:
        raise TraceError("the body is not the compact form (too short)")
    (length,) = struct.unpack("<Q", body[:8])
    return json.loads(body[8 : 8 + length]), 8 + length


def header(body: bytes) -> dict:
    """The safetensors header: every array's dtype, shape and offsets, and ``__metadata__``."""
    return layout(body)[0]


def decode(body: bytes, to: Literal["torch", "numpy"] = "torch") -> tuple[dict, dict[str, Any]]:
    """The trace's other fields (the JSON in ``__metadata__["attnviz"]``) and its arrays by name
    (``attentions``; ``thumbs.values`` for an object's member), as torch tensors or, ``to``
    "numpy", numpy arrays (the Python ``Trace``'s, which needs no torch)."""
    meta = json.loads(header(body).get("__metadata__", {}).get("attnviz", "{}"))
    if to == "numpy":
        from safetensors.numpy import load as load_numpy

        return meta, load_numpy(body)
    from safetensors.torch import load as load_torch

    return meta, load_torch(body)


def _tensors(arrays: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """Every tensor of a part's arrays, named ``field`` or ``field.key`` for the members of an
    object."""
    import torch

    out: dict[str, torch.Tensor] = {}
    for name, value in arrays.items():
        if isinstance(value, torch.Tensor):
            out[name] = value
        elif isinstance(value, dict):
            for key, member in value.items():
                if isinstance(member, torch.Tensor):
                    out[f"{name}.{key}"] = member
    return out


def encode(meta: Mapping[str, Any], arrays: Mapping[str, Any]) -> bytes:
    """A part as a safetensors file: ``meta``, the fields, and ``arrays``, each a tensor, an
    object of tensors and numbers, or None (no positional table). The header's
    ``__metadata__["attnviz"]`` is the JSON of the fields and of what is not a tensor in the
    arrays (an object's numbers, null for an absent array)."""
    import torch
    from safetensors.torch import save

    out = dict(meta)
    for name, value in arrays.items():
        if value is None:
            out[name] = None
        elif isinstance(value, dict):
            out[name] = {k: v for k, v in value.items() if not isinstance(v, torch.Tensor)}
    tensors: dict[str, torch.Tensor] = {}
    seen: set[int] = set()
    for name, t in _tensors(arrays).items():
        t = t.detach().to("cpu").contiguous()
        if t.untyped_storage().data_ptr() in seen:  # safetensors refuses shared storage
            t = t.clone()
        seen.add(t.untyped_storage().data_ptr())
        tensors[name] = t
    return save(tensors, metadata={"attnviz": json.dumps(out, separators=(",", ":"))})
