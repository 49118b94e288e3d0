"""Read the compact form of a trace in Python: ``POST /api/trace`` with
``Accept: application/vnd.attnviz.trace+safetensors``.

>>> meta, arrays = decode(response.content)
>>> meta["tokens"], arrays["thumbs.values"].shape
"""

from __future__ import annotations

import json
import struct

import torch
from safetensors.torch import load


def header(body: bytes) -> dict:
    """The safetensors header: every array's dtype, shape and offsets, and ``__metadata__``."""
    (length,) = struct.unpack("<Q", body[:8])
    return json.loads(body[8 : 8 + length])


def decode(body: bytes) -> tuple[dict, dict[str, torch.Tensor]]:
    """The trace's other fields (the JSON in ``__metadata__["attnviz"]``) and its arrays by name
    (``attentions``; ``thumbs.values`` for an object's member)."""
    meta = json.loads(header(body)["__metadata__"]["attnviz"])
    return meta, load(body)
