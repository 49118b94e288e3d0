"""A trace's tables as CSV: one head's weights, a layer's mean over its heads, a layer's hidden
states, or a toy trace's table (the layout the toy lab imports). ``Trace.to_csv`` calls
``to_csv`` here; the page writes the same bytes for the same selection (``static/js/core/csv.js``).

Layout (RFC 4180, through the standard ``csv`` module, rows ending in CRLF): a header row, then
one row per token. Text (token labels, axis names, the corner cell) is always quoted, so that a
label such as ``3`` or `` the`` reads back as text; numbers are bare, and exact: a float32 with
the fewest digits that read back as that float32 (as the JSON trace writes it), a float64 with
the fewest that read back as that float64, both spelled as JavaScript's ``String(number)``
spells them (``1e-7``, ``0.1``), so that ``float(cell)`` (or ``numpy.float32`` of it) is the
trace's number again and the page's CSV is this one byte for byte.

>>> t = attnviz.trace(text="The animal didn't cross the street")
>>> print(to_csv(t, "attention", layer=3, head=5)[:40])
"query \\ key","[CLS]","the","animal",...
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attnviz.errors import TraceError
from attnviz.numbers import js_number

if TYPE_CHECKING:
    from attnviz.python.data import TraceData

WHATS = ("attention", "layer_mean", "hidden_states", "embeddings", "table")
CORNERS = {"attention": "query \\ key", "layer_mean": "query \\ key",
           "hidden_states": "token", "embeddings": "token", "table": "token"}  # fmt: skip


class _Number:
    """A number's exact text, which ``csv.QUOTE_NONNUMERIC`` writes bare (it is a number)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __float__(self) -> float:
        return float(self.text)

    def __str__(self) -> str:
        return self.text


def exact_texts(values: np.ndarray) -> list[str]:
    """Each number of a 1-d array as the page's ``exact()`` writes it: float32 with the fewest
    digits that read back as that float32, anything else as a float64 in full."""
    if values.dtype == np.float32:
        return [js_number(str(v)) for v in values]
    return [js_number(repr(float(v))) for v in values.astype(np.float64)]


def write_rows(corner: str, columns: Sequence[str], labels: Sequence[str],
               matrix: np.ndarray) -> str:  # fmt: skip
    """The CSV of a labelled matrix: a header (``corner``, then ``columns``), then one row per
    label with its numbers."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\r\n")
    writer.writerow([corner, *columns])
    for label, row in zip(labels, matrix, strict=True):
        writer.writerow([label, *(_Number(t) for t in exact_texts(np.asarray(row)))])
    return out.getvalue()


def _array(trace: TraceData, name: str, what: str) -> np.ndarray:
    if name not in trace.arrays:
        have = ", ".join(trace.arrays) or "none"
        raise TraceError(f"what: {what!r} needs the {name!r} array, which this trace lacks "
                         f"(it has: {have}); ask for a part with fields={name}")  # fmt: skip
    return trace.arrays[name]


def _pick(trace: TraceData, name: str, value: int | None, count: int, what: str) -> int:
    """Where ``layer`` or ``head`` ``value`` sits in the trace's per-head arrays: the value
    itself, or 0 in a part that holds that one layer or head alone."""
    plural = f"{name}s"
    if value is None:
        raise TraceError(f"{name}: required for what={what!r} (0 to {count - 1})")
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TraceError(f"{name}: must be an integer, got {type(value).__name__}")
    if not 0 <= value < count:
        raise TraceError(f"{name}: {value} is out of range: the trace has {count} {plural} "
                         f"(0 to {count - 1})")  # fmt: skip
    held = trace.meta.get(name)
    if held is None:
        return int(value)
    if value != held:
        raise TraceError(f"{name}: this part holds {name} {held} alone, not {value}")
    return 0


def _unused(what: str, **given: Any) -> None:
    for name, value in given.items():
        if value is not None:
            raise TraceError(f"{name}: not used by what={what!r}; leave it out")


def _rows(trace: TraceData) -> list[str]:
    """The query rows of a per-head array: every token, or the one a part's ``query`` picks."""
    q = trace.meta.get("query")
    return trace.tokens if q is None else [trace.tokens[q]]


def to_csv(
    trace: TraceData,
    what: str,
    *,
    layer: int | None = None,
    head: int | None = None,
    path: str | Path | None = None,
) -> str:
    """One of the trace's tables as CSV text (also written to ``path``, if given, as UTF-8).

    ``what``:

    - ``"attention"``: head ``head`` of layer ``layer`` (both 0-based): a row per query, a
      column per key, both labelled by token; each row sums to 1.
    - ``"layer_mean"``: layer ``layer``'s mean over its heads, in float64 (the API's
      ``head_mean``).
    - ``"hidden_states"``: ``hidden_states[layer]``, a row per token and the columns ``d0`` to
      ``d{d-1}``; ``layer`` runs from 0 (the input, after any positional table) to the trace's
      ``layers`` (the last layer's output).
    - ``"embeddings"`` (or ``"table"``): the input rows under the trace's axis names, a toy
      trace's table as the toy lab's *Import CSV* reads it.

    >>> t = attnviz.trace(tokens=["a", "b"], embeddings=[[1, 0], [0, 1]])
    >>> print(to_csv(t, "table"), end="")
    "token","x1","x2"
    "a",1,0
    "b",0,1
    """
    if what not in WHATS:
        raise TraceError(f"what: must be one of {', '.join(WHATS)}; got {what!r}")
    corner = CORNERS[what]
    if what in ("attention", "layer_mean"):
        weights = _array(trace, "attentions", what)
        li = _pick(trace, "layer", layer, trace.layers, what)
        if what == "attention":
            hi = _pick(trace, "head", head, trace.heads, what)
            matrix = weights[li, hi]
        else:
            _unused(what, head=head)
            if trace.meta.get("head") is not None or weights.shape[1] != trace.heads:
                raise TraceError("what: 'layer_mean' needs every head of the layer; this part "
                                 f"holds head {trace.meta.get('head')} alone")  # fmt: skip
            stack = weights[li].astype(np.float64)
            total = stack[0].copy()
            for h in range(1, stack.shape[0]):  # in order, as the server's head_mean sums
                total += stack[h]
            matrix = total / stack.shape[0]
        text = write_rows(corner, trace.tokens, _rows(trace), matrix)
    elif what == "hidden_states":
        _unused(what, head=head)
        states = _array(trace, "hidden_states", what)
        li = _pick_state(layer, states.shape[0])
        matrix = states[li]
        text = write_rows(corner, [f"d{j}" for j in range(matrix.shape[1])], trace.tokens, matrix)
    else:
        _unused(what, layer=layer, head=head)
        rows = _array(trace, "embeddings", what)
        axes = list(trace.meta.get("axes") or [f"x{j + 1}" for j in range(rows.shape[1])])
        text = write_rows(corner, axes, trace.tokens, rows)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8", newline="")
    return text


def _pick_state(layer: int | None, count: int) -> int:
    if layer is None:
        raise TraceError(f"layer: required for what='hidden_states' (0, the input, to "
                         f"{count - 1}, the last layer's output)")  # fmt: skip
    if isinstance(layer, bool) or not isinstance(layer, int | np.integer):
        raise TraceError(f"layer: must be an integer, got {type(layer).__name__}")
    if not 0 <= layer < count:
        raise TraceError(f"layer: {layer} is out of range: hidden states run from 0 (the "
                         f"input) to {count - 1} (the last layer's output)")  # fmt: skip
    return int(layer)
