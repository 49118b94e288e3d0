"""A large body is sent in slices of at most ``SLICE`` bytes, with the headers of the whole
(Content-Length), and arrives byte for byte; a small one as one message."""

from __future__ import annotations

import os

import pytest
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.routing import Route

from attnviz.api.responses import SLICE, SlicedResponse
from tests.support.aio import run

BIG = os.urandom(3 * SLICE + 12345)


def _messages(content: bytes | bytearray) -> list[dict]:
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    response = SlicedResponse(content, media_type="application/octet-stream")
    run(response(  # type: ignore[arg-type]
        {"type": "http", "method": "GET"}, receive, send))  # fmt: skip
    return sent


@pytest.mark.parametrize("content", [BIG, bytearray(BIG)])
def test_a_large_body_goes_in_slices_with_the_whole_length(content):
    sent = _messages(content)
    start, *bodies = sent
    headers = dict(start["headers"])
    assert headers[b"content-length"] == str(len(BIG)).encode()
    assert all(len(m["body"]) <= SLICE for m in bodies)
    assert len(bodies) == 5  # four slices, then the end
    assert [m.get("more_body", False) for m in bodies] == [True] * 4 + [False]
    assert b"".join(m["body"] for m in bodies) == BIG


def test_a_small_body_is_one_message():
    sent = _messages(b"{}")
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[1]["body"] == b"{}"


def test_over_http_it_arrives_whole():
    app = Starlette(routes=[Route("/big", lambda _r: SlicedResponse(bytearray(BIG)))])
    response = TestClient(app).get("/big")
    assert response.headers["content-length"] == str(len(BIG))
    assert response.content == BIG


def test_a_body_of_pieces_goes_piece_by_piece_none_over_a_slice():
    pieces = [b"{", BIG, b",", BIG[:100], bytes(SLICE), b"}"]
    whole = b"".join(pieces)
    sent = _messages(pieces)  # type: ignore[arg-type]
    start, *bodies = sent
    assert dict(start["headers"])[b"content-length"] == str(len(whole)).encode()
    assert all(len(m["body"]) <= SLICE for m in bodies)
    assert b"".join(m["body"] for m in bodies) == whole
    assert [m.get("more_body", False) for m in bodies][-1] is False
    # a piece within a slice is sent as it is, not copied
    assert any(m["body"] is pieces[3] for m in bodies)
    response = TestClient(Starlette(routes=[Route("/p", lambda _r: SlicedResponse(pieces))]))
    got = response.get("/p")
    assert got.headers["content-length"] == str(len(whole)) and got.content == whole
