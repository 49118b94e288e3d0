"""The trace's fields: every array a request can name in ``fields``, one ``TraceField`` each,
declared in the module of its kind and registered in the wire order below (the full JSON
trace's arrays in its order among them). ``attnviz.services.parts`` computes a request's
fields by looking them up here, ``GET /api/fields`` serves the catalogue to the page, and the
query's schema names them from it.

A new field is a ``TraceField`` in a module here (its shape in words, its numbers, its
computation, its checks), that module imported below, and a view that draws it
(docs/contributing.md, "Adding a trace field").
"""

# isort: off
# Each module registers its fields on import: the order here is the wire order.
from attnviz.capture.fields import inputs, heads, states, entropy, projection  # noqa: F401
from attnviz.capture.fields import view, thumbs, aggregates, value_weighted  # noqa: F401
from attnviz.capture.fields import predictions, attribution, vision  # noqa: F401

# isort: on
from attnviz.capture.fields.base import (
    REGISTRY,
    Ask,
    Bounds,
    Pick,
    Shape,
    TraceField,
    TraceSource,
    Value,
    Want,
    index,
    layer_wants,
)

__all__ = [
    "REGISTRY",
    "Ask",
    "Bounds",
    "Pick",
    "Shape",
    "TraceField",
    "TraceSource",
    "Value",
    "Want",
    "index",
    "layer_wants",
]
