"""``attnviz bench --shape``: a random model of a real model's shape, served, beside
transformers.

Real models' shapes, as their config.json files on the Hugging Face hub give them, and a random
checkpoint of each: the layout and the sizes of a real one (a Llama-style folder: safetensors in
bfloat16 as the hub ships them, a byte-level BPE tokenizer), weights drawn with a fixed seed at
the scale real ones have. Nothing is downloaded. The bench writes one, serves it on a server of
its own and measures the page's first request at each length beside transformers' forward, the
server's memory, /healthz meanwhile, and generation. Figures only, never asserted.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attnviz.bench.harness import (
    FIRST,
    HealthProbe,
    Server,
    browser,
    mem_available,
    request,
    status_bytes,
    text_of,
)

log = logging.getLogger(__name__)

# config.json of each, as on the hub (the keys the loader reads, and what identifies them).
SHAPES: dict[str, dict] = {
    "qwen2.5-0.5b": {  # Qwen/Qwen2.5-0.5B
        "model_type": "qwen2",
        "architectures": ["Qwen2ForCausalLM"],
        "hidden_size": 896,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "intermediate_size": 4864,
        "vocab_size": 151936,
        "tie_word_embeddings": True,
        "rope_theta": 1000000.0,
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "use_sliding_window": False,
        "sliding_window": 32768,
        "max_window_layers": 24,
        "bos_token_id": 151643,
        "eos_token_id": 151643,
        "torch_dtype": "bfloat16",
    },
    "smollm2-135m": {  # HuggingFaceTB/SmolLM2-135M
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 576,
        "num_hidden_layers": 30,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "intermediate_size": 1536,
        "vocab_size": 49152,
        "tie_word_embeddings": True,
        "rope_theta": 100000.0,
        "rope_scaling": None,
        "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "bos_token_id": 0,
        "eos_token_id": 0,
        "torch_dtype": "bfloat16",
    },
    "llama-3.2-1b": {  # meta-llama/Llama-3.2-1B
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "intermediate_size": 8192,
        "vocab_size": 128256,
        "tie_word_embeddings": True,
        "rope_theta": 500000.0,
        "rope_scaling": {
            "rope_type": "llama3",
            "factor": 32.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "bos_token_id": 128000,
        "eos_token_id": 128001,
        "torch_dtype": "bfloat16",
    },
}


class ShapeError(ValueError):
    """A shape that cannot be built: unknown, or refused by its family's config reader."""


def shape_config(name: str, layers: int | None = None) -> dict:
    """The config.json of shape ``name``; with ``layers``, only that many layers (a test's)."""
    if name not in SHAPES:
        raise ShapeError(f"--shape: {name!r} is not one of {', '.join(SHAPES)}")
    hf = dict(SHAPES[name])
    if layers is not None:
        hf["num_hidden_layers"] = layers
        if "max_window_layers" in hf:
            hf["max_window_layers"] = layers
    return hf


def checkpoint_tensors(hf: dict, seed: int = 0, dtype=None) -> dict:
    """Random weights of a Llama-style ``hf`` in the hub's names: every matrix normal(0, 0.02),
    norms 1, biases 0 (how transformers initialises them, and the scale trained ones have),
    drawn with ``seed``. The sizes are those the family's own config reader makes of ``hf``: a
    shape it refuses is refused here (ShapeError)."""
    import torch

    from attnviz.pretrained.convert import FAMILIES, ConversionError

    family = FAMILIES.get(hf["model_type"])
    if family is None:
        raise ShapeError(f"model_type {hf['model_type']!r} has no family")
    try:
        cfg = family.config(hf)
    except ConversionError as exc:
        raise ShapeError(f"the {family.name} family refuses this shape: {exc}") from exc
    dtype = dtype or torch.bfloat16
    g = torch.Generator().manual_seed(seed)
    d, H, V = cfg.d_model, cfg.hidden, cfg.vocab_size
    assert V is not None
    d_q, d_kv = cfg.n_heads * cfg.d_head, cfg.kv_heads * cfg.d_head

    def normal(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=g) * 0.02).to(dtype)

    out = {
        "model.embed_tokens.weight": normal(V, d),
        "model.norm.weight": torch.ones(d, dtype=dtype),
    }
    if not hf.get("tie_word_embeddings", False):
        out["lm_head.weight"] = normal(V, d)
    for i in range(cfg.n_layers):
        p = f"model.layers.{i}."
        for name, rows in (("q", d_q), ("k", d_kv), ("v", d_kv)):
            out[f"{p}self_attn.{name}_proj.weight"] = normal(rows, d)  # (out, in)
            if cfg.qkv_bias or cfg.bias:
                out[f"{p}self_attn.{name}_proj.bias"] = torch.zeros(rows, dtype=dtype)
        out[f"{p}self_attn.o_proj.weight"] = normal(d, d_q)
        out[f"{p}mlp.gate_proj.weight"] = normal(H, d)
        out[f"{p}mlp.up_proj.weight"] = normal(H, d)
        out[f"{p}mlp.down_proj.weight"] = normal(d, H)
        if cfg.bias:
            out[f"{p}self_attn.o_proj.bias"] = torch.zeros(d, dtype=dtype)
            for name, rows in (("gate", H), ("up", H), ("down", d)):
                out[f"{p}mlp.{name}_proj.bias"] = torch.zeros(rows, dtype=dtype)
        out[f"{p}input_layernorm.weight"] = torch.ones(d, dtype=dtype)
        out[f"{p}post_attention_layernorm.weight"] = torch.ones(d, dtype=dtype)
    return out


