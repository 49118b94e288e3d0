"""One self-contained HTML file of a trace: the sentence mode's own views, their modules, the CSS,
Plotly's basic bundle (scatter; the toy lab's file the cartesian one, with heatmaps) and the
parts of the trace the views ask for, inline. It opens from ``file://`` with the network off (no
server, no CDN) and draws with the page's own code.

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
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attnviz.capture.fields import REGISTRY
from attnviz.errors import TraceError
from attnviz.limits import EXPORT_BUDGET, LIMITS
from attnviz.python.page import ENTRY, Page, gz64, page_html
from attnviz.python.pictures import with_pictures
from attnviz.wire.compact import decode, layout

if TYPE_CHECKING:
    from attnviz.python.data import Source, TraceData

# The sentence mode's views, by the names its controller gives them.
VIEWS = ("model", "head", "qk", "traj", "gen", "why", "lens", "picture")
DEFAULT_BUDGET = EXPORT_BUDGET
# The thumbnails' side in the file: about what the page asks for at its usual width (the grid's
# width over 12.6 heads); a longer text is max-pooled to it, as on the page.
THUMB_PX = 80
# Past this many tokens the head view reads the chosen query's rows first (sentence mode's
# readsRows()), and a layer's 8-bit weights are megabytes: only added when the budget allows.
ROWS_FIRST = 256
QK_FIELDS = "queries,keys,scores,attentions"
AGGREGATES = ("head_mean", "head_max", "rollout")
WHY_KEYS = 12  # Why this score: the keys its key view draws, each worth a part while they fit
LENS_COLUMNS = 16  # the Predictions card's widest window (views/lens.js columnsFor): the file's
Params = dict[str, Any]
ask = REGISTRY.ask  # a part's parameters: those its fields read (static/js/core/fields.js ask)


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
    header, base = layout(body)
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
    keys: Sequence[int] = (),
) -> tuple[list[Params], list[Params]]:
    """The parts the views draw first (always in the file), and the ones worth adding while the
    budget allows, most useful first. ``first``: the thumbnails' fields; ``keys``: Why this
    score's key, then the other keys its key view offers (the largest weights first)."""
    n = int(first["n"])
    p = _Plan(
        first, layer, head, query, hide_special, _options(hide_special, merge_words),
        pooled=int(first["thumbs"]["pool"]) > 1,
        rows_first=n > ROWS_FIRST and not hide_special and not merge_words,
        lacking=first.get("unavailable") or {},
    )  # fmt: skip
    need: list[Params] = [ask("thumbs", thumb=THUMB_PX, **p.opts)]
    more: list[Params] = []
    for view in ("model", "head", "qk", "traj", "lens", "why", "picture", "gen"):
        if view in views:
            first_parts, later = getattr(p, f"{view}_parts")(keys)
            need += first_parts
            more += later
    if "model" in views:
        more += p.model_more("head" in views)
    why = [p.why_of(k) for k in keys[1:]] if "why" in views else []
    return _unique(need), more + why  # the other keys of Why this score's key view, last


