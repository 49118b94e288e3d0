"""What a run is: its plan (task, variants, optimiser), each variant's progress, and the
append-only event log its clients read."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field

import torch

from attnviz.engine import Transformer
from attnviz.schemas.train import TrainCheckpoint, TrainClaim, TrainRequest
from attnviz.services.events import EventLog
from attnviz.services.ownership import Ownership
from attnviz.training.catalog import slug
from attnviz.training.tasks import CharLM, Reverse, Task, bigram_heldout_loss
from attnviz.training.trainer import (
    HELDOUT_BATCH,
    Architecture,
    Optimiser,
    Run,
    Step,
    checkpoint_steps,
    model_config,
)

SAMPLE_PROMPT = 24  # characters of the probe a char-LM sample continues


class RunGone(LookupError):
    """A run id this server does not have (never had, or no longer keeps): 404."""


class RunElsewhere(RunGone):
    """A run another server on the data directory holds (it trains it or keeps it in line):
    503 with Retry-After. This server shows it once it has ended there, or takes it over if
    that server stops."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TrainRefused(ValueError):
    """A request over one of the server's bounds; the message names the field and the rule in
    words a learner reads: 422. ``setting``: the host's setting behind a cap (its name goes to
    the server's log, never into the message)."""

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


# A server with no training slots (``ATTNVIZ_TRAIN_SLOTS=0``), as a learner reads it.
NOT_TRAINING = "task: this server does not train models: its host has turned training off"


class NoRoom(Exception):
    """A run that would fit the disk budget, refused while the budget is taken by runs that
    may not be removed yet: 507."""


def megabytes(n: float) -> str:
    """Bytes as MB (2**20), to 3 significant digits: "0.0413 MB", "1.27 MB", "1,230 MB"."""
    mb = float(f"{n / 2**20:.3g}")
    places = max(0, 2 - math.floor(math.log10(mb))) if mb > 0 else 0
    return f"{mb:,.{places}f} MB"


def over_time(max_seconds: float) -> str:
    """Why a run (or a comparison) stopped at the time limit, as its owner reads it (the setting,
    ``ATTNVIZ_TRAIN_MAX_SECONDS``, is the host's: the log names it)."""
    return f"stopped at this server's time limit of {max_seconds:g} s a run"


def param_count(arch: Architecture, task: Task) -> int:
    with torch.device("meta"):
        model = Transformer(
            model_config(arch, task.vocab.size, task.max_tokens, task.encoder_decoder)
        )
    return sum(p.numel() for p in model.parameters())


# What a finished run keeps besides its models' tensors and its checkpoints' thumbnails, as a
# filesystem counts it (``du -sb``): a folder's 4096 bytes, request.json and access.json, a
# model folder's config.json and its tokenizer's fixed part, a checkpoint's numbers and sample.
FOLDER_BYTES = 4096
RUN_FILES_BYTES = 2048
MODEL_FILES_BYTES = 2048
CHECKPOINT_BYTES = 400
TENSOR_HEADER_BYTES = 96  # a tensor's entry in a safetensors header
STEP_BYTES = 24  # a step of the history: its number, loss, seconds; a layer's norm adds 10
LAYER_STEP_BYTES = 10
VOCAB_BYTES = 24  # a character of the tokenizer's vocabulary


def stored_bytes(plan: Plan, checkpoints: int) -> int:
    """About what the run keeps on disk once it has ended (``du -sb`` of its folder, which the
    disk budget counts): each variant's model folder (its weights, from the architecture's
    tensors, 4 bytes a parameter, and its config and tokenizer) and its part of run.json (every
    step's loss and gradient norms, and at each of its ``checkpoints`` + 1 the probe's attention
    as 8-bit thumbnails, base64)."""
    task = plan.task
    probe = task.probe()
    t, src = len(probe.ids), len(probe.source or [])
    shots = len(checkpoint_steps(plan.opt.steps, checkpoints))
    total = FOLDER_BYTES + RUN_FILES_BYTES
    for _, arch in plan.variants:
        cfg = model_config(arch, task.vocab.size, task.max_tokens, task.encoder_decoder)
        with torch.device("meta"):
            state = Transformer(cfg).state_dict()
        weights = sum(v.numel() * v.element_size() for v in state.values())
        header = TENSOR_HEADER_BYTES * len(state)
        model = FOLDER_BYTES + MODEL_FILES_BYTES + VOCAB_BYTES * task.vocab.size + weights + header
        layers = arch.layers * (2 if task.encoder_decoder else 1)
        history = plan.opt.steps * (STEP_BYTES + LAYER_STEP_BYTES * layers)
        cells = t * t + (t * src + src * src if task.encoder_decoder else 0)
        thumbs = arch.layers * arch.heads * cells * 4 // 3  # 8 bits a weight, base64
        total += model + history + shots * (thumbs + CHECKPOINT_BYTES)
    return total


@dataclass
class Plan:
    """What a run trains: the task, its variants (label, architecture) and the optimiser."""

    task: Task
    variants: list[tuple[str, Architecture]]
    opt: Optimiser
    preset: str | None = None
    compare: str | None = None
    params: list[int] = field(default_factory=list)  # each variant's, once checked
    bytes: int = 0  # about what it keeps on disk once it has ended (``stored_bytes``)

    @property
    def prompt(self) -> str | None:
        """What a char-LM's samples continue (the probe's first characters), or the source an
        encoder-decoder's samples are written for (the probe's letters)."""
        if isinstance(self.task, Reverse):
            return self.task.probe_word[: self.task.max_len]
        if not isinstance(self.task, CharLM):
            return None
        return self.task.vocab.decode(self.task.probe().ids[:SAMPLE_PROMPT])

    @property
    def verb(self) -> str | None:
        if isinstance(self.task, Reverse):
            return "copies" if self.task.copy else "reverses"
        return "continues" if isinstance(self.task, CharLM) else None


