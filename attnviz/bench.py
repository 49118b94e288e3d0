"""``attnviz bench``: how fast the page gets its traces, beside the compute floor.

Starts ``attnviz serve`` on a free loopback port (a process of its own), and measures, in one
run: the Hugging Face forward with attentions and hidden states (the floor; when the development
dependency ``transformers`` is installed), the page's first request (every head's thumbnail, in
the compact form, gzip on the wire), every part the page asks for next, the bytes per attention
value, throughput with concurrent clients (a repeated input is a cache hit, a new one a
forward), and optionally, in headless Chromium, typing to all views drawn. Figures only: the
targets are read from the table, never asserted here.
"""

from __future__ import annotations

import gzip
import http.client
import json
import logging
import math
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attnviz.schemas import COMPACT_MEDIA_TYPE

log = logging.getLogger(__name__)

# Words to build texts of a given length from: plain English, one or two tokens each.
WORDS = (
    "attention lets every token look at every other token and decide how much of each to take "
    "the queries ask the keys answer and the values carry what is taken a river bank is not an "
    "investment bank and the model learns to tell them apart by what surrounds them while the "
    "residual stream keeps what each layer adds so that later layers can read it again"
).split()
# The page at 1280 px wide asks for thumbnails of 97 px (the width of its model view cells).
FIRST = {"fields": "thumbs", "thumb": 97, "hide_special": "false", "merge_words": "false"}
SHORT = "I sat on the river bank"  # six words, for throughput
# What the sentence page asks for after its first response, in its order (static/js: a long
# text's chosen query in every head of the layer, the chosen head, its query and keys, the
# trajectories; the grid's entropy titles once every view is drawn), layer, head and query 0.
PAGE_PARTS: dict[str, dict[str, Any]] = {
    "head": {"fields": "attentions", "layer": 0, "query": 0},
    "model": {"fields": "view", "layer": 0, "head": 0},
    "qk": {"fields": "queries,keys,scores,attentions", "layer": 0, "head": 0, "query": 0},
    "trajectories": {"fields": "projection"},
    "entropy": {"fields": "entropy_mean"},
}


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
    # A causal model's predictions (services/lens.py), asked after the first request: their
    # own cost, beside the trace's (None: an encoder's). The Predictions card's request (top_k
    # and the logit lens of 16 positions around the middle), and top_k at every position.
    predictions_ms: float | None = None
    top_k_all_ms: float | None = None
    # The page's first request again with one head knocked out (``ablate``: a middle layer's
    # first head, zeroed): a new trace, as the Knock-out card asks for (None: a bridged model).
    knockout_ms: float | None = None


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


