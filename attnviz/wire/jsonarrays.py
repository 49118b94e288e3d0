"""Numbers on the JSON wire, written by orjson from numpy arrays (no Python lists or floats in
between: a 128-token trace's 3.7M numbers are one C loop, not 3.7M Python objects).

A float32 is written with the shortest digits that read back as that float32 (ryu's float32
form: 0.1, not the 0.10000000149011612 of its float64 widening; ``Math.fround`` in a browser,
or ``numpy.float32``, of the number read gives the exact float32 back), a float64 with the
shortest digits that read back as that float64 (as Python's ``repr``), integers as they are.
Infinities and NaN, which JSON cannot spell, are ``null``: masked scores (-inf) are ``null``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import torch

_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def host_array(t: torch.Tensor) -> np.ndarray:
    """A tensor as the C-contiguous host array orjson writes (float16 and bfloat16, which numpy
    has not or orjson does not write, as float32: exact)."""
    t = t.detach()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return t.cpu().contiguous().numpy()


def _default(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return host_array(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def dumps(value: Any) -> bytes:
    """``value`` (JSON data, with tensors and numpy arrays anywhere in it) as compact UTF-8
    JSON: a tensor as nested arrays of its numbers, as above."""
    return orjson.dumps(value, default=_default, option=_OPTIONS)