def _corpus() -> list[str]:
    """English and Python that Python itself ships (its standard library's sources)."""
    import argparse
    import inspect
    import json as json_module
    import logging as logging_module
    import textwrap

    return [inspect.getsource(m) for m in (argparse, json_module, logging_module, textwrap)]


def make_tokenizer(vocab_size: int):
    """A byte-level BPE tokenizer (GPT-2's kind) of at most ``vocab_size`` tokens, trained here on
    text Python ships; ``<|endoftext|>`` is token 0."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=min(vocab_size, 8192),
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer)
    return tok


def write_folder(
    name: str, folder: Path, seed: int = 0, layers: int | None = None, dtype=None
) -> Path:
    """A model folder of shape ``name`` (``checkpoint_tensors``, safetensors in bfloat16 by
    default, and ``make_tokenizer``'s tokenizer). Its config.json has no end-of-text token, so
    that a generation runs its whole length (a random model may write any id)."""
    from safetensors.torch import save_file

    hf = shape_config(name, layers)
    tensors = checkpoint_tensors(hf, seed, dtype)
    folder.mkdir(parents=True, exist_ok=True)
    for key in ("bos_token_id", "eos_token_id"):
        hf.pop(key, None)
    if dtype is not None:
        hf["torch_dtype"] = str(dtype).removeprefix("torch.")
    (folder / "config.json").write_text(json.dumps(hf, indent=2), encoding="utf-8")
    make_tokenizer(hf["vocab_size"]).save(str(folder / "tokenizer.json"))
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    log.info("wrote a random %s (%d tensors) to %s", name, len(tensors), folder)
    return folder


# -- the bench ------------------------------------------------------------------------------------

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
    # The first request as a job (the server made it one): its estimate, what it told as it
    # went ({t_s, done, total, left_s} each time the page would read it) and how it ended
    job: dict[str, Any] | None = None


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
        if need + 2**30 < mem_available():
            floor = hf.forward_ms(ids)
        else:
            note = f"transformers' forward needs {need / 1e9:.1f} GB of attentions"
    body = {"model": model, "text": text}
    error = None
    job: dict[str, Any] | None = None
    with HealthProbe(port) as probe:
        t0 = time.perf_counter()
        try:
            status, wire, raw, job = first_request(port, body)
        except OSError as exc:
            status, wire, raw = 0, 0, str(exc).encode()
        ms = 1000 * (time.perf_counter() - t0)
    if status != 200:
        error = f"/api/trace answered {status}: {raw[:200]!r}"
        log.warning("%d tokens: %s", n, error)
    alive = Path(f"/proc/{pid}").exists()
    peak = status_bytes(pid, "VmHWM") if alive else 0  # the first request's (and before)
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
        parts_peak_rss_bytes=status_bytes(pid, "VmHWM") if alive and parts else 0,
        health_worst_ms=round(1000 * probe.worst, 1),
        health_failures=probe.failures,
        error=error,
        note=note,
        page_parts_ms=parts,
        job=job,
    )


def job_states(port: int, path: str, cookie: str) -> Iterator[dict[str, Any]]:
    """A trace job's states from its server-sent events at ``path`` (the page's way of following
    it), until its ``end``."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request("GET", path, headers={"Accept": "text/event-stream", "Cookie": cookie})
        stream = conn.getresponse()
        if stream.status != 200:
            return
        name = ""
        while line := stream.readline():
            text = line.decode().rstrip("\r\n")
            if text.startswith("event: "):
                name = text.removeprefix("event: ")
            elif text.startswith("data: "):
                yield json.loads(text.removeprefix("data: "))
                if name == "end":
                    return
    finally:
        conn.close()