class Server:
    """``attnviz serve`` on a free loopback port, for the length of a ``with``."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = {**os.environ, "ATTNVIZ_LOG_LEVEL": "warning", **(env or {})}
        cmd = [sys.executable, "-m", "attnviz", "serve", "--host", "127.0.0.1"]
        self.proc = subprocess.Popen([*cmd, "--port", str(self.port), *args], env=env)

    def __enter__(self) -> Server:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"attnviz serve stopped at start (exit {self.proc.returncode})")
            try:
                status, _, _ = request(self.port, "GET", "/healthz")
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("attnviz serve did not answer /healthz in 120 s")

    def __exit__(self, *_exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def request(
    port: int,
    method: str,
    path: str,
    body: dict | None = None,
    params: dict | None = None,
    compact: bool = False,
    conn: http.client.HTTPConnection | None = None,
) -> tuple[int, int, bytes]:
    """One HTTP request on loopback: (status, bytes on the wire, decoded body)."""
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    query = "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""
    headers = {"Accept-Encoding": "gzip", "Accept": COMPACT_MEDIA_TYPE if compact else "*/*"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    conn.request(method, path + query, body=data, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    if own:
        conn.close()
    wire = len(raw)
    if response.getheader("Content-Encoding") == "gzip":
        raw = gzip.decompress(raw)
    return response.status, wire, raw


def text_of(tokenizer, n: int, start: int = 0) -> str:
    """A text of exactly ``n`` tokens (specials included), from WORDS at offset ``start``."""
    words: list[str] = []
    i = start
    while len(tokenizer(" ".join(words)).ids) < n:
        words.append(WORDS[i % len(WORDS)])
        i += 1
    while len(tokenizer(" ".join(words)).ids) > n:  # a two-token word went past: one less
        words.pop()
        if len(tokenizer(" ".join(words)).ids) < n:
            words.append("a")
    return " ".join(words)


class HuggingFace:
    """The reference forward: Hugging Face's model on the same folder, eager attention,
    attentions and hidden states returned. None of it when transformers is not installed."""

    def __init__(self, folder: Path, device: str) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.torch = torch
        self.dev = torch.device("cuda" if device.startswith("cuda") else "cpu")
        self.model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
        self.model.to(self.dev)
        self.tok = AutoTokenizer.from_pretrained(folder)

    @classmethod
    def load(cls, folder: Path, device: str) -> HuggingFace | None:
        try:
            return cls(folder, device)
        except ImportError:
            log.warning("transformers is not installed: no Hugging Face figures")
            return None

    def forward_ms(self, text: str) -> float:
        torch = self.torch
        with torch.inference_mode():
            ids = self.tok(text, return_tensors="pt")["input_ids"].to(self.dev)
            if self.dev.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            self.model(ids, output_attentions=True, output_hidden_states=True)
            if self.dev.type == "cuda":
                torch.cuda.synchronize()
            return 1000 * (time.perf_counter() - t0)


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
    predictions_ms: list[float] = []
    top_k_ms: list[float] = []
    knockout_ms: list[float] = []
    first_bytes = parts_bytes = 0
    meta: dict = {}
    for text in texts:
        if hf:
            floors.append(hf.forward_ms(text))
        body = {"model": model, "text": text}
        t0 = time.perf_counter()
        status, wire, raw = request(port, "POST", "/api/trace", body, FIRST, compact=True)
        firsts.append(1000 * (time.perf_counter() - t0))
        if status != 200:
            raise RuntimeError(f"/api/trace answered {status}: {raw[:300]!r}")
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
    )


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


BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# In the page: note the time now (the text is typed next) and the time at which a trace newer
# than the n-th is drawn in every view with nothing pending.
WATCH_DRAWN = """(n) => {
  const root = document.documentElement;
  window.__attnvizTypedAt = performance.now();
  window.__attnvizDrawnAt = undefined;
  const seen = new MutationObserver(() => {
    if (+(root.dataset.traces || 0) > n && root.dataset.pending === "0") {
      window.__attnvizDrawnAt = performance.now();
      seen.disconnect();
    }
  });
  seen.observe(root, { attributes: true });
}"""


def browser(
    port: int, texts: dict[int, list[str]], chromium: str, model: str | None = None
) -> dict[str, float]:
    """Headless Chromium: seconds from typing a text to every view drawn (the page's 150 ms
    debounce included; the second of two texts of each length, the first warms up), and from
    clicking another head to its views redrawn; with ``model``, that model (else the page's
    default). While a long text is drawn, the page is asked a trivial question every 100 ms:
    the slowest answer is how long the page was unresponsive at worst."""
    from playwright.sync_api import sync_playwright

    out: dict[str, float] = {}
    drawn = (
        "n => +(document.documentElement.dataset.{0} || 0) > n"
        " && document.documentElement.dataset.pending === '0'"
    )
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, headless=True, args=BROWSER_ARGS)
        page = b.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(120_000)
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_function(drawn.format("traces"), arg=0)
        count = lambda key: int(page.evaluate(f"+(document.documentElement.dataset.{key} || 0)"))  # noqa: E731
        before = count("traces")
        page.click("#mode-sentence")
        page.wait_for_function(drawn.format("traces"), arg=before)
        if model is not None and page.locator("#s-model").input_value() != model:
            before = count("traces")
            page.select_option("#s-model", model)
            page.wait_for_function(drawn.format("traces"), arg=before)
        layers = int(
            page.evaluate("document.getElementById('mv-grid').querySelectorAll('.mv-row').length")
        )
        heads = int(
            page.evaluate("document.getElementById('mv-grid').querySelectorAll('.mv-col').length")
        )
        done = drawn.format("traces").replace("n =>", "(n) =>")
        for n, pair in texts.items():
            for text in pair:  # the second is timed: the first warms up
                before = count("traces")
                # The page's own clock marks the moment every view is drawn (a mutation
                # observer on the flags the page sets), so the 100 ms questions below do not
                # round the figure up.
                page.evaluate(WATCH_DRAWN, before)
                t0 = time.perf_counter()
                page.fill("#s-text", text)
                worst = 0.0
                while True:
                    t1 = time.perf_counter()
                    finished = page.evaluate(done, before)
                    worst = max(worst, time.perf_counter() - t1)
                    if finished or time.perf_counter() - t0 > 120:
                        break
                    page.wait_for_timeout(100)
                seconds = time.perf_counter() - t0
                if finished:
                    ms = page.evaluate("window.__attnvizDrawnAt - window.__attnvizTypedAt")
                    seconds = ms / 1000
            out[f"typing_to_drawn_{n}_s"] = round(seconds, 2)
            out[f"page_unresponsive_{n}_s"] = round(worst, 2)
            cells = [(min(1, layers - 1), min(3, heads - 1)), (layers - 1, heads - 1)]
            times = []
            for layer, head in cells:
                before = count("views")
                t0 = time.perf_counter()
                page.click(f'#mv-grid button.mv-cell[data-layer="{layer}"][data-head="{head}"]')
                page.wait_for_function(drawn.format("views"), arg=before)
                times.append(time.perf_counter() - t0)
            out[f"switch_head_{n}_ms"] = round(1000 * statistics.median(times))
        b.close()
    return out


def run(
    tokens: list[int],
    repeat: int = 5,
    clients: int = 16,
    seconds: float = 5.0,
    use_browser: bool = False,
    browser_tokens: tuple[int, ...] = (8, 128, 512),
    chromium: str = "/usr/bin/chromium",
    device: str = "cpu",
    model_folder: Path | None = None,
) -> Report:
    import torch

    from attnviz.pretrained.registry import BUILTIN_NAME, builtin_dir
    from attnviz.pretrained.tokenize import TextTokenizer

    folder = model_folder or builtin_dir()
    if folder is None:
        raise RuntimeError("no model to measure: install the default one or pass --model FOLDER")
    name = folder.name if model_folder else BUILTIN_NAME
    tokenizer = TextTokenizer.from_file(folder / "tokenizer.json")
    args = ["--device", device] + (["--model", str(folder)] if model_folder else [])
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
            pairs = {
                n: [text_of(tokenizer, n, start=2), text_of(tokenizer, n, start=3)]
                for n in browser_tokens
            }
            report.browser = browser(server.port, pairs, chromium, name)
    return report


def table(report: Report) -> str:
    """The report as the README's table."""
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
    return "\n".join(lines)


