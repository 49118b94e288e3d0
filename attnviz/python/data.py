"""A trace's data in Python: the API's fields and arrays as numpy, read from the compact form,
and the source its parts are asked of. ``attnviz.python.trace.Trace`` adds what shows it (its
HTML file, its CSV tables, its notebook display); the modules that build those take this.

In-process (``attnviz.trace``) and over HTTP (``attnviz.Client``) a trace is the same bytes,
the compact form the page reads (a safetensors file whose header's ``__metadata__["attnviz"]``
is the JSON of every other field), and one ``Trace`` reads them: the numbers are the ones the
JSON trace writes, array for array (tested).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from attnviz.errors import TraceError
from attnviz.wire.compact import decode

# A part's query parameters (``TraceQuery``) -> the compact form of that part.
Source = Callable[[Mapping[str, Any]], bytes]
T = TypeVar("T", bound="TraceData")


@dataclass(frozen=True)
class TraceData:
    """The data of one trace (or a part of one), which ``Trace`` adds its files and display to:
    ``meta``, every field that is not an array (``tokens``, ``layers``, ``heads``, ``model``...),
    and ``arrays``, numpy arrays under the API's names and shapes (``attentions`` (layers, heads,
    n, n), ``hidden_states`` (layers + 1, n, d), ``projection.coords``...); ``part`` asks its
    source for more."""

    meta: dict
    arrays: dict[str, np.ndarray]
    _source: Source | None = field(default=None, repr=False, compare=False)
    # The trace's images as a one-file export embeds them (PNG data URLs, at most 512 px on
    # their long side: ``attnviz.python.pictures``), in order; none for a text alone.
    pictures: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def from_compact(
        cls: type[T], body: bytes, source: Source | None = None, pictures: Sequence[str] = ()
    ) -> T:
        meta, arrays = decode(body, to="numpy")
        return cls(meta, arrays, source, tuple(pictures))

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

    def part(self: T, **query: Any) -> T:
        """A part of this trace, as ``POST /api/trace`` gives it for these query parameters
        (``fields``, ``layer``, ``head``, ``query``, ``hide_special``, ``merge_words``, ``thumb``
        ...): ``trace.part(layer=3, head=5)``, ``trace.part(fields="view", merge_words=True)``."""
        params = {k: v for k, v in query.items() if v is not None}
        return type(self).from_compact(self.source(params), self.source, self.pictures)

    def __repr__(self) -> str:
        what = self.meta.get("model") or self.meta.get("mode", "trace")
        shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in self.arrays.items())
        return f"Trace({what}, {len(self.meta.get('tokens', []))} tokens: {shapes})"
