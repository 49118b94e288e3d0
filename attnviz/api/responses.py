"""A response whose body is sent a slice at a time.

Starlette sends a ``Response``'s body as one message. For a body of many megabytes (a whole JSON
trace: 17 MB at 128 tokens, compressed) the server then copies it whole at least twice more on
its way out: h11 joins it with its framing, and asyncio keeps what the socket did not take at
once as a copy of that remainder, in its own buffer, until the client reads it. Under a crowd of
such downloads these copies were most of the server's growth in resident memory. Sent in
slices of ``SLICE`` bytes, the server waits for each slice to drain (uvicorn's flow control)
before the next, so no more than a slice is ever copied; the headers (``Content-Length``
included) are those the whole body would have had.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

SLICE = 1 << 20


class SlicedResponse(Response):
    """A ``Response`` that sends its body (bytes or a bytearray) in slices of ``SLICE``."""

    def render(self, content: Any) -> bytes | memoryview:
        if isinstance(content, bytearray):
            return memoryview(content)  # not copied into a bytes object
        return super().render(content)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if len(self.body) <= SLICE:
            await super().__call__(scope, receive, send)
            return
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        view = memoryview(self.body)
        for start in range(0, len(view), SLICE):
            await send(
                {
                    "type": "http.response.body",
                    "body": bytes(view[start : start + SLICE]),
                    "more_body": True,
                }
            )
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        if self.background is not None:
            await self.background()
