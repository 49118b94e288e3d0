"""The one error of a trace that cannot be had, at every layer that refuses one."""

from __future__ import annotations


class TraceError(ValueError):
    """A request that validated but cannot be computed (by the server or the in-process engine),
    or a part a trace lacks; the message names the field (``layer: 99 is out of range ...``).

    The API answers it with a 422 (``api/errors.py``); from Python it is ``attnviz.TraceError``."""


class RemoteError(RuntimeError):
    """A remote deployment (NDIF) that could not run a trace: down, its queue full, the key
    refused, the model not hosted, or the trace failed there. The message says which in plain
    words; ``status`` is the HTTP status the API answers with (502 or 503, never 500), and
    ``retry_after`` the seconds a 503 asks the client to wait."""

    def __init__(self, message: str, status: int = 502, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