def report_json(report: Report) -> str:
    return json.dumps(asdict(report), separators=(",", ":"))


# -- a real model's shape (``--shape``) --------------------------------------------------------


@dataclass
class ShapeRow:
    tokens: int
    hf_forward_ms: float | None  # transformers' eager forward, attentions and hidden states
    first_request_ms: float | None  # the page's first request (None: it failed, see ``error``)
    ratio: float | None
    first_paint_bytes: int
    peak_rss_bytes: int  # the server's peak resident memory so far (VmHWM)
    health_worst_ms: float  # the slowest /healthz answer while the first request ran
    health_failures: int  # /healthz asks that got no 200 meanwhile
    error: str | None = None
    note: str | None = None  # why a transformers figure is missing
    # Each of the page's next parts (PAGE_PARTS), asked in turn after the first request: ms
    page_parts_ms: dict[str, float] = field(default_factory=dict)
    # The server's peak resident memory after those parts too (VmHWM), when they were asked
    parts_peak_rss_bytes: int = 0


@dataclass
class ShapeReport:
    shape: str
    device: str
    torch_threads: int
    parameters: int  # the checkpoint's (a tied unembedding counted once)
    weights_bytes: int  # what the server's parameters take, each storage once
    dtype: str
    loaded_rss_bytes: int  # the server's resident memory once the model is loaded
    load_peak_rss_bytes: int  # its peak while loading
    rows: list[ShapeRow] = field(default_factory=list)
    generation: dict[str, Any] = field(default_factory=dict)
    browser: dict[str, float] = field(default_factory=dict)
    # The machine's 1-minute load average before and after the server's measurements (other
    # work on the same cores slows every figure).
    load_average: list[float] = field(default_factory=list)


def _status_bytes(pid: int, key: str) -> int:
    """A memory figure of /proc/PID/status (VmRSS, VmHWM) in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


class HealthProbe:
    """Asks /healthz every 100 ms on a thread of its own, for the length of a ``with``: the
    slowest answer and how many were not a 200."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.worst = 0.0
        self.failures = 0
        self.asked = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.perf_counter()
            try:
                status, _, _ = request(self.port, "GET", "/healthz")
            except OSError:
                status = 0
            self.worst = max(self.worst, time.perf_counter() - t0)
            self.asked += 1
            self.failures += status != 200
            self._stop.wait(0.1)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join()


