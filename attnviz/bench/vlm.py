"""``attnviz bench --vlm``: a random model of SmolVLM-256M's shape (``bench.vlm_shape``: Idefics3,
a SigLIP tower and a SmolLM2-135M-like text model; nothing downloaded), served by a server of its
own, on a 384 x 384 picture and a text of 32 tokens (issue 30's targets):

- the page's first ``POST /api/trace`` with the picture (the thumbnails, as the page asks, a job
  followed to its end when the server makes it one), beside transformers' eager forward with
  ``output_attentions`` (and the hidden states) on the same inputs: target at most 1.5x;
- the server's peak resident memory (VmHWM) beside the weights' bytes x 1.3 + 1 GB.

Both sides are warmed first by another text and picture of the same sizes (the first forward of
a process allocates), so the figure is the first request *with this picture*. With
``--browser``, Chromium on the same server: the text typed, then the picture chosen in the
page's file input (``#s-image-file``), and the seconds until the picture card draws the overlay
(``#picture-view``'s ``data-drawn`` counts its draws; issue 30's target: within 2 s). Figures
only, never asserted."""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attnviz.bench.harness import FIRST, Server, request, status_bytes, text_of
from attnviz.bench.vlm_shape import SMOLVLM_256M, VlmShape

log = logging.getLogger(__name__)

RATIO_TARGET = 1.5  # the first request at most 1.5x transformers' eager forward
DRAWN_TARGET_S = 2.0  # the overlay drawn within 2 s of choosing the picture
GB = 1e9


@dataclass
class VlmReport:
    shape: str
    device: str
    torch_threads: int
    parameters: int
    weights_bytes: int  # the parameters in the dtype the server holds them
    dtype: str
    picture: list[int]  # width, height
    text_tokens: int  # the text's own tokens
    sequence_tokens: int  # the language model's: the text's, the picture's and its tags
    image_tokens: int
    hf_forward_ms: list[float]  # transformers' eager forward, before and after the request
    first_request_ms: float | None  # None: it failed (``error``)
    ratio: float | None  # first request / the faster of transformers' forwards
    loaded_rss_bytes: int  # the server's resident memory once loaded
    warm_peak_rss_bytes: int  # its peak (VmHWM) after the warm-up request
    peak_rss_bytes: int  # its peak (VmHWM) after the first request
    vision_bytes: (
        int  # what one trace keeps of its vision tower: q and k, layers x 2 x patches x C x 4 B
    )
    memory_target_bytes: int  # weights x 1.3 + 1 GB
    error: str | None = None
    job: dict[str, Any] | None = None
    browser: dict[str, Any] = field(default_factory=dict)
    load_average: list[float] = field(default_factory=list)


