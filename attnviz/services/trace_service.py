"""Traces as the API serves them: computed once per input (kept in the trace cache), then any
part of them in either form."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from typing import NamedTuple

import torch

from attnviz.capture import ComputedTrace, TraceTensors
from attnviz.errors import TraceError
from attnviz.pretrained import ModelRegistry
from attnviz.pretrained.folder import REMOTE_BACKENDS
from attnviz.schemas.trace import TextTraceRequest, ToyTraceRequest, TraceQuery
from attnviz.schemas.trace_meta import check_field_meta, check_meta
from attnviz.services import compute, heap
from attnviz.services.admission import Admission
from attnviz.services.cache import TraceCache, input_key
from attnviz.services.parts import Part, compact_body, json_numbers, json_pieces, select
from attnviz.services.text_trace import find_model, run_text_trace
from attnviz.services.toy_trace import run_toy_trace
from attnviz.settings import Settings
from attnviz.wire.constants import COMPACT_MEDIA_TYPE
from attnviz.wire.encoding import MIN_BYTES, compress, compressor, negotiate

TraceRequest = ToyTraceRequest | TextTraceRequest
TRIM_EVERY_S = 1.0  # how often the heaps' free pages are returned, at most (``heap.trim``)


# The compute thread's own: the time its last trace's forward took (``forward_s``).
_local = threading.local()

# A piece of a large body under this many bytes is joined to its neighbours (the separators
# between a JSON trace's rows, a compressor's small outputs); a larger one is kept as it is.
JOIN_UNDER = 64 * 1024


# A JSON body is sent while it is written once this many bytes of it are written and more are
# to come (``Stream``): its first megabyte is on the wire while orjson writes the rest.
STREAM_AFTER = 1 << 20


class Stream:
    """A JSON body sent while the compute thread writes it: the writer (``write``, ``finish``,
    on the compute thread) appends pieces, the response (``async for``, on the event loop)
    sends them as they come, so sending a large body (43 MB at 128 tokens: 25 to 50 ms on
    loopback) overlaps its writing instead of following it. ``started`` is done once
    ``STREAM_AFTER`` bytes are written. What the response has not sent yet stays here (at
    most the whole body, as when it was sent after it was written)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._pieces: deque[bytes] = deque()
        self._more = asyncio.Event()
        self._finished = False
        self._error: BaseException | None = None
        self.written = 0  # bytes
        self.encoding: str | None = None  # set before the first write
        self.started: asyncio.Future[None] = loop.create_future()
        # The response waits for a piece (``_more``): only then is the event loop woken by a
        # write. A wake per piece while it sends would take the GIL from the writer each time.
        self._waiting = False
        self._told_start = False

    def write(self, piece: bytes) -> None:
        self._pieces.append(piece)
        self.written += len(piece)
        start = not self._told_start and self.written >= STREAM_AFTER
        if self._waiting or start:
            self._waiting = False
            self._told_start = self._told_start or start
            self._tell()

    def finish(self, error: BaseException | None = None) -> None:
        self._error, self._finished = error, True
        self._tell()

    def _tell(self) -> None:
        # (RuntimeError: the event loop closed, the server stopping: nobody to send to)
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        self._more.set()
        if not self.started.done() and self.written >= STREAM_AFTER:
            self.started.set_result(None)

    def whole(self) -> list[bytes]:
        """Every piece, once finished (a body that was written before it was sent)."""
        assert self._finished and self._error is None
        return list(self._pieces)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            self._more.clear()
            while self._pieces:
                yield self._pieces.popleft()
            if self._finished:
                if self._error is not None:
                    raise RuntimeError("the body could not be written") from self._error
                return
            self._waiting = True
            if self._pieces or self._finished:  # written since it looked: no wake will come
                self._waiting = False
                continue
            await self._more.wait()


