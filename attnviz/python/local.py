"""``attnviz.trace``: a trace computed in this process, without a server, by the very service
the server runs (``TraceService``), read back from the compact form as ``Trace``.

A transformers model object in memory (``model=hf_model, tokenizer=tok``) is served through the
bridge as a folder loaded with ``--backend transformers`` is (``pretrained/bridge/memory.py``),
probed once per object; each of its traces is computed when asked for and kept by the ``Trace``
(the weights as they are then: a model trained further traces anew, never from a cache).
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from attnviz.errors import TraceError
from attnviz.python.trace import Trace

_lock = threading.Lock()
# Model objects kept served (each holds its model): past this many the least recently traced
# is let go (traced again, it is probed again).
MEMORY_MODELS = 4
_memory: OrderedDict[int, Any] = OrderedDict()  # id(model object) -> its MemoryModel
_overrides: dict[str, Any] = {}  # settings that win over the environment's (``configure``)


def configure(**overrides: Any) -> None:
    """Settings of the process's trace service that win over the environment's, as
    ``Settings(**overrides)`` (``attnviz export --device``). Only before the first trace: the
    service is made once, then kept."""
    _overrides.clear()
    _overrides.update(overrides)


@functools.lru_cache(maxsize=1)
def trace_service() -> Any:
    """The process's trace service, as ``attnviz serve`` makes it: the settings (``ATTNVIZ_*``:
    device, dtype, backend, model folders; ``configure``'s win), the default model, models
    loaded on the compute thread where their tensors are used. Folders join it when a trace
    names one."""
    from attnviz.engine.device import resolve_device
    from attnviz.pretrained import load_registry
    from attnviz.services import compute
    from attnviz.services.trace_service import TraceService
    from attnviz.settings import Settings

    settings = Settings(**_overrides)
    device = resolve_device(settings.device)
    compute.configure(settings.workers)
    registry = compute.run(load_registry, settings.model_folders, device,
                           builtin=settings.builtin_model, dtype=settings.dtype,
                           backend=settings.backend, device_map=settings.device_map,
                           max_memory=settings.memory_bytes,
                           offload_folder=settings.offload_folder,
                           probe_bytes=settings.probe_mb * 2**20)  # fmt: skip
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
            loaded = compute.run(load_model, folder, service.device, s.dtype, s.backend,
                                 probe_bytes=s.probe_mb * 2**20)  # fmt: skip
        except ModelFolderError as exc:
            raise TraceError(f"model: {exc}") from exc
        other = service.registry.get(loaded.name)
        if other is not None:
            raise TraceError(
                f"model: {folder}: a model named {loaded.name!r} is already loaded from "
                f"{other.source} (model names are folder names; rename the folder)"
            )
        service.registry.add(loaded)
        return loaded.name


def _request(service: Any, kw: Mapping[str, Any]) -> Any:
    from attnviz.schemas.trace import TextTraceRequest, ToyTraceRequest

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
    from attnviz.schemas.trace import TraceQuery
    from attnviz.services.parts import compact_body

    try:
        query = TraceQuery(**params)
        return compact_body(service.part(req, query, compact=True))
    except ValidationError as exc:
        raise TraceError(_first_error(exc)) from exc
    except LookupError as exc:
        raise TraceError(str(exc)) from exc


def _memory_model(service: Any, model: Any, tokenizer: Any) -> Any:
    """The bridge's MemoryModel of the object ``model``, read with ``tokenizer`` (converted
    anew each time: tokens added since are read): probed the first time only."""
    from attnviz.pretrained.bridge.memory import (
        NAME_CHARS,
        bridge_model,
        model_label,
        text_tokenizer,
    )
    from attnviz.services import compute

    tok = text_tokenizer(tokenizer)
    with _lock:
        served = _memory.get(id(model))
        if served is not None and served.hf is model:
            _memory.move_to_end(id(model))
            return served.with_tokenizer(tok)
        label, taken = model_label(model), {m.name for m in _memory.values()}
        taken |= set(service.registry.models)
        name, k = label, 1
        while name in taken:
            k += 1
            name = f"{label[: NAME_CHARS - 3 - len(str(k))]} ({k})"
        served = compute.run(bridge_model, model, tok, name)
        _memory[id(model)] = served
        while len(_memory) > MEMORY_MODELS:
            _memory.popitem(last=False)
        return served


def _memory_trace(
    service: Any, model: Any, tokenizer: Any, kw: Mapping[str, Any], query: Mapping[str, Any],
    pictures: Sequence[str] = (),
) -> Trace:  # fmt: skip
    """A trace of a transformers model object: computed now, its parts cut from it as the
    service cuts a part of a trace it computed (the first from the forward's weights, the
    rest from q and k by the recorded rule, as from the service's cache)."""
    from attnviz.pretrained.bridge.memory import ModelObjectError
    from attnviz.schemas.trace import TextTraceRequest
    from attnviz.services import compute

    if tokenizer is None:
        raise TraceError(
            f"tokenizer: a model object ({type(model).__name__}) needs its tokenizer "
            "(tokenizer=, as AutoTokenizer.from_pretrained gives it)"
        )
    for name in ("tokens", "embeddings", "axes", "config"):
        if kw.get(name) is not None:
            raise TraceError(f"{name}: only for the toy model, not with a model object")
    if kw.get("text") is None:
        raise TraceError("text: the text to trace is required with a model object (text=...)")
    try:
        served = _memory_model(service, model, tokenizer)
    except ModelObjectError as exc:
        raise TraceError(str(exc)) from exc
    try:
        req = TextTraceRequest(model=served.name, text=kw["text"], generate=kw.get("generate"),
                               images=kw.get("images") or [])  # fmt: skip
    except ValidationError as exc:
        raise TraceError(_first_error(exc)) from exc
    try:
        computed = compute.run(_compute_memory, req, served, service.settings.max_text_tokens)
    except LookupError as exc:
        raise TraceError(str(exc)) from exc
    first = [True]

    def source(params: Mapping[str, Any]) -> bytes:
        return compute.run(_memory_part, computed, params, first)

    return Trace.from_compact(source(query), source, pictures)


def _compute_memory(req: Any, served: Any, cap: int | None) -> Any:
    from attnviz.pretrained import ModelRegistry
    from attnviz.services import heap
    from attnviz.services.text_trace import run_text_trace

    with heap.roomy():
        return run_text_trace(req, ModelRegistry([served]), cap)


def _memory_part(computed: Any, params: Mapping[str, Any], first: list[bool]) -> bytes:
    """As ``TraceService._part`` cuts a compact part (``annotate``, ``json_numbers``);
    the forward's weights are let go after the first, as the service's cache lets them go."""
    from attnviz.schemas.trace import TraceQuery
    from attnviz.services import heap
    from attnviz.services.parts import compact_body, json_numbers, select

    try:
        query = TraceQuery(**params)
        with heap.roomy():
            try:
                part = select(computed, query, annotate=True)
            finally:
                if first[0]:
                    first[0] = False
                    computed.tensors.release()
        part.meta["json_numbers"] = json_numbers(computed, TraceQuery())
        return compact_body(part)
    except ValidationError as exc:
        raise TraceError(_first_error(exc)) from exc
    except LookupError as exc:
        raise TraceError(str(exc)) from exc


def trace(
    model: Any = None,
    text: str | None = None,
    *,
    tokenizer: Any = None,
    image: Any = None,
    generate: Mapping[str, Any] | None = None,
    tokens: Sequence[str] | None = None,
    embeddings: Sequence[Sequence[float]] | None = None,
    axes: Sequence[str] | None = None,
    config: Mapping[str, Any] | None = None,
    **query: Any,
) -> Trace:
    """A trace computed here, as ``POST /api/trace`` computes it: a pretrained model on a text
    (``model``: a name the server would list, by default all-MiniLM-L6-v2, or a model folder's
    path; ``image``: one image or a list, each a path, a PIL image, bytes or a data URL, for a
    model that reads images, placed where the text's ``<image>`` stands, else before it;
    ``generate``: ``{"steps": 8}`` to let a causal model write first), or the toy model on
    a table (``tokens``, ``embeddings``, ``axes``: a name per dimension, ``config`` as the toy
    lab's). ``model`` may also be a
    transformers model object in memory, with its ``tokenizer``: traced through the bridge as a
    folder loaded with ``--backend transformers`` is, without saving it. ``query``: the part's
    parameters (``fields``, ``layer``, ``head``, ``hide_special``...; all of it by default).

    >>> import attnviz
    >>> t = attnviz.trace(text="The animal didn't cross the street because it was too tired")
    >>> t["attentions"].shape  # (layers, heads, tokens, tokens)
    (6, 12, 15, 15)
    >>> toy = attnviz.trace(tokens=["a", "b"], embeddings=[[1, 0], [0, 1]], config={"heads": 1})
    >>> hf, tok = AutoModelForCausalLM.from_pretrained(d), AutoTokenizer.from_pretrained(d)
    >>> t = attnviz.trace(model=hf, tokenizer=tok, text="The animal didn't cross the street")
    >>> t = attnviz.trace(model="models/SmolVLM-256M", text="<image> a dog", image="dog.jpg")
    """
    from attnviz.python.pictures import request_images

    service = trace_service()
    urls, pictures = request_images(image)
    kw = {"model": model, "text": text, "generate": generate, "tokens": tokens,
          "embeddings": embeddings, "axes": axes, "config": config,
          "images": urls or None}  # fmt: skip
    query = {k: v for k, v in query.items() if v is not None}
    if model is not None and not isinstance(model, (str, os.PathLike)):
        return _memory_trace(service, model, tokenizer, kw, query, pictures)
    if tokenizer is not None:
        if model is None:
            raise TraceError(
                "model: tokenizer= goes with a transformers model object (model=hf_model), and "
                "none was given"
            )
        raise TraceError(
            f"tokenizer: only with a transformers model object; the model {str(model)!r} reads "
            "with its own tokenizer.json"
        )
    kw["model"] = None if model is None else str(model)
    req = _request(service, kw)

    def source(params: Mapping[str, Any]) -> bytes:
        return _part(service, req, params)

    return Trace.from_compact(source(query), source, pictures)
