"""``attnviz bench``: how fast the page gets its traces, beside the compute floor.

Starts ``attnviz serve`` on a free loopback port (a process of its own), and measures, in one
run: the Hugging Face forward with attentions and hidden states (the floor; when the development
dependency ``transformers`` is installed), the page's first request (every head's thumbnail, in
the compact form, gzip on the wire), every part the page asks for next, the bytes per attention
value, throughput with concurrent clients (a repeated input is a cache hit, a new one a
forward), and optionally, in headless Chromium, the page's cold start (bench/coldstart.py:
Playwright's figures and Lighthouse's) and typing to all views drawn. Figures only: the
targets are read from the table, never asserted here.
"""

from __future__ import annotations

import http.client
import json
import logging
import statistics
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attnviz.bench import coldstart
from attnviz.bench.harness import FIRST, HuggingFace, Server, browser, request, text_of

log = logging.getLogger(__name__)

SHORT = "I sat on the river bank"  # six words, for throughput


@dataclass
class Row:
    tokens: int
    hf_forward_ms: float | None
    first_request_ms: float
    ratio: float | None
    first_paint_bytes: int
    bytes_per_value: float
    parts_ms: float
    parts_bytes: int
    # A causal model's predictions (capture/lens.py), asked after the first request: their
    # own cost, beside the trace's (None: an encoder's). The Predictions card's request (top_k
    # and the logit lens of 16 positions around the middle), and top_k at every position.
    predictions_ms: float | None = None
    top_k_all_ms: float | None = None
    # The page's first request again with one head knocked out (``ablate``: a middle layer's
    # first head, zeroed): a new trace, as the Knock-out card asks for (None: a bridged model).
    knockout_ms: float | None = None
    # Where the first request's time went (medians, ms): the server's Server-Timing phases
    # (queue, forward, part, encode; ``api/trace.py``) and the rest of the round trip ("http":
    # the request read and validated, the response sent and read, the event loop's turns).
    first_phases: dict[str, float] = field(default_factory=dict)


@dataclass
class Report:
    model: str
    device: str
    torch_threads: int
    repeat: int
    rows: list[Row] = field(default_factory=list)
    toy: dict[str, float] = field(default_factory=dict)
    throughput: dict[str, float] = field(default_factory=dict)
    browser: dict[str, float] = field(default_factory=dict)
    coldstart: dict[str, Any] = field(default_factory=dict)  # bench/coldstart.py's figures


# The toy lab at its caps: 64 tokens x 64 dimensions, 12 layers x 16 heads, everything on.
TOY_FIRST = {  # what toy.js asks for first
    "fields": "hidden_states,distances,projection,entropy_mean,score_range,attentions,scores",
    "layer": 0,
    "head": 0,
}


def toy_at_caps(port: int, repeat: int) -> dict[str, float]:
    """The toy lab's first request at the caps, and the full JSON trace of the same table."""
    import random

    rng = random.Random(0)
    body: dict[str, Any] = {
        "tokens": [f"t{i}" for i in range(64)],
        "embeddings": [[round(rng.uniform(-1, 1), 3) for _ in range(64)] for _ in range(64)],
        "config": {"layers": 12, "heads": 16, "projections": "random", "mask": "causal",
                   "ffn": True, "residual": True, "norm": "pre"},
    }  # fmt: skip
    out: dict[str, float] = {}
    for name, params, compact in (("first", TOY_FIRST, True), ("json", None, False)):
        times, wire = [], 0
        for r in range(repeat):
            body["config"]["seed"] = r  # a new trace each time
            t0 = time.perf_counter()
            status, wire, _ = request(port, "POST", "/api/trace", body, params, compact=compact)
            times.append(1000 * (time.perf_counter() - t0))
            if status != 200:
                raise RuntimeError(f"/api/trace answered {status} to the toy table")
        out[f"{name}_ms"] = round(statistics.median(times), 1)
        out[f"{name}_bytes"] = wire
    return out


# What the Predictions card asks for (a causal model): the top tokens and the logit lens (every
# hidden state through the final norm and the unembedding) of the positions it draws, up to 16
# (pos_start, pos_count: measure_row's); and the top tokens at every position.
PREDICTIONS = {"fields": "top_k,lens"}
TOP_K = {"fields": "top_k"}


