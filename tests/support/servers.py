"""Real servers for tests that need real HTTP: the app under uvicorn on a free loopback port."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from tests.support.waits import until


@contextmanager
def served(app: FastAPI) -> Iterator[str]:
    """``app`` served by uvicorn in a background thread; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # The app reads a proxy's X-Forwarded-* itself, from ATTNVIZ_FORWARDED_ALLOW_IPS alone
    # (api.middleware.TrustedProxies): uvicorn's own reading, which trusts 127.0.0.1, is off.
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", proxy_headers=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    until(lambda: server.started or not thread.is_alive(), bool, "uvicorn's start")
    if not server.started:
        raise RuntimeError("uvicorn did not start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def wait_healthy(base: str, proc: subprocess.Popen, why: Callable[[], str] = lambda: "") -> None:
    """Wait until ``base``/healthz answers 200; an AssertionError with ``why()`` appended when
    ``proc`` exits first or never answers (a hang: ``until``'s looks all spent)."""

    def answers() -> bool:
        try:
            return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        up = until(answers, lambda up: up or proc.poll() is not None, f"{base}/healthz", 0.1)
    except pytest.fail.Exception as hang:
        raise AssertionError(f"{hang}\n{why()}") from None
    if not up:
        raise AssertionError(f"{base}: the server exited ({proc.returncode})\n{why()}")
