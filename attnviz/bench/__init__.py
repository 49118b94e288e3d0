"""``attnviz bench``: every benchmark, one module each, and the table the CLI dispatches through.

Each bench module exposes the same three names:

- ``run(**options) -> result``: measures, and returns what it measured (one object). Its
  keywords are named after ``attnviz bench``'s options (``tokens``, ``repeat``, ``clients``,
  ``seconds``, ``use_browser`` (``--browser``), ``browser_tokens``, ``chromium``, ``device``,
  ``model``, and a bench's own, such as ``soak`` or ``generate``), each with its default.
- ``table(result) -> str``: the figures as the table of docs/performance.md.
- ``as_json(result) -> str``: the figures as one JSON object (``--json``).

``harness`` holds what they share (a server of their own, requests, texts of a given length,
the Hugging Face reference, the browser). A new bench is one module here and one row in
``BENCHES``. Figures only: no bench asserts a target.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from attnviz.bench.shape import SHAPES


@dataclass(frozen=True)
class Bench:
    """One row of the table: a module of this package, the ``attnviz bench`` flag that picks
    it, the flag's help, and the options its ``run`` takes."""

    name: str  # the module, attnviz.bench.<name>
    flag: str | None  # None: the default bench (no flag)
    help: str
    options: tuple[str, ...]  # run's keywords, from the options of the same names
    choices: tuple[str, ...] = ()  # the flag takes one of these (its value: the option ``name``)
    extra: tuple[tuple[str, dict[str, Any]], ...] = ()  # its own flags: add_argument's

    @property
    def dest(self) -> str | None:
        """The flag's attribute on the parsed arguments."""
        return None if self.flag is None else self.flag.lstrip("-").replace("-", "_")

    def module(self) -> ModuleType:
        return importlib.import_module(f"{__name__}.{self.name}")


SERVE = Bench(
    "serve",
    None,
    "start a server on a free loopback port, measure it beside the Hugging Face forward, stop it",
    ("tokens", "repeat", "clients", "seconds", "use_browser", "browser_tokens", "chromium",
     "device", "model"),
)  # fmt: skip

SOAK = "with --hosted: seconds more of load for memory"
LEARNERS = (
    "with --hosted: a class's learners (each starts a run) and as many typing, then a restart "
    "(default 30; 0: no class)"
)
GENERATE = "with --shape: tokens to write (default 256)"
# In the order of ``attnviz bench --help``; when several flags are given, the first here wins.
BENCHES: tuple[Bench, ...] = (
    Bench(
        "hosted",
        "--hosted",
        "instead: a hosted demo's load (a lone request, then --clients clients for "
        "--seconds, 503s and memory; then a class of --learners, and a restart)",
        ("clients", "seconds", "soak", "learners", "device", "model"),
        extra=(
            ("--soak", {"type": float, "default": 0.0, "help": SOAK}),
            ("--learners", {"type": int, "default": 30, "help": LEARNERS}),
        ),
    ),
    Bench(
        "train",
        "--train",
        "instead: the training targets (the default induction, reverse and char-LM runs: when "
        "their losses cross the targets, and the size of a checkpoint's snapshot), and the "
        "induction run through the HTTP API with traces asked while it trains",
        ("device",),
    ),
    Bench(
        "shape",
        "--shape",
        "instead: a random model of this real model's shape, served, beside transformers: "
        "the page's first request, memory, /healthz meanwhile, and generation",
        ("shape", "tokens", "device", "use_browser", "chromium", "generate"),
        choices=tuple(SHAPES),
        extra=(("--generate", {"type": int, "default": 256, "help": GENERATE}),),
    ),
    Bench(
        "vlm",
        "--vlm",
        "instead: a random model of SmolVLM-256M's shape, served, on a 384 x 384 picture and "
        "--tokens text tokens (default 32): the first request with the picture beside "
        "transformers' eager forward, and the server's peak memory; with --browser, the "
        "picture chosen in Chromium until its overlay is drawn",
        ("tokens", "device", "use_browser", "chromium"),
    ),
    Bench(
        "export",
        "--export",
        "instead: the one-file export of a text (--tokens, default 128,512): its size, and "
        "how soon Chromium draws it from file://",
        ("tokens", "chromium"),
    ),
    Bench(
        "learn",
        "--learn",
        "instead: the Learn mode's targets (each step opened in Chromium until drawn and "
        "answered, and each task's recurrent comparison, start to done)",
        ("chromium",),
    ),
    Bench(
        "atlas",
        "--atlas",
        "instead: the head atlas's time on a random model of GPT-2's shape (12 x 12 heads) "
        "and on the default model",
        ("device",),
    ),
    Bench(
        "composition",
        "--composition",
        "instead: the composition scores' time (every head pair, Q, K and V, from the weights) "
        "on a random model of GPT-2's shape (12 x 12 heads) and on the default model",
        ("device",),
    ),
    Bench(
        "attribution",
        "--attribution",
        "instead: one QK and one direct logit attribution's time after a trace (--tokens, "
        "default 512) on a random model of GPT-2's shape and on the default model; with "
        "--browser, each panel's time from a click to drawn in Chromium",
        ("tokens", "device", "use_browser", "chromium"),
    ),
    Bench(
        "long",
        "--long",
        "instead: a long text (--tokens, default 4,096 and 16,384) on a random model of "
        "SmolLM2-135M's shape, positions to 32k, beside transformers' SDPA forward: time, peak "
        "memory, what is kept, and an exact window's, a row's and its top keys' answer time",
        ("tokens", "device"),
    ),
    Bench(
        "corpus",
        "--corpus",
        "instead: the corpus view's time for one head over 5,000 tokens (first request, "
        "head change, layer change) on a random model of GPT-2's shape and the default model",
        ("device",),
    ),
)


def chosen(args: Any) -> Bench:
    """The bench the parsed arguments ask for: the first whose flag is set, else ``SERVE``."""
    return next((b for b in BENCHES if b.dest and getattr(args, b.dest, None)), SERVE)
