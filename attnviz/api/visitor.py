"""Each visitor's identity, without accounts: a random id (128 bits) signed with the server's
secret (itsdangerous), kept in a cookie that is HttpOnly, SameSite=Strict, and Secure when the
request came over HTTPS (its scheme: ``X-Forwarded-Proto: https`` counts from an allowed proxy
only, which ``middleware.TrustedProxies`` has read into it).

The same signed value, sent as ``Authorization: Bearer <it>``, is that visitor too (an API
client that keeps no cookie; ``POST /api/train`` answers it as ``token``). The operator's token
(``ATTNVIZ_ADMIN_TOKEN``) as the bearer makes the caller the operator. A cookie or token whose
signature does not hold is no one's: the request is a new visitor's (a new cookie is set), never
an error. The caller (``services.ownership.Caller``) is left in the request's state, where
``api.deps.CallerDep`` reads it."""

from __future__ import annotations

import hmac
import secrets

from itsdangerous import BadSignature, Signer
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from attnviz.services.ownership import Caller

COOKIE = "attnviz_visitor"
MAX_AGE_S = 400 * 24 * 3600  # the longest a browser keeps a cookie (Chrome's cap)
SALT = "attnviz.visitor"
STATE_KEY = "caller"


class Visitors:
    """Plain ASGI middleware: reads the caller, and sets the cookie of a new visitor."""

    def __init__(self, app: ASGIApp, secret: bytes, admin_token: str | None = None) -> None:
        self.app = app
        self.signer = Signer(secret, salt=SALT)
        self.admin = admin_token.encode() if admin_token else None

    def sign(self, visitor: str) -> str:
        return self.signer.sign(visitor).decode("ascii")

    def visitor_of(self, value: str | None) -> str | None:
        """The visitor a signed value names, or None (absent, forged or tampered)."""
        if not value:
            return None
        try:
            visitor = self.signer.unsign(value).decode("ascii")
        except (BadSignature, UnicodeError):
            return None
        return visitor or None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        bearer = ""
        scheme, _, credentials = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            bearer = credentials.strip()
        operator = self.admin is not None and hmac.compare_digest(
            bearer.encode("utf-8", "replace"), self.admin
        )
        token_visitor = None if operator else self.visitor_of(bearer)
        cookie = cookie_parser(headers.get("cookie", "")).get(COOKIE)
        visitor = token_visitor or self.visitor_of(cookie)
        new = visitor is None
        if visitor is None:
            visitor = secrets.token_urlsafe(16)  # 128 bits
        token = self.sign(visitor)
        client = scope.get("client")  # TrustedProxies has put a trusted proxy's client there
        address = str(client[0]) if client else ""
        scope.setdefault("state", {})[STATE_KEY] = Caller(visitor, operator, token, new, address)
        # A cross-site navigation comes without its SameSite=Strict cookie: the visitor may well
        # have one, so none is set over it (the page's own requests, same-site, then carry it).
        # Nor on the static files (public, immutable), which caches may keep and hand on.
        keep = (
            not new
            or headers.get("sec-fetch-site") == "cross-site"
            or scope.get("path", "").startswith("/static/")
        )
        if keep:
            await self.app(scope, receive, send)
            return
        secure = scope.get("scheme") == "https"
        attributes = f"{COOKIE}={token}; Path=/; Max-Age={MAX_AGE_S}; HttpOnly; SameSite=Strict"
        if secure:
            attributes += "; Secure"

        async def with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                raw.append((b"set-cookie", attributes.encode("latin-1")))
                message = {**message, "headers": raw}
            await send(message)

        await self.app(scope, receive, with_cookie)
