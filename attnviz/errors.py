"""The one error of a trace that cannot be had, at every layer that refuses one."""

from __future__ import annotations


class TraceError(ValueError):
    """A request that validated but cannot be computed (by the server or the in-process engine),
    or a part a trace lacks; the message names the field (``layer: 99 is out of range ...``).

    The API answers it with a 422 (``api/errors.py``); from Python it is ``attnviz.TraceError``."""