class Body(NamedTuple):
    # A large one as the pieces it was made in (``_compressed_pieces``), sent one by one, or
    # as they are written (``Stream``).
    content: bytes | list[bytes] | Stream
    media_type: str
    encoding: str | None = None  # "zstd" or "gzip" when compressed here
    queued_ms: float = 0.0  # waiting for the compute thread
    compute_ms: float = 0.0  # computing and encoding there
    # Where compute_ms went, in ms: the trace computed (tokenizer, forward and capture; 0 from
    # the cache), the part chosen from it (the views derived: thumbnails, distances, ...) and
    # the body written (compact or JSON, compressed).
    phases: tuple[tuple[str, float], ...] = ()


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
        self.admission = Admission(settings.workers, settings.max_wait_s, settings.max_queue)
        # Remote models' (NDIF's): their waits for the deployment on threads of their own.
        self.remote_admission = Admission(
            settings.remote_workers,
            settings.max_wait_s,
            settings.max_queue,
            submit=compute.submit_remote,
        )
        self._held: TraceTensors | None = None  # the trace that keeps its forward's weights
        self._held_lock = threading.Lock()

    def remote(self, model: str) -> bool:
        """Whether the served model of that name runs on a remote deployment (NDIF)."""
        served = self.registry.get(model)
        return served is not None and served.backend in REMOTE_BACKENDS

    def admission_for(self, req: TraceRequest | str) -> Admission:
        """The admission a request's computation goes through: a remote model's own, or the
        compute thread's (a toy's, a local model's); ``req``: a request, or a model's name."""
        model = req if isinstance(req, str) else getattr(req, "model", None)
        if isinstance(model, str) and self.remote(model):
            return self.remote_admission
        return self.admission

    def key(self, req: TraceRequest) -> str:
        kind = "text" if isinstance(req, TextTraceRequest) else "toy"
        return input_key(kind, req.model_dump_json())

    def computed(self, req: TraceRequest) -> tuple[ComputedTrace, bool]:
        """The trace of ``req`` and whether it came from the cache."""
        key = self.key(req)
        if isinstance(req, TextTraceRequest):
            text = req
            # The cache's budget decides whether a trace keeps its q, k and v: half of it at
            # most for one trace, else they are recomputed for the one layer a part needs
            # (with no cache, a trace lives for one response: kept).
            budget = self.settings.trace_cache_mb * 2**20
            keep = budget // 2 if budget else -1
            return self.cache.get_or_compute(
                key,
                lambda: self._fresh(
                    lambda: run_text_trace(
                        text,
                        self.registry,
                        self.settings.max_text_tokens,
                        keep,
                        max_image_bytes=self.settings.max_image_bytes,
                    )
                ),
            )
        return self.cache.get_or_compute(
            key, lambda: self._fresh(lambda: run_toy_trace(req, self.device))
        )

    def _fresh(self, compute: Callable[[], ComputedTrace]) -> ComputedTrace:
        """A new trace, computed once the last one's held weights are dropped (``_hold``)."""
        with self._held_lock:
            previous, self._held = self._held, None
        if previous is not None:
            previous.release(derive=False)  # not asked for it: not paid for by the next text
        t0 = time.perf_counter()
        try:
            return compute()
        finally:
            _local.forward_s = getattr(_local, "forward_s", 0.0) + time.perf_counter() - t0

    async def respond(
        self,
        req: TraceRequest,
        query: TraceQuery,
        compact: bool,
        accept_encoding: str = "",
        client: str = "",
        measured: Callable[[tuple[tuple[str, float], ...]], None] | None = None,
    ) -> Body:
        """The response: the part ``query`` names, compact or JSON, computed and encoded on the
        compute thread when ``client``'s turn comes (raises ``Busy`` when it would not come
        soon); ``measured`` is told on the event loop where the time went (``Body.phases``)
        once it is encoded (a large JSON body's once all of it is written), also when the
        request was cut off meanwhile (the request limit, the client gone): the work was done."""
        asked = time.perf_counter()
        started = 0.0
        loop = asyncio.get_running_loop()
        stream = None if compact else Stream(loop)

        def timed() -> Body:
            nonlocal started
            started = time.perf_counter()
            body = self._respond(req, query, compact, accept_encoding, stream)
            if measured is not None:
                loop.call_soon_threadsafe(measured, body.phases)
            return body

        if isinstance(req, TextTraceRequest):
            # A model can go (a training run evicted): never answer for it from the cache.
            find_model(self.registry, req.model)
        cheap = self.cache.holds(self.key(req))
        admission = self.admission_for(req)
        job = asyncio.ensure_future(admission.run(client, timed, cheap=cheap))
        if stream is not None:
            job.add_done_callback(lambda f: f.cancelled() or f.exception())  # read if left
            try:
                waits: set[asyncio.Future[object]] = {job, stream.started}  # type: ignore[arg-type]
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:  # the client went away
                job.cancel()
                raise
            if not job.done():  # a large JSON body, still being written: sent as it comes
                ms = 1000 * (time.perf_counter() - started)  # until it starts (no phases)
                media = "application/json"
                return Body(stream, media, stream.encoding, 1000 * (started - asked), ms)
        body = await job
        done = time.perf_counter()
        if body.content is stream:
            body = body._replace(content=stream.whole())
        return body._replace(queued_ms=1000 * (started - asked), compute_ms=1000 * (done - started))

    def _respond(
        self,
        req: TraceRequest,
        query: TraceQuery,
        compact: bool,
        accept_encoding: str,
        stream: Stream | None = None,
    ) -> Body:
        try:
            return self._encoded(req, query, compact, accept_encoding, stream)
        except BaseException as exc:
            if stream is not None:
                stream.finish(exc)
            raise
        finally:
            heap.trim(every_s=TRIM_EVERY_S)  # the holes evicted traces left, returned

    def _encoded(
        self,
        req: TraceRequest,
        query: TraceQuery,
        compact: bool,
        accept_encoding: str,
        stream: Stream | None = None,
    ) -> Body:
        _local.forward_s = 0.0  # (``_fresh`` adds the forward's time)
        t0 = time.perf_counter()
        part = self.part(req, query, compact)  # (on this thread already: called directly)
        t1 = time.perf_counter()
        if not compact:
            # Compressed here, not by the middleware on the event loop: a 100 MB JSON trace
            # would hold every other request (the health check included) for seconds.
            media = "application/json"
            out = self._compressed_pieces(json_pieces(part), media, accept_encoding, stream)
        # 8-bit thumbnails are mostly zeros and shrink three- to six-fold; float32 arrays shrink
        # by a few percent for 40 ms a megabyte: only the first are worth compressing.
        elif "thumbs" in part.arrays:
            out = self._compressed(compact_body(part), COMPACT_MEDIA_TYPE, accept_encoding)
        else:
            out = Body(compact_body(part), COMPACT_MEDIA_TYPE)
        forward = 1000 * _local.forward_s
        times = (forward, 1000 * (t1 - t0) - forward, 1000 * (time.perf_counter() - t1))
        return out._replace(phases=tuple(zip(("forward", "part", "encode"), times, strict=True)))

    @staticmethod
    def _compressed_pieces(
        pieces: Iterator[bytes], media_type: str, accept_encoding: str, stream: Stream | None = None
    ) -> Body:
        """As ``_compressed``, of a body made piece by piece: each piece is compressed as it
        comes and then dropped, and the body is what comes out, kept as those pieces (the small
        ones joined, ``JOIN_UNDER``) and sent one by one: the whole text of a JSON trace (43 MB
        at 128 tokens) is never held beside what is sent (17 MB with zstd), nor is what is sent
        copied into one buffer (uncompressed, that copy and its fresh pages were 20 ms). With
        ``stream``, each piece goes to it as it comes (the response may be sending them)."""
        head: list[bytes] = []
        for piece in pieces:  # the first kilobyte decides, as in _compressed
            head.append(piece)
            if sum(map(len, head)) > MIN_BYTES:
                break
        else:
            if stream is not None:
                stream.finish()
            return Body(b"".join(head), media_type)
        compress: Callable[[bytes], bytes] = lambda piece: piece  # noqa: E731 (identity)
        flush: Callable[[], bytes] = bytes  # b""
        encoding = negotiate(accept_encoding)
        if encoding is not None:
            compress, flush = compressor(encoding)
        out: list[bytes] = []
        emit = out.append
        if stream is not None:
            stream.encoding, emit = encoding, stream.write
        small = bytearray()
        for given in itertools.chain(head, pieces, [None]):
            piece = flush() if given is None else compress(given)
            if len(piece) < JOIN_UNDER:
                small += piece
                continue
            if small:
                emit(bytes(small))
                small.clear()
            emit(piece)
        if small:
            emit(bytes(small))
        if stream is not None:
            stream.finish()
            return Body(stream, media_type, encoding)
        return Body(out, media_type, encoding)

    @staticmethod
    def _compressed(body: bytes, media_type: str, accept_encoding: str) -> Body:
        """zstd where the client takes it (3x faster than gzip here, as small), else gzip
        (of run-length matches on the compact form's 8-bit weights: ``encoding.compressor``)."""
        encoding = negotiate(accept_encoding)
        if len(body) > MIN_BYTES and encoding is not None:
            rle = media_type == COMPACT_MEDIA_TYPE
            return Body(compress(body, encoding, rle=rle), media_type, encoding)
        return Body(body, media_type)

    def part(self, req: TraceRequest, query: TraceQuery, compact: bool) -> Part:
        """The part of the trace ``query`` names; a JSON body is capped in numbers."""
        return compute.run(self._part, req, query, compact)

    def _hold(self, tensors: TraceTensors) -> None:
        """The newest trace keeps its forward's weights (at most ``KEEP_FORWARD_BYTES``, which
        the trace cache does not count) until a part asks for what a later part reads of every
        layer's weights, each row's entropy (the page's last part, after every view is drawn:
        taken from them it costs no recomputation, and it is not on the way to the first
        screen), or until another trace is to be computed (``_fresh``): then they are dropped,
        and the cache keeps q, k, v, from which weights are recomputed. Also when refused."""
        with self._held_lock:
            previous, self._held = self._held, tensors
        if previous is not None and previous is not tensors:
            previous.release(derive=False)

    def _part(self, req: TraceRequest, query: TraceQuery, compact: bool) -> Part:
        trace, cached = self.computed(req)
        cap = self.settings.max_json_values
        try:
            if not compact:
                count = json_numbers(trace, query)
                if count > cap:
                    raise TraceError(
                        f"fields: this JSON trace would carry {count:,} numbers, over this "
                        f"server's cap of {cap:,}; ask for fewer fields, one layer or head "
                        f"(layer=, head=), or the compact form (Accept: {COMPACT_MEDIA_TYPE})"
                    )
            part = select(trace, query, annotate=compact or not query.whole)
        finally:
            if not cached:
                self._hold(trace.tensors)
        if compact:
            whole = TraceQuery()
            part.meta["json_numbers"] = json_numbers(trace, whole)
        if self.settings.check_meta:
            check_meta(part.meta, part=compact or not query.whole)
            for name, value in part.arrays.items():
                if isinstance(value, dict):  # its members beside its arrays
                    members = {k: v for k, v in value.items() if not isinstance(v, torch.Tensor)}
                    check_field_meta(name, members)
        return part
