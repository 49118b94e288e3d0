"""A part of a computed trace (the arrays a request names, a layer or a head of the per-head
ones), and its two forms on the wire: nested JSON (``attnviz.wire.jsonarrays``), or one compact
binary body (``attnviz.wire.compact``). Each array is its field's (``attnviz.capture.fields``):
this module looks the fields up, checks what they share (the layer, head and query picked, the
arrays the model lacks) and counts their numbers before any is computed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from attnviz.capture import ComputedTrace
from attnviz.capture.fields import REGISTRY, Bounds, Pick, Shape, TraceField, Value, index
from attnviz.capture.fields.vision import numbers as vision_numbers
from attnviz.capture.tokenview import TokenView, token_view
from attnviz.engine import TransformerConfig
from attnviz.errors import TraceError
from attnviz.schemas.trace import TraceQuery
from attnviz.wire import compact
from attnviz.wire.jsonarrays import dumps, pieces


@dataclass
class Part:
    """What one response carries: the trace's other fields and the arrays asked for."""

    meta: dict
    arrays: dict[str, Value]


def trace_view(trace: ComputedTrace, query: TraceQuery) -> TokenView:
    m = trace.meta
    return token_view(
        m["tokens"],
        special=m.get("special"),
        words=m.get("words"),
        offsets=m.get("offsets"),
        text=m.get("text"),
        hide_special=query.hide_special,
        merge_words=query.merge_words,
    )


def check_part(
    query: TraceQuery,
    layers: int,
    heads: int,
    tokens: int,
    unavailable: Mapping[str, str],
    tokens_are: str = "tokens",
) -> None:
    """Before a trace is computed (a job accepted): the refusals ``select`` would give that
    the model's shape tells already, a TraceError naming the parameter. ``tokens``: the most
    the trace can have (the text's and any it writes; with images, a bound: ``select`` checks
    the trace's own count), said as ``tokens_are``; ``unavailable``: the model's own missing
    arrays, with why."""
    fields = [REGISTRY[name] for name in query.names()]
    if any(not f.tower for f in fields):  # a vision tower's layers are its own
        index(query.layer, layers, "layer", "layers")
        index(query.head, heads, "head", "heads")
    if query.query is not None:
        index(query.query, tokens, "query", tokens_are)
    bounds = Bounds(layers, heads, tokens, tokens_are)
    for f in fields:
        f.check(query, bounds)
    _refuse_lacking(query, unavailable)


def _refuse_lacking(query: TraceQuery, lacking: Mapping[str, str]) -> None:
    """Arrays the model cannot give (a bridged model without q and k): a 4xx when asked for by
    name (null in the whole trace)."""
    for name in query.names() if query.fields is not None else ():
        if name in lacking:
            raise TraceError(f"fields: {lacking[name]}")
    if query.measure in lacking:  # value_weighted, a field too
        raise TraceError(f"measure: {lacking[query.measure]}")


def _refuse_unweighable(weighable: bool, fields: list[TraceField], value: bool) -> None:
    """Value-weighted attention asked of a trace without values or an output projection to
    weigh: by the measure of a measured field, or by a field that needs it."""
    wants_value = value and any(f.measured for f in fields)
    if weighable or not (wants_value or any(f.needs == "output projection" for f in fields)):
        return
    what = "measure" if wants_value else "fields"
    raise TraceError(f"{what}: this trace has no values or output projection to weigh")


def select(trace: ComputedTrace, query: TraceQuery, annotate: bool = True) -> Part:
    """The arrays ``query`` names (each its ``attnviz.capture.fields`` entry's), for its layer
    and head; a TraceError names a parameter out of range. ``annotate``: say in the fields what
    was picked (the full JSON trace does not)."""
    t = trace.tensors
    fields = [REGISTRY[name] for name in query.names()]
    # ``layer`` and ``head`` of the vision tower are its own: checked by its field.
    own = any(not f.tower for f in fields)
    layers = index(query.layer, t.layers, "layer", "layers") if own else []
    heads = index(query.head, t.heads, "head", "heads") if own else []
    if query.query is not None:
        index(query.query, t.n, "query", "tokens")
    lacking = trace.meta.get("unavailable") or {}
    _refuse_lacking(query, lacking)
    value = query.measure != "weights"
    _refuse_unweighable(t.has_value_weighted, fields, value)
    # The rows and columns under the token options: only what is drawn under them needs them.
    options = query.hide_special or query.merge_words
    tv = trace_view(trace, query) if options or any(f.drawn for f in fields) else None
    pick = Pick(t, query, layers, heads, tv, value)
    for f in fields:
        f.prepare(pick)
    # What the fields read of a source elsewhere (an NDIF deployment's), in one trip there.
    t.bring([w for f in fields if f.name not in lacking for w in f.wanted(pick)])
    arrays: dict[str, Value] = {
        f.name: None if f.name in lacking else f.compute(pick) for f in fields
    }
    meta = dict(trace.meta)
    if annotate:
        meta["fields"] = [f.name for f in fields]
        meta["layer"], meta["head"], meta["query"] = query.layer, query.head, query.query
        if tv is not None:
            meta["token_view"] = tv.meta()
        rules = _rules(fields, query.measure)
        if rules:
            meta["rules"] = rules
        meta["measure"] = query.measure
    return Part(meta, arrays)


