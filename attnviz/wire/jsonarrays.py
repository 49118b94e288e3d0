"""Numbers on the JSON wire, written by orjson from numpy arrays (no Python lists or floats in
between: a 128-token trace's 3.7M numbers are one C loop, not 3.7M Python objects).

A float32 is written with the shortest digits that read back as that float32 (ryu's float32
form: 0.1, not the 0.10000000149011612 of its float64 widening; ``Math.fround`` in a browser,
or ``numpy.float32``, of the number read gives the exact float32 back), a float64 with the
shortest digits that read back as that float64 (as Python's ``repr``), integers as they are.
Infinities and NaN, which JSON cannot spell, are ``null``: masked scores (-inf) are ``null``.
"""

from __future__ import annotations

from collections.abc import Iterator
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


# An array of more numbers is written a row at a time (about 0.7 MB). Each piece is one orjson
# call, which holds the GIL: the server's event loop, which sends what is written, waits for it
# to end (pieces of 2.5 MB left most of a 43 MB trace to send after it was written).
PIECE_NUMBERS = 1 << 16


def pieces(value: Any, most: int = PIECE_NUMBERS) -> Iterator[bytes]:
    """``dumps(value)`` in pieces that join to the same text: a tensor or numpy array of more
    than ``most`` numbers is written one row (along its first axis) at a time, each row in turn
    so; anything else whole. So a 128-token trace's 1.2M attention weights are 72 pieces of
    0.2 MB (a head each) rather than one of 12 MB, and no more than a piece need be alive at
    once."""
    if isinstance(value, torch.Tensor | np.ndarray) and value.ndim >= 2 and len(value) > 1:
        numel = value.numel() if isinstance(value, torch.Tensor) else value.size
        if numel > most:
            sep = b"["
            for row in value:
                yield sep
                yield from pieces(row, most)
                sep = b","
            yield b"]"
            return
    yield dumps(value)