@dataclass
class Variant:
    label: str
    arch: Architecture
    params: int
    state: str = "waiting"
    model: str | None = None
    history: list[Step] = field(default_factory=list)
    checkpoints: list[TrainCheckpoint] = field(default_factory=list)
    induction: list[list[float]] | None = None
    alignment: list[list[float]] | None = None
    result: Run | None = None  # the trained model, once finished
    # The model's weights as of a checkpoint, in the store while it trains ({"folder", "step"}):
    # what an interrupted run keeps of its model (``kept.save_weights``).
    weights: dict | None = None


class LiveRun(EventLog):
    """One run as it trains: its variants' histories and checkpoints, and its event log
    (``services.events``: its ``base`` past every id of its log before a restart, for a run put
    back in line, ``kept.requeue``)."""

    def __init__(self, run_id: str, req: TrainRequest, plan: Plan, access: Ownership):
        super().__init__()
        self.id = run_id
        self.access = access  # its owner, whether shared, who opened it (services.ownership)
        self.plan = plan
        self.request = req
        self.task_name = req.task
        self.checkpoints = req.checkpoints
        self.state = "running"  # "queued" while it waits for a slot (training.queue)
        self.reason: str | None = None
        self.place: int | None = None  # while queued: its place in line (1 is next)
        self.wait_s: int | None = None  # while queued: the estimate of its wait
        self.exempt = False  # started by the operator: not bound by the per-visitor rule
        self.address = ""  # the client address that started it (the per-address cap)
        self.name: str | None = None  # the name its owner gave it (PATCH), kept in its row
        self.stored = False  # its end is in the store (its row says finished)
        self.seen = False  # its owner was told it ended (its row says so: eviction may take it)
        pairs = zip(plan.variants, plan.params, strict=True)
        self.variants = [Variant(label, arch, n) for (label, arch), n in pairs]
        self.cancel = threading.Event()
        self.started = time.monotonic()
        self.created = time.time()  # when it started, as the store keeps it
        self.ended: float | None = None
        self.step_time = 0.0  # the last variant's mean seconds per step
        # Once it ended, having trained in this process: its seconds from start to end per step
        # trained (its setup, checkpoints, measures and writes included), which the line's
        # estimates go by
        self.wall_step_s = 0.0
        self.claims: list[TrainClaim] | None = None
        self.baseline: float | None = None
        if isinstance(plan.task, CharLM):
            self.baseline = round(bigram_heldout_loss(plan.task, HELDOUT_BATCH), 6)

    @property
    def finished(self) -> bool:
        return self.state not in ("queued", "running")

    @property
    def title(self) -> str:
        """The run's name: the one its owner gave it, else what it trains (``described``)."""
        return self.name if self.name is not None else self.described

    @property
    def named(self) -> bool:
        """Its owner named it: a page shows ``title`` as it is, without the start's time."""
        return self.name is not None

    @property
    def described(self) -> str:
        """What the run trains, in words, for its name on a page with its start's time:
        "induction, 2 layers", a preset's by its title (never its id): "Position encodings on
        the induction task (induction, 4 models)"."""
        plan = self.plan
        if plan.preset:
            from attnviz.training.ablations import PRESETS  # as the service reads them

            preset = PRESETS.get(plan.preset)
            title = preset.title if preset else "An ablation preset"
            return f"{title} ({self.task_name}, {len(plan.variants)} models)"
        if plan.compare:
            return f"{self.task_name}, {plan.compare} compared ({len(plan.variants)} models)"
        layers = plan.variants[0][1].layers
        return f"{self.task_name}, {layers} layer{'' if layers == 1 else 's'}"

    def remaining_s(self, deadline: float) -> float:
        """Seconds until the run ends, as its pace so far says, and never past ``deadline``."""
        steps = self.plan.opt.steps
        left = sum(steps - len(v.history) for v in self.variants if v.state != "cancelled")
        return min(left * (self.pace() or 0.05), max(0.0, deadline - time.monotonic()))

    def pace(self) -> float:
        """Seconds a step, as the variant training now has gone so far (checkpoints included),
        else as the last finished one went (``step_time``); 0 before any step."""
        for v in self.variants:
            if v.state == "running" and v.history:
                return v.history[-1].seconds / len(v.history)
        return self.step_time


def model_title(run: LiveRun, label: str) -> str:
    """A variant's model's name on a page: the run's, with the variant's label where the run
    has several."""
    return run.title + (f", {label}" if len(run.variants) > 1 else "")


def model_name(run: LiveRun, variant: Variant) -> str | None:
    """The sentence-mode name of a variant's model: the run's id, with the variant's label where
    the run has several; None for an encoder-decoder, which is no sentence-mode model (a trace
    reads one text; the Train tab decodes with it)."""
    if run.plan.task.encoder_decoder:
        return None
    return run.id if len(run.variants) == 1 else f"{run.id}-{slug(variant.label)}"
