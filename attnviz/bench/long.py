"""``attnviz bench --long``: a long text on a random model of SmolLM2-135M's shape (on a GPU,
Llama-3.2-1B's, in bfloat16) with its positions extended to 32k (128k), beside transformers' SDPA
forward without attentions (the floor) at the same lengths: the long path's time (the forward,
the kept queries and keys, the sums of sinks and near keys), peak memory (RSS, and on a GPU the
device's), what it keeps, and how soon it answers a 512 x 512 window, a query's row and its top
keys, a layer's entropy and a head's block map; at lengths eager attention fits (on a CPU),
today's path too. Each run is a process of its own, so that each peak is its own. Nothing is
downloaded; figures only, never asserted."""

from __future__ import annotations

import json
import multiprocessing
import resource
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

import torch

from attnviz.bench.shape import SHAPES

POSITIONS = {"cpu": 32768, "cuda": 131072}  # the shape's positions, extended
EAGER_UP_TO = 4096  # today's path runs at this length and below (on a CPU)
WINDOW = 512


def _shape(device: str) -> str:
    return "smollm2-135m" if device == "cpu" else "llama-3.2-1b"


def _dtype(device: str) -> torch.dtype:
    return torch.float32 if device == "cpu" else torch.bfloat16


@dataclass(frozen=True)
class LongRow:
    shape: str
    tokens: int
    floor_s: float | None  # transformers' LlamaModel, sdpa, no attentions
    floor_rss_gb: float | None
    long_s: float  # the long path: forward, kept q and k, summaries
    long_rss_gb: float
    kept_gb: float  # the queries and keys kept
    weights_gb: float
    window_ms: float  # one head's 512 x 512 exact window, at the end of the text
    row_ms: float  # one query's row, every head of a layer
    top_k_ms: float  # its top 16 keys, every head
    entropy_s: float  # every row's entropy of a layer's heads, made when asked
    block_map_s: float  # one head's block map (64 x 64), made when asked
    eager_s: float | None  # today's path (explicit (T, T) weights), where it runs
    eager_rss_gb: float | None
    fused_layers: int
    attentions_gb: float  # what transformers' eager forward with attentions would return
    floor_gpu_gb: float | None = None  # peak GPU memory, on a GPU
    long_gpu_gb: float | None = None


def _hf_config(device: str) -> dict[str, Any]:
    positions = POSITIONS["cpu" if device == "cpu" else "cuda"]
    return dict(SHAPES[_shape(device)], max_position_embeddings=positions)


def _native(device: str):
    from attnviz.engine.init import standard_weights
    from attnviz.engine.model import Transformer
    from attnviz.pretrained.families.llama import llama_config

    cfg = replace(llama_config(_hf_config(device)), unembed=False)
    model = Transformer(cfg)
    model.load_state_dict(standard_weights(cfg, seed=0), strict=False)
    return model.eval().to(device, _dtype(device))


