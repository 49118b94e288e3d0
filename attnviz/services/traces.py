"""Traces as the API serves them: computed once per input (kept in the trace cache), then any
part of them in either form."""

from __future__ import annotations

import json

import torch

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
        self, req: TraceRequest, query: TraceQuery, compact: bool
    ) -> tuple[bytes, str]:
        """The response body and its media type: the part ``query`` names, compact or JSON,
        computed and encoded on the compute thread."""
        return await compute.run_async(self._respond, req, query, compact)

    def _respond(self, req: TraceRequest, query: TraceQuery, compact: bool) -> tuple[bytes, str]:
        part = self.part(req, query, compact)
        if compact:
            return compact_body(part), COMPACT_MEDIA_TYPE
        text = json.dumps(
            json_body(part), ensure_ascii=False, allow_nan=False, separators=(",", ":")
        )
        return text.encode(), "application/json"

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
