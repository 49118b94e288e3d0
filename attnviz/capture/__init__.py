"""The trace capture, beside the engine: one forward of a model on one sequence, kept small
(``TraceTensors``: q, k, v and the hidden states, from which scores and weights are recomputed a
head or a layer at a time), and what a model predicts from it (the readouts and the logit lens).

It needs nothing above the engine, so that the loaders (``attnviz.pretrained``) and the services
alike build on it:

- ``rules``: how a layer's scores and weights are made from q and k (``AttentionRule``), and how
  the trace's meta says it;
- ``tensors``: one trace's tensors and what is derived from them (``TraceTensors``);
- ``trace``: the forward that captures them (``capture_trace``) and the trace the cache keeps
  (``ComputedTrace``);
- ``lens``: the readouts (a hidden state to scores over the vocabulary), the top-k tokens and
  the logit lens.
- ``decompose``: a clean run (every norm's scale, each head's output) and the residual stream
  as a sum of components, every norm frozen;
- ``attribution``: exact attributions from it: a score by the query's and the key's components
  (``qk_attribution``), a logit by each component (``logit_attribution``);
- ``progress``: how far a long computation has got (each layer of the forward, of the
  thumbnails), told to the listener of the thread computing it (a trace job).
"""

from attnviz.capture.lens import Readout
from attnviz.capture.rules import AttentionRule, EngineRule, attention_meta
from attnviz.capture.tensors import KEEP_FORWARD_BYTES, KEEP_SQUARE_BYTES, QKV, TraceTensors
from attnviz.capture.trace import ComputedTrace, block_w_o, capture_trace, layer_qkv, qk_names

__all__ = [
    "KEEP_FORWARD_BYTES",
    "KEEP_SQUARE_BYTES",
    "QKV",
    "AttentionRule",
    "ComputedTrace",
    "EngineRule",
    "Readout",
    "TraceTensors",
    "attention_meta",
    "block_w_o",
    "capture_trace",
    "layer_qkv",
    "qk_names",
]
