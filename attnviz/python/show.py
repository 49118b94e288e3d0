"""The views in a notebook (Jupyter, JupyterLab, VS Code): ``attnviz.show``.

Each display (``attnviz.python.html.Display``) is its page in an ``<iframe srcdoc>`` of its own:
its ids, globals and CSS never meet another display's or the notebook's, it needs no require.js,
no CDN and no server. In a notebook the page's code is carried once, by the first display of the
kernel session (``attnviz.python.notebook``); elsewhere a display is the whole one-file page.

>>> attnviz.show(t)                                  # a Trace
>>> attnviz.show(t, views=["model", "qk"], layer=2, head=3)
>>> out = hf_model(**inputs, output_attentions=True)
>>> attnviz.show(out.attentions, tokens)             # what BertViz's head_view takes
>>> attnviz.show(model=hf_model, tokenizer=tok, text="The animal didn't cross the street")
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from attnviz.errors import TraceError
from attnviz.pretrained.tokenize import readable_labels, readable_text
from attnviz.python.html import GIVEN, Display, ExportError, display
from attnviz.python.trace import Trace

ATTENTION_ONLY = (
    "{name}: a trace of attention weights alone (given as a tuple of tensors): it has no "
    "queries, keys or hidden states; trace the model itself (attnviz.show(model=..., "
    "tokenizer=..., text=...)) for them"
)
_SPECIAL = re.compile(r"^(\[[A-Z]+\]|<\|?[a-z_]+\|?>|</?s>|<pad>|<unk>|<mask>)$")


def attention_trace(
    attention: Sequence[Any], tokens: Sequence[str], *, name: str = "attention"
) -> Trace:
    """A trace of attention weights alone: ``attention`` as transformers returns it with
    ``output_attentions=True`` (one tensor per layer, (1, heads, n, n), or (heads, n, n)),
    ``tokens`` their n labels. The views of weights draw; queries, keys and the hidden states
    are marked unavailable (the query-key view says why)."""
    import torch

    from attnviz.capture import ComputedTrace, TraceTensors
    from attnviz.engine import TransformerConfig
    from attnviz.schemas.trace import TraceQuery
    from attnviz.services.parts import compact_body, select

    given = [str(t) for t in tokens]
    tokens = readable_labels(given)  # a tokenizer's own strings ("Ġand") read as text (" and")
    n = len(tokens)
    layers = []
    for i, a in enumerate(attention):
        t = torch.as_tensor(a.detach().cpu() if hasattr(a, "detach") else a).float()
        if t.ndim == 4:
            if t.shape[0] != 1:
                raise ExportError(f"attention[{i}]: a batch of {t.shape[0]}; give one sequence")
            t = t[0]
        if t.ndim != 3 or t.shape[1:] != (n, n):
            raise ExportError(
                f"attention[{i}]: shape {tuple(t.shape)}, not (1, heads, {n}, {n}) for {n} tokens"
            )
        layers.append(t.contiguous())
    if not layers:
        raise ExportError("attention: no layers (a tuple of per-layer tensors)")
    heads = layers[0].shape[0]
    if any(t.shape[0] != heads for t in layers):
        raise ExportError("attention: every layer must have the same number of heads")
    L = len(layers)
    cfg = TransformerConfig(d_model=heads, n_layers=L, n_heads=heads, n_ctx=max(n, 1))
    reason = ATTENTION_ONLY.format(name=name)
    lacking = ("queries", "keys", "values", "scores", "hidden_states", "embeddings",
               "distances", "score_range", "qk_attribution", "logit_attribution")  # fmt: skip
    tensors = TraceTensors(
        cfg=cfg,
        q=None,
        k=None,
        v=None,
        # No hidden states: three zero dimensions, for which the projection is null (the
        # trajectory view then says it has none to draw).
        states=torch.zeros(L + 1, n, 3),
        embeddings=torch.zeros(n, 3),
        positional=None,
        forward_pattern=layers,
        no_qk_reason=reason,
    )
    causal = all(bool(torch.all(t.triu(1) == 0)) for t in layers)
    meta = {
        "mode": "text",
        "tokens": tokens,
        "axes": [],
        "n": n,
        "d": 0,
        "layers": L,
        "heads": heads,
        "head_dim": 0,
        "device": "cpu",
        "model": name,
        "family": "",
        "backend": GIVEN,  # no model ran here: the caller gave the weights
        "unavailable": {f: f"{f}: {reason}" for f in lacking},
        "causal": causal,
        "text": readable_text(given) or ("".join(tokens) if tokens != given else " ".join(tokens)),
        "special": [bool(_SPECIAL.match(t)) for t in tokens],
        "words": None,
        "offsets": None,
        "generated": None,
    }
    computed = ComputedTrace(meta, tensors)

    def source(params: Any) -> bytes:
        return compact_body(select(computed, TraceQuery(**params)))

    return Trace.from_compact(source({"fields": "thumbs", "thumb": 0}), source)


def show(
    trace: Any = None,
    tokens: Sequence[str] | None = None,
    *,
    views: Sequence[str] | None = None,
    model: Any = None,
    tokenizer: Any = None,
    text: str | None = None,
    image: Any = None,
    **selection: Any,
) -> Display | None:
    """Show the views in the notebook: of a ``Trace``; of attention weights and their tokens
    (``show(outputs.attentions, tokens)``, as BertViz takes them); or of a transformers model
    object traced here (``show(model=m, tokenizer=tok, text=...)``, as ``attnviz.trace`` traces
    it; a model's name or folder too: ``show(model="all-MiniLM-L6-v2", text=...)``, with
    ``image=`` for a model that reads images). ``views``: some of model, head, qk, traj, gen,
    why, lens, picture; ``selection``: layer, head, query, key (Why this score's), hide_special,
    merge_words, budget. Under IPython it is displayed at once (and None returned, so it is not
    shown twice); elsewhere the display is returned (its ``_repr_html_``
    is the iframe)."""
    if model is not None or tokenizer is not None or text is not None or image is not None:
        if trace is not None or tokens is not None:
            raise TraceError(
                "trace: give a Trace (or attention weights and their tokens), or model=, "
                "tokenizer= and text=, not both"
            )
        from attnviz.python.local import trace as traced

        trace = traced(model=model, tokenizer=tokenizer, text=text, image=image)
    elif tokens is not None:
        trace = attention_trace(trace, tokens)
        if views is None:
            views = ["model", "head", "qk"]  # (no hidden states: no trajectories)
    if not isinstance(trace, Trace):
        raise ExportError(
            f"trace: a Trace, attention weights and their tokens, or model=, tokenizer=, text= "
            f"(not {type(trace).__name__})"
        )
    shown = display(trace, views=views, **selection)
    try:
        from IPython import get_ipython
        from IPython.display import display as ipy_display
    except ImportError:
        return shown
    if get_ipython() is None:
        return shown
    ipy_display(shown)
    return None