def picture_png(size: int, seed: int = 0) -> bytes:
    """A ``size`` x ``size`` PNG of smooth colours and a bright square (something to look at),
    drawn with ``seed``."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    img = Image.new("RGB", (size, size))
    a, b = rng.randrange(1, 7), rng.randrange(1, 7)
    img.putdata(
        [(x * a % 256, y * b % 256, (x + y) % 256) for y in range(size) for x in range(size)]
    )
    top, left = rng.randrange(size // 2), rng.randrange(size // 2)
    ImageDraw.Draw(img).rectangle([left, top, left + size // 4, top + size // 4], fill="white")
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


class Reference:
    """transformers' own model of the folder (eager attention, the server's dtype, on its
    device) and its processor: the forward with attentions and hidden states on a text and a
    picture placed before it (as the server places a picture when the text has no
    placeholder)."""

    def __init__(self, folder: Path, device: str, dtype: Any) -> None:
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.torch = torch
        self.dev = torch.device("cuda" if device.startswith("cuda") else "cpu")
        self.model = AutoModelForImageTextToText.from_pretrained(
            folder, attn_implementation="eager", dtype=dtype
        ).eval()
        self.model.to(self.dev)
        self.processor = AutoProcessor.from_pretrained(folder, local_files_only=True)

    def inputs(self, text: str, png: bytes) -> dict[str, Any]:
        from PIL import Image

        image = Image.open(io.BytesIO(png)).convert("RGB")
        placed = self.processor.image_token + text
        batch = self.processor(text=[placed], images=[[image]], return_tensors="pt")
        dtype = self.model.dtype
        return {
            k: v.to(self.dev, dtype) if v.is_floating_point() else v.to(self.dev)
            for k, v in batch.items()
        }

    def forward_ms(self, inputs: dict[str, Any]) -> float:
        torch = self.torch
        with torch.inference_mode():
            if self.dev.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = self.model(**inputs, output_attentions=True, output_hidden_states=True)
            if self.dev.type == "cuda":
                torch.cuda.synchronize()
            ms = 1000 * (time.perf_counter() - t0)
            del out
        return ms


def weights(folder: Path, device: str) -> tuple[int, int, str]:
    """The checkpoint's parameters, their bytes in the dtype the server holds them (float32 on
    a CPU, the checkpoint's half precision on a GPU), and that dtype's name."""
    import math

    import torch
    from safetensors import safe_open

    from attnviz.engine.device import dtype_name, resolve_dtype

    with safe_open(folder / "model.safetensors", framework="pt") as f:
        count = sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())  # noqa: SIM118
    dtype = resolve_dtype("auto", torch.device(device), torch.bfloat16)
    return count, count * dtype.itemsize, dtype_name(dtype)


def overlay_drawn(port: int, model: str, text: str, png: Path, chromium: str) -> dict[str, Any]:
    """Chromium on the server at ``port``: ``model`` on ``text`` in sentence mode, then ``png``
    chosen in the page's file input; the seconds until ``#picture-view`` counts a draw."""
    from playwright.sync_api import sync_playwright

    from attnviz.bench.harness import BROWSER_ARGS, typed_sentence

    drawn = "n => +(document.querySelector('#picture-view')?.dataset.drawn || 0) > n"
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, headless=True, args=BROWSER_ARGS)
        try:
            page = typed_sentence(b, port, model, text)
            if (
                page.locator("#picture-view").count() == 0
                or page.locator("#s-image-file").count() == 0
            ):
                return {"error": "the page has no picture card (#picture-view, #s-image-file)"}
            seen = int(
                page.evaluate("+(document.querySelector('#picture-view').dataset.drawn || 0)")
            )
            t0 = time.perf_counter()
            page.set_input_files("#s-image-file", str(png))
            page.wait_for_function(drawn, arg=seen, polling="raf")
            return {"overlay_drawn_s": round(time.perf_counter() - t0, 2)}
        finally:
            b.close()


def run(
    tokens: list[int] | None = None,
    device: str = "cpu",
    use_browser: bool = False,
    chromium: str = "/usr/bin/chromium",
    shape: VlmShape = SMOLVLM_256M,
    image: int = 384,
    folder: Path | None = None,
) -> VlmReport:
    """A random model of ``shape`` written to ``folder`` (a temporary one by default), served,
    on an ``image`` px square picture and a text of ``tokens`` (the first; default 32)."""
    import tempfile

    from attnviz.bench.vlm_shape import write_folder

    own = None
    if folder is None:
        own = tempfile.TemporaryDirectory(prefix="attnviz-vlm-")
        folder = Path(own.name) / shape.name
    try:
        if not (folder / "model.safetensors").is_file():
            t0 = time.perf_counter()
            write_folder(shape, folder)
            log.info("wrote %s in %.0f s", folder, time.perf_counter() - t0)
        return measure(folder, shape, (tokens or [32])[0], device, image, use_browser, chromium)
    finally:
        if own is not None:
            own.cleanup()