def first_request(port: int, body: dict) -> tuple[int, int, bytes, dict[str, Any] | None]:
    """The page's first request as the page sends it (``Prefer: respond-async``): the answer,
    or, when the server makes it a job, the job followed as the page does (its events, with the
    visitor's cookie: ``job_states``) to its result: (status, bytes on the wire, body, what the
    job told: None when there was none)."""
    import gzip
    import http.client

    from attnviz.wire.constants import COMPACT_MEDIA_TYPE

    query = "?" + "&".join(f"{k}={v}" for k, v in FIRST.items())
    headers = {
        "Accept-Encoding": "gzip",
        "Accept": COMPACT_MEDIA_TYPE,
        "Content-Type": "application/json",
        "Prefer": "respond-async",
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.perf_counter()

    def ask(method: str, path: str, data: bytes | None = None) -> tuple[int, bytes, Any]:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, response.read(), response

    try:
        status, raw, response = ask("POST", "/api/trace" + query, json.dumps(body).encode())
        job = None
        if status == 202:
            cookie = (response.getheader("Set-Cookie") or "").split(";")[0]
            headers["Cookie"] = cookie
            state = json.loads(raw)
            told: list[dict[str, Any]] = []
            job = {"estimate_s": state["estimate_s"], "layers": state["layers"], "told": told}
            for now in job_states(port, state["events"], cookie):
                told.append({"t_s": round(time.perf_counter() - t0, 2), "done": now["done"],
                             "total": now["total"], "left_s": now["left_s"]})  # fmt: skip
                state = now
            job.update(state=state["state"], message=state["message"], total=state["total"])
            status, raw, response = ask("GET", state["result"])
        wire = len(raw)
        if response.getheader("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        return status, wire, raw, job
    finally:
        conn.close()


def run(
    shape: str,
    tokens: Sequence[int] = (512, 2048, 4096),
    device: str = "cpu",
    use_browser: bool = False,
    chromium: str = "/usr/bin/chromium",
    generate: int = 256,
    prompt_tokens: int = 32,
    folder: Path | None = None,
) -> ShapeReport:
    """A random model of a real shape (``SHAPES``), written to ``folder`` (a temporary
    one by default) and served by a server of its own: the page's first request at each length
    beside transformers' forward, the server's memory, /healthz meanwhile, and generation of
    ``generate`` tokens after a ``prompt_tokens`` prompt, ours (key/value cache) and
    transformers'."""
    import tempfile

    import torch

    from attnviz.pretrained.tokenize import TextTokenizer

    own = None
    if folder is None:
        own = tempfile.TemporaryDirectory(prefix="attnviz-shape-")
        folder = Path(own.name) / shape
    try:
        if not (folder / "model.safetensors").is_file():
            t0 = time.perf_counter()
            write_folder(shape, folder)
            log.info("wrote %s in %.0f s", folder, time.perf_counter() - t0)
        return _measure_shape(shape, folder, tokens, device, use_browser, chromium, generate,
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
        report.loaded_rss_bytes = status_bytes(pid, "VmRSS")
        report.load_peak_rss_bytes = status_bytes(pid, "VmHWM")
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


def table(report: ShapeReport) -> str:
    """The shape bench as the table of docs/performance.md."""
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
        if r.job:
            j, told = r.job, r.job["told"]
            seen = sorted({t["done"] for t in told})
            why = f": {j['message']}" if j["message"] else ""
            notes.append(
                f"{r.tokens:,} tokens: computed as a job ({j['state']}{why}), "
                f"estimated {j['estimate_s']:.0f} s "
                f"before it started; read {len(told)} times, {len(seen)} different counts of "
                f"{j['total']} layer passes told (the forward's {j['layers']}, then the "
                f"thumbnails'), the time left first said "
                f"{next((t['left_s'] for t in told if t['done']), None)} s"
            )
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


def as_json(report: ShapeReport) -> str:
    out = asdict(report)
    out["generation"].pop("ours_ids", None)
    return json.dumps(out, separators=(",", ":"))
