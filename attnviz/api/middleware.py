"""What every request passes through before the routers: the proxy headers of trusted proxies
only, a body cap, a time limit, HEAD as GET, OPTIONS and ``Allow`` as every route of a path
says, the security headers, gzip for an answer not compressed elsewhere; and the router's
answer to a path no route takes. Plain ASGI
middleware, so a body is never read whole to be refused.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import math
import re
from collections.abc import Sequence

from starlette._utils import get_route_path
from starlette.datastructures import URL, Headers
from starlette.middleware.gzip import GZipMiddleware, GZipResponder, IdentityResponder
from starlette.responses import RedirectResponse
from starlette.routing import BaseRoute, Match, Mount, Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from attnviz.settings import Settings
from attnviz.wire.encoding import negotiate

log = logging.getLogger(__name__)


async def send_error(
    send: Send, status: int, message: str, headers: dict[str, str] | None = None
) -> None:
    """A JSON error in the API's own shape: ``{"message": ..., "detail": []}``."""
    body = json.dumps({"message": message, "detail": []}).encode()
    raw = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((k.lower().encode(), v.encode()) for k, v in (headers or {}).items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """413 for a body over ``max_bytes``: at once when its Content-Length says so, else as soon
    as that many bytes have arrived. The body is read here, at most ``max_bytes`` of it, and
    handed on.

    A body may carry images as data URLs (a trace's ``images``): those may add up to
    ``image_bytes`` more (the server's ``max_images`` data URLs of ATTNVIZ_MAX_IMAGE_BYTES
    each), while the rest of it still keeps to ``max_bytes``. Such a body is read up to the
    larger cap; once read, its data URLs are measured (``image_chars``), and a body whose rest
    is over ``max_bytes`` (a large text with no image) gets the same 413 as before."""

    def __init__(self, app: ASGIApp, max_bytes: int, image_bytes: int = 0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.image_bytes = image_bytes

    def _too_large(self, whole: bool = False) -> str:
        text = f"body: larger than this server's cap of {self.max_bytes:,} bytes"
        if whole and self.image_bytes:
            text += f" ({self.max_bytes + self.image_bytes:,} with images as data URLs)"
        return text

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        cap = self.max_bytes + self.image_bytes
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await send_error(send, 400, "Content-Length: not a number")
                return
            if declared > cap:
                await send_error(send, 413, self._too_large(True), {"Connection": "close"})
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > cap:
                await send_error(send, 413, self._too_large(True), {"Connection": "close"})
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if size > self.max_bytes and size - image_chars(body) > self.max_bytes:
            await send_error(send, 413, self._too_large(), {"Connection": "close"})
            return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


# An image's data URL as a JSON string: what may take a body past max_bytes (BodyLimit).
_DATA_URL = re.compile(rb'"data:image/[A-Za-z0-9.+-]{1,40};base64,[A-Za-z0-9+/]*={0,2}"')


def image_chars(body: bytes) -> int:
    """The bytes of ``body`` that are images' data URLs (each a whole JSON string)."""
    return sum(m.end() - m.start() for m in _DATA_URL.finditer(body))


class TimeLimit:
    """A request until it starts answering (its body, its wait, its computation) within
    ``seconds``; past it a 503. A response once started is not cut (an event stream goes on).
    The computation itself cannot be stopped mid-way (its inputs are capped, which bounds it);
    the client is answered and its result dropped."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        limit: asyncio.Timeout | None = None

        async def tracked(message: Message) -> None:
            nonlocal started
            if not started and limit is not None:
                limit.reschedule(None)  # answering: a stream (server-sent events) may go on
            started = True
            await send(message)

        try:
            async with asyncio.timeout(self.seconds) as limit:
                await self.app(scope, receive, tracked)
        except TimeoutError:
            log.warning("%s %s: over the time limit", scope["method"], scope["path"])
            if not started:
                retry = str(max(1, math.ceil(self.seconds / 10)))
                await send_error(
                    send,
                    503,
                    f"busy: the request took longer than this server's limit of {self.seconds:g} s;"
                    " try again later",
                    {"Retry-After": retry},
                )


class HeadAsGet:
    """HEAD wherever GET works: the GET response's status and headers, without its body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if not message.get("more_body", False):
                    await send({"type": "http.response.body", "body": b""})
                return
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.S | re.I)


def content_security_policy(settings: Settings, hashes: Sequence[str] = ()) -> str:
    """The policy of every response: everything from this origin only; no inline script but the
    exact ones listed by hash (the page's import map, the API docs' start-up), no eval. Inline
    styles are allowed: Plotly and the docs' renderers set them."""
    scripts = " ".join(["'self'", *(f"'{h}'" for h in hashes)])
    return "; ".join(
        [
            "default-src 'self'",
            f"script-src {scripts}",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data: blob:",
            "font-src 'self' data:",
            "connect-src 'self'",
            "worker-src 'self' blob:",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            f"frame-ancestors {settings.frame_ancestors}",
        ]
    )


def script_hashes(html: bytes) -> list[str]:
    """The CSP hashes (``sha256-...``) of the inline scripts of a page."""
    return [
        "sha256-" + base64.b64encode(hashlib.sha256(m.group(1)).digest()).decode()
        for m in _INLINE_SCRIPT.finditer(html)
    ]


class SecurityHeaders:
    """Content-Security-Policy, nosniff, Referrer-Policy and friends on every response. An HTML
    page is held until its end so that its inline scripts (which the server wrote) can be
    allowed by hash."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.default_csp = content_security_policy(settings)
        self.fixed = [
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"),
            (b"cross-origin-opener-policy", b"same-origin"),
            (b"cross-origin-resource-policy", b"same-origin"),
            (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        held: list[bytes] = []

        async def secured(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                if headers.get(b"content-type", b"").startswith(b"text/html"):
                    start = message  # sent with the body, once its scripts are known
                    return
                await send(self._with_headers(message, self.default_csp))
                return
            if start is None:
                await send(message)
                return
            held.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            html = b"".join(held)
            csp = content_security_policy(self.settings, script_hashes(html))
            await send(self._with_headers(start, csp))
            await send({"type": "http.response.body", "body": html})

        await self.app(scope, receive, secured)

    def _with_headers(self, message: Message, csp: str) -> Message:
        headers = [
            (k, v) for k, v in message.get("headers", []) if k.lower() != b"content-security-policy"
        ]
        headers.append((b"content-security-policy", csp.encode()))
        names = {k.lower() for k, _ in headers}
        headers.extend((k, v) for k, v in self.fixed if k not in names)
        return {**message, "headers": headers}


class GZip(GZipMiddleware):
    """Starlette's gzip for the answers nothing compressed before (the page, the small JSON
    ones), sent to a client whose Accept-Encoding weighs gzip above 0, as
    ``attnviz.wire.encoding.negotiate`` reads it for every answer (starlette's own looks for
    the word, and sent gzip to ``gzip;q=0``)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        accept = Headers(scope=scope).get("accept-encoding", "")
        responder: ASGIApp
        if negotiate(accept, ("gzip",)) == "gzip":
            responder = GZipResponder(
                self.app,
                self.minimum_size,
                compresslevel=self.compresslevel,
                thread_minimum_size=self.thread_minimum_size,
                exclude_content_types=self.exclude_content_types,
            )
        else:
            responder = IdentityResponder(
                self.app, self.minimum_size, exclude_content_types=self.exclude_content_types
            )
        await responder(scope, receive, send)