@dataclass(frozen=True)
class _Plan:
    """One selection's parts, view by view, as each card of modes/sentence/parts.js asks for
    them: (the parts it draws first, the ones worth adding)."""

    first: Mapping[str, Any]
    layer: int
    head: int
    query: int
    hide_special: bool
    opts: Params
    pooled: bool
    rows_first: bool
    lacking: Mapping[str, str]

    def row(self) -> Params:
        """The chosen head's row of weights at the chosen query."""
        return ask("attentions", layer=self.layer, head=self.head, query=self.query)

    def layer8(self, k: int) -> Params:
        """Layer ``k``'s 8-bit weights of every head, unpooled."""
        return ask("thumbs", thumb=0, thumb_layer=k, **self.opts)

    def why_of(self, key: int) -> Params:
        return _why(self.layer, self.head, self.query, key)

    def model_parts(self, keys: Sequence[int]) -> tuple[list[Params], list[Params]]:
        view = ask("view", layer=self.layer, head=self.head, **self.opts)
        return [view, ask("entropy_mean")], []

    def head_parts(self, keys: Sequence[int]) -> tuple[list[Params], list[Params]]:
        need: list[Params] = []
        if self.rows_first:
            need.append(ask("attentions", layer=self.layer, query=self.query))
        if self.pooled:
            return (need, [self.layer8(self.layer)]) if self.rows_first else (
                [*need, self.layer8(self.layer)], [])  # fmt: skip
        return need, []

    def qk_parts(self, keys: Sequence[int]) -> tuple[list[Params], list[Params]]:
        if "queries" in self.lacking:
            return [], []
        fields = f"{QK_FIELDS},view" if self.hide_special else QK_FIELDS
        qk = ask(fields, layer=self.layer, head=self.head, hide_special=True)  # (view's)
        return [{**qk, "query": self.query}], [qk]  # every query's row: any token can be picked

    def traj_parts(self, keys: Sequence[int]) -> tuple[list[Params], list[Params]]:
        return [ask("projection", **self.opts)], []

    def lens_parts(self, keys: Sequence[int]) -> tuple[list[Params], list[Params]]:
        if "lens" in self.lacking:
            return [], []
        return [lens_window(int(self.first["n"]), self.query)], []

    def why_parts(self, keys: Sequence[int]) -> tuple[list[Params], list[Params]]:
        return ([self.row(), self.why_of(keys[0])], []) if keys else ([], [])

    def picture_parts(self, keys: Sequence[int]) -> tuple[list[Params], list[Params]]:
        """Attention on the picture (its card's parts.js parts)."""
        images = self.first.get("images") or []
        if not images:
            return [], []
        plain = _options(False, False)  # (positions as the model has them, images included)
        more = [ask(a, layer=self.layer, **plain) for a in ("head_mean", "rollout")]
        if self.first.get("vision") and "vision" not in self.lacking:
            more.append(vision_part(images[0]))
        return [self.row()], more

    def gen_parts(self, keys: Sequence[int]) -> tuple[list[Params], list[Params]]:
        if not self.first.get("generated"):
            return [], []
        return [ask("attentions", layer=self.layer, head=self.head)], []

    def model_more(self, with_head: bool) -> list[Params]:
        """The model view's other heads and layers, and its aggregates."""
        H, L = int(self.first["heads"]), int(self.first["layers"])
        rest = [h for h in range(H) if h != self.head]
        more = [ask("view", layer=self.layer, head=h, **self.opts) for h in rest]
        more += [ask(a, layer=self.layer, **self.opts) for a in AGGREGATES]
        for k in (k for k in range(L) if k != self.layer):
            if with_head and self.pooled and not self.rows_first:
                more.append(self.layer8(k))
            more += [ask("view", layer=k, head=h, **self.opts) for h in range(H)]
        return more


def vision_part(block: Mapping[str, Any]) -> Params:
    """The vision tower's part the picture card draws first: its first layer and head over the
    picture's global view (the only tile of an unsplit one), as views/patches.js defaultTile."""
    labels = [t.get("label") for t in block["tiles"]]
    tile = labels.index("global") if "global" in labels else 0
    return ask("vision", image=int(block["image"]), tile=tile, layer=0, head=0)


