"""``attnviz bench --attribution``: the attributions' time after a trace (issue 29), on a model of
GPT-2's shape (random weights with a fixed seed, ``bench.composition.randomised``; nothing
downloaded) at 512 tokens, and on the default model when it is installed (an encoder: no logit
attribution): the trace, then one QK attribution of the last layer's query on a key half way
back, asked as the page asks (``parts.select`` with ``fields=qk_attribution``: the first builds
the clean run from what the trace's forward recorded), another head's after it, and one direct
logit attribution of the last position's top prediction.

With ``--browser``, the panels in Chromium (``panels``): a random model of SmolLM2-135M's shape
(``bench.shape``, the smallest real shape it writes) served by a server of its own, a text of
``--tokens`` in sentence mode; then the seconds from a click on a cell of the chosen head's
heatmap to *Why this score* drawn for it, and from a choice in *What pushed this* to its bars
drawn (issue 29's target: within 1 s), each the median of three."""

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

DRAWN_TARGET_S = 1.0  # and each panel drawn in the browser
PANELS_SHAPE = "smollm2-135m"
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


@dataclass(frozen=True)
class PanelsRow:
    model: str
    tokens: int
    why_s: float  # a heatmap cell clicked -> Why this score drawn for it (median of 3)
    pushed_s: float  # a choice in What pushed this -> its bars drawn (median of 3)


@dataclass
class AttributionReport:
    rows: list[AttributionRow]
    panels: PanelsRow | None = None


# A point inside cell (i, j) of the large heatmap, its row scrolled to the window's middle (a long
# text's heatmap is taller than the window).
CELL = """([i, j]) => { const root = document.querySelector('#mv-large .hc');
  const g = root.__heat.geometry, canvas = root.querySelector('canvas');
  const at = () => { const r = canvas.getBoundingClientRect();
    return {x: r.left + g.left + (j + 0.5) * g.cell, y: r.top + g.top + (i + 0.5) * g.cell}; };
  window.scrollBy(0, at().y - innerHeight / 2);
  return at(); }"""
# Why this score drawn after the n-th time, for the cell clicked (at a cell of a pixel or two a
# click can land on a neighbour: the panel explains whichever the page picked).
WHY_DRAWN = """(n) => { const box = document.querySelector('#why-view');
  return +(box.dataset.drawn || 0) > n && Boolean(box.__why)
    && box.querySelector('.why-cell') !== null; }"""
PUSHED_DRAWN = """() => { const box = document.querySelector('#pushed-view');
  const c = box.querySelector('.pushed-chart');
  return c !== null && !c.__old && !box.classList.contains('stale'); }"""


def panels(port: int, model: str, text: str, chromium: str) -> tuple[int, float, float]:
    """Chromium on the server at ``port``: ``model`` on ``text`` in sentence mode; the tokens,
    then the median seconds of three clicks' Why this score and three choices' What pushed
    this."""
    import statistics

    from playwright.sync_api import sync_playwright

    from attnviz.bench.harness import BROWSER_ARGS, typed_sentence

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, headless=True, args=BROWSER_ARGS)
        page = typed_sentence(b, port, model, text)
        n = int(page.evaluate("document.querySelector('#mv-large .hc').__heat.labels.length"))
        why = []
        for i, j in ((n - 1, n // 2), (n - 2, n // 3), (n - 3, 1)):
            at = page.evaluate(CELL, [i, j])
            seen = int(page.evaluate("+(document.querySelector('#why-view').dataset.drawn||0)"))
            t0 = time.perf_counter()
            page.mouse.click(at["x"], at["y"])
            page.wait_for_function(WHY_DRAWN, arg=seen, polling="raf")
            why.append(time.perf_counter() - t0)
        page.locator("#lens-card").scroll_into_view_if_needed()
        page.wait_for_function(PUSHED_DRAWN, polling="raf")
        pushed = []
        for choice in ("next", "top", "next"):
            radio = page.locator(f'#pushed-view input[value="{choice}"]')
            if radio.count() == 0 or radio.is_checked():
                continue
            page.evaluate("document.querySelector('#pushed-view .pushed-chart').__old = true")
            t0 = time.perf_counter()
            radio.check()
            page.wait_for_function(PUSHED_DRAWN, polling="raf")
            pushed.append(time.perf_counter() - t0)
        b.close()
    return n, statistics.median(why), statistics.median(pushed) if pushed else float("nan")


def browser_row(tokens: int, device: str, chromium: str) -> PanelsRow:
    """``panels`` on a random model of ``PANELS_SHAPE``'s shape, written to a temporary folder
    and served by a server of its own."""
    import tempfile
    from pathlib import Path

    from attnviz.bench.harness import Server
    from attnviz.bench.shape import write_folder
    from attnviz.pretrained.tokenize import TextTokenizer

    with tempfile.TemporaryDirectory(prefix="attnviz-panels-") as tmp:
        folder = write_folder(PANELS_SHAPE, Path(tmp) / PANELS_SHAPE)
        text = text_of(TextTokenizer.from_file(folder / "tokenizer.json"), tokens)
        env = {"ATTNVIZ_BUILTIN_MODEL": "false", "ATTNVIZ_REQUEST_TIMEOUT_S": "600"}
        with Server(["--device", device, "--model", str(folder)], env) as server:
            n, why, pushed = panels(server.port, folder.name, text, chromium)
    return PanelsRow(PANELS_SHAPE, n, why, pushed)


def run(
    tokens: list[int] | None = None,
    device: str = "cpu",
    use_browser: bool = False,
    chromium: str = "/usr/bin/chromium",
) -> AttributionReport:
    where = torch.device(device)
    shape = gpt2_shape(torch.device("cpu"))
    assert isinstance(shape, PretrainedModel)
    randomised(shape).model.to(where)
    n = max(tokens or [512])
    rows = [measure(m, n) for m in [shape, *builtin(where)]]
    return AttributionReport(rows, browser_row(n, device, chromium) if use_browser else None)


def table(report: AttributionReport) -> str:
    rows = report.rows
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
    p = report.panels
    if p is not None:
        out += [
            "",
            f"In Chromium (target: each panel drawn within {DRAWN_TARGET_S:g} s), a random model "
            f"of {p.model}'s shape at {p.tokens} tokens:",
            "",
            "| panel | seconds (median of 3) |",
            "| --- | --- |",
            f"| a heatmap cell clicked -> Why this score drawn | {p.why_s:.2f} |",
            f"| a choice in What pushed this -> its bars drawn | {p.pushed_s:.2f} |",
        ]
    return "\n".join(out)


def as_json(report: AttributionReport) -> str:
    return json.dumps(asdict(report), separators=(",", ":"))