class CausalReference:
    """transformers' causal model on the folder (eager attention, float32 on a CPU, the
    checkpoint's dtype on a GPU, as the server): its forward with attentions and hidden states,
    and its generation. None of it when transformers is not installed."""

    def __init__(self, folder: Path, device: str, dtype) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        self.torch = torch
        self.dev = torch.device("cuda" if device.startswith("cuda") else "cpu")
        self.lm = AutoModelForCausalLM.from_pretrained(
            folder, attn_implementation="eager", dtype=dtype
        ).eval()
        self.lm.to(self.dev)
        cfg = self.lm.config
        self.layers, self.heads = cfg.num_hidden_layers, cfg.num_attention_heads

    @classmethod
    def load(cls, folder: Path, device: str, dtype) -> CausalReference | None:
        try:
            return cls(folder, device, dtype)
        except ImportError:
            log.warning("transformers is not installed: no transformers figures")
            return None

    def forward_bytes(self, n: int) -> int:
        """What its forward with attentions holds at ``n`` tokens: every layer's (heads, n, n)
        weights, and a layer's scores and softmax besides, in float32."""
        return (self.layers + 3) * self.heads * n * n * 4

    def _sync(self) -> None:
        if self.dev.type == "cuda":
            self.torch.cuda.synchronize()

    def forward_ms(self, ids: list[int]) -> float:
        torch = self.torch
        with torch.inference_mode():
            x = torch.tensor([ids], device=self.dev)  # (1, T)
            self._sync()
            t0 = time.perf_counter()
            out = self.lm.model(x, output_attentions=True, output_hidden_states=True)
            self._sync()
            ms = 1000 * (time.perf_counter() - t0)
            del out
        return ms

    def generate_s(self, ids: list[int], steps: int) -> tuple[float, list[int]]:
        torch = self.torch
        with torch.inference_mode():
            x = torch.tensor([ids], device=self.dev)  # (1, T)
            self._sync()
            t0 = time.perf_counter()
            out = self.lm.generate(x, max_new_tokens=steps, min_new_tokens=steps,
                                   do_sample=False, output_attentions=True,
                                   return_dict_in_generate=True, pad_token_id=0)  # fmt: skip
            self._sync()
            seconds = time.perf_counter() - t0
        return seconds, out.sequences[0, len(ids) :].tolist()


def _ours_generate(folder: Path, device: str, ids: list[int], steps: int) -> dict[str, Any]:
    """The engine's generation through its key/value cache, in this process: seconds, ids."""
    import torch

    from attnviz.engine.device import resolve_device
    from attnviz.engine.generate import continue_ids
    from attnviz.pretrained.folder import load_folder

    dev = resolve_device(device)
    m = load_folder(folder, dev)
    continue_ids(m.model, ids, 2)  # the first steps allocate: not counted
    if dev.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(dev)
    t0 = time.perf_counter()
    out = continue_ids(m.model, ids, steps)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    figures: dict[str, Any] = {"ours_s": round(seconds, 2), "ours_ids": out}
    if dev.type == "cuda":
        figures["ours_max_allocated_bytes"] = torch.cuda.max_memory_allocated(dev)
    return figures


def shape_row(
    port: int, model: str, n: int, ids: list[int], text: str, pid: int, hf: CausalReference | None
) -> ShapeRow:
    """The page's first request for ``text`` (``n`` tokens, ``ids``), /healthz asked meanwhile,
    after transformers' forward on the same ids when it fits in the free memory."""
    floor, note = None, None
    if hf is not None:
        need = hf.forward_bytes(n)
        if need + 2**30 < _mem_available():
            floor = hf.forward_ms(ids)
        else:
            note = f"transformers' forward needs {need / 1e9:.1f} GB of attentions"
    body = {"model": model, "text": text}
    error = None
    with HealthProbe(port) as probe:
        t0 = time.perf_counter()
        try:
            status, wire, raw = request(port, "POST", "/api/trace", body, FIRST, compact=True)
        except OSError as exc:
            status, wire, raw = 0, 0, str(exc).encode()
        ms = 1000 * (time.perf_counter() - t0)
    if status != 200:
        error = f"/api/trace answered {status}: {raw[:200]!r}"
        log.warning("%d tokens: %s", n, error)
    alive = Path(f"/proc/{pid}").exists()
    peak = _status_bytes(pid, "VmHWM") if alive else 0  # the first request's (and before)
    parts: dict[str, float] = {}
    for name, params in PAGE_PARTS.items() if error is None else ():
        t0 = time.perf_counter()
        status, _, raw = request(port, "POST", "/api/trace", body, params, compact=True)
        if status != 200:
            log.warning(
                "%d tokens, part %s: /api/trace answered %d: %r", n, name, status, raw[:200]
            )
            break
        parts[name] = round(1000 * (time.perf_counter() - t0), 1)
    alive = Path(f"/proc/{pid}").exists()
    return ShapeRow(
        tokens=n,
        hf_forward_ms=round(floor, 1) if floor is not None else None,
        first_request_ms=round(ms, 1) if error is None else None,
        ratio=round(ms / floor, 2) if floor and error is None else None,
        first_paint_bytes=wire if error is None else 0,
        peak_rss_bytes=peak,
        parts_peak_rss_bytes=_status_bytes(pid, "VmHWM") if alive and parts else 0,
        health_worst_ms=round(1000 * probe.worst, 1),
        health_failures=probe.failures,
        error=error,
        note=note,
        page_parts_ms=parts,
    )


