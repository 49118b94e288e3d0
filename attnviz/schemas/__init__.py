"""The HTTP API's request and response schemas, one module per router of ``attnviz.api``.

- ``common``: what several resources share: the strict base of every request (``Strict``), the
  field types of a toy table, the toy model's config (``ToyConfig``) and a run's state.
- ``trace``: ``POST /api/trace``: the toy and text trace requests, the query parameters
  (``TraceQuery``), the traces sent back. ``export`` and ``learn`` take its requests.
- ``models``: ``GET /api/models``: the models offered, the example heads, the limits.
- ``atlas``: ``GET /api/models/{name}/atlas``: every head scored.
- ``corpus``: ``POST /api/models/{name}/corpus``: a set of texts' queries and keys, the heads
  clustered.
- ``presets``: ``GET /api/presets``: the toy lab's example tables.
- ``health``: ``GET /healthz``: the server's version, device and load.
- ``train``: ``/api/train``: a training run, its options and state, and a run's claims
  (``TrainClaim``, which ``recurrent`` reuses).
- ``recurrent``: ``/api/recurrent``: the transformer against an LSTM and a GRU.
- ``export``: ``POST /api/export``: a trace request and the view the file opens on.
- ``learn``: ``/api/learn``: the steps and a step's check.

Import each name from the module that defines it; this package re-exports nothing. Elsewhere:
the caps (``Limits``, ``LIMITS``) are ``attnviz.limits``; the wire format's constants (the compact
media type, the arrays' names and rules) are ``attnviz.wire.constants``; ``Positional`` and
``Norm`` are the engine's (``attnviz.engine.config``); a model's backend is
``attnviz.pretrained.folder.Backend``.
"""
