"""What a public host relies on, over real HTTP: bodies capped before they are read, bounded
work answered with 503 and Retry-After, a time limit, security headers, HEAD, no paths."""

from __future__ import annotations

import json
import re
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from attnviz.api.middleware import script_hashes
from attnviz.app import create_app
from attnviz.limits import LIMITS
from attnviz.pretrained.registry import BUILTIN_NAME
from attnviz.settings import Settings
from tests.support.servers import served

WORDS = "the cat sat on the mat while a river bank kept its money safe and sound".split()


def long_text(tokens: int, salt: int) -> str:
    """A text of about ``tokens`` MiniLM tokens, different for every ``salt``."""
    words = [WORDS[(i * 7 + salt) % len(WORDS)] for i in range(tokens - 3)]
    return f"{salt} " + " ".join(words)


def raw_http(url: str, head: bytes, wait_s: float = 5.0) -> bytes:
    """Send ``head`` (request line and headers, no body) and read what comes back."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=wait_s) as s:
        s.sendall(head)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except TimeoutError:
            pass
        return out


@pytest.fixture(scope="module")
def capped(minilm_dir):
    """A server with a 4 KiB body cap, one waiting request at most and a short wait."""
    app = create_app(
        Settings(device="cpu", max_body_bytes=4096, max_queue=1, max_wait_s=0.3, trace_cache_mb=64)
    )
    with served(app) as url:
        yield url


def test_a_declared_large_body_gets_413_before_it_is_sent(capped):
    head = (
        b"POST /api/trace HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100000000\r\n\r\n"
    )
    reply = raw_http(capped, head)  # no byte of the body is ever sent
    # Answered without waiting for the 100 MB: the whole answer came, ended by the server.
    assert reply.endswith(b"}"), reply
    status, _, rest = reply.partition(b"\r\n")
    assert status == b"HTTP/1.1 413 Request Entity Too Large"
    body = json.loads(rest.split(b"\r\n\r\n", 1)[1])
    # Over the cap with images too (their data URLs may add to it: see tests/api/test_images.py).
    assert body["message"].startswith("body: larger than this server's cap of 4,096 bytes (")


def test_a_streamed_large_body_gets_413(capped):
    def chunks():
        for _ in range(100):
            yield b'{"text": "' + b"a" * 1000

    r = httpx.post(f"{capped}/api/trace", content=chunks(), timeout=10)
    assert r.status_code == 413
    assert "cap of 4,096 bytes" in r.json()["message"]


def test_a_body_under_the_cap_goes_through(capped):
    r = httpx.post(
        f"{capped}/api/trace", json={"model": BUILTIN_NAME, "text": "a" * 3000}, timeout=60
    )
    assert r.status_code == 200


def test_the_largest_valid_toy_request_fits_the_default_cap():
    """Every rule of the toy request at its limit, every number at its longest JSON form."""
    n = d = LIMITS.max_tokens
    assert LIMITS.max_dim == d
    longest = -999.9999999999999  # 18 characters, within max_abs_value
    assert len(json.dumps(longest)) >= len(json.dumps(-LIMITS.max_abs_value + 1e-13))
    matrix = [[longest] * d for _ in range(d)]
    body = {
        "tokens": ["\u00e9" * LIMITS.max_token_chars] * n,  # 2 bytes each in UTF-8
        "axes": ["x" * LIMITS.max_token_chars] * d,
        "embeddings": matrix,
        "config": {
            "layers": LIMITS.max_layers,
            "heads": LIMITS.max_heads,
            "projections": "custom",
            "weights": {"q": matrix, "k": matrix, "v": matrix, "o": matrix},
        },
    }
    raw = json.dumps(body, ensure_ascii=False).encode()
    cap = Settings().max_body_bytes
    assert len(raw) < cap, f"{len(raw):,} bytes over the default cap of {cap:,}"
    # ... and below the server's other rules (a valid request, not a 422).
    from attnviz.schemas.trace import ToyTraceRequest

    ToyTraceRequest.model_validate_json(raw)


@pytest.mark.slow
def test_a_crowd_gets_503_with_retry_after_at_once(capped):
    """One computing, one waiting, the rest refused at once, each with a message."""

    def ask(i: int) -> tuple[int, str | None, dict]:
        r = httpx.post(
            f"{capped}/api/trace?fields=entropy_mean",
            json={"model": BUILTIN_NAME, "text": long_text(500, i)},
            timeout=60,
        )
        return r.status_code, r.headers.get("retry-after"), r.json()

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(ask, range(8)))
    statuses = sorted(s for s, *_ in results)
    assert statuses.count(200) >= 1 and statuses.count(503) >= 1, statuses
    assert set(statuses) <= {200, 503}
    for status, retry, body in results:
        if status == 503:
            assert retry is not None and int(retry) >= 1
            # Refused at once (past the one waiting place, or an expected wait past the bound),
            # or after its 0.3 s turn: never after waiting for the computations ahead of it.
            assert re.match(
                r"busy: (\d+ requests are waiting|the expected wait is [\d.]+ s"
                r"|waited 0\.3 s for a turn); try again in \d+ s$",
                body["message"],
            ), body["message"]


@pytest.mark.slow
def test_a_cached_trace_is_served_while_misses_are_refused(capped):
    cached = {"model": BUILTIN_NAME, "text": long_text(500, 1000)}
    assert (
        httpx.post(f"{capped}/api/trace?fields=entropy_mean", json=cached, timeout=60).status_code
        == 200
    )

    def miss(i: int) -> int:
        body = {"model": BUILTIN_NAME, "text": long_text(500, 2000 + i)}
        return httpx.post(f"{capped}/api/trace?fields=entropy_mean", json=body, timeout=60)

    with ThreadPoolExecutor(7) as pool:
        misses = [pool.submit(miss, i) for i in range(6)]
        time.sleep(0.05)
        hit = pool.submit(
            httpx.post, f"{capped}/api/trace?fields=entropy_mean&layer=1", json=cached, timeout=60
        )
        assert hit.result().status_code == 200
        codes = sorted(m.result().status_code for m in misses)
    assert 503 in codes, codes


def test_a_request_over_the_time_limit_is_refused_before_or_gets_503(minilm_dir):
    app = create_app(Settings(device="cpu", request_timeout_s=0.05, trace_cache_mb=0))
    body = {"model": BUILTIN_NAME, "text": long_text(500, 1)}
    with served(app) as url:
        # Expected past the limit: refused before any work, with the estimate and the header
        # that asks for a job.
        r = httpx.post(f"{url}/api/trace", json=body, timeout=30)
        assert r.status_code == 422, r.text
        assert "Prefer: respond-async" in r.json()["message"]
        assert "limit of 0.05 s" in r.json()["message"]
        # Expected within it (a pace the server believes far faster) but past it as it runs:
        # cut off with 503 and Retry-After.
        app.state.trace_jobs.pace = 1e15
        app.state.trace_jobs.answer_pace = dict.fromkeys(app.state.trace_jobs.answer_pace, 1e15)
        r = httpx.post(f"{url}/api/trace", json=body, timeout=30)
        assert r.status_code == 503, r.text
        assert int(r.headers["retry-after"]) >= 1
        assert "limit of 0.05 s" in r.json()["message"]
        assert httpx.get(f"{url}/healthz", timeout=60).status_code == 200  # and the server goes on


# -- headers ----------------------------------------------------------------------------------


def csp(response) -> dict[str, str]:
    policy = response.headers["content-security-policy"]
    return {d.split()[0]: d.partition(" ")[2] for d in policy.split("; ")}


def test_every_response_has_the_security_headers(client):
    for path in ("/", "/api/models", "/healthz", "/openapi.json", "/api/nothing"):
        r = client.get(path)
        assert r.headers["x-content-type-options"] == "nosniff", path
        assert r.headers["referrer-policy"] == "no-referrer", path
        policy = csp(r)
        assert policy["default-src"] == "'self'"
        assert policy["connect-src"] == "'self'"
        assert policy["frame-ancestors"] == "'none'"
        assert policy["object-src"] == "'none'"
        assert "unsafe-inline" not in policy["script-src"]
        assert "unsafe-eval" not in policy["script-src"]


def test_the_page_allows_exactly_its_own_inline_script(client):
    r = client.get("/")
    hashes = script_hashes(r.content)
    assert len(hashes) == 1  # the import map
    assert csp(r)["script-src"] == f"'self' '{hashes[0]}'"
    for page in ("/docs", "/redoc"):
        r = client.get(page)
        allowed = csp(r)["script-src"].split()
        assert allowed == ["'self'", *(f"'{h}'" for h in script_hashes(r.content))]


def test_frame_ancestors_is_a_setting(minilm_dir):
    app = create_app(Settings(device="cpu", frame_ancestors="'self' https://school.example"))
    with TestClient(app) as c:
        assert csp(c.get("/"))["frame-ancestors"] == "'self' https://school.example"


def test_head_works_wherever_get_does(client, app):
    spec = client.get("/openapi.json").json()["paths"]
    paths = [p for p, ops in spec.items() if "get" in ops and "{" not in p]
    paths += [r.path for r in app.routes if isinstance(r, APIRoute) and "GET" in r.methods]
    page = client.get("/").text
    static = page.split('href="')[1].split('"')[0]  # the favicon, a content-hashed URL
    paths += ["/openapi.json", static]
    assert "/api/models" in paths and "/healthz" in paths
    assert "/" in paths and "/docs" in paths
    for path in paths:
        got, head = client.get(path), client.head(path)
        # The class view answers its operator only (403 here, to HEAD as to GET).
        ok = 403 if path == "/api/learn/class" else 200
        assert head.status_code == got.status_code == ok, path
        assert head.content == b"", path
        assert head.headers["content-type"] == got.headers["content-type"], path


def test_errors_are_json_with_a_message_and_no_paths(client, tiny_gpt2_dir):
    cases = [
        client.get("/api/nothing"),
        client.delete("/api/models"),
        client.post("/api/trace", content=b"{", headers={"content-type": "application/json"}),
        client.post("/api/trace", json={"model": "none", "text": "a"}),
        client.post("/api/trace", json={"model": BUILTIN_NAME, "text": " "}),
        client.post("/api/trace", json={"model": BUILTIN_NAME, "text": ""}),
    ]
    for r in cases:
        assert 400 <= r.status_code < 500
        body = r.json()
        assert isinstance(body["message"], str) and body["message"], r.request.url
        assert str(tiny_gpt2_dir.parent) not in r.text and "Traceback" not in r.text
    assert cases[4].json()["message"] == "text: must not be empty"
    assert cases[5].json()["message"].startswith("text: ")


def test_openapi_states_the_text_rules(client):
    schema = client.get("/openapi.json").json()["components"]["schemas"]["TextTraceRequest"]
    text = schema["properties"]["text"]
    assert (text["minLength"], text["maxLength"], text["pattern"]) == (
        1,
        LIMITS.max_text_chars,
        r"\S",
    )
