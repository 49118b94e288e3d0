"""Trust at the edges of a hosted server, over real HTTP: no redirect reflects the Host header,
a proxy's X-Forwarded-* counts from the allowed proxies only, OPTIONS and a 405's Allow list
every method a path takes, a refusal of a trace body says what to send, and attnviz.Client
says when nothing answers."""

from __future__ import annotations

import re
import socket
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi import FastAPI, Request

import attnviz
from attnviz.api.middleware import TrustedProxies
from attnviz.app import create_app
from attnviz.settings import Settings
from tests.support.servers import served

TOY = {"tokens": ["apple", "banana"], "embeddings": [[1.0, 0.0], [0.5, 0.5]]}


@pytest.fixture(scope="module")
def url():
    with served(create_app(Settings(device="cpu", builtin_model=False))) as base:
        yield base


def raw(url: str, request: bytes) -> tuple[int, dict[str, str]]:
    """Send ``request`` (request line and headers) as it is; the status and headers back."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as s:
        s.sendall(request)
        got = b""
        while b"\r\n\r\n" not in got and (chunk := s.recv(65536)):
            got += chunk
    head = got.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in head[1:])
    return int(head[0].split()[1]), {k.lower(): v for k, v in headers.items()}


# -- redirects ----------------------------------------------------------------------------------


def test_the_trailing_slash_redirect_is_relative_whatever_the_host_header(url):
    for host in (b"evil.example", b"evil.example:8443", b"127.0.0.1"):
        status, headers = raw(url, b"GET /api/train/?a=1&b=2 HTTP/1.1\r\nHost: " + host
                              + b"\r\nConnection: close\r\n\r\n")  # fmt: skip
        assert status == 307
        assert headers["location"] == "/api/train?a=1&b=2"
    # And where the route has no slash, the same the other way round; followed, it answers.
    r = httpx.get(
        f"{url}/api/models/", headers={"Host": "evil.example"}, follow_redirects=False, timeout=60
    )
    assert r.status_code == 307 and r.headers["location"] == "/api/models"
    assert httpx.get(f"{url}/api/train/", follow_redirects=True, timeout=60).status_code == 200
    # A path no route takes, with or without the slash, is a plain 404.
    status, headers = raw(
        url, b"GET //evil.example/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    assert status == 404 and "location" not in headers


# -- proxies ------------------------------------------------------------------------------------


def secure_cookie(base: str, headers: dict[str, str]) -> bool:
    r = httpx.get(f"{base}/healthz", headers=headers, timeout=60)
    cookie = r.headers["set-cookie"]
    return "secure" in [a.strip().lower() for a in cookie.split(";")]


def test_x_forwarded_proto_counts_from_an_allowed_proxy_only():
    https = {"X-Forwarded-Proto": "https"}
    # Loopback is not among the allowed proxies: the header is anyone's, and ignored.
    with served(
        create_app(Settings(device="cpu", builtin_model=False, forwarded_allow_ips="192.0.2.7"))
    ) as base:
        assert not secure_cookie(base, https)
    # Loopback is the proxy (the default): its word counts.
    with served(create_app(Settings(device="cpu", builtin_model=False))) as base:
        assert secure_cookie(base, https)
        assert not secure_cookie(base, {})


def test_x_forwarded_for_names_the_client_only_from_an_allowed_proxy():
    def seen(request: Request) -> dict:
        client = request.client.host if request.client else ""
        return {"client": client, "scheme": request.url.scheme}

    forwarded = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"}
    for allowed, expected in (("192.0.2.7, 10.0.0.0/8", "127.0.0.1"), ("127.0.0.1", "203.0.113.9")):
        app = FastAPI()
        app.get("/seen")(seen)
        app.add_middleware(TrustedProxies, allowed=allowed)
        with served(app) as base:
            got = httpx.get(f"{base}/seen", headers=forwarded, timeout=60).json()
        assert got == {
            "client": expected,
            "scheme": "https" if expected != "127.0.0.1" else "http",
        }, allowed


# -- methods ------------------------------------------------------------------------------------


def allow(response: httpx.Response) -> list[str]:
    return [m.strip() for m in response.headers["allow"].split(",")]


def template(path: str) -> re.Pattern[str]:
    """An OpenAPI path as a pattern: each ``{parameter}`` one segment."""
    return re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "$")


@pytest.mark.slow
def test_options_lists_every_method_a_path_takes(url):
    spec = httpx.get(f"{url}/openapi.json", timeout=60).json()["paths"]
    assert len(spec) > 10
    # Each path of the spec as a pattern: /api/train/options is also /api/train/{run_id}.
    patterns = {p: template(p) for p in spec}
    for path in spec:
        concrete = re.sub(r"\{[^}]+\}", "x1", path)
        methods = {m.upper() for p, ops in spec.items() if patterns[p].match(concrete) for m in ops}
        expected = methods | {"OPTIONS"} | ({"HEAD"} if "GET" in methods else set())
        r = httpx.options(f"{url}{concrete}", timeout=60)
        assert r.status_code == 204, path
        assert set(allow(r)) == expected, path
    # The paths of the issue, in Allow's order.
    assert allow(httpx.options(f"{url}/api/train", timeout=60)) == [
        "GET",
        "HEAD",
        "POST",
        "OPTIONS",
    ]
    r = httpx.options(f"{url}/api/train/abc", timeout=60)
    assert allow(r) == ["GET", "HEAD", "PATCH", "DELETE", "OPTIONS"]
    assert r.headers["x-content-type-options"] == "nosniff"  # the security headers too
    assert allow(httpx.options(f"{url}/", timeout=60)) == ["GET", "HEAD", "OPTIONS"]
    # A path nothing takes is still a 404.
    assert httpx.options(f"{url}/api/nothing", timeout=60).status_code == 404


def test_a_405_names_every_method_the_path_takes(url):
    r = httpx.put(f"{url}/api/train", json={}, timeout=60)
    assert r.status_code == 405
    assert allow(r) == ["GET", "HEAD", "POST", "OPTIONS"]
    r = httpx.post(f"{url}/api/train/abc", json={}, timeout=60)
    assert r.status_code == 405 and allow(r) == ["GET", "HEAD", "PATCH", "DELETE", "OPTIONS"]
    assert allow(httpx.get(f"{url}/api/trace", timeout=60)) == ["POST", "OPTIONS"]
    # A static file (a mount's, which routes the request on): read only.
    static = re.search(r'"(/static/[^"]+)"', httpx.get(f"{url}/", timeout=60).text)
    assert static is not None
    r = httpx.post(f"{url}{static.group(1)}", timeout=60)
    assert r.status_code == 405 and allow(r) == ["GET", "HEAD", "OPTIONS"]


# -- numbers and the trace body -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("/api/trace", {**TOY, "config": {"seed": False}},
         "config.seed: Input should be a valid integer, not false"),
        ("/api/trace", {**TOY, "config": {"layers": True}},
         "config.layers: Input should be a valid integer, not true"),
        ("/api/trace", {**TOY, "embeddings": [[True, 0.0], [0.5, 0.5]]},
         "embeddings[0][0]: Input should be a valid number, not true"),
        ("/api/train", {"opt": {"seed": False}},
         "opt.seed: Input should be a valid integer, not false"),
        ("/api/train", {"opt": {"lr": True}}, "opt.lr: Input should be a valid number, not true"),
        ("/api/recurrent", {"seed": True}, "seed: Input should be a valid integer, not true"),
        ("/api/export", {"trace": TOY, "selection": {"head": False}},
         "selection.head: Input should be a valid integer, not false"),
    ],
)  # fmt: skip
def test_a_boolean_is_no_number(url, path, body, message):
    r = httpx.post(f"{url}{path}", json=body, timeout=60)
    assert r.status_code == 422, r.text
    assert r.json()["message"] == message


def test_a_number_is_still_a_number(url):
    r = httpx.post(f"{url}/api/trace", json={**TOY, "config": {"seed": 3, "layers": 1}}, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["embeddings"] == [[1.0, 0.0], [0.5, 0.5]]
    r = httpx.post(f"{url}/api/trace", json={**TOY, "embeddings": [[1, 0], [2, 3]]}, timeout=60)
    assert r.status_code == 200 and r.json()["embeddings"] == [[1.0, 0.0], [2.0, 3.0]]


def test_a_trace_body_of_neither_kind_says_what_is_needed(url):
    for body in ({"seed": False}, {}, {"config": {"layers": 1}}):
        r = httpx.post(f"{url}/api/trace", json=body, timeout=60)
        assert r.status_code == 422
        assert r.json()["message"] == (
            'body: one of "model" or "tokens" is needed: "model" (with "text") for a pretrained '
            'model, "tokens" (with "embeddings") for a toy table'
        )
    r = httpx.post(f"{url}/api/export", json={"trace": {"layer": 0}}, timeout=60)
    assert r.status_code == 422
    assert r.json()["message"].startswith('trace: one of "model" or "tokens" is needed')
    # One kind's missing field is still named as such.
    r = httpx.post(f"{url}/api/trace", json={"embeddings": TOY["embeddings"]}, timeout=60)
    assert r.json()["message"] == "tokens: Field required"


def test_a_query_parameter_in_the_body_is_said_to_be_one(url):
    for body in ({"model": "x", "text": "a b", "layer": 0}, {**TOY, "head": 1}):
        r = httpx.post(f"{url}/api/trace?layer=0", json=body, timeout=60)
        assert r.status_code == 422
        name = next(k for k in ("layer", "head") if k in body)
        assert r.json()["message"] == (
            f"{name}: a query parameter, not a body field: send it in the URL "
            f"(POST /api/trace?{name}=...)"
        )
        assert r.json()["detail"][0]["loc"] == ["body", name]
    # A field no request has is refused as before.
    r = httpx.post(f"{url}/api/trace", json={**TOY, "colour": 1}, timeout=60)
    assert r.json()["message"] == "colour: Extra inputs are not permitted"


# -- the Python client --------------------------------------------------------------------------


def test_the_client_says_nothing_answers_at_a_url():
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    with pytest.raises(ConnectionError) as err:
        attnviz.Client(base).models()
    assert str(err.value).startswith(f"{base}: nothing answers there (")
    assert "URLError" not in str(err.value) and "Errno" not in str(err.value)
    with pytest.raises(ConnectionError, match=r"^http://127\.0\.0\.1:\d+: nothing answers"):
        attnviz.Client(base).trace(model="x", text="a b")


def test_the_client_still_reaches_a_server_that_answers(url):
    assert (
        attnviz.Client(url).models() == httpx.get(f"{url}/api/models", timeout=60).json()["models"]
    )
    with pytest.raises(attnviz.TraceError, match="^404: "):  # a refusal is the server's word
        attnviz.Client(url).trace(model="no-such-model", text="a b")