def run_shape(
    shape: str,
    tokens: list[int],
    device: str = "cpu",
    use_browser: bool = False,
    chromium: str = "/usr/bin/chromium",
    steps: int = 256,
    prompt_tokens: int = 32,
    folder: Path | None = None,
) -> ShapeReport:
    """A random model of a real shape (``attnviz.shapes``), written to ``folder`` (a temporary
    one by default) and served by a server of its own: the page's first request at each length
    beside transformers' forward, the server's memory, /healthz meanwhile, and generation of
    ``steps`` tokens after a ``prompt_tokens`` prompt, ours (key/value cache) and
    transformers'."""
    import tempfile

    import torch

    from attnviz import shapes
    from attnviz.pretrained.tokenize import TextTokenizer

    own = None
    if folder is None:
        own = tempfile.TemporaryDirectory(prefix="attnviz-shape-")
        folder = Path(own.name) / shape
    try:
        if not (folder / "model.safetensors").is_file():
            t0 = time.perf_counter()
            shapes.write_folder(shape, folder)
            log.info("wrote %s in %.0f s", folder, time.perf_counter() - t0)
        return _measure_shape(shape, folder, tokens, device, use_browser, chromium, steps,
                              prompt_tokens, torch, TextTokenizer)  # fmt: skip
    finally:
        if own is not None:
            own.cleanup()


def _measure_shape(shape, folder, tokens, device, use_browser, chromium, steps, prompt_tokens,
                   torch, TextTokenizer) -> ShapeReport:  # fmt: skip
    from attnviz.pretrained.folder import load_folder

    tokenizer = TextTokenizer.from_file(folder / "tokenizer.json")
    dev = torch.device(device)
    meta = load_folder(folder, dev)  # what the server will hold, measured here first
    params = {p.data_ptr(): p for p in meta.model.parameters()}.values()
    dtype = meta.model.param_dtype
    from safetensors import safe_open

    with safe_open(folder / "model.safetensors", framework="pt") as f:
        count = sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())  # noqa: SIM118
    report = ShapeReport(
        shape=shape, device=device, torch_threads=torch.get_num_threads(), parameters=count,
        weights_bytes=sum(p.nbytes for p in params), dtype=str(dtype).removeprefix("torch."),
        loaded_rss_bytes=0, load_peak_rss_bytes=0, load_average=[os.getloadavg()[0]],
    )  # fmt: skip
    del meta, params
    hf = CausalReference.load(folder, device, dtype)
    prompt = tokenizer(text_of(tokenizer, prompt_tokens)).ids
    texts = {n: text_of(tokenizer, n) for n in tokens}
    env = {
        "ATTNVIZ_BUILTIN_MODEL": "false",
        "ATTNVIZ_REQUEST_TIMEOUT_S": "3600",  # a long text on a CPU takes minutes
        "ATTNVIZ_MAX_WAIT_S": "600",
    }
    with Server(["--device", device, "--model", str(folder)], env) as server:
        pid = server.proc.pid
        report.loaded_rss_bytes = _status_bytes(pid, "VmRSS")
        report.load_peak_rss_bytes = _status_bytes(pid, "VmHWM")
        warm = text_of(tokenizer, 64, start=3)
        request(server.port, "POST", "/api/trace", {"model": folder.name, "text": warm}, FIRST,
                compact=True)  # fmt: skip
        if hf is not None:
            hf.forward_ms(tokenizer(warm).ids)
        for n in tokens:
            ids = tokenizer(texts[n]).ids
            row = shape_row(server.port, folder.name, n, ids, texts[n], pid, hf)
            report.rows.append(row)
            log.info("measured %d tokens: %s", n, row)
            if server.proc.poll() is not None:
                log.warning("the server stopped (exit %s)", server.proc.returncode)
                break
        if use_browser and server.proc.poll() is None:
            n = min(tokens)
            pair = [text_of(tokenizer, n, start=2), text_of(tokenizer, n, start=3)]
            report.browser = browser(server.port, {n: pair}, chromium, folder.name)
    report.load_average.append(os.getloadavg()[0])
    if steps > 0:
        report.generation = _ours_generate(folder, device, prompt, steps)
        report.generation["prompt_tokens"] = len(prompt)
        report.generation["steps"] = steps
        if hf is not None:
            seconds, theirs = hf.generate_s(prompt, steps)
            report.generation["transformers_s"] = round(seconds, 2)
            report.generation["same_ids"] = theirs == report.generation["ours_ids"]
    return report


