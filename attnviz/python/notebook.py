"""A notebook carries the page's code once, however many displays it has.

Each display is its page in an ``<iframe srcdoc>`` of its own (``attnviz.python.html.Display``),
but in a notebook (a Jupyter kernel) the page's code, about 0.84 MB (the CSS, the loader, the ES
modules, Plotly's partial bundle, the glossary), is not in every display: the first display of a
kernel session carries it, in a script that puts each piece in the notebook's window once
(``window.attnvizShared``, keyed by attnviz's version and a hash of the piece), and every
display's page names the pieces it needs and waits for them (``static/js/offline/notebook.js``).
A saved notebook reopened, or exported to one HTML file, runs its outputs' scripts in order: the
first display's output defines the code, the later ones find it.

Which output carries a piece: the first that needs it in this kernel session, and again the next
display of that same cell when the cell is run again (its new output replaces the one that
carried it; the front end names the cell in its request, as JupyterLab and VS Code do). A
notebook that keeps each output in a frame of its own origin (Google Colab) gets whole pages, as
does any display outside a kernel (``attnviz.show`` returning the display, ``Trace.to_html``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from attnviz.python.page import _script_json

# Each piece carried in this kernel session: by its key, the (cell id, request id) whose output
# carried it last.
_CARRIED: dict[str, tuple[str | None, str | None]] = {}


def in_notebook() -> bool:
    """Whether this process is a notebook's kernel whose outputs share one window."""
    if "google.colab" in sys.modules:  # each output in a frame of its own origin
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _request() -> tuple[str | None, str | None]:
    """The cell the kernel runs now (the front end's ``cellId``, None where it sends none) and
    the request's id."""
    from IPython import get_ipython

    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    parent: Mapping = {}
    if kernel is not None and hasattr(kernel, "get_parent"):
        parent = kernel.get_parent("shell") or {}
    if not parent:
        parent = getattr(shell, "parent_header", None) or {}
    cell = (parent.get("metadata") or {}).get("cellId")
    request = (parent.get("header") or {}).get("msg_id")
    return (cell if isinstance(cell, str) else None, request if isinstance(request, str) else None)


def to_carry(keys: list[str], request: tuple[str | None, str | None]) -> list[str]:
    """Which of ``keys`` the output of ``request`` (cell id, request id) carries: those no
    output carried yet this session, and those its own cell carried in an earlier run."""
    cell, ask = request
    out = []
    for key in keys:
        owner = _CARRIED.get(key)
        if owner is None or (cell is not None and owner[0] == cell and owner[1] != ask):
            _CARRIED[key] = request
            out.append(key)
    return out


def carrier(code: Mapping[str, str], request: tuple[str | None, str | None] | None = None) -> str:
    """The script that puts ``code``'s pieces (key: text) in the notebook's window, each once,
    for the pieces this output carries (see ``to_carry``; "" when it carries none), and tells
    the displays waiting for them."""
    keys = to_carry(list(code), request or _request())
    if not keys:
        return ""
    pieces = _script_json({k: code[k] for k in keys})
    return (
        "<script>(function(w){var s=w.attnvizShared=w.attnvizShared||{},a="
        + pieces
        + ";for(var k in a)if(!(k in s))s[k]=a[k];"
        'w.dispatchEvent(new Event("attnviz-shared"))})(window)</script>'
    )


def forget() -> None:
    """A new session: no piece carried yet (the tests' fresh kernel)."""
    _CARRIED.clear()
