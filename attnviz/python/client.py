"""``attnviz.Client``: the traces of a running attnviz server (local or hosted), over the compact
form, as the same ``Trace`` that ``attnviz.trace`` gives in this process, and its training runs
(their state, or one offline HTML file of a run). Only the standard library speaks HTTP here.

One ``Client`` is one visitor of the server: it keeps the visitor cookie the server sets across
its calls (so the runs it lists are its own, and those it opened by their id), or, given a
``token`` (the ``token`` that ``POST /api/train`` answered, or the operator's
``ATTNVIZ_ADMIN_TOKEN``), sends it as ``Authorization: Bearer``."""

from __future__ import annotations

import http.cookiejar
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from attnviz.errors import TraceError
from attnviz.python.trace import Trace
from attnviz.wire.constants import COMPACT_MEDIA_TYPE

JOB_POLL_S = 0.5  # how often a long trace's job is asked how it goes


class Client:
    """A server at ``url``, e.g. ``Client("http://127.0.0.1:8000")``. A busy server's 503 is
    waited out (its ``Retry-After``) up to ``patience`` seconds; a refusal raises
    ``TraceError`` with the server's message, and no answer at all (nothing listening there, a
    name that does not resolve, ``timeout`` seconds passed) ``ConnectionError`` naming the URL.

    >>> c = attnviz.Client("http://127.0.0.1:8000")
    >>> [m["name"] for m in c.models()]
    ['all-MiniLM-L6-v2']
    >>> t = c.trace(model="all-MiniLM-L6-v2", text="The animal didn't cross the street")

    ``token``: a visitor's bearer token (a run's starter's, from ``POST /api/train``), or the
    operator's; without it, the client is the visitor its cookie names.
    """

    def __init__(
        self, url: str, timeout: float = 120.0, patience: float = 30.0, token: str | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.patience = patience
        self.cookies = http.cookiejar.CookieJar()  # the visitor cookie, kept across calls
        self._opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))
        if token:
            self._opener.addheaders.append(("Authorization", f"Bearer {token}"))

    def _open(self, request: urllib.request.Request, limit: int | None = None) -> bytes:
        """The response's body (at most ``limit`` bytes: past it, refused)."""
        return self._answer(request, limit)[1]

    def _answer(
        self, request: urllib.request.Request, limit: int | None = None
    ) -> tuple[int, bytes]:
        """The response's status and body (at most ``limit`` bytes: past it, refused)."""
        deadline = time.monotonic() + self.patience
        while True:
            try:
                with self._opener.open(request, timeout=self.timeout) as response:
                    if limit is None:
                        return response.status, response.read()
                    body = response.read(limit + 1)
                    if len(body) > limit:
                        raise TraceError(f"response: over {limit:,} bytes, the cap on its size")
                    return response.status, body
            except urllib.error.HTTPError as exc:
                body = exc.read()
                wait = float(exc.headers.get("Retry-After") or 1)
                if exc.code == 503 and time.monotonic() + wait < deadline:
                    time.sleep(wait)
                    continue
                raise TraceError(_detail(exc.code, body)) from None
            except urllib.error.URLError as exc:
                raise ConnectionError(self._unanswered(exc.reason)) from None
            except (TimeoutError, ConnectionError) as exc:  # after it was reached
                raise ConnectionError(self._unanswered(exc)) from None

    def _unanswered(self, reason: object) -> str:
        """Why a request had no answer, naming the server's URL."""
        if isinstance(reason, TimeoutError):
            return f"{self.url}: no answer within {self.timeout:g} s (the timeout)"
        why = getattr(reason, "strerror", None) or str(reason)
        return (
            f"{self.url}: nothing answers there ({why}); is an attnviz server running at "
            "that address (attnviz serve)?"
        )

    def models(self) -> list[dict]:
        """``GET /api/models``: the models the server offers, each as a dict of ``ModelInfo``."""
        body = self._open(urllib.request.Request(f"{self.url}/api/models"))
        return list(json.loads(body)["models"])

    def part(self, request: Mapping[str, Any], query: Mapping[str, Any]) -> bytes:
        """The compact form of ``POST /api/trace`` for the body ``request`` and ``query``. A
        long text's trace, which the server runs as a job (``Prefer: respond-async``), is
        followed to its end (its state read every ``JOB_POLL_S``) and its answer read."""
        params = {k: _param(v) for k, v in query.items() if v is not None}
        qs = f"?{urllib.parse.urlencode(params)}" if params else ""
        data = json.dumps(dict(request)).encode()
        req = urllib.request.Request(
            f"{self.url}/api/trace{qs}",
            data=data,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Accept": COMPACT_MEDIA_TYPE,
                "Accept-Encoding": "identity",
                "Prefer": "respond-async",
            },  # fmt: skip
        )
        status, body = self._answer(req)
        if status != 202:
            return body
        job = json.loads(body)
        while job["state"] in ("queued", "running"):
            time.sleep(JOB_POLL_S)
            job = json.loads(self._open(urllib.request.Request(f"{self.url}{job['url']}")))
        accept = {"Accept": COMPACT_MEDIA_TYPE, "Accept-Encoding": "identity"}
        return self._open(urllib.request.Request(f"{self.url}{job['result']}", headers=accept))

    def trace(
        self,
        model: str | None = None,
        text: str | None = None,
        *,
        image: Any = None,
        generate: Mapping[str, Any] | None = None,
        tokens: Sequence[str] | None = None,
        embeddings: Sequence[Sequence[float]] | None = None,
        config: Mapping[str, Any] | None = None,
        **query: Any,
    ) -> Trace:
        """The server's trace, as ``attnviz.trace`` computes it here (same arguments; ``model``
        names one of ``models()``; ``image``'s files are read here and sent as data URLs)."""
        from attnviz.python.pictures import request_images

        urls, pictures = request_images(image)
        body = {"model": model, "text": text, "generate": generate, "tokens": tokens,
                "embeddings": embeddings, "config": config,
                "images": urls or None}  # fmt: skip
        request = {k: v for k, v in body.items() if v is not None}
        if "text" in request and "model" not in request:
            request["model"] = self.models()[0]["name"]

        def source(params: Mapping[str, Any]) -> bytes:
            return self.part(request, params)

        return Trace.from_compact(source(query), source, pictures)

    def run_json(self, run_id: str) -> bytes:
        """``GET /api/train/{id}``: a training run's state (``TrainRun``), as the server's JSON."""
        from attnviz.python.html import RUN_MAX_BYTES

        url = f"{self.url}/api/train/{urllib.parse.quote(run_id, safe='')}"
        return self._open(urllib.request.Request(url), limit=RUN_MAX_BYTES)

    def runs(self) -> list[dict]:
        """``GET /api/train``: this client's runs (those it opened by their id, those the
        operator shared; every one for the operator's token), newest first, each a dict."""
        body = self._open(urllib.request.Request(f"{self.url}/api/train"))
        return list(json.loads(body)["runs"])

    def run(self, run_id: str) -> dict:
        """A training run's state as a dict: every variant's history, its checkpoints (each
        head's attention on the probe, 8-bit), a preset's claims..."""
        return dict(json.loads(self.run_json(run_id)))

    def save_run_html(self, run_id: str, path: str | Path) -> Path:
        """An ended run as one HTML file that opens offline (``GET /api/train/{id}/export``
        makes the same): Train mode's views, with the checkpoints to scrub. A run still
        running is refused (``ExportError``); the path.

        >>> c = attnviz.Client("http://127.0.0.1:8000")
        >>> c.save_run_html("5e9c9906008a4f1e9b3c2d7a6e5f4b10", "run.html")
        """
        from attnviz.python.html import save_run_html

        saved = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        return save_run_html(self.run_json(run_id), path, saved=saved)


def _param(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _detail(status: int, body: bytes) -> str:
    """The server's message (``detail``) for a refusal, else the status alone."""
    try:
        answer = json.loads(body)
        detail = answer.get("message") or answer.get("detail")
    except (ValueError, AttributeError):
        detail = None
    if isinstance(detail, list):  # FastAPI's validation errors
        detail = "; ".join(str(d.get("msg", d)) for d in detail)
    return f"{status}: {detail}" if detail else f"{status}: {body[:200]!r}"