def _ids(tokens: int, device: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(tokens)
    return torch.randint(0, SHAPES[_shape(device)]["vocab_size"], (tokens,), generator=g)


def _gpu_gb(device: str) -> float | None:
    """Peak GPU memory since ``_fresh_peak``, on a GPU."""
    return torch.cuda.max_memory_allocated() / 2**30 if device != "cpu" else None


def _fresh_peak(device: str = "cpu") -> None:
    """Forget this process's peak RSS so far (Linux: what building the model took), and its
    peak GPU memory."""
    if device != "cpu":
        torch.cuda.reset_peak_memory_stats()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:  # not Linux: the peak then counts the model's building too
        pass


def _rss_gb() -> float:
    """This process's peak RSS since ``_fresh_peak`` (VmHWM), else since it started."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _floor(tokens: int, device: str) -> tuple[float, float, float | None]:
    from transformers import LlamaConfig, LlamaModel

    hf = LlamaConfig(**_hf_config(device))
    hf._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = LlamaModel(hf).eval().to(device, _dtype(device))
    _fresh_peak(device)
    with torch.inference_mode():
        began = time.perf_counter()
        model(_ids(tokens, device)[None].to(device))
        _sync(device)
        return time.perf_counter() - began, _rss_gb(), _gpu_gb(device)


def _sync(device: str) -> None:
    if device != "cpu":
        torch.cuda.synchronize()


def _eager(tokens: int, device: str) -> tuple[float, float]:
    """Today's path: the engine's forward with explicit (T, T) weights, a few heads at a time
    (what a trace runs before it reads its fields)."""
    model = _native(device)
    _fresh_peak()
    with torch.inference_mode():
        began = time.perf_counter()
        model(_ids(tokens, device)[None].to(device))
        return time.perf_counter() - began, _rss_gb()


def _long(tokens: int, device: str) -> dict[str, float]:
    from attnviz.long import Plan, fixed_blocks, run_long

    model = _native(device)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    _fresh_peak(device)
    began = time.perf_counter()
    trace = run_long(model, _ids(tokens, device).to(device), Plan(fixed_blocks(tokens)))
    _sync(device)
    took = time.perf_counter() - began
    rss, gpu = _rss_gb(), _gpu_gb(device)
    recs = trace.layers.values()
    kept = sum(r.q.numel() * r.q.element_size() + r.k.numel() * r.k.element_size() for r in recs)
    layer, end = model.cfg.n_layers // 2, tokens
    rows, keys = range(max(0, end - WINDOW), end), range(0, min(WINDOW, end))

    def ms(f: Any) -> float:
        f()  # once warm
        began = time.perf_counter()
        f()
        return 1000 * (time.perf_counter() - began)

    def once(f: Any) -> float:
        began = time.perf_counter()
        f()
        return time.perf_counter() - began

    return {
        "long_s": took,
        "long_rss_gb": rss,
        "kept_gb": kept / 2**30,
        "weights_gb": weights / 2**30,
        "window_ms": ms(lambda: trace.window(layer, 0, rows, keys)),
        "row_ms": ms(lambda: trace.row(layer, end - 1)),
        "top_k_ms": ms(lambda: trace.top_k(layer, end - 1, 16)),
        "entropy_s": once(lambda: trace.entropy(layer)),
        "block_map_s": once(lambda: trace.block_map(layer, [0])),
        "fused_layers": sum(r.fused for r in recs),
        "long_gpu_gb": gpu,
    }


def _apart(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in a process of its own (its peak RSS its own)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args)


def run(tokens: list[int] | None = None, device: str = "cpu") -> list[LongRow]:
    rows = []
    for n in tokens or ([4096, 16384] if device == "cpu" else [32768, 131072]):
        try:
            floor: tuple[float | None, ...] = _apart(_floor, n, device)
        except ImportError:  # transformers is a development tool
            floor = (None, None, None)
        cpu = device == "cpu"
        eager = _apart(_eager, n, device) if n <= EAGER_UP_TO and cpu else (None, None)
        got = _apart(_long, n, device)
        shape = SHAPES[_shape(device)]
        heads = shape["num_hidden_layers"] * shape["num_attention_heads"]
        rows.append(LongRow(_shape(device), n, floor[0], floor[1], eager_s=eager[0],
                            eager_rss_gb=eager[1], attentions_gb=heads * n * n * 4 / 2**30,
                            floor_gpu_gb=floor[2], **got))  # fmt: skip
    return rows


def _f(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def table(rows: list[LongRow]) -> str:
    out = [
        f"attnviz bench --long: a random model of {rows[0].shape if rows else ''}'s shape, "
        f"positions to {POSITIONS['cpu']:,} (on a GPU {POSITIONS['cuda']:,}; torch threads "
        f"{torch.get_num_threads()}); floor: transformers' SDPA forward without "
        "attentions; eager: today's path (explicit weights, a few heads at a time); attentions: "
        "what an eager forward returning every head's weights in float32 would hold; window: one "
        "head's 512 x 512 exact weights",
        "",
        "| tokens | floor (s) | long (s) | x floor | eager (s) | floor RSS (GB) | long RSS (GB) "
        "| kept q, k (GB) | eager RSS (GB) | attentions (GB) | window (ms) | row (ms) "
        "| top 16 (ms) | a layer's entropy (s) | a head's block map (s) |",
        "|" + " --- |" * 15,
    ]
    for r in rows:
        ratio = None if r.floor_s is None else r.long_s / r.floor_s
        out.append(
            f"| {r.tokens:,} | {_f(r.floor_s, '.1f')} | {r.long_s:.1f} | {_f(ratio, '.2f')} | "
            f"{_f(r.eager_s, '.1f')} | {_f(r.floor_rss_gb, '.2f')} | {r.long_rss_gb:.2f} | "
            f"{r.kept_gb:.2f} | {_f(r.eager_rss_gb, '.2f')} | {r.attentions_gb:,.0f} | "
            f"{r.window_ms:.1f} | "
            f"{r.row_ms:.1f} | {r.top_k_ms:.1f} | {r.entropy_s:.2f} | {r.block_map_s:.2f} |"
        )
    if rows:
        out.append(f"\nweights {rows[0].weights_gb:.2f} GB; fused layers {rows[0].fused_layers}")
    for r in rows:
        if r.long_gpu_gb is not None:
            out.append(f"{r.tokens:,} tokens: peak GPU memory {_f(r.floor_gpu_gb, '.2f')} GB "
                       f"(floor), {r.long_gpu_gb:.2f} GB (long)")  # fmt: skip
    return "\n".join(out)


def as_json(rows: list[LongRow]) -> str:
    return json.dumps([asdict(r) for r in rows], separators=(",", ":"))
