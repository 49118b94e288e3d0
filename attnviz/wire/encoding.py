"""HTTP content encoding, in one place: which encoding an answer is sent in (``negotiate``, from
the request's Accept-Encoding) and the compressors that make it (``compress`` whole,
``compressor`` piece by piece). Three places send compressed answers, all through this module:
the trace service (a trace, on the compute thread: zstd where the client takes it, else gzip,
at level 1), the static files (a large file gzipped once at level 9 and kept, ``web.py``), and
the middleware for everything else (the page and the small JSON answers: ``app.py``'s
GZipMiddleware, set from ``MIDDLEWARE_MIN_BYTES`` and ``MIDDLEWARE_LEVEL`` here), which passes
an answer that already has a Content-Encoding.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Sequence

import zstandard

# What attnviz can send, the one it prefers first: zstd is about 3x faster than gzip on a trace
# at level 1, and as small.
ENCODINGS = ("zstd", "gzip")
# An answer smaller than this is sent as it is: compressing it saves less than its headers.
MIN_BYTES = 1024
# The middleware's answers (the page's HTML, small JSON): gzip -1, past MIN_BYTES.
MIDDLEWARE_MIN_BYTES = MIN_BYTES
MIDDLEWARE_LEVEL = 1

# A compressor is not thread-safe: one zstd compressor per thread (the compute thread's).
_local = threading.local()


def _weights(accept_encoding: str) -> dict[str, float]:
    """Each coding the header names, with its weight (RFC 9110, 12.5.3): ``gzip;q=0.5``;
    a coding without ``q`` weighs 1; one written twice keeps its last weight."""
    weights: dict[str, float] = {}
    for item in accept_encoding.split(","):
        coding, *params = (p.strip() for p in item.split(";"))
        if not coding:
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = min(1.0, max(0.0, float(value)))
                except ValueError:
                    q = 0.0  # an unreadable weight: not taken
        weights[coding.lower()] = q
    return weights


def negotiate(accept_encoding: str, offered: Sequence[str] = ENCODINGS) -> str | None:
    """The coding of ``offered`` the client weighs most (``*`` stands for any it does not name;
    a weight of 0 refuses), ties going to the first offered; None: send it as it is."""
    weights = _weights(accept_encoding)
    best, best_q = None, 0.0
    for coding in offered:
        q = weights.get(coding, weights.get("*", 0.0))
        if q > best_q:
            best, best_q = coding, q
    return best


def accepts(accept_encoding: str) -> bool:
    """Whether the client takes any coding attnviz sends."""
    return negotiate(accept_encoding) is not None


def _zstd() -> zstandard.ZstdCompressor:
    compressor = getattr(_local, "zstd", None)
    if compressor is None:
        compressor = _local.zstd = zstandard.ZstdCompressor(level=1)
    return compressor


def _gzip(level: int, rle: bool) -> zlib._Compress:
    """A gzip stream (wbits 31: a gzip header); ``rle``: run-length matches only, which on 8-bit
    attention (long runs of small values) is 14% smaller and 20% faster at level 1 (a 512-token
    layer: 3.2 MB to 1.0 MB in 32 ms) but does nothing for text."""
    strategy = zlib.Z_RLE if rle else zlib.Z_DEFAULT_STRATEGY
    return zlib.compressobj(level, zlib.DEFLATED, 31, 8, strategy)


def compressor(
    encoding: str, *, level: int = 1, rle: bool = False
) -> tuple[Callable[[bytes], bytes], Callable[[], bytes]]:
    """``(compress, flush)`` of one body sent in ``encoding`` piece by piece: what each piece
    adds, and the end. zstd at level 1 (``level`` is gzip's)."""
    if encoding == "zstd":
        z = _zstd().compressobj()
        return z.compress, z.flush
    if encoding == "gzip":
        g = _gzip(level, rle)
        return g.compress, g.flush
    raise ValueError(f"no compressor for the content coding {encoding!r}")


def compress(data: bytes, encoding: str, *, level: int = 1, rle: bool = False) -> bytes:
    """``data`` whole in ``encoding`` (gzip's header without a time: the same bytes each
    time)."""
    if encoding == "zstd":
        return _zstd().compress(data)
    add, end = compressor(encoding, level=level, rle=rle)
    return add(data) + end()
