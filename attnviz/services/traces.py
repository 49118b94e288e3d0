"""Traces as the API serves them: computed once per input (kept in the trace cache), then any
part of them in either form."""

from __future__ import annotations

import json
import time
import zlib
from typing import NamedTuple

import torch
import zstandard

from attnviz.pretrained import ModelRegistry
from attnviz.schemas import COMPACT_MEDIA_TYPE, TextTraceRequest, ToyTraceRequest, TraceQuery
from attnviz.services import compute
from attnviz.services.arrays import Part, compact_body, json_body, json_numbers, select
from attnviz.services.cache import TraceCache, input_key
from attnviz.services.tensors import ComputedTrace, TraceError
from attnviz.services.text_trace import run_text_trace
from attnviz.services.trace import run_toy_trace
from attnviz.settings import Settings

TraceRequest = ToyTraceRequest | TextTraceRequest


# A 512-token layer of 8-bit weights (3.2 MB) in 15 ms, to 0.8-1.0 MB.
ZSTD = zstandard.ZstdCompressor(level=1)  # used on the compute thread alone: not thread-safe


def gzip_rle(data: bytes) -> bytes:
    """A gzip stream of run-length matches only: on 8-bit attention (long runs of small values)
    14% smaller than gzip -1 and 20% faster (a 512-token layer: 3.2 MB to 1.0 MB in 32 ms)."""
    z = zlib.compressobj(1, zlib.DEFLATED, 31, 8, zlib.Z_RLE)  # 31: a gzip header
    return z.compress(data) + z.flush()


class Body(NamedTuple):
    content: bytes
    media_type: str
    encoding: str | None = None  # "zstd" or "gzip" when compressed here
    queued_ms: float = 0.0  # waiting for the compute thread
    compute_ms: float = 0.0  # computing and encoding there


SEP = (",", ":")  # compact JSON, as FastAPI's own


class TraceService:
    """Computes traces on the server's device and models, and keeps the last ones."""

    def __init__(self, settings: Settings, device: torch.device, registry: ModelRegistry) -> None:
        self.settings = settings
        self.device = device
        self.registry = registry
        self.cache: TraceCache[ComputedTrace] = TraceCache(
            max_bytes=settings.trace_cache_mb * 2**20,
            ttl_s=settings.trace_cache_ttl_s,
            size_of=ComputedTrace.nbytes,
        )

    def computed(self, req: TraceRequest) -> tuple[ComputedTrace, bool]:
        """The trace of ``req`` and whether it came from the cache."""
        if isinstance(req, TextTraceRequest):
            key = input_key("text", req.model_dump_json())
            return self.cache.get_or_compute(
                key, lambda: run_text_trace(req, self.registry, self.settings.max_text_tokens)
            )
        key = input_key("toy", req.model_dump_json())
        return self.cache.get_or_compute(key, lambda: run_toy_trace(req, self.device))

    async def respond(
        self, req: TraceRequest, query: TraceQuery, compact: bool, accept_encoding: str = ""
    ) -> Body:
        """The response: the part ``query`` names, compact or JSON, computed and encoded on the
        compute thread."""
        asked = time.perf_counter()
        started = 0.0

        def timed() -> Body:
            nonlocal started
            started = time.perf_counter()
            return self._respond(req, query, compact, accept_encoding)

        body = await compute.run_async(timed)
        done = time.perf_counter()
        return body._replace(queued_ms=1000 * (started - asked), compute_ms=1000 * (done - started))

    def _respond(
        self, req: TraceRequest, query: TraceQuery, compact: bool, accept_encoding: str
    ) -> Body:
        part = self.part(req, query, compact)  # (on this thread already: called directly)
        if not compact:
            text = json.dumps(json_body(part), ensure_ascii=False, allow_nan=False, separators=SEP)
            return Body(text.encode(), "application/json")
        body = compact_body(part)
        # 8-bit thumbnails are mostly zeros and shrink three- to six-fold; float32 arrays shrink
        # by a few percent for 40 ms a megabyte: only the first are worth compressing.
        if "thumbs" in part.arrays and len(body) > 1024:
            if "zstd" in accept_encoding:  # 3x faster than gzip here, as small
                return Body(ZSTD.compress(body), COMPACT_MEDIA_TYPE, "zstd")
            if "gzip" in accept_encoding:
                return Body(gzip_rle(body), COMPACT_MEDIA_TYPE, "gzip")
        return Body(body, COMPACT_MEDIA_TYPE)

    def part(self, req: TraceRequest, query: TraceQuery, compact: bool) -> Part:
        """The part of the trace ``query`` names; a JSON body is capped in numbers."""
        return compute.run(self._part, req, query, compact)

    def _part(self, req: TraceRequest, query: TraceQuery, compact: bool) -> Part:
        trace, cached = self.computed(req)
        cap = self.settings.max_json_values
        if not compact:
            count = json_numbers(trace, query)
            if count > cap:
                raise TraceError(
                    f"fields: this JSON trace would carry {count:,} numbers, over this server's "
                    f"cap of {cap:,}; ask for fewer fields, one layer or head (layer=, head=), "
                    f"or the compact form (Accept: {COMPACT_MEDIA_TYPE})"
                )
        part = select(trace, query, annotate=compact or not query.whole)
        if not cached:
            trace.tensors.release()  # the cache keeps q, k, v; weights are recomputed from them
        if compact:
            whole = TraceQuery()
            part.meta["json_numbers"] = json_numbers(trace, whole)
        return part
