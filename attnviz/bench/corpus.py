"""``attnviz bench --corpus``: the corpus view's time for one head over 5,000 tokens of Python's
documentation (the default set), on a model of GPT-2's shape (random weights, ``bench.atlas``)
and on the default model when it is installed: the first request (the set tokenized and run,
every layer's queries and keys kept, the heads clustered, the head projected), a change of head
(the kept set: a projection alone) and a change of layer (kept too when every layer fits the
set's byte budget, else the set is run again for it). The first request's CPU time (every
thread's) says how much of its wall time a busy machine took from it."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

import torch

from attnviz.bench.atlas import builtin, gpt2_shape
from attnviz.limits import LIMITS
from attnviz.pretrained.registry import ServedModel
from attnviz.schemas.corpus import CorpusRequest, CorpusResponse
from attnviz.services.corpus import CorpusCache

TARGET_S = 3.0  # issue 20: 5,000 tokens for one head within 3 s (GPT-2-size, this CPU)
TEXT = "I sat on the river bank"


@dataclass(frozen=True)
class CorpusRow:
    model: str
    tokens: int
    texts: int
    first_s: float
    first_cpu_s: float  # the process's CPU time over the first request (all threads)
    run_s: float  # of the first: the set's run
    cluster_s: float
    head_s: float
    layer_s: float


def measure(m: ServedModel, tokens: int = LIMITS.default_corpus_tokens) -> CorpusRow:
    cache = CorpusCache()
    cap = m.cfg.n_ctx
    L = m.cfg.n_layers

    def ask(layer: int, head: int) -> tuple[float, CorpusResponse]:
        req = CorpusRequest(max_tokens=tokens, layer=layer, head=head, text=TEXT)
        began = time.perf_counter()
        got = cache.corpus(m, req, cap)
        return time.perf_counter() - began, got

    cpu = time.process_time()
    first, r = ask(L - 1, 0)
    cpu = time.process_time() - cpu
    head, _ = ask(L - 1, 1)
    layer, _ = ask(L // 2, 1)
    return CorpusRow(m.name, tokens, len(r.texts) - 1, first, cpu, r.seconds.run,
                     r.seconds.cluster, head, layer)  # fmt: skip


def run(device: str = "cpu") -> list[CorpusRow]:
    where = torch.device(device)
    return [measure(m) for m in [gpt2_shape(where), *builtin(where)]]


def table(rows: list[CorpusRow]) -> str:
    out = [
        "attnviz bench --corpus: one head's queries and keys over a set of Python's documentation "
        f"(torch threads {torch.get_num_threads()}; target: {TARGET_S:g} s for 5,000 tokens of "
        "a GPT-2-size model)",
        "",
        "| model | tokens | texts | first request (s) | its CPU time (s) | of which run, "
        "cluster (s) | head change (s) | layer change (s) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        out.append(
            f"| {r.model} | {r.tokens:,} | {r.texts} | {r.first_s:.2f} | {r.first_cpu_s:.1f} | "
            f"{r.run_s:.2f}, {r.cluster_s:.3f} | {r.head_s:.3f} | {r.layer_s:.3f} |"
        )
    return "\n".join(out)


def as_json(rows: list[CorpusRow]) -> str:
    return json.dumps([asdict(r) for r in rows], separators=(",", ":"))