def lens_window(n: int, query: int) -> Params:
    """The Predictions card's part at its widest: LENS_COLUMNS positions around the query, as
    views/lens.js windowOf places them; any narrower window the card asks for is cut from it
    (static/js/offline/source.js cutWindow)."""
    count = min(n, LENS_COLUMNS)
    start = max(0, min(n - count, query - count // 2))
    return ask("top_k,lens", pos_start=start, pos_count=count)


def pushed_parts(first: Mapping[str, Any], source: Source, query: int) -> list[Params]:
    """What pushed this at the query (modes/sentence/parts.js attributionPart): the top
    prediction's logit split, the next token's and their difference (views/pushed.js targetOf);
    none where the trace has no predictions or no attribution, or heads are knocked out."""
    lacking = first.get("unavailable") or {}
    if "lens" in lacking or "logit_attribution" in lacking or first.get("ablated"):
        return []
    window = lens_window(int(first["n"]), query)
    meta, arrays = decode(source(window), to="numpy")
    at = query - int(window["pos_start"])
    top = int(arrays["top_k.ids"][at, 0])
    nxt = int(arrays["lens.targets"][at])  # -1: the text ends at the query
    out = [ask("logit_attribution", position=query, token=top)]
    if nxt >= 0:
        out.append(ask("logit_attribution", position=query, token=nxt))
        if nxt != top:
            out.append(ask("logit_attribution", position=query, token=nxt, versus=top))
    return out


def _why(layer: int, head: int, query: int, key: int) -> Params:
    """The part Why this score asks for (modes/sentence/parts.js whyPart)."""
    return ask("qk_attribution", layer=layer, head=head, query=query, key=key,
               top=LIMITS.attribution_top)  # fmt: skip


def why_keys(
    first: Mapping[str, Any], source: Source, layer: int, head: int, query: int, key: int | None
) -> list[int]:
    """Why this score's keys in a file: ``key`` (by default the query's winning key, its largest
    weight, as the page picks it), then the other keys the query sees, the largest weights
    first (WHY_KEYS in all); none for a trace that cannot split its scores (said in its
    ``unavailable``; heads knocked out)."""
    if "qk_attribution" in (first.get("unavailable") or {}) or first.get("ablated"):
        if key is not None:
            raise ExportError("key: this trace's scores cannot be split (Why this score)")
        return []
    asked = ask("attentions", layer=layer, head=head, query=query)
    row = decode(source(asked), to="numpy")[1]["attentions"].reshape(-1)  # [1][1][1][n] -> [n]
    n = len(row)
    if key is not None and not 0 <= key < n:
        raise ExportError(f"key: {key} is out of range (0 to {n - 1})")
    if key is not None and first.get("causal") and key > query:
        raise ExportError(f"key: {key} is after the query {query}: a causal model's query sees "
                          "no later key")  # fmt: skip
    order = [int(j) for j in np.argsort(-row, kind="stable") if row[j] > 0]
    first_key = int(np.argmax(row)) if key is None else key
    return [first_key, *[j for j in order if j != first_key][: WHY_KEYS - 1]]


def collect(
    trace: TraceData,
    *,
    layer: int = 0,
    head: int = 0,
    query: int | None = None,
    key: int | None = None,
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
    first = decode(source(ask("thumbs", thumb=THUMB_PX, **opts)), to="numpy")[0]
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
    # The controller draws only the views shown (createSentence's views): their first parts
    # are in the file, then the optional ones, then the model card's CSV downloads' parts.
    keys = why_keys(first, source, layer, head, query, key) if "why" in views else []
    if key is not None and "why" not in views:
        raise ExportError("key: only Why this score has a key (views: add why)")
    need, more = plan(first, **kw, views=views, keys=keys)
    if "lens" in views:
        need += pushed_parts(first, source, query)
    csv = csv_parts(layer=layer, head=head, views=views, lacking=first.get("unavailable") or {})
    more = _unique(more + csv, need)
    selection = {"layer": layer, "head": head, "query": query, "key": keys[0] if keys else None,
                 "hide_special": hide_special, "merge_words": merge_words,
                 "views": list(views)}  # fmt: skip
    return selection, [Part(p, source(p)) for p in need], more


def csv_parts(
    *, layer: int, head: int, views: Sequence[str], lacking: Mapping[str, Any] = {}
) -> list[Params]:
    """The parts the model card's CSV buttons ask for (modes/sentence/cards/model.js: the chosen
    head's weights, its layer's mean, every layer's hidden states), when that card is shown and
    the trace has them (``lacking``: its ``unavailable``); worth adding while they fit (a
    button whose part the file lacks says so)."""
    if "model" not in views:
        return []
    out = [ask("attentions", layer=layer, head=head),
           ask("head_mean", layer=layer, **_options(False, False)),
           ask("hidden_states")]  # fmt: skip
    return [p for p in out if p["fields"] not in lacking]  # (a trace without hidden states)


def _unique(params: Iterable[Params], skip: Iterable[Params] = ()) -> list[Params]:
    """``params`` without repeats (the first kept) and without any of ``skip``."""
    seen = {json.dumps(p, sort_keys=True) for p in skip}
    out = []
    for p in params:
        key = json.dumps(p, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


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
            "max_json_values": 0, "max_generate": 0, "install": None,
            "attribution_top": LIMITS.attribution_top}  # fmt: skip


# The text trace's file: sentence mode's markup, its input card read only.
TEXT_STYLE = ".sentence-input textarea[readonly] { background: transparent; resize: none; }"
# The backend of a trace of attention weights the caller gave (attnviz.show(attentions, tokens)):
# no model ran, so its file says so in its header, and shows no model line (layers, heads,
# d_model, the device: it knows no d_model).
GIVEN = "given"
GIVEN_STYLE = "#s-model-info { display: none; }"


def render(
    meta: Mapping[str, Any],
    selection: Mapping[str, Any],
    blob: str,
    *,
    title: str | None = None,
    shared: bool = False,
) -> str:
    """The file of a text trace: sentence mode's markup, offline/page.js, the packed parts."""
    tagline = (f"{meta.get('model') or 'A model'} on a text: a saved trace, drawn by the page's "
               "own views, offline.")  # fmt: skip
    style = TEXT_STYLE
    if meta.get("backend") == GIVEN:
        tagline = (f"Attention weights given by the caller ({meta['layers']} layers × "
                   f"{meta['heads']} heads over {meta['n']} tokens), drawn by the page's own "
                   "views, offline. No model ran here: there are no queries, keys or hidden "
                   "states.")  # fmt: skip
        style += "\n" + GIVEN_STYLE
    page = Page(
        mode="sentence",
        entry=ENTRY,
        title=title or f"attnviz · {meta.get('model') or 'trace'}",
        tagline=tagline,
        footer="a saved trace: every number shown is in this file",
        style=style,
    )
    config = {"selection": dict(selection), "models": _models(meta), "request": _request(meta)}
    return page_html(page, config, blob, shared=shared)


def _request(meta: Mapping[str, Any]) -> dict:
    """The trace request the page would have sent (the input card shows it)."""
    body: dict[str, Any] = {"model": meta.get("model"), "text": meta.get("text", "")}
    g = meta.get("generated")
    if g:
        body["generate"] = {k: g[k] for k in ("steps", "temperature", "seed") if k in g}
    return body


def standalone_html(
    trace: TraceData,
    *,
    layer: int = 0,
    head: int = 0,
    query: int | None = None,
    key: int | None = None,
    hide_special: bool = False,
    merge_words: bool = False,
    views: Sequence[str] | None = None,
    budget: int = DEFAULT_BUDGET,
    shared: bool = False,
) -> str:
    """One HTML file of ``trace`` that draws the sentence mode's views offline (see the module's
    docstring); ``shared``: a notebook display's page instead, whose code the notebook carries
    (``attnviz.python.notebook``; ``budget`` then counts the page without that code).
    ``layer``, ``head`` (0-based), ``query`` (a token index; the first ordinary
    token by default), ``key`` (Why this score's: the query's winning key by default) and the
    token options are the views' first selection; ``views``: some of ``model, head, qk, traj,
    gen, why, lens, picture`` (all by default; the picture card only for a trace with images);
    ``budget``: bytes the file may grow to with the optional parts (what the views draw first
    is always in it)."""
    if trace.meta.get("mode") == "toy":
        given = {"query": query, "key": key, "hide_special": hide_special or None,
                 "merge_words": merge_words or None, "views": views}  # fmt: skip
        for name, value in given.items():
            if value is not None:
                raise ExportError(f"{name}: a toy trace's file has none (its selection: layer, "
                                  "head, view)")  # fmt: skip
        return toy_html(trace, layer=layer, head=head, shared=shared)
    if trace.meta.get("mode") != "text":
        raise ExportError("trace: only a text or toy trace exports to HTML")
    selection, need, more = collect(trace, layer=layer, head=head, query=query, key=key,
                                    hide_special=hide_special, merge_words=merge_words,
                                    views=views)  # fmt: skip
    if trace.pictures:  # the pictures, in the first part's meta: the file draws them offline
        need[0] = Part(need[0].params, with_pictures(need[0].body, trace.pictures))
    fixed = len(render(trace.meta, selection, "", shared=shared).encode())
    parts = choose(need, more, trace.source, budget - fixed)
    html = render(trace.meta, selection, base64.b64encode(pack(parts)).decode(), shared=shared)
    while len(html.encode()) > budget and len(parts) > len(need):
        parts.pop()  # the estimate (each part gzipped alone) was short
        html = render(trace.meta, selection, base64.b64encode(pack(parts)).decode(),
                      shared=shared)  # fmt: skip
    return html


def save_html(trace: TraceData, path: str | Path, **selection: Any) -> Path:
    """``standalone_html(trace, **selection)`` written to ``path`` (UTF-8); the path."""
    out = Path(path)
    out.write_text(standalone_html(trace, **selection), encoding="utf-8")
    return out


# ---- A trained run --------------------------------------------------------------------------

RUN_ENTRY = "offline/run.js"
# The largest run state (its JSON) a file takes: a run at the server's default bounds is well
# under a megabyte; a server allowed a million steps writes tens of megabytes of loss curves.
RUN_MAX_BYTES = 64_000_000
RUN_STYLE = ".t-saved { grid-template-columns: minmax(0, 1fr); }"


def run_html(state: Mapping[str, Any] | str | bytes, *, saved: str | None = None) -> str:
    """One HTML file of a training run that has ended: Train mode's own views (progress, loss
    and held-out loss, gradient norms, every head at each checkpoint with the slider to scrub,
    a preset's claims, each variant), drawn offline from ``state``, the run as the server gives
    it (``GET /api/train/{id}``: a dict, or its JSON). ``saved``: when it was saved, in words
    (shown in the file). A run still running is refused: its checkpoints are not all taken.

    >>> attnviz.Client("http://127.0.0.1:8000").save_run_html("a1b2c3", "run.html")
    """
    if isinstance(state, Mapping):
        raw = json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode()
    else:
        raw = state.encode() if isinstance(state, str) else bytes(state)
    if len(raw) > RUN_MAX_BYTES:
        raise ExportError(f"run: its state is {len(raw):,} bytes, over the file's cap "
                          f"of {RUN_MAX_BYTES:,}")  # fmt: skip
    try:
        run: Any = state if isinstance(state, Mapping) else json.loads(raw)
    except ValueError as exc:
        raise ExportError(f"run: not a run's state (JSON): {exc}") from None
    if not isinstance(run, Mapping) or not {"id", "state", "variants", "probe"} <= run.keys():
        raise ExportError(
            "run: not a run's state (GET /api/train/{id}: id, state, variants, probe)"
        )
    if run["state"] in ("queued", "running"):
        doing = "still running" if run["state"] == "running" else "waiting for a training slot"
        raise ExportError(f"run: {run['id']} is {doing}; export it once it has ended "
                          "(done, cancelled or failed)")  # fmt: skip
    # What it is by its title (a preset's by the preset's title, never an id), else its task.
    what = (run.get("title") or (f"{run.get('task')}, an ablation preset" if run.get("preset")
            else f"{run.get('task')}, compare {run['compare']}" if run.get("compare")
            else str(run.get("task") or "a")))  # fmt: skip
    page = Page(
        mode="train",
        entry=RUN_ENTRY,
        title=f"attnviz · {what if run.get('title') else f'a training run ({what})'}",  # no id
        tagline=f"A training run ({what}, {run['state']}): its loss, gradients and every head at "
        "each checkpoint, drawn by the page's own views, offline.",
        footer="a saved run: every number shown is in this file",
        style=RUN_STYLE,
        main=False,  # modes/train.html has its own (the plots)
    )
    config: dict[str, Any] = {"saved": saved} if saved else {}
    return page_html(page, config, gz64(raw))


def save_run_html(
    state: Mapping[str, Any] | str | bytes, path: str | Path, *, saved: str | None = None
) -> Path:
    """``run_html(state)`` written to ``path`` (UTF-8); the path."""
    out = Path(path)
    out.write_text(run_html(state, saved=saved), encoding="utf-8")
    return out


# ---- The toy lab ----------------------------------------------------------------------------

TOY_ENTRY = "offline/toy.js"
# What the toy lab's first response holds (modes/toy/index.js FIRST), and each head's part (HEAD).
TOY_FIRST = "hidden_states,distances,projection,entropy_mean,score_range,attentions,scores"
TOY_HEAD = "attentions,scores"
# The parts' bytes a toy file takes: every head of the largest table the toy's limits allow
# (64 tokens, 12 layers x 16 heads, float64) is about 13 MB.
TOY_MAX_BYTES = 32_000_000
TOY_VIEW = ("layer", "head", "vlayer", "a", "b", "trails")


def _toy_view(n: int, layers: int, view: Mapping[str, Any] | None) -> dict[str, Any]:
    """The toy lab's view state (core/state.js defaultView, then ``view``'s keys), checked."""
    out: dict[str, Any] = {"layer": 0, "head": 0, "vlayer": layers, "a": min(1, n - 1),
                           "b": n - 1, "trails": True}  # fmt: skip
    for key, value in (view or {}).items():
        if key not in TOY_VIEW:
            raise ExportError(f"view: no key {key!r} (keys: {', '.join(TOY_VIEW)})")
        out[key] = value
    for key, top in (("vlayer", layers), ("a", n - 1), ("b", n - 1)):
        v = out[key]
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= top:
            raise ExportError(f"view.{key}: {v!r} is out of range (0 to {top})")
    out["trails"] = out["trails"] is not False
    return out


def _toy_preset(request: Mapping[str, Any]) -> dict | None:
    """The preset whose table (tokens, axes, embeddings) this is, as /api/presets lists it."""
    from attnviz.presets import presets

    for p in presets():
        if [p.tokens, p.axes, p.embeddings] == [request["tokens"], request["axes"],
                                                request["embeddings"]]:  # fmt: skip
            return p.model_dump()
    return None


def toy_html(
    trace: TraceData,
    *,
    layer: int = 0,
    head: int = 0,
    view: Mapping[str, Any] | None = None,
    title: str | None = None,
    shared: bool = False,
) -> str:
    """One HTML file of a toy trace (``attnviz.trace(tokens=..., embeddings=..., config=...)``)
    that draws the toy lab's views offline with the toy lab's own controller: the attention
    heatmaps of every layer and head, the token vectors with the layer slider (in 2-D: the
    first two axes or principal components; the file carries Plotly's cartesian bundle, which has
    no 3-D traces), before and after, and the distances. Every number is in the file, exact
    (float64): the first screen's arrays and every head's scores and weights. The table and
    the model are shown read only. ``layer``, ``head``: the heatmaps' first head; ``view``:
    the rest of the toy lab's view state (``vlayer``, ``a``, ``b``, ``trails``)."""
    from attnviz.limits import LIMITS
    from attnviz.schemas.common import ToyConfig

    if trace.meta.get("mode") != "toy":
        raise ExportError("trace: not a toy trace (tokens, embeddings and config)")
    source = trace.source
    L, H = int(trace.meta["layers"]), int(trace.meta["heads"])
    for name, value, count in (("layer", layer, L), ("head", head, H)):
        if not isinstance(value, int) or not 0 <= value < count:
            raise ExportError(f"{name}: {value} is out of range (0 to {count - 1})")
    selection = _toy_view(
        len(trace.meta["tokens"]), L, {"layer": layer, "head": head, **(view or {})}
    )
    if (selection["layer"], selection["head"]) != (layer, head):
        raise ExportError("view: give the layer and head as layer= and head=, not in view")
    first: Params = {"fields": TOY_FIRST, "layer": layer, "head": head}
    parts = [Part(first, source(first))]
    heads = [(k, h) for k in range(L) for h in range(H) if (k, h) != (layer, head)]
    for k, h in heads:  # every other head, exact (the first one is in the first part)
        params: Params = {"fields": TOY_HEAD, "layer": k, "head": h}
        parts.append(Part(params, source(params)))
    size = sum(len(p.body) for p in parts)
    if size > TOY_MAX_BYTES:
        raise ExportError(f"trace: its parts are {size:,} bytes, over the file's cap of "
                          f"{TOY_MAX_BYTES:,}")  # fmt: skip
    meta = decode(parts[0].body, to="numpy")[0]
    table = decode(source({"fields": "embeddings"}), to="numpy")[1]["embeddings"]
    request = {"tokens": meta["tokens"], "axes": meta["axes"], "embeddings": table.tolist(),
               "config": meta["config"]}  # fmt: skip
    preset = _toy_preset(request)
    n, d = meta["n"], meta["d"]
    page = Page(
        mode="toy",
        entry=TOY_ENTRY,
        title=title or f"attnviz · toy lab · {n} tokens",
        tagline=f"The toy transformer on a table of {n} tokens × {d} dimensions ({L} layer"
        f"{'s' if L > 1 else ''}, {H} head{'s' if H > 1 else ''}): a saved trace, drawn by the "
        "toy lab's own views, offline.",
        footer="a saved toy trace: every number shown is in this file",
        main=False,  # modes/toy.html has its own (the plots)
        plotly="cartesian",  # the attention heatmaps
    )
    config = {"request": request, "view": selection, "preset": preset and preset["id"],
              "presets": [preset] if preset else [], "limits": LIMITS.model_dump(),
              "defaults": ToyConfig().model_dump()}  # fmt: skip
    return page_html(page, config, base64.b64encode(pack(parts)).decode(), shared=shared)


# ---- In a notebook --------------------------------------------------------------------------

# The notebook cell: its height before the page inside says how tall it is.
HEIGHT = 1200
NOTEBOOK_BUDGET = 1_400_000  # the file, so that the cell (escaped into srcdoc) stays under 2 MB
# A display whose notebook carries the code (attnviz.python.notebook): its own page, the code
# apart (what its views draw first is always in it, 0.5 MB at 128 tokens; then more parts while
# they fit): four displays of a sentence and the code come to about 1.3 MB.
DISPLAY_BUDGET = 250_000


class Display:
    """What a notebook shows: the page in an iframe (``_repr_html_``). ``code``: the pieces
    (key: text) the page takes from its notebook (``page_html(shared=True)``), which the
    notebook carries once; none for a whole page."""

    def __init__(self, page: str, height: int = HEIGHT, code: Mapping[str, str] | None = None):
        self.page = page
        self.height = height
        self.code = dict(code or {})

    def _repr_html_(self) -> str:
        # Same-origin srcdoc (no sandbox): the frame may grow to its page's height on load, and
        # a shared page reaches its notebook's code; where the notebook forbids that, it keeps
        # HEIGHT and scrolls.
        grow = (
            "try{var d=this.contentDocument.documentElement;"
            "var f=this;var fit=function(){f.style.height=(d.scrollHeight+4)+'px'};"
            "fit();new ResizeObserver(fit).observe(d)}catch(e){}"
        )
        carried = ""
        if self.code:
            from attnviz.python.notebook import carrier

            carried = carrier(self.code)
        return carried + (
            f'<iframe class="attnviz-frame" srcdoc="{escape(self.page, quote=True)}" '
            f'title="attnviz views" style="width:100%;height:{self.height}px;border:0" '
            f'onload="{escape(grow, quote=True)}"></iframe>'
        )

    def __repr__(self) -> str:
        return f"<attnviz display, {len(self.page):,} bytes>"


def display(trace: TraceData, **selection: Any) -> Display:
    """``trace``'s display: in a notebook's kernel, a page whose code the notebook carries once
    (``budget``: DISPLAY_BUDGET, the page without the code); elsewhere the whole file
    (NOTEBOOK_BUDGET)."""
    from attnviz.python.notebook import in_notebook
    from attnviz.python.page import shared_code

    if not in_notebook():
        selection.setdefault("budget", NOTEBOOK_BUDGET)
        return Display(standalone_html(trace, **selection))
    selection.setdefault("budget", DISPLAY_BUDGET)
    toy = trace.meta.get("mode") == "toy"  # (a toy file holds every head, whatever the budget)
    code = shared_code(TOY_ENTRY, "cartesian") if toy else shared_code(ENTRY, "basic")
    page = standalone_html(trace, shared=True, **selection)
    return Display(page, code=dict(code.values()))


def frame(trace: TraceData, **selection: Any) -> str:
    """The iframe of ``trace``'s page (``Trace._repr_html_``)."""
    return display(trace, **selection)._repr_html_()
