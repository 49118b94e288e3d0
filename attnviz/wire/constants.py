"""The wire format's constants: the compact form's media type and the measures. The names of a
trace's arrays (what ``fields`` may ask for) and the rule each is sent with (``meta.rules``)
are their fields' (``attnviz.capture.fields``)."""

from __future__ import annotations

from typing import Literal, get_args

# The compact form: a safetensors file (8-byte header length, JSON header, raw arrays) whose
# header's ``__metadata__["attnviz"]`` holds the trace's other fields as JSON.
COMPACT_MEDIA_TYPE = "application/vnd.attnviz.trace+safetensors"

# ``measure``: what view, thumbs and the head aggregates show. Under value_weighted they are
# computed from the value_weighted field instead of the weights; their rules then read as their
# fields' ``value_rule`` says.
Measure = Literal["weights", "value_weighted"]
MEASURES: tuple[str, ...] = get_args(Measure)
