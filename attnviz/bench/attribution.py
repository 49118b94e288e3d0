"""``attnviz bench --attribution``: the attributions' time after a trace (issue 29), on a model of
GPT-2's shape (random weights with a fixed seed, ``bench.composition.randomised``; nothing
downloaded) at 512 tokens, and on the default model when it is installed (an encoder: no logit
attribution): the trace, then one QK attribution of the last layer's query on a key half way
back, asked as the page asks (``parts.select`` with ``fields=qk_attribution``: the first builds
the clean run from what the trace's forward recorded), another head's after it, and one direct
logit attribution of the last position's top prediction."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

import torch

from attnviz.bench.atlas import builtin, gpt2_shape
from attnviz.bench.composition import randomised
from attnviz.bench.harness import text_of
from attnviz.pretrained.folder import PretrainedModel
from attnviz.pretrained.registry import ModelRegistry, ServedModel
from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services.parts import select
from attnviz.services.text_trace import run_text_trace

QK_TARGET_S = 0.5  # issue 29: one QK attribution at 512 tokens of GPT-2's shape, after the trace
LOGIT_TARGET_S = 0.2  # and one logit attribution


@dataclass(frozen=True)
class AttributionRow:
    model: str
    tokens: int
    trace_s: float
    qk_first_s: float  # the first QK attribution of the trace (its clean run built)
    qk_again_s: float  # another head's, after it
    logit_s: float | None  # None: the model does not predict tokens


def _timed(trace, query: TraceQuery) -> float:
    began = time.perf_counter()
    select(trace, query)
    return time.perf_counter() - began


def measure(m: ServedModel, tokens: int) -> AttributionRow:
    text = text_of(m.tokenizer, min(tokens, m.cfg.n_ctx))
    began = time.perf_counter()
    trace = run_text_trace(TextTraceRequest(model=m.name, text=text), ModelRegistry([m]), None)
    traced = time.perf_counter() - began
    L, T = m.cfg.n_layers, trace.tensors.n
    ask = {"fields": "qk_attribution", "layer": L - 1, "query": T - 1, "key": T // 2}
    first = _timed(trace, TraceQuery(**ask, head=0))
    again = _timed(trace, TraceQuery(**ask, head=1))
    logit = None
    if m.cfg.unembed:
        logit = _timed(trace, TraceQuery(fields="logit_attribution", position=T - 1))
    return AttributionRow(m.name, T, traced, first, again, logit)


def run(tokens: list[int] | None = None, device: str = "cpu") -> list[AttributionRow]:
    where = torch.device(device)
    shape = gpt2_shape(torch.device("cpu"))
    assert isinstance(shape, PretrainedModel)
    randomised(shape).model.to(where)
    n = max(tokens or [512])
    return [measure(m, n) for m in [shape, *builtin(where)]]


def table(rows: list[AttributionRow]) -> str:
    out = [
        "attnviz bench --attribution: one QK and one direct logit attribution after a trace "
        f"(torch threads {torch.get_num_threads()}; targets at 512 tokens of GPT-2's shape: "
        f"QK within {QK_TARGET_S:g} s, logit within {LOGIT_TARGET_S:g} s)",
        "",
        "| model | tokens | trace (s) | QK, first (s) | QK, another head (s) | logit (s) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        logit = "-" if r.logit_s is None else f"{r.logit_s:.3f}"
        out.append(
            f"| {r.model} | {r.tokens} | {r.trace_s:.2f} | {r.qk_first_s:.3f} | "
            f"{r.qk_again_s:.3f} | {logit} |"
        )
    return "\n".join(out)


def as_json(rows: list[AttributionRow]) -> str:
    return json.dumps([asdict(r) for r in rows], separators=(",", ":"))
