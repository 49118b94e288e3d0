"""A response whose body is sent a slice at a time.

Starlette sends a ``Response``'s body as one message. For a body of many megabytes (a whole JSON
trace: 17 MB at 128 tokens, compressed) the server then copies it whole at least twice more on
its way out: h11 joins it with its framing, and asyncio keeps what the socket did not take at
once as a copy of that remainder, in its own buffer, until the client reads it. Under a crowd of
such downloads these copies were most of the server's growth in resident memory. Sent in
slices of ``SLICE`` bytes, the server waits for each slice to drain (uvicorn's flow control)
before the next, so no more than a slice is ever copied; the headers (``Content-Length``
included) are those the whole body would have had. A body given as a list of pieces (a JSON
trace as it was written, ``TraceService._compressed_pieces``) is sent piece by piece, each of
more than ``SLICE`` bytes in slices: never joined into one.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterator, Mapping
from typing import Any

from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

SLICE = 1 << 20


class SlicedResponse(Response):
    """A ``Response`` that sends its body (bytes, a bytearray, or a list of bytes pieces) in
    slices of at most ``SLICE``."""

    def __init__(
        self,
        content: Any = None,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        media_type: str | None = None,
        background: BackgroundTask | None = None,
    ) -> None:
        self.pieces: list[bytes] | None = None
        if isinstance(content, list):
            self.pieces = content
            length = {"Content-Length": str(sum(map(len, content)))}
            headers, content = {**(headers or {}), **length}, b""
        super().__init__(content, status_code, headers, media_type, background)

    def render(self, content: Any) -> bytes | memoryview:
        if isinstance(content, bytearray):
            return memoryview(content)  # not copied into a bytes object
        return super().render(content)

    def _slices(self) -> Iterator[bytes]:
        for piece in [self.body] if self.pieces is None else self.pieces:
            if len(piece) <= SLICE and isinstance(piece, bytes):
                yield piece  # sent as it is
                continue
            view = memoryview(piece)
            for start in range(0, len(view), SLICE):
                yield bytes(view[start : start + SLICE])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.pieces is None and len(self.body) <= SLICE:
            await super().__call__(scope, receive, send)
            return
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        for piece in self._slices():
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        if self.background is not None:
            await self.background()


async def _sliced(pieces: AsyncIterable[bytes]) -> AsyncIterator[bytes | memoryview]:
    async for piece in pieces:
        if len(piece) <= SLICE:
            yield piece
            continue
        view = memoryview(piece)  # sliced, not copied: the piece is held until sent anyway
        for start in range(0, len(view), SLICE):
            yield view[start : start + SLICE]


def sliced_response(
    content: bytes | bytearray | list[bytes] | AsyncIterable[bytes],
    media_type: str,
    headers: Mapping[str, str],
) -> Response:
    """A ``SlicedResponse`` of a body that is all there (bytes, or a list of pieces), or, of
    one that comes as it is written (an async iterable of pieces: a large JSON trace,
    ``TraceService``'s ``Stream``), a streamed one (chunked: its length is not known when it
    starts), in slices of at most ``SLICE`` too, each sent once the last drained."""
    if isinstance(content, bytes | bytearray | list):
        return SlicedResponse(content, media_type=media_type, headers=headers)
    return StreamingResponse(_sliced(content), media_type=media_type, headers=headers)
