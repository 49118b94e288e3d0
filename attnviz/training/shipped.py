"""The character model that ships with attnviz: defined once here (``RECIPE``), built by
attnviz's own trainer (``build``, which ``attnviz build-model FOLDER`` runs), kept in the package
(``shipped_dir()``: ``attnviz/models/charlm-pydoc``) and loaded beside the default model whenever
the built-in models are on, so that sentence mode has predictions, the logit lens and What pushed
this at once, for every visitor, offline.

It learns the next character of the default char-LM text (the standard library's
``pydoc_data.topics``: Python's help pages, PSF-licensed), so it reads English with some code.
The folder holds what ``save_run`` writes (config.json, model.safetensors, tokenizer.json),
``text.txt.gz``: the text it learned, cleaned (another Python ships a slightly different
``pydoc_data``; a rebuild, and the tests, read this copy, so they mean the same everywhere), and
``recipe.json``: the recipe, the text it learned (its Python, length and SHA-256), its training
loss at a few steps (``LOSS_STEPS``), its loss on the whole held-out part of the text beside a
bigram model's on the same characters, the build's seconds and the versions that made it.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from attnviz import __version__
from attnviz.engine import Transformer
from attnviz.training.export import save_run
from attnviz.training.tasks import CharLM, bigram_heldout_loss
from attnviz.training.trainer import Architecture, Optimiser, Step, loss_on, train

# The model's name (its folder's) and what the page calls it.
SHIPPED_NAME = "charlm-pydoc"
SHIPPED_TITLE = "Tiny character model (Python's help text)"
RECIPE_FILE = "recipe.json"
TEXT_FILE = "text.txt.gz"
RECIPE_VERSION = 1  # recipe.json's schema
# The steps whose training loss (on that step's batch, before its update) recipe.json keeps, with
# the last: the optimiser's rate is constant, so the first steps of the recipe are those of any
# shorter run with its seed, and a short run checks that the recipe still trains the same way.
LOSS_STEPS = (1, 10, 100)


@dataclass(frozen=True)
class Recipe:
    """What the shipped model is: the char-LM task on the default text with ``context``
    characters (the most a trace of it may have), the architecture and the optimiser. Bigger
    than the Train mode's char-LM default (``CHARLM_ARCH``): three layers of 96 dimensions with
    the feed-forward, and twice the context, so a learner's sentence fits."""

    context: int = 128
    arch: Architecture = Architecture(layers=3, heads=4, d_model=96, ffn=True)
    opt: Optimiser = Optimiser(steps=1500, lr=3e-3, batch=16, seed=0)

    def as_dict(self) -> dict:
        return {
            "task": CharLM.name,
            "text": "default",  # tasks.default_text(): pydoc_data.topics
            "context": self.context,
            "arch": dataclasses.asdict(self.arch),
            "opt": dataclasses.asdict(self.opt),
        }


RECIPE = Recipe()


def shipped_dir() -> Path:
    """The shipped model's folder inside the installed package (a wheel and an editable install
    alike carry it)."""
    return Path(__file__).resolve().parent.parent / "models" / SHIPPED_NAME


def shipped_text(folder: Path | None = None) -> str | None:
    """The text the model in ``folder`` (the shipped one's by default) learned, or None when the
    folder has none (a first build)."""
    path = (shipped_dir() if folder is None else Path(folder)) / TEXT_FILE
    return gzip.decompress(path.read_bytes()).decode("ascii") if path.is_file() else None


def shipped_task(context: int = RECIPE.context) -> CharLM:
    """The char-LM task on the text the shipped model learned (this Python's default text when
    the package has none)."""
    text = shipped_text()
    return CharLM(context=context) if text is None else CharLM(text, context=context)


def heldout_windows(task: CharLM) -> int:
    """How many windows of ``context`` + 1 characters fit in the held-out part side by side:
    ``task.heldout`` of that many spans the whole part without overlap."""
    return len(task.heldout_ids) // (task.context + 1)


@torch.no_grad()
def heldout_loss(model: Transformer, task: CharLM) -> float:
    """The model's mean loss, in nats per character, over the whole held-out part (every
    character of ``task.heldout(heldout_windows(task))`` after a window's first)."""
    was = model.training
    model.eval()
    try:
        return float(loss_on(model, task.heldout(heldout_windows(task))))
    finally:
        model.train(was)


def text_facts(task: CharLM, python: str | None = None) -> dict:
    """Which text the task learns: where it comes from, the Python whose copy it is (this one's
    unless said), its length and SHA-256 (cleaned, as trained on)."""
    return {
        "source": "pydoc_data.topics",
        "python": python or platform.python_version(),
        "chars": len(task.text),
        "sha256": hashlib.sha256(task.text.encode("ascii")).hexdigest(),
    }


def build(
    folder: Path, recipe: Recipe = RECIPE, on_step: Callable[[Step], None] | None = None
) -> dict:
    """Train the model of ``recipe`` (one CPU thread, seeded: the same numbers on every run of
    one machine) and write it into ``folder`` (created; its files replaced) with recipe.json and
    the text it learned: the shipped model's text (this Python's default text for a first
    build). Returns recipe.json's content."""
    task = shipped_task(recipe.context)
    kept_text = shipped_text()
    learned_on = read_recipe()["text"]["python"] if kept_text is not None else None
    kept = set(LOSS_STEPS) | {recipe.opt.steps}
    losses: dict[str, float] = {}

    def step(s: Step) -> None:
        if s.step in kept:
            losses[str(s.step)] = round(s.loss, 6)
        if on_step is not None:
            on_step(s)

    t0 = time.perf_counter()
    run = train(task, recipe.arch, recipe.opt, step)
    seconds = time.perf_counter() - t0
    folder = save_run(run, task, Path(folder))
    # mtime 0: the same bytes for the same text
    (folder / TEXT_FILE).write_bytes(gzip.compress(task.text.encode("ascii"), 9, mtime=0))
    windows = heldout_windows(task)
    facts = {
        "recipe_version": RECIPE_VERSION,
        "name": SHIPPED_NAME,
        "title": SHIPPED_TITLE,
        "recipe": recipe.as_dict(),
        "text": text_facts(task, learned_on),
        "losses": losses,
        "heldout_windows": windows,
        "heldout_loss": round(heldout_loss(run.model, task), 6),
        "bigram_loss": round(bigram_heldout_loss(task, windows), 6),
        "parameters": sum(p.numel() for p in run.model.parameters()),
        "build_seconds": round(seconds, 1),
        "attnviz_version": __version__,
        "torch_version": torch.__version__,
    }
    text = json.dumps(facts, indent=2) + "\n"
    (folder / RECIPE_FILE).write_text(text, encoding="utf-8")
    return facts


def read_recipe(folder: Path | None = None) -> dict:
    """recipe.json of ``folder`` (the shipped model's by default)."""
    path = (shipped_dir() if folder is None else Path(folder)) / RECIPE_FILE
    return json.loads(path.read_text(encoding="utf-8"))
