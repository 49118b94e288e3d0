"""``attnviz.trace``: a trace computed in this process, without a server, by the very service
the server runs (``TraceService``), read back from the compact form as ``Trace``."""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from attnviz.python.trace import Trace, TraceError

_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _service() -> Any:
    """The process's trace service, as ``attnviz serve`` makes it: the settings (``ATTNVIZ_*``:
    device, dtype, backend, model folders), the default model, models loaded on the compute
    thread where their tensors are used. Folders join it when a trace names one."""
    from attnviz.engine.device import resolve_device
    from attnviz.pretrained import load_registry
    from attnviz.services import compute
    from attnviz.services.traces import TraceService
    from attnviz.settings import Settings

    settings = Settings()
    device = resolve_device(settings.device)
    compute.configure(settings.workers)
    registry = compute.run(load_registry, settings.model_folders, device,
                           builtin=settings.builtin_model, dtype=settings.dtype,
                           backend=settings.backend)  # fmt: skip
    return TraceService(settings, device, registry)


def _model_name(service: Any, model: str) -> str:
    """``model`` as the registry names it: a loaded model's name, or a folder, loaded now (once)."""
    if service.registry.get(model) is not None:
        return model
    folder = Path(model).expanduser()
    if not folder.is_dir():
        have = ", ".join(service.registry.models) or "none"
        raise TraceError(f"model: no model named {model!r} and no such folder (loaded: {have})")
    from attnviz.pretrained.folder import ModelFolderError
    from attnviz.pretrained.registry import load_model
    from attnviz.services import compute

    with _lock:
        for m in service.registry.models.values():
            if m.source == folder.resolve():
                return m.name
        s = service.settings
        try:
            loaded = compute.run(load_model, folder, service.device, s.dtype, s.backend)
        except ModelFolderError as exc:
            raise TraceError(f"model: {exc}") from exc
        service.registry.add(loaded)
        return loaded.name


def _request(service: Any, kw: Mapping[str, Any]) -> Any:
    from attnviz.schemas import TextTraceRequest, ToyTraceRequest

    body = {k: v for k, v in kw.items() if v is not None}
    try:
        if "model" in body or "text" in body:
            if "model" in body:
                body["model"] = _model_name(service, str(body["model"]))
            else:
                body["model"] = service.registry.default
            return TextTraceRequest(**body)
        return ToyTraceRequest(**body)
    except ValidationError as exc:
        raise TraceError(_first_error(exc)) from exc


def _first_error(exc: ValidationError) -> str:
    e = exc.errors()[0]
    where = ".".join(str(p) for p in e["loc"])
    return f"{where}: {e['msg']}" if where else str(e["msg"])


def _part(service: Any, req: Any, params: Mapping[str, Any]) -> bytes:
    from attnviz.schemas import TraceQuery
    from attnviz.services.arrays import compact_body
    from attnviz.services.tensors import TraceError as ServiceError

    try:
        query = TraceQuery(**params)
        return compact_body(service.part(req, query, compact=True))
    except ValidationError as exc:
        raise TraceError(_first_error(exc)) from exc
    except (ServiceError, LookupError) as exc:
        raise TraceError(str(exc)) from exc


def trace(
    model: str | None = None,
    text: str | None = None,
    *,
    generate: Mapping[str, Any] | None = None,
    tokens: Sequence[str] | None = None,
    embeddings: Sequence[Sequence[float]] | None = None,
    config: Mapping[str, Any] | None = None,
    **query: Any,
) -> Trace:
    """A trace computed here, as ``POST /api/trace`` computes it: a pretrained model on a text
    (``model``: a name the server would list, by default all-MiniLM-L6-v2, or a model folder's
    path; ``generate``: ``{"steps": 8}`` to let a causal model write first), or the toy model on
    a table (``tokens``, ``embeddings``, ``config`` as the toy lab's). ``query``: the part's
    parameters (``fields``, ``layer``, ``head``, ``hide_special``...; all of it by default).

    >>> import attnviz
    >>> t = attnviz.trace(text="The animal didn't cross the street because it was too tired")
    >>> t["attentions"].shape  # (layers, heads, tokens, tokens)
    (6, 12, 15, 15)
    >>> toy = attnviz.trace(tokens=["a", "b"], embeddings=[[1, 0], [0, 1]], config={"heads": 1})
    """
    service = _service()
    kw = {"model": model, "text": text, "generate": generate, "tokens": tokens,
          "embeddings": embeddings, "config": config}  # fmt: skip
    req = _request(service, kw)

    def source(params: Mapping[str, Any]) -> bytes:
        return _part(service, req, params)

    return Trace.from_compact(source({k: v for k, v in query.items() if v is not None}), source)
