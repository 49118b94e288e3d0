"""``attnviz bench --atlas``: the head atlas's time on a model of GPT-2's shape (12 layers x 12
heads, d_model 768, 50,257 tokens, 1,024 positions; random weights drawn with a fixed seed and
the byte-level BPE tokenizer ``bench.shape`` trains, nothing downloaded) and on the default
model when it is installed: the first computation (the probe built, its strings run, every head
scored) and a second look, which the atlas cache answers."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from attnviz.engine import Transformer
from attnviz.pretrained.families.gpt2 import gpt2_config
from attnviz.pretrained.folder import PretrainedModel
from attnviz.pretrained.registry import BUILTIN_NAME, ServedModel, builtin_dir, load_model
from attnviz.pretrained.tokenize import TextTokenizer
from attnviz.services.atlas import PROBE_BATCH, AtlasCache

GPT2_SHAPE = {"n_layer": 12, "n_head": 12, "n_embd": 768, "vocab_size": 50257, "n_positions": 1024}
TARGET_S = 10.0  # issue 20: GPT-2-size within 10 s on this CPU


@dataclass(frozen=True)
class AtlasRow:
    model: str
    layers: int
    heads: int
    tokens: int  # of each probe string
    first_s: float
    cached_ms: float


def gpt2_shape(device: torch.device) -> ServedModel:
    """A random model of GPT-2's shape on the native engine."""
    from attnviz.bench.shape import make_tokenizer

    torch.manual_seed(0)
    cfg = gpt2_config(GPT2_SHAPE)
    model = Transformer(cfg).to(device).eval()
    return PretrainedModel(
        name="gpt2-shape",
        family="gpt2",
        source=Path("gpt2-shape"),
        origin="random",
        cfg=cfg,
        model=model,
        tokenizer=TextTokenizer(make_tokenizer(cfg.vocab_size or 0)),
        device=device,
    )


def measure(m: ServedModel) -> AtlasRow:
    cache = AtlasCache()
    cap = m.cfg.n_ctx
    began = time.perf_counter()
    atlas = cache.atlas(m, cap)
    first = time.perf_counter() - began
    began = time.perf_counter()
    cache.atlas(m, cap)
    again = time.perf_counter() - began
    L, H = atlas.offsets.shape
    return AtlasRow(m.name, L, H, len(atlas.probe.ids[0]), first, 1000 * again)


def builtin(device: torch.device) -> list[ServedModel]:
    """The built-in model (MiniLM) as the server names it, when its wheel is installed."""
    folder = builtin_dir()
    if folder is None:
        return []
    minilm = load_model(folder, device)
    minilm.name = BUILTIN_NAME  # (the folder is "model")
    return [minilm]


def run(device: str = "cpu") -> list[AtlasRow]:
    where = torch.device(device)
    return [measure(m) for m in [gpt2_shape(where), *builtin(where)]]


def table(rows: list[AtlasRow]) -> str:
    out = [
        f"attnviz bench --atlas: every head scored on {PROBE_BATCH} probe strings "
        f"(torch threads {torch.get_num_threads()}; target: GPT-2's shape within {TARGET_S:g} s)",
        "",
        "| model | layers x heads | tokens per string | first (s) | again, cached (ms) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        out.append(
            f"| {r.model} | {r.layers} x {r.heads} | {r.tokens} | {r.first_s:.2f} | "
            f"{r.cached_ms:.2f} |"
        )
    return "\n".join(out)


def as_json(rows: list[AtlasRow]) -> str:
    return json.dumps([asdict(r) for r in rows], separators=(",", ":"))
