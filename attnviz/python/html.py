"""One self-contained HTML file of a trace: the sentence mode's own views, their modules, the CSS,
Plotly's basic bundle and the parts of the trace the views ask for, inline. It opens from
``file://`` with the network off (no server, no CDN) and draws with the page's own code.

The parts are the compact bodies the server sends (safetensors, keyed by their query
parameters), chosen for one selection (layer, head, query, token options): what every view draws
first is always there; more heads exact, the layer aggregates and the query-key part of every
query are added, most useful first, while the file stays under ``budget`` bytes. A view asking
for a part the file lacks says so, and what the file holds (``static/js/offline/source.js``).

>>> t = attnviz.trace(text="The animal didn't cross the street because it was too tired")
>>> t.save_html("trace.html", layer=2, head=3)
"""

from __future__ import annotations

import base64
import gzip
import json
import math
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attnviz.python.trace import Source, Trace, TraceError, read_compact

# The sentence mode's views, by the names its controller gives them.
VIEWS = ("model", "head", "qk", "traj", "gen")
DEFAULT_BUDGET = 1_500_000
# The thumbnails' side in the file: about what the page asks for at its usual width (the grid's
# width over 12.6 heads); a longer text is max-pooled to it, as on the page.
THUMB_PX = 80
# Past this many tokens the head view reads the chosen query's rows first (sentence mode's
# readsRows()), and a layer's 8-bit weights are megabytes: only added when the budget allows.
ROWS_FIRST = 256
QK_FIELDS = "queries,keys,scores,attentions"
AGGREGATES = ("head_mean", "head_max", "rollout")
ENTRY = "offline/page.js"
PLOTLY = "vendor/plotly-basic.min.js"
# ``from "./x.js"``, ``import "./x.js"``: the relative imports the loader rewrites (loader.js).
IMPORT = re.compile(r"""(?:\bfrom|^\s*import)\s*["'](\.{1,2}/[^"']+)["']""", re.MULTILINE)

Params = dict[str, Any]


class ExportError(ValueError):
    """A selection the trace does not have (the message names the argument)."""


@dataclass(frozen=True)
class Part:
    params: Params
    body: bytes

    @property
    def cost(self) -> int:
        """Its bytes in the file: gzipped (floats byte-shuffled) then base64."""
        return math.ceil(len(gzip.compress(shuffle(self.body), 6, mtime=0)) * 4 / 3)


def _clean(params: Mapping[str, Any]) -> Params:
    return {k: v for k, v in params.items() if v is not None}


def shuffle(body: bytes) -> bytes:
    """A compact body with each float array's bytes grouped by significance (every value's
    first byte, then every second...): the exponents of weights in [0, 1] then compress well.
    ``unshuffle`` in static/js/offline/source.js undoes it."""
    (n,) = struct.unpack("<Q", body[:8])
    header = json.loads(body[8 : 8 + n])
    base = 8 + n
    out = bytearray(body)
    for name, info in header.items():
        width = {"F32": 4, "F64": 8}.get(info.get("dtype", "")) if name != "__metadata__" else None
        if not width:
            continue
        begin, end = info["data_offsets"]
        data = np.frombuffer(body, np.uint8, end - begin, base + begin)
        out[base + begin : base + end] = data.reshape(-1, width).T.tobytes()
    return bytes(out)


def pack(parts: Sequence[Part]) -> bytes:
    """The parts as one gzipped block: a little-endian u32 length, the JSON index
    (``[{"params", "size"}]``), then every body (shuffled), in order."""
    index = json.dumps([{"params": p.params, "size": len(p.body)} for p in parts]).encode()
    raw = b"".join([struct.pack("<I", len(index)), index, *(shuffle(p.body) for p in parts)])
    return gzip.compress(raw, 9, mtime=0)


# ---- Which parts ----------------------------------------------------------------------------


def _options(hide_special: bool, merge_words: bool) -> Params:
    return {"hide_special": hide_special, "merge_words": merge_words}


