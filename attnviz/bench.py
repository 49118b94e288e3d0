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
    from attnviz.compact import decode

    for text in warm:  # the first forwards of a length are slower: not counted
        request(port, "POST", "/api/trace", {"model": model, "text": text}, FIRST, compact=True)
        if hf:
            hf.forward_ms(text)
    floors, firsts, parts_ms = [], [], []
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