def measure(
    folder: Path, shape: VlmShape, n: int, device: str, size: int, use_browser: bool,
    chromium: str,
) -> VlmReport:  # fmt: skip
    import torch

    from attnviz.engine.device import DTYPES
    from attnviz.pretrained.tokenize import TextTokenizer

    count, nbytes, dtype = weights(folder, device)
    tokenizer = TextTokenizer.from_file(folder / "tokenizer.json")
    text, warm_text = text_of(tokenizer, n), text_of(tokenizer, n, start=5)
    png, warm_png = picture_png(size, seed=1), picture_png(size, seed=2)
    hf = Reference(folder, device, DTYPES[dtype])
    inputs = hf.inputs(text, png)
    ids = inputs["input_ids"][0].tolist()
    image_id = hf.processor.image_token_id
    hf.forward_ms(hf.inputs(warm_text, warm_png))  # the first forward allocates
    report = VlmReport(
        shape=folder.name, device=device, torch_threads=torch.get_num_threads(),
        parameters=count, weights_bytes=nbytes, dtype=dtype, picture=[size, size],
        text_tokens=len(tokenizer(text).ids), sequence_tokens=len(ids),
        image_tokens=ids.count(image_id), hf_forward_ms=[], first_request_ms=None, ratio=None,
        loaded_rss_bytes=0, warm_peak_rss_bytes=0, peak_rss_bytes=0,
        vision_bytes=ids.count(image_id) // shape.image_seq_len * shape.vision_layers
        * 2 * (shape.image // shape.patch) ** 2 * shape.vision_hidden * 4,
        memory_target_bytes=int(nbytes * 1.3 + GB),
        load_average=[os.getloadavg()[0]],
    )  # fmt: skip
    env = {"ATTNVIZ_BUILTIN_MODEL": "false", "ATTNVIZ_REQUEST_TIMEOUT_S": "3600",
           "ATTNVIZ_MAX_WAIT_S": "600"}  # fmt: skip
    from attnviz.bench.shape import first_request

    with Server(["--device", device, "--model", str(folder)], env) as server:
        pid = server.proc.pid
        report.loaded_rss_bytes = status_bytes(pid, "VmRSS")
        warm = {"model": folder.name, "text": warm_text, "images": [data_url(warm_png)]}
        status, _, raw = request(server.port, "POST", "/api/trace", warm, FIRST, compact=True)
        if status != 200:
            log.warning("the warm-up trace answered %d: %r", status, raw[:200])
        report.warm_peak_rss_bytes = status_bytes(pid, "VmHWM")
        report.hf_forward_ms.append(round(hf.forward_ms(inputs), 1))
        body = {"model": folder.name, "text": text, "images": [data_url(png)]}
        t0 = time.perf_counter()
        status, _, raw, report.job = first_request(server.port, body)
        ms = 1000 * (time.perf_counter() - t0)
        report.peak_rss_bytes = status_bytes(pid, "VmHWM")
        report.hf_forward_ms.append(round(hf.forward_ms(inputs), 1))
        if status == 200:
            report.first_request_ms = round(ms, 1)
            report.ratio = round(ms / min(report.hf_forward_ms), 2)
        else:
            report.error = f"/api/trace answered {status}: {raw[:200]!r}"
        del hf
        if use_browser:
            import tempfile

            with tempfile.TemporaryDirectory(prefix="attnviz-vlm-png-") as tmp:
                path = Path(tmp) / "picture.png"
                path.write_bytes(picture_png(size, seed=3))
                report.browser = overlay_drawn(
                    server.port, folder.name, text_of(tokenizer, n, start=9), path, chromium
                )
    report.load_average.append(os.getloadavg()[0])
    return report


def table(report: VlmReport) -> str:
    r = report
    first = f"{r.first_request_ms / 1000:.2f} s" if r.first_request_ms is not None else "failed"
    ratio = f"{r.ratio:.2f}x" if r.ratio is not None else "-"
    hf = " / ".join(f"{ms / 1000:.2f}" for ms in r.hf_forward_ms) or "-"
    lines = [
        f"attnviz bench --vlm: a random {r.shape} ({r.parameters / 1e6:.0f}M parameters, "
        f"{r.dtype} on {r.device}, {r.torch_threads} threads); a {r.picture[0]} x "
        f"{r.picture[1]} picture and {r.text_tokens} text tokens: {r.sequence_tokens} tokens, "
        f"{r.image_tokens} of them the picture's; load average "
        f"{' then '.join(f'{x:.1f}' for x in r.load_average)}",
        "",
        "| figure | measured | target |",
        "| --- | ---: | ---: |",
        f"| transformers' eager forward, attentions (s, before / after) | {hf} | |",
        f"| the page's first request with the picture | {first} | |",
        f"| ratio (to the faster forward) | {ratio} | at most {RATIO_TARGET:g}x |",
        f"| the server's memory once loaded | {r.loaded_rss_bytes / GB:.2f} GB | |",
        f"| its peak after the warm-up (another picture) | {r.warm_peak_rss_bytes / GB:.2f} GB | |",
        f"| its peak (VmHWM) | {r.peak_rss_bytes / GB:.2f} GB | "
        f"{r.memory_target_bytes / GB:.2f} GB (weights {r.weights_bytes / GB:.2f} GB x 1.3 "
        "+ 1 GB) |",
    ]
    if "overlay_drawn_s" in r.browser:
        lines.append(
            f"| Chromium: the picture chosen -> its overlay drawn | "
            f"{r.browser['overlay_drawn_s']:.2f} s | within {DRAWN_TARGET_S:g} s |"
        )
    notes = [x for x in (r.error, r.browser.get("error")) if x]
    notes.append(
        f"A trace keeps its vision tower's queries and keys ({r.vision_bytes / GB:.2f} GB of "
        "float32 here), and makes a layer's weights again when a part asks for them."
    )
    if r.job:
        notes.append(
            f"the first request was a job ({r.job.get('state')}), estimated "
            f"{r.job['estimate_s']:.0f} s before it started"
        )
    return "\n".join(lines + ([""] + notes if notes else []))


def as_json(report: VlmReport) -> str:
    return json.dumps(asdict(report), separators=(",", ":"))