def plan(
    first: Mapping[str, Any],
    *,
    layer: int,
    head: int,
    query: int,
    hide_special: bool,
    merge_words: bool,
    views: Sequence[str],
) -> tuple[list[Params], list[Params]]:
    """The parts the views draw first (always in the file), and the ones worth adding while the
    budget allows, most useful first. ``first``: the thumbnails' fields."""
    L, H, n = int(first["layers"]), int(first["heads"]), int(first["n"])
    opts = _options(hide_special, merge_words)
    pooled = int(first["thumbs"]["pool"]) > 1
    rows_first = n > ROWS_FIRST and not hide_special and not merge_words
    lacking = first.get("unavailable") or {}
    need: list[Params] = [{"fields": "thumbs", "thumb": THUMB_PX, **opts}]
    more: list[Params] = []
    layer8 = [{"fields": "thumbs", "thumb": 0, "thumb_layer": k, **opts} for k in range(L)]
    if "model" in views:
        need.append({"fields": "view", "layer": layer, "head": head, **opts})
        need.append({"fields": "entropy_mean"})
    if "head" in views and rows_first:
        need.append({"fields": "attentions", "layer": layer, "query": query})
    if "head" in views and pooled:
        (more if rows_first else need).append(layer8[layer])
    if "qk" in views and "queries" not in lacking:
        qk: Params = {"fields": f"{QK_FIELDS},view" if hide_special else QK_FIELDS,
                      "layer": layer, "head": head}  # fmt: skip
        if hide_special:
            qk["hide_special"] = True
        need.append({**qk, "query": query})
        more.append(qk)  # every query's row: any token can be picked
    if "traj" in views:
        need.append({"fields": "projection", **opts})
    generated = first.get("generated")
    if "gen" in views and generated:
        need.append({"fields": "attentions", "layer": layer, "head": head})
    if "model" in views:
        rest = [h for h in range(H) if h != head]
        more += [{"fields": "view", "layer": layer, "head": h, **opts} for h in rest]
        more += [{"fields": a, "layer": layer, **opts} for a in AGGREGATES]
        for k in (k for k in range(L) if k != layer):
            if "head" in views and pooled and not rows_first:
                more.append(layer8[k])
            more += [{"fields": "view", "layer": k, "head": h, **opts} for h in range(H)]
    return need, more


def collect(
    trace: Trace,
    *,
    layer: int = 0,
    head: int = 0,
    query: int | None = None,
    hide_special: bool = False,
    merge_words: bool = False,
    views: Sequence[str] | None = None,
) -> tuple[Params, list[Part], list[Params]]:
    """The selection (checked against the trace; the query the first ordinary token by
    default), the parts the views draw first, and the parameters of the others, most useful
    first."""
    views = _views(views)
    source = trace.source
    opts = _options(hide_special, merge_words)
    first = read_compact(source({"fields": "thumbs", "thumb": THUMB_PX, **opts}))[0]
    L, H, n = int(first["layers"]), int(first["heads"]), int(first["n"])
    for name, value, count in (("layer", layer, L), ("head", head, H)):
        if not 0 <= value < count:
            raise ExportError(f"{name}: {value} is out of range (0 to {count - 1})")
    special = first.get("special") or [False] * n
    if query is None:
        query = next((i for i, s in enumerate(special) if not s), 0)
    if not 0 <= query < n:
        raise ExportError(f"query: {query} is out of range (0 to {n - 1})")
    if hide_special and special[query]:
        raise ExportError(f"query: token {query} is a special token, hidden by hide_special")
    kw: dict[str, Any] = {"layer": layer, "head": head, "query": query,
                          "hide_special": hide_special, "merge_words": merge_words}  # fmt: skip
    # The controller draws every view (a card not shown is hidden): each one's first parts are
    # in the file; the optional ones only for the views shown.
    need = plan(first, **kw, views=VIEWS)[0]
    more = plan(first, **kw, views=views)[1]
    selection = {"layer": layer, "head": head, "query": query, "hide_special": hide_special,
                 "merge_words": merge_words, "views": list(views)}  # fmt: skip
    return selection, [Part(p, source(p)) for p in need], more


def choose(need: list[Part], more: Iterable[Params], source: Source, room: int) -> list[Part]:
    """``need``, then each part of ``more`` (asked for from ``source`` as it comes) whose cost
    still fits in ``room`` bytes. Past the first head that does not fit no other head is asked
    for (they are all about that size)."""
    out = list(need)
    room -= sum(p.cost for p in need)
    heads_fit = True
    for params in more:
        is_head = params["fields"] == "view"
        if is_head and not heads_fit:
            continue
        try:
            part = Part(params, source(params))
        except TraceError:  # (rollout past the server's bound of work: left out)
            continue
        cost = part.cost
        if cost <= room:
            out.append(part)
            room -= cost
        elif is_head:
            heads_fit = False
    return out


def _views(views: Iterable[str] | None) -> list[str]:
    if views is None:
        return list(VIEWS)
    out = list(dict.fromkeys(views))
    for v in out:
        if v not in VIEWS:
            raise ExportError(f"views: no view named {v!r} (views: {', '.join(VIEWS)})")
    if not out:
        raise ExportError("views: name at least one view")
    return out


# ---- The page -------------------------------------------------------------------------------


