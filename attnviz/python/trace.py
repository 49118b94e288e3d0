"""A trace in Python (``attnviz.Trace``): its data (``attnviz.python.data``) and what shows
it: one offline HTML file of its views, its tables as CSV, its display in a notebook."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attnviz.python.data import TraceData


class Trace(TraceData):
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
        from attnviz.python.html import frame

        return frame(self)