def shape_table(report: ShapeReport) -> str:
    """The shape bench as the README's table."""
    gb = 1e9
    target = report.weights_bytes * 1.3 + gb
    lines = [
        f"attnviz bench --shape {report.shape}: {report.parameters / 1e6:.0f}M parameters, "
        f"{report.dtype} on {report.device} ({report.torch_threads} threads), random weights; "
        f"load average {' then '.join(f'{x:.1f}' for x in report.load_average)}",
        "",
        f"Weights {report.weights_bytes / gb:.2f} GB; the server's resident memory once loaded "
        f"{report.loaded_rss_bytes / gb:.2f} GB (peak while loading "
        f"{report.load_peak_rss_bytes / gb:.2f} GB); target for its peak: weights x 1.3 + 1 GB "
        f"= {target / gb:.2f} GB.",
        "",
        "| tokens | transformers forward | page's first request | ratio | first-paint bytes "
        "| server's peak memory | /healthz meanwhile, worst |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    notes = []
    for r in report.rows:
        hf = f"{r.hf_forward_ms / 1000:.2f} s" if r.hf_forward_ms else "-"
        first = f"{r.first_request_ms / 1000:.2f} s" if r.first_request_ms else "failed"
        ratio = f"{r.ratio:.2f}x" if r.ratio else "-"
        health = f"{r.health_worst_ms:.0f} ms" + (
            f", {r.health_failures} failed" if r.health_failures else ""
        )
        lines.append(
            f"| {r.tokens:,} | {hf} | {first} | {ratio} | {r.first_paint_bytes / 1e6:.2f} MB | "
            f"{r.peak_rss_bytes / gb:.2f} GB | {health} |"
        )
        notes += [f"{r.tokens:,} tokens: {x}" for x in (r.note, r.error) if x]
        if r.page_parts_ms:
            each = ", ".join(f"{k} {v:.0f} ms" for k, v in r.page_parts_ms.items())
            after = (
                f" (the server's peak memory then {r.parts_peak_rss_bytes / gb:.2f} GB)"
                if r.parts_peak_rss_bytes
                else ""
            )
            notes.append(f"{r.tokens:,} tokens, the page's next parts in turn: {each}{after}")
    if notes:
        lines += ["", *notes]
    g = report.generation
    if g:
        theirs = g.get("transformers_s")
        versus = (
            f"; transformers' generate (output_attentions, greedy) {theirs:.1f} s: "
            f"{g['ours_s'] / theirs:.2f}x, the same ids: {'yes' if g['same_ids'] else 'no'}"
            if theirs
            else "; transformers' generate -"
        )
        lines += [
            "",
            f"Generation of {g['steps']} tokens after a {g['prompt_tokens']}-token prompt: ours "
            f"(key/value cache) {g['ours_s']:.1f} s{versus}.",
        ]
    if report.browser:
        b = report.browser
        n = next(int(k.split("_")[-2]) for k in b if k.startswith("typing"))
        lines += [
            "",
            f"Headless Chromium, typing to every view drawn at {n} tokens: "
            f"{b[f'typing_to_drawn_{n}_s']:.2f} s (another head {b[f'switch_head_{n}_ms']} ms; "
            f"the page answered within {b[f'page_unresponsive_{n}_s']:.2f} s throughout).",
        ]
    return "\n".join(lines)


def shape_json(report: ShapeReport) -> str:
    out = asdict(report)
    out["generation"].pop("ours_ids", None)
    return json.dumps(out, separators=(",", ":"))
