"""``attnviz bench --composition``: the composition scores' time (every earlier head into every
later one, Q, K and V, from the weights) on a model of GPT-2's shape (12 layers x 12 heads,
d_model 768; its attention weights and norms drawn at random with a fixed seed, nothing
downloaded) and on the default model when it is installed: the scores computed, the answer
built (its JSON's size), and a second look, which the cache answers."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

import torch

from attnviz.bench.atlas import builtin, gpt2_shape
from attnviz.engine.model import Block
from attnviz.pretrained.folder import PretrainedModel
from attnviz.pretrained.registry import ServedModel
from attnviz.services.composition import CompositionCache, compute, response

TARGET_S = 5.0  # issue 29: 12 x 12 heads within 5 s


@dataclass(frozen=True)
class CompositionRow:
    model: str
    layers: int
    heads: int
    scores_s: float  # composition_scores: the three kinds
    answer_s: float  # the answer built from them (the JSON grids)
    json_bytes: int
    cached_ms: float


def randomised(m: PretrainedModel, seed: int = 0) -> PretrainedModel:
    """``m`` with every attention weight and norm scale drawn at random (GPT-2's scale, 0.02;
    the norms near 1): a model whose weights start at zero has no scores (0 / 0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for block in m.model.blocks:
            assert isinstance(block, Block)
            for w in (block.attn.W_Q, block.attn.W_K, block.attn.W_V, block.attn.W_O):
                w.copy_(0.02 * torch.randn(w.shape, generator=g))
            if block.ln1 is not None and block.ln1.w is not None:
                block.ln1.w.copy_(1 + 0.1 * torch.randn(block.ln1.w.shape, generator=g))
    return m


def measure(m: ServedModel) -> CompositionRow:
    began = time.perf_counter()
    c = compute(m)
    scores = time.perf_counter() - began
    began = time.perf_counter()
    answer = response(m.name, c)
    built = time.perf_counter() - began
    size = len(answer.model_dump_json())
    cache = CompositionCache()
    cache.answer(m)
    began = time.perf_counter()
    cache.answer(m)
    again = time.perf_counter() - began
    return CompositionRow(m.name, c.layers, c.heads, scores, built, size, 1000 * again)


def run(device: str = "cpu") -> list[CompositionRow]:
    where = torch.device(device)
    shape = gpt2_shape(torch.device("cpu"))
    assert isinstance(shape, PretrainedModel)
    randomised(shape).model.to(where)
    return [measure(m) for m in [shape, *builtin(where)]]


def table(rows: list[CompositionRow]) -> str:
    out = [
        "attnviz bench --composition: Q-, K- and V-composition of every head pair "
        f"(torch threads {torch.get_num_threads()}; target: 12 x 12 heads within {TARGET_S:g} s)",
        "",
        "| model | layers x heads | scores (s) | answer (s) | JSON (kB) | cached (ms) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        out.append(
            f"| {r.model} | {r.layers} x {r.heads} | {r.scores_s:.2f} | {r.answer_s:.2f} | "
            f"{r.json_bytes / 1000:.0f} | {r.cached_ms:.2f} |"
        )
    return "\n".join(out)


def as_json(rows: list[CompositionRow]) -> str:
    return json.dumps([asdict(r) for r in rows], separators=(",", ":"))