def page_parts(meta: dict) -> list[dict]:
    """What the page asks for after its first request (sentence.js): the chosen head exact,
    its query's row, the head view's layer (unpooled past 128 tokens), the trajectories, and
    the grid's titles."""
    options = {"hide_special": "false", "merge_words": "false"}
    parts: list[dict] = [
        {"fields": "view", "layer": 0, "head": 0, **options},
        {"fields": "queries,keys,scores,attentions", "layer": 0, "head": 0, "query": 1},
        {"fields": "projection"},
        {"fields": "entropy_mean"},
    ]  # fmt: skip
    if meta["thumbs"]["pool"] > 1:
        parts.append({**FIRST, "thumb": 0, "thumb_layer": 0})
    return parts


def measure_row(
    port: int, model: str, texts: list[str], warm: list[str], hf: HuggingFace | None
) -> Row:
    """The page's requests on each text, each after the Hugging Face forward on the same text
    (taken in turn, so that both see the machine as it is at that moment)."""
    from attnviz.wire.compact import decode

    for text in warm:  # the first forwards of a length are slower: not counted
        request(port, "POST", "/api/trace", {"model": model, "text": text}, FIRST, compact=True)
        if hf:
            hf.forward_ms(text)
    floors, firsts, parts_ms = [], [], []
    phases: list[dict[str, float]] = []
    predictions_ms: list[float] = []
    top_k_ms: list[float] = []
    knockout_ms: list[float] = []
    first_bytes = parts_bytes = 0
    meta: dict = {}
    for text in texts:
        if hf:
            floors.append(hf.forward_ms(text))
        body = {"model": model, "text": text}
        headers: dict[str, str] = {}
        t0 = time.perf_counter()
        status, wire, raw = request(port, "POST", "/api/trace", body, FIRST, compact=True,
                                    headers_out=headers)  # fmt: skip
        firsts.append(1000 * (time.perf_counter() - t0))
        if status != 200:
            raise RuntimeError(f"/api/trace answered {status}: {raw[:300]!r}")
        phases.append(server_timing(headers.get("server-timing", ""), firsts[-1]))
        first_bytes = wire
        meta, _ = decode(raw)
        t0 = time.perf_counter()
        parts = page_parts(meta)
        with ThreadPoolExecutor(len(parts)) as pool:  # the page asks for them at once
            asks = [pool.submit(request, port, "POST", "/api/trace", body, p, True) for p in parts]
            done = [a.result() for a in asks]
        parts_ms.append(1000 * (time.perf_counter() - t0))
        parts_bytes = sum(wire for _, wire, _ in done)
        if meta.get("causal") and "lens" not in (meta.get("unavailable") or {}):
            middle = {"pos_start": max(0, meta["n"] // 2 - 8), "pos_count": 16}
            for params, into in (({**PREDICTIONS, **middle}, predictions_ms), (TOP_K, top_k_ms)):
                t0 = time.perf_counter()
                status, _, raw = request(port, "POST", "/api/trace", body, params, True)
                if status != 200:
                    raise RuntimeError(f"/api/trace answered {status}: {raw[:300]!r}")
                into.append(1000 * (time.perf_counter() - t0))
        if meta.get("backend", "native") == "native":
            knocked = {**body, "ablate": [{"layer": meta["layers"] // 2, "head": 0}]}
            t0 = time.perf_counter()
            status, _, raw = request(port, "POST", "/api/trace", knocked, FIRST, True)
            if status != 200:
                raise RuntimeError(f"/api/trace answered {status}: {raw[:300]!r}")
            knockout_ms.append(1000 * (time.perf_counter() - t0))
    values = meta["layers"] * meta["heads"] * meta["n"] ** 2
    first = statistics.median(firsts)
    floor = statistics.median(floors) if floors else None
    return Row(
        tokens=meta["n"],
        hf_forward_ms=round(floor, 1) if floor else None,
        first_request_ms=round(first, 1),
        ratio=round(first / floor, 2) if floor else None,
        first_paint_bytes=first_bytes,
        bytes_per_value=round(first_bytes / values, 3),
        parts_ms=round(statistics.median(parts_ms), 1),
        parts_bytes=parts_bytes,
        predictions_ms=round(statistics.median(predictions_ms), 1) if predictions_ms else None,
        top_k_all_ms=round(statistics.median(top_k_ms), 1) if top_k_ms else None,
        knockout_ms=round(statistics.median(knockout_ms), 1) if knockout_ms else None,
        first_phases={k: round(statistics.median(p[k] for p in phases), 1) for k in phases[0]},
    )


PHASES = ("queue", "forward", "part", "encode")


def server_timing(header: str, total_ms: float) -> dict[str, float]:
    """The phases of a Server-Timing header (``queue;dur=0.1, compute;dur=30.2, forward;dur=...``)
    and "http", the rest of ``total_ms``: what the round trip took beyond the queue and the
    compute thread's work."""
    got = {}
    for item in header.split(","):
        name, _, dur = item.strip().partition(";dur=")
        if dur:
            got[name] = float(dur)
    out = {name: got.get(name, 0.0) for name in PHASES}
    out["http"] = total_ms - got.get("queue", 0.0) - got.get("compute", 0.0)
    return out


def throughput(port: int, model: str, clients: int, seconds: float) -> dict[str, float]:
    """Requests per second of the page's first request, ``clients`` at once for ``seconds``
    each: one repeated short sentence (cache hits), then a new one every time (forwards)."""
    out = {}
    counter = iter(range(10**9))
    lock = threading.Lock()

    def run(new: bool) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        done = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            with lock:
                k = next(counter)
            text = f"{SHORT} {k}" if new else SHORT
            status, _, _ = request(port, "POST", "/api/trace", {"model": model, "text": text},
                                   FIRST, compact=True, conn=conn)  # fmt: skip
            done += status == 200
        conn.close()
        return done

    for name, new in (("repeated", False), ("new", True)):
        t0 = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            total = sum(f.result() for f in [pool.submit(run, new) for _ in range(clients)])
        out[f"{name}_per_s"] = round(total / (time.perf_counter() - t0), 1)
    out["clients"] = clients
    return out


def run(
    tokens: Sequence[int] = (16, 128, 512),
    repeat: int = 5,
    clients: int = 16,
    seconds: float = 5.0,
    use_browser: bool = False,
    browser_tokens: tuple[int, ...] = (8, 128, 512),
    chromium: str = "/usr/bin/chromium",
    device: str = "cpu",
    model: Path | None = None,
) -> Report:
    """The page's requests at each length of ``tokens`` (``repeat`` texts each) on a server of
    its own, beside the Hugging Face forward; the toy lab at its caps; ``clients`` at once for
    ``seconds`` (0 clients: none); with ``use_browser``, typing in Chromium at
    ``browser_tokens``. ``model``: a model folder instead of the default model."""
    import torch

    from attnviz.pretrained.registry import BUILTIN_NAME, builtin_dir
    from attnviz.pretrained.tokenize import TextTokenizer

    folder = model or builtin_dir()
    if folder is None:
        raise RuntimeError("no model to measure: install the default one or pass --model FOLDER")
    name = folder.name if model else BUILTIN_NAME
    tokenizer = TextTokenizer.from_file(folder / "tokenizer.json")
    args = ["--device", device] + (["--model", str(folder)] if model else [])
    report = Report(model=name, device=device, torch_threads=torch.get_num_threads(), repeat=repeat)
    texts = {n: [text_of(tokenizer, n, start=7 * r) for r in range(repeat)] for n in tokens}
    warm = {n: [text_of(tokenizer, n, start=5 + 7 * r) for r in range(3)] for n in tokens}
    hf = HuggingFace.load(folder, device)
    with Server(args) as server:
        for n in tokens:
            report.rows.append(measure_row(server.port, name, texts[n], warm[n], hf))
            log.info("measured %d tokens", n)
        report.toy = toy_at_caps(server.port, repeat)
        if clients > 0:
            report.throughput = throughput(server.port, name, clients, seconds)
        if use_browser:
            report.coldstart = coldstart.run(server.port, chromium)
            pairs = {
                n: [text_of(tokenizer, n, start=2), text_of(tokenizer, n, start=3)]
                for n in browser_tokens
            }
            report.browser = browser(server.port, pairs, chromium, name)
    return report


def table(report: Report) -> str:
    """The report as the table of docs/performance.md."""
    lines = [
        f"attnviz bench: {report.model} on {report.device} ({report.torch_threads} threads), "
        f"median of {report.repeat}",
        "",
        "| tokens | Hugging Face forward | page's first request | ratio | first-paint bytes "
        "| bytes per attention value | then every other part |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in report.rows:
        hf = f"{r.hf_forward_ms:.0f} ms" if r.hf_forward_ms else "-"
        ratio = f"{r.ratio:.2f}x" if r.ratio else "-"
        lines.append(
            f"| {r.tokens} | {hf} | {r.first_request_ms:.0f} ms | {ratio} | "
            f"{r.first_paint_bytes / 1e6:.2f} MB | {r.bytes_per_value:.2f} | "
            f"{r.parts_ms:.0f} ms, {r.parts_bytes / 1e6:.2f} MB |"
        )
    lines += ["", first_request_line(report.rows)]
    cost = [
        f"{r.tokens} tokens: the card's {r.predictions_ms:.0f} ms "
        f"({(r.first_request_ms + r.predictions_ms) / r.first_request_ms:.2f}x the first request "
        f"with it), top-k at every position {r.top_k_all_ms:.0f} ms "
        f"({(r.first_request_ms + r.top_k_all_ms) / r.first_request_ms:.2f}x)"
        for r in report.rows
        if r.predictions_ms is not None and r.top_k_all_ms is not None
    ]
    if cost:
        lines += [
            "",
            "Predictions, asked after the first request (the Predictions card's: top-k and the "
            "logit lens of every layer at 16 positions): " + "; ".join(cost) + ".",
        ]
    knock = [
        f"{r.tokens} tokens {r.knockout_ms:.0f} ms ({r.knockout_ms / r.first_request_ms:.2f}x the "
        "plain first request)"
        for r in report.rows
        if r.knockout_ms is not None
    ]
    if knock:
        lines += [
            "",
            "Knock-out rerun (the page's first request with one head zeroed, a new trace): "
            + "; ".join(knock)
            + ".",
        ]
    if report.toy:
        y = report.toy
        lines += [
            "",
            "Toy lab at its caps (64 tokens x 64 dimensions, 12 layers x 16 heads): the page's "
            f"first request {y['first_ms']:.0f} ms, {y['first_bytes'] / 1e6:.2f} MB; the full "
            f"JSON trace {y['json_ms']:.0f} ms, {y['json_bytes'] / 1e6:.1f} MB gzipped.",
        ]
    t = report.throughput
    if t:
        lines += [
            "",
            f"Throughput, {t['clients']} clients, a six-word sentence: {t['repeated_per_s']:.0f} "
            f"requests/s repeated (cache hits), {t['new_per_s']:.0f} requests/s new (forwards).",
        ]
    if report.browser:
        sizes = sorted({int(k.split("_")[-2]) for k in report.browser if k.startswith("typing")})
        parts = [
            f"{n} tokens {report.browser[f'typing_to_drawn_{n}_s']:.2f} s "
            f"(another head {report.browser[f'switch_head_{n}_ms']} ms; the page answered "
            f"within {report.browser[f'page_unresponsive_{n}_s']:.2f} s throughout)"
            for n in sizes
        ]
        lines += ["", "Headless Chromium, typing to every view drawn: " + "; ".join(parts) + "."]
    if report.coldstart:
        lines.append(coldstart.table(report.coldstart))
    return "\n".join(lines)


def first_request_line(rows: list[Row]) -> str:
    """Where the first request's time went, beside the forward, at each length."""
    names = {
        "forward": "our forward and capture",
        "part": "the thumbnails",
        "encode": "the compact body and gzip",
        "queue": "the queue",
        "http": "the rest (HTTP on loopback, the request read, the event loop)",
    }
    cells = []
    for r in rows:
        p = r.first_phases
        if not p:
            continue
        hf = f" against the Hugging Face forward's {r.hf_forward_ms:.1f}" if r.hf_forward_ms else ""
        parts = ", ".join(f"{names[k]} {p[k]:.1f}" for k in names if k in p)
        over = ""
        if r.hf_forward_ms:
            over = f"; past the forward: {r.first_request_ms - r.hf_forward_ms:+.1f}"
        cells.append(f"{r.tokens} tokens: {r.first_request_ms:.1f}{hf} ({parts}{over})")
    return "Where the first request's time went (ms, medians): " + "; ".join(cells) + "."


def as_json(report: Report) -> str:
    return json.dumps(asdict(report), separators=(",", ":"))