def modules(static: Path, entry: str = ENTRY) -> dict[str, str]:
    """The ES modules ``entry`` needs (itself first), by their path under static/js, found by
    following relative imports."""
    root = (static / "js").resolve()
    out: dict[str, str] = {}
    todo = [entry]
    while todo:
        rel = todo.pop()
        if rel in out:
            continue
        path = (root / rel).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            raise RuntimeError(f"attnviz: the module {rel!r} is not under {root}")
        text = path.read_text(encoding="utf-8")
        out[rel] = text
        for spec in IMPORT.findall(text):
            todo.append((path.parent / spec).resolve().relative_to(root).as_posix())
    return out


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element: no ``</`` (so no ``</script>``) and no ``<!--``."""
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/").replace("<!--", "<\\!--")


@dataclass(frozen=True)
class _Assets:
    css: str
    loader: str
    modules: str
    plotly: str


def _assets() -> _Assets:
    from attnviz.web import find_dir

    static = find_dir("static")
    css = "\n".join((static / "css" / f).read_text(encoding="utf-8")
                    for f in ("app.css", "views.css"))  # fmt: skip
    loader = (static / "js" / "offline" / "loader.js").read_text(encoding="utf-8")
    if "</script" in loader.lower() or "</style" in css.lower():
        raise RuntimeError("attnviz: the loader or the CSS closes its own element")
    plotly = base64.b64encode(gzip.compress((static / PLOTLY).read_bytes(), 9, mtime=0))
    code = json.dumps(modules(static), ensure_ascii=False).encode()
    packed = base64.b64encode(gzip.compress(code, 9, mtime=0))
    return _Assets(css, loader, packed.decode(), plotly.decode())


_ASSETS: list[_Assets] = []


def assets() -> _Assets:
    """The page's CSS, loader, modules and Plotly (gzipped once per process)."""
    if not _ASSETS:
        _ASSETS.append(_assets())
    return _ASSETS[0]


def _models(meta: Mapping[str, Any]) -> dict:
    """The /api/models answer the page would have had, for the one model of the trace."""
    info = {
        "name": meta.get("model") or "model",
        "family": meta.get("family", ""),
        "layers": meta["layers"],
        "heads": meta["heads"],
        "d_model": meta.get("d"),
        "head_dim": meta.get("head_dim"),
        "kv_heads": meta.get("kv_heads", meta["heads"]),
        "causal": bool(meta.get("causal")),
        "max_tokens": meta["n"],
        "model_max_tokens": meta["n"],
        "device": meta.get("device", "cpu"),
        "source": "this file",
        "examples": None,
        "run": None,
        "backend": meta.get("backend", "native"),
    }
    return {"models": [info], "default": info["name"], "examples": [], "max_text_chars": None,
            "max_json_values": 0, "max_generate": 0, "install": None}  # fmt: skip


def render(
    meta: Mapping[str, Any], selection: Mapping[str, Any], blob: str, *, title: str | None = None
) -> str:
    """The file's HTML: templates/standalone.html with the assets and the packed parts."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    from attnviz import __version__
    from attnviz.web import find_dir

    env = Environment(loader=FileSystemLoader(find_dir("templates")),
                      autoescape=select_autoescape(default=True))  # fmt: skip
    a = assets()
    config = {"selection": dict(selection), "models": _models(meta),
              "request": _request(meta), "entry": ENTRY}  # fmt: skip
    return env.get_template("standalone.html").render(
        title=title or f"attnviz · {meta.get('model') or 'trace'}",
        meta=meta,
        version=__version__,
        css=a.css,
        loader=a.loader,
        modules_gz=a.modules,
        plotly_gz=a.plotly,
        parts_gz=blob,
        config_json=_script_json(config),
    )


def _request(meta: Mapping[str, Any]) -> dict:
    """The trace request the page would have sent (the input card shows it)."""
    body: dict[str, Any] = {"model": meta.get("model"), "text": meta.get("text", "")}
    g = meta.get("generated")
    if g:
        body["generate"] = {k: g[k] for k in ("steps", "temperature", "seed") if k in g}
    return body


def standalone_html(
    trace: Trace,
    *,
    layer: int = 0,
    head: int = 0,
    query: int | None = None,
    hide_special: bool = False,
    merge_words: bool = False,
    views: Sequence[str] | None = None,
    budget: int = DEFAULT_BUDGET,
) -> str:
    """One HTML file of ``trace`` that draws the sentence mode's views offline (see the module's
    docstring). ``layer``, ``head`` (0-based), ``query`` (a token index; the first ordinary
    token by default) and the token options are the views' first selection; ``views``: some
    of ``model, head, qk, traj, gen`` (all by default); ``budget``: bytes the file may grow to
    with the optional parts (what the views draw first is always in it)."""
    if trace.meta.get("mode") != "text":
        raise ExportError("trace: only a text trace (a model on a text) exports to HTML yet")
    selection, need, more = collect(trace, layer=layer, head=head, query=query,
                                    hide_special=hide_special, merge_words=merge_words,
                                    views=views)  # fmt: skip
    fixed = len(render(trace.meta, selection, "").encode())
    parts = choose(need, more, trace.source, budget - fixed)
    html = render(trace.meta, selection, base64.b64encode(pack(parts)).decode())
    while len(html.encode()) > budget and len(parts) > len(need):
        parts.pop()  # the estimate (each part gzipped alone) was short
        html = render(trace.meta, selection, base64.b64encode(pack(parts)).decode())
    return html


def save_html(trace: Trace, path: str | Path, **selection: Any) -> Path:
    """``standalone_html(trace, **selection)`` written to ``path`` (UTF-8); the path."""
    out = Path(path)
    out.write_text(standalone_html(trace, **selection), encoding="utf-8")
    return out
