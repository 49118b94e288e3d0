"""A trace in Python: the API's fields and arrays as numpy, from the compact form.

In-process (``attnviz.trace``) and over HTTP (``attnviz.Client``) a trace is the same bytes,
the compact form the page reads (a safetensors file whose header's ``__metadata__["attnviz"]``
is the JSON of every other field), and one ``Trace`` reads them: the numbers are the ones the
JSON trace writes, array for array (tested).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# A part's query parameters (``TraceQuery``) -> the compact form of that part.
Source = Callable[[Mapping[str, Any]], bytes]


class TraceError(ValueError):
    """A request the server (or the in-process engine) refused; the message names the field."""


def read_compact(body: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    """The fields and the arrays of a compact body. An array of an object (``projection``) is
    named ``projection.coords``, as in the file."""
    from safetensors.numpy import load

    if len(body) < 8:
        raise TraceError("the body is not the compact form (too short)")
    (n,) = struct.unpack("<Q", body[:8])
    header = json.loads(body[8 : 8 + n])
    meta = json.loads(header.get("__metadata__", {}).get("attnviz", "{}"))
    return meta, load(body)


@dataclass(frozen=True)
class Trace:
    """One trace (or a part of one): ``meta``, every field that is not an array (``tokens``,
    ``layers``, ``heads``, ``model``...), and ``arrays``, numpy arrays under the API's names and
    shapes (``attentions`` (layers, heads, n, n), ``hidden_states`` (layers + 1, n, d),
    ``projection.coords``...).

    >>> t = attnviz.trace(model="all-MiniLM-L6-v2", text="The animal didn't cross the street")
    >>> t.tokens[:3], t["attentions"].shape
    (['[CLS]', 'the', 'animal'], (6, 12, 10, 10))
    >>> t.part(layer=3, head=5)["attentions"].shape  # the same part the page asks for
    (1, 1, 10, 10)
    """

    meta: dict
    arrays: dict[str, np.ndarray]
    _source: Source | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_compact(cls, body: bytes, source: Source | None = None) -> Trace:
        meta, arrays = read_compact(body)
        return cls(meta, arrays, source)

    def __getitem__(self, name: str) -> Any:
        """An array by its name (``"attentions"``, ``"projection.coords"``), else a field."""
        if name in self.arrays:
            return self.arrays[name]
        if name in self.meta:
            return self.meta[name]
        raise KeyError(f"no array or field {name!r} (arrays: {', '.join(self.arrays)})")

    def __contains__(self, name: object) -> bool:
        return name in self.arrays or name in self.meta

    def __iter__(self) -> Iterator[str]:
        return iter(self.arrays)

    @property
    def tokens(self) -> list[str]:
        return list(self.meta["tokens"])

    @property
    def layers(self) -> int:
        return int(self.meta["layers"])

    @property
    def heads(self) -> int:
        return int(self.meta["heads"])

    @property
    def source(self) -> Source:
        """The function that gives this trace's parts in the compact form: query parameters
        (``TraceQuery``'s) -> bytes."""
        if self._source is None:
            raise TraceError("this trace was read from bytes alone: it has no source to ask")
        return self._source

    def part(self, **query: Any) -> Trace:
        """A part of this trace, as ``POST /api/trace`` gives it for these query parameters
        (``fields``, ``layer``, ``head``, ``query``, ``hide_special``, ``merge_words``, ``thumb``
        ...): ``trace.part(layer=3, head=5)``, ``trace.part(fields="view", merge_words=True)``."""
        params = {k: v for k, v in query.items() if v is not None}
        return Trace.from_compact(self.source(params), self.source)

    def to_html(self, **selection: Any) -> str:
        """One self-contained HTML file of this trace's views, drawn offline by the page's own
        modules (``attnviz.python.html.standalone_html``: ``layer``, ``head``, ``query``,
        ``hide_special``, ``merge_words``, ``views``, ``budget``)."""
        from attnviz.python.html import standalone_html

        return standalone_html(self, **selection)

    def save_html(self, path: str | Path, **selection: Any) -> Path:
        """``to_html(**selection)`` written to ``path``: a file to open anywhere, offline.

        >>> t.save_html("trace.html", layer=3, head=5)
        """
        from attnviz.python.html import save_html

        return save_html(self, path, **selection)

    def to_csv(
        self, what: str, *, layer: int | None = None, head: int | None = None,
        path: str | Path | None = None,
    ) -> str:  # fmt: skip
        """One table of this trace as CSV, numbers exact (``attnviz.python.tables.to_csv``):
        ``what`` is ``"attention"`` (one head: ``layer``, ``head``), ``"layer_mean"``
        (``layer``), ``"hidden_states"`` (``layer``, 0 the input) or ``"table"`` (a toy trace's
        table, as the toy lab's Import CSV reads it); written to ``path`` as well when given.

        >>> t.to_csv("attention", layer=2, head=5)
        """
        from attnviz.python.tables import to_csv

        return to_csv(self, what, layer=layer, head=head, path=path)

    def _repr_html_(self) -> str:
        """The views in a notebook: the file, in an iframe of its own (see ``attnviz.show``)."""
        from attnviz.python.show import frame

        return frame(self)

    def __repr__(self) -> str:
        what = self.meta.get("model") or self.meta.get("mode", "trace")
        shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in self.arrays.items())
        return f"Trace({what}, {len(self.meta.get('tokens', []))} tokens: {shapes})"
