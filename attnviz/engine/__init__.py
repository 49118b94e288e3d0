"""The engine: a transparent transformer with named hook points, and what is computed from it."""

from attnviz.engine.config import TransformerConfig
from attnviz.engine.hooks import HookPoint, act_name, capture, hook_points
from attnviz.engine.layout import Layout
from attnviz.engine.model import Transformer

__all__ = [
    "HookPoint",
    "Layout",
    "Transformer",
    "TransformerConfig",
    "act_name",
    "capture",
    "hook_points",
]