class TrustedProxies(ProxyHeadersMiddleware):
    """``X-Forwarded-For`` and ``X-Forwarded-Proto`` read only from a client in ``allowed``
    (``ATTNVIZ_FORWARDED_ALLOW_IPS``: addresses and networks separated by commas, ``*`` for
    any): the client is then the address the proxy names (turns are per client) and the scheme
    the proxy's (a visitor's cookie is ``Secure`` behind an HTTPS proxy). From anyone else both
    headers are ignored. Uvicorn's own middleware, applied by the app itself, so that the rule
    holds however the app is served."""

    def __init__(self, app: ASGIApp, allowed: str) -> None:
        # uvicorn types an ASGI app its own way (its scopes' TypedDicts): the same callable.
        super().__init__(app, trusted_hosts=allowed)  # type: ignore[arg-type]


# The methods a route may take besides HEAD (answered wherever GET is: HeadAsGet) and OPTIONS
# (answered for every path a route takes: Methods), in the order Allow lists them.
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def _probe(scope: Scope, path: str, method: str) -> Scope:
    """A scope of its own for asking the routes whether they take ``method`` at ``path``
    (matching writes into the scope it is given)."""
    return {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": scope.get("root_path", ""),
        "headers": list(scope.get("headers", [])),
        "query_string": b"",
        "path_params": {},
    }


def allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> list[str]:
    """Every method some route takes at the request's path, as ``Allow`` lists them (HEAD with
    GET, OPTIONS with any); empty where no route takes the path. A mount (the static files)
    takes GET."""
    taken: set[str] = set()
    for method in _METHODS:
        probe = _probe(scope, scope["path"], method)
        for route in routes:
            match, _ = route.matches(dict(probe))
            if match is Match.FULL and (method == "GET" or not isinstance(route, Mount)):
                taken.add(method)
                break
    if not taken:
        return []
    if "GET" in taken:
        taken.add("HEAD")
    order = ("GET", "HEAD", *_METHODS[1:], "OPTIONS")
    return [m for m in order if m in taken or m == "OPTIONS"]


class Methods:
    """``OPTIONS`` answered with every method the path takes (204, ``Allow: GET, HEAD, POST,
    OPTIONS``), and a 405's ``Allow`` made as truthful: the router's names the methods of the
    first route it met at that path, not those of the others beside it (``/api/train`` takes
    GET and POST, ``/api/train/{id}`` GET, PATCH and DELETE, from several routes each). A path
    no route takes goes on to its 404."""

    def __init__(self, app: ASGIApp, router: Router) -> None:
        self.app = app
        self.router = router

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS":
            allow = allowed_methods(self.router.routes, scope)
            if allow:
                headers = [(b"allow", ", ".join(allow).encode())]
                await send({"type": "http.response.start", "status": 204, "headers": headers})
                await send({"type": "http.response.body", "body": b""})
                return

        asked = dict(scope)  # its path as asked: a mount's routing changes the scope's

        async def truthful(message: Message) -> None:
            refused = message["type"] == "http.response.start" and message["status"] == 405
            allow = allowed_methods(self.router.routes, asked) if refused else []
            if allow:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"allow"]
                message = {**message, "headers": [*headers, (b"allow", ", ".join(allow).encode())]}
            await send(message)

        await self.app(scope, receive, truthful)


class SlashRedirect:
    """The router's answer to a path no route takes (its ``default``): where a route takes the
    same path with its trailing slash, or without it, a 307 to that path, else the router's
    404. The redirect is relative (``Location: /api/train``): Starlette's own is absolute, its
    host the request's ``Host`` header, whatever a client put there. A path that would begin
    with ``//`` (another host, to a browser) is written ``/%2F...``."""

    def __init__(self, router: Router) -> None:
        self.router = router
        self.not_found = router.default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route_path = get_route_path(scope)
        if scope["type"] == "http" and route_path != "/":
            path = scope["path"]
            other = path.rstrip("/") if route_path.endswith("/") else path + "/"
            probe = _probe(scope, other, scope["method"])
            routes = self.router.routes
            if other and any(r.matches(dict(probe))[0] is not Match.NONE for r in routes):
                # No host and no server: URL writes the path alone, escaped.
                where = {**probe, "headers": [], "query_string": scope.get("query_string", b"")}
                await RedirectResponse(str(URL(scope=where)))(scope, receive, send)
                return
        await self.not_found(scope, receive, send)
