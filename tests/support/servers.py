"""Real servers for tests that need real HTTP: the app under uvicorn on a free loopback port."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import uvicorn
from fastapi import FastAPI


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
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def wait_healthy(
    base: str, proc: subprocess.Popen, timeout_s: float, why: Callable[[], str] = lambda: ""
) -> None:
    """Wait until ``base``/healthz answers 200; an AssertionError with ``why()`` appended when
    ``proc`` exits first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise AssertionError(f"{base}: the server exited ({proc.returncode})\n{why()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{base}: no answer from /healthz within {timeout_s:g} s\n{why()}")
        time.sleep(0.1)
