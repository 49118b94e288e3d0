"""The connection to an NDIF deployment (nnsight's remote backend), its status as the page
says it, and its failures in plain words.

nnsight (``pip install attnviz[ndif]``) sends the trace's source, not its bytecode, so a
deployment on another Python runs it; the functions the trace calls (``block``,
``attnviz.engine.reduce``) are registered to travel by value, since the deployment has no
attnviz. Each status NDIF streams (received, queued, deploying, running) is told to the
request's listener (``attnviz.capture.progress.say``): a trace job's line on the page.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnviz.capture.progress import say
from attnviz.errors import RemoteError

log = logging.getLogger(__name__)

# NDIF's statuses, as the page's line says them.
STATUS_WORDS = {
    "RECEIVED": "NDIF received the request",
    "QUEUED": "Waiting in NDIF's queue",
    "PROVISIONING": "NDIF is finding room for the model",
    "DEPLOYING": "NDIF is loading the model",
    "DISPATCHED": "NDIF is starting the trace",
    "RUNNING": "NDIF is running the model",
    "COMPLETED": "NDIF is sending the result",
}


# NDIF refuses a request it has not taken while its API has lost its compute backend for a
# moment ("compute backend is reconnecting": its dispatcher reconnects to the cluster after an
# error, or a second API on the same queue has just started). Nothing of the request ran, so it
# is sent again, waiting twice as long each time, for up to ``RECONNECT_S`` in all.
RECONNECTING = re.compile(r"failed to send request.*\breconnecting\b", re.IGNORECASE | re.DOTALL)
RECONNECT_S = 60.0
RECONNECT_FIRST_S = 0.5
RECONNECT_WORDS = "NDIF is reconnecting to its compute backend; asking again"


@dataclass(frozen=True)
class Deployment:
    """Where NDIF is (``NDIF_HOST``, an http(s) URL) and the key it wants (``NDIF_API_KEY``;
    empty for a self-hosted deployment without keys)."""

    host: str
    api_key: str = ""

    def describe(self) -> str:
        return f"the NDIF deployment at {self.host}"


# How a host installs the NDIF client: for the server's log and a host's terminal (load_ndif's
# ModelFolderError at start), never in an answer a learner or an API client reads.
NDIF_INSTALL = "pip install 'attnviz[ndif]'"


def nnsight_module() -> Any:
    """nnsight, or a RemoteError (a 503) saying in words that this server lacks it, the command
    that installs it going to the server's log. Imported, nnsight mounts a ``save``
    method on every Python object; taken off again here (attnviz calls ``nnsight.save``), or
    every class defined after it that checks its attributes breaks (anyio's socket and stream
    attributes, imported lazily by the server's event loop: "Attribute 'save' is missing its
    type annotation")."""
    try:
        import nnsight
    except ImportError as exc:
        log.warning("the NDIF backend needs nnsight, which is not installed: %s", NDIF_INSTALL)
        raise RemoteError(
            "backend: this server cannot reach NDIF: the client NDIF needs is not installed "
            "here; its host can install it (the documentation's Models page, “Past one "
            "machine: NDIF”)",
            status=503,
        ) from exc
    global _UNMOUNTED
    if not _UNMOUNTED:
        try:
            from nnsight._c import unmount

            unmount("save")
        except ImportError:  # nnsight built without its C extension mounts nothing
            pass
        _UNMOUNTED = True
    return nnsight


_UNMOUNTED = False


_REGISTERED = False


def register() -> None:
    """Have nnsight send the trace's functions by value (their source): the deployment has no
    attnviz to import them from."""
    global _REGISTERED
    if _REGISTERED:
        return
    import cloudpickle

    import attnviz.engine.reduce as reduce
    import attnviz.pretrained.ndif.block as block

    for module in (reduce, block):
        cloudpickle.register_pickle_by_value(module)
    _REGISTERED = True


def said(message: str) -> str:
    """NDIF's own words in a message: without the traceback it may send after them, or, when it
    sends only a traceback (the trace failed there), the exception's line; at most 400
    characters."""
    lines = message.strip().splitlines()
    if lines and lines[0].startswith("Traceback"):
        tail = [ln for ln in lines[1:] if ln.strip() and not ln.startswith((" ", "Traceback"))]
        text = tail[0] if tail else lines[-1]
    else:
        text = message.strip().split("\nTraceback", 1)[0].strip()
    return text if len(text) <= 400 else text[:399] + "…"


def plain_words(message: str, where: Deployment, model: str) -> RemoteError:
    """A failure NDIF reported (or the connection's), as the person reads it, with the HTTP
    status attnviz answers it with."""
    text = said(message)
    low = text.lower()
    if re.search(r"api.?key|unauthori[sz]ed|forbidden|\b401\b|\b403\b", low):
        return RemoteError(
            f"model: {where.describe()} refused the key (NDIF_API_KEY): {text}", status=502
        )
    if re.search(r"queue (is )?full|too many requests|\b429\b|rate limit", low):
        return RemoteError(
            f"model: {where.describe()}'s queue is full; try again in a minute ({text})",
            status=503,
            retry_after=60,
        )
    if re.search(
        r"not (hosted|deployed|found)|no such model|does not exist|could not deploy|"
        r"repository not found|is not a valid model|cant_accommodate|can't accommodate|"
        r"does not appear to have a file|no model",
        low,
    ):
        return RemoteError(
            f"model: {where.describe()} does not host {model!r} ({text})", status=502
        )
    if re.search(
        r"connect|connection refused|name or service|timed out|unreachable|\b502\b|\b503\b|"
        r"\b504\b|unavailable",
        low,
    ):
        return RemoteError(
            f"model: {where.describe()} is down or unreachable ({text})", status=503,
            retry_after=30,
        )  # fmt: skip
    return RemoteError(f"model: {where.describe()} failed the trace: {text}", status=502)


def backend_for(model_key: str, where: Deployment) -> Any:
    """nnsight's remote backend for ``model_key`` at ``where``, telling each status it streams
    to the request's listener (``say``) and keeping the result it returns."""
    nnsight_module()
    from nnsight.intervention.backends.remote import RemoteBackend

    class Backend(RemoteBackend):  # type: ignore[misc]
        result: Any = None

        def note(self, response: Any) -> bool:
            status = getattr(response.status, "value", str(response.status))
            words = STATUS_WORDS.get(status)
            detail = (response.description or "").strip()
            if words is not None:
                say(f"{words}{f': {detail}' if detail and status == 'QUEUED' else ''}")
            return bool(super().note(response))

        def __call__(self, tracer: Any = None) -> Any:
            self.result = super().__call__(tracer)
            return self.result

    backend = Backend(model_key, host=where.host, api_key=where.api_key or None)
    backend.display.enabled = False  # nnsight's own status line (stdout): the page says it
    return backend


def model_key(lm: Any, key: str) -> str:
    """nnsight's key of the model on the deployment. A folder's path is its own repo id (a
    self-hosted deployment reads the same folder): nnsight would ask the Hugging Face Hub to
    canonicalise it, which refuses a path, so its cache of canonical ids is told first."""
    if Path(key).expanduser().is_dir():
        from nnsight.modeling import huggingface

        huggingface._ID_CACHE.setdefault(key, key)
    return str(lm.to_model_key())


def run_remote(
    trace: Callable[[Any], dict], where: Deployment | None, model: str, key: str = ""
) -> dict:
    """``trace(backend)`` (a trace of the model ``model``, whose key on the deployment is
    ``key`` (``model_key``), with that backend; None: nnsight runs it here, the tests' local
    execution) and what it saved, NDIF's failures in plain words. A request NDIF did not take
    while it reconnects is sent again (``RECONNECTING``), the listener told so."""
    register()
    if where is None:
        return trace(None)
    from nnsight.intervention.backends.remote import RemoteError as NnsightRemoteError

    wait, waited = RECONNECT_FIRST_S, 0.0
    while True:
        backend = backend_for(key, where)
        try:
            got = trace(backend)
        except NnsightRemoteError as exc:
            if RECONNECTING.search(str(exc)) and waited + wait <= RECONNECT_S:
                say(RECONNECT_WORDS)  # a job cancelled meanwhile stops here
                log.info("NDIF at %s is reconnecting; the trace is sent again in %g s",
                         where.host, wait)  # fmt: skip
                time.sleep(wait)
                waited, wait = waited + wait, wait * 2
                continue
            raise plain_words(str(exc), where, model) from exc
        except OSError as exc:  # the websocket's or httpx's connection, refused or reset
            raise plain_words(f"connection failed: {exc}", where, model) from exc
        except Exception as exc:
            if type(exc).__module__.startswith(("websocket", "httpx", "httpcore")):
                raise plain_words(f"connection failed: {exc}", where, model) from exc
            raise
        if not got and isinstance(backend.result, dict):
            got = backend.result.get("got", {})
        return got