def _rules(fields: list[TraceField], measure: str) -> dict[str, str]:
    """What ``meta.rules`` states of the fields sent: each one's rule under the measure, and
    the measure's own (value_weighted, a field too) for a measured field without a rule of its
    own (view, thumbs)."""
    value = measure != "weights"
    measured = REGISTRY[measure].rule if value else None
    rules = {}
    for f in fields:
        rule = f.value_rule if value and f.value_rule else f.rule
        if rule:
            rules[f.name] = rule
        elif f.measured and measured:
            rules[measure] = measured
    return rules


# ---- JSON -------------------------------------------------------------------------------------


def json_body(part: Part) -> dict:
    """The part as one JSON object: the fields, then every array (tensors, which ``dumps``
    writes as nested arrays of their numbers)."""
    return {**part.meta, **part.arrays}


def json_pieces(part: Part) -> Iterator[bytes]:
    """``json_body(part)`` as compact UTF-8 JSON, in pieces: orjson writes each tensor's numbers
    from its memory (``attnviz.wire.jsonarrays``), a large array a row at a time
    (``jsonarrays.pieces``), each piece made as it is asked for. So only one piece's text need
    be alive at once (the server compresses each as it comes: a 128-token trace's largest
    array, 1.2M weights, is 15 MB of text, in pieces of 0.2 MB, a head each), and between two
    pieces another thread (the event loop) gets its turn, never waiting for a whole trace's
    numbers."""
    sep = b"{"
    for key, value in json_body(part).items():
        yield sep + dumps(key) + b":"
        yield from pieces(value)
        sep = b","
    yield b"}" if sep == b"," else b"{}"


def json_bytes(part: Part) -> bytes:
    """``json_body(part)`` as compact UTF-8 JSON: the pieces of ``json_pieces``, joined."""
    return b"".join(json_pieces(part))


# ---- Compact ----------------------------------------------------------------------------------


def compact_body(part: Part) -> bytes:
    """The part as a safetensors file (``attnviz.wire.compact``): the header's
    ``__metadata__["attnviz"]`` is the JSON of the other fields, the tensors keep their dtype."""
    return compact.encode(part.meta, part.arrays)


def json_numbers(trace: ComputedTrace, query: TraceQuery) -> int:
    """How many numbers ``select(trace, query)`` would hold, from the shapes alone (so that a
    JSON body over the cap is refused before anything is stacked)."""
    t = trace.tensors
    options = query.hide_special or query.merge_words
    lacking = trace.meta.get("unavailable") or {}
    shape = Shape(
        t.layers,
        t.heads,
        t.n,
        t.states.shape[-1],
        t.cfg.d_head,
        len(trace_view(trace, query).groups) if options else t.n,  # rows under the options
        t.positional is not None,
        vision_numbers(t, query),
    )
    return _numbers(query, shape, lacking)


def shape_numbers(query: TraceQuery, cfg: TransformerConfig, tokens: int) -> int:
    """How many numbers the part ``query`` names would hold for a trace of ``tokens`` on a model
    of ``cfg``, before it is computed (at most: every token a row under the token options, a
    positional table, every array the model could lack counted; an image's arrays not)."""
    shape = Shape(cfg.n_layers, cfg.n_heads, tokens, cfg.d_model, cfg.d_head, tokens, True, 0)
    return _numbers(query, shape, {})


def _numbers(query: TraceQuery, shape: Shape, lacking: Mapping[str, str]) -> int:
    """The numbers of the fields ``query`` names (each its field's count), those the model
    lacks left out."""
    return sum(REGISTRY[n].numbers(query, shape) for n in query.names() if n not in lacking)
