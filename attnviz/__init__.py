"""attnviz: a web-based attention visualizer backed by a transparent PyTorch transformer.

From Python: ``attnviz.trace(text=...)`` computes a trace in this process, ``attnviz.Client(url)``
asks a running server; both give a ``Trace`` of numpy arrays under the API's names.
``attnviz.long_text(text=...)`` reads a long text without a tokens x tokens matrix.
``trace.save_html(path)`` writes one offline file of its views; ``attnviz.show(trace)`` shows
them in a notebook."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from attnviz.version import __version__ as __version__

# torch warns once at import when NumPy is absent (it is a dependency: JSON arrays go through it).
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

if TYPE_CHECKING:
    from attnviz.errors import TraceError
    from attnviz.python.client import Client
    from attnviz.python.local import trace
    from attnviz.python.long import LongText, long_text
    from attnviz.python.show import show
    from attnviz.python.trace import Trace

__all__ = ["Client", "LongText", "Trace", "TraceError", "long_text", "show", "trace"]

# Imported on first use: `import attnviz` stays light (the server's CLI imports it first).
_LAZY = {
    "trace": "attnviz.python.local",
    "long_text": "attnviz.python.long",
    "LongText": "attnviz.python.long",
    "Client": "attnviz.python.client",
    "Trace": "attnviz.python.trace",
    "TraceError": "attnviz.errors",
    "show": "attnviz.python.show",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'attnviz' has no attribute {name!r}")
