"""One run's thread: trains its variants one after the other, logs each batch of steps, each
checkpoint and each variant's end as events, measures a preset's claims, and adds each trained
model that reads one text to the registry."""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import torch

from attnviz.engine import Transformer
from attnviz.pretrained import ModelRegistry, PretrainedModel
from attnviz.schemas.train import TrainCheckpoint
from attnviz.services import compute, heap
from attnviz.services.training.report import claims, columns, shorter_claims, thumbs
from attnviz.services.training.runs import (
    LiveRun,
    Plan,
    Variant,
    model_name,
    model_title,
    over_time,
)
from attnviz.settings import Settings
from attnviz.training import measures
from attnviz.training.sample import generate
from attnviz.training.tasks import CharLM, Induction, Reverse
from attnviz.training.trainer import Checkpoint, Run, Step, train

log = logging.getLogger(__name__)


class Keep(Protocol):
    """Writes the run to the store: ``state`` and ``reason`` at its end, None while it trains;
    ``ahead``: the checkpoints of each variant written before they are told."""

    def __call__(self, state: str | None, reason: str | None,
                 ahead: dict[int, list[TrainCheckpoint]] | None = None) -> None: ...  # fmt: skip


FLUSH_S = 0.25  # steps are sent in batches, at most this often (the plots redraw as often)
# A model's weights are stored at a checkpoint at most this often, and at its last one (a
# 36k-parameter model's folder takes about 12 ms to write: 0.6% of a run at this rate).
WEIGHTS_EVERY_S = 2.0
SAMPLE_CHARS = 80  # characters a char-LM writes at each checkpoint
SAMPLE_TEMPERATURE = 0.8


class Worker:
    """Trains ``run`` when called (on a thread of its own); ``done`` is called at its end."""

    def __init__(self, run: LiveRun, *, settings: Settings, device: torch.device,
                 registry: ModelRegistry, done: Callable[[], None],
                 keep: Keep | None = None,
                 keep_weights: Callable[[int, Run], None] | None = None) -> None:  # fmt: skip
        self.run = run
        self.settings = settings
        self.device = device
        self.registry = registry
        self.done = done
        # ``keep(None, None, ahead)`` at each checkpoint before it is told, ``keep(state,
        # reason)`` just before its end is told: the run written to the store
        # (services.training.kept), so that what a page was told survives a stop
        self.keep: Keep = keep or (lambda state, reason, ahead=None: None)
        # ``keep_weights(variant, run so far)`` at a checkpoint, every WEIGHTS_EVERY_S at most,
        # and at the variant's last: its model so far, which a run interrupted then keeps
        self.keep_weights = keep_weights or (lambda i, so_far: None)

    def __call__(self) -> None:
        with compute.beside():  # the run has a core of its own: traces take one thread fewer
            self._train_run()

    def _train_run(self) -> None:
        run = self.run
        state, reason = "done", None  # its row says running (stored as it was started)
        try:
            deadline = run.started + self.settings.train_max_seconds
            for i, variant in enumerate(run.variants):
                if run.cancel.is_set() or time.monotonic() > deadline:
                    break
                self._train_variant(i, variant, deadline)
            if run.plan.preset is not None and all(v.state == "done" for v in run.variants):
                self._measure_claims()
            if run.cancel.is_set():
                state, reason = "cancelled", "cancelled"
            elif time.monotonic() > deadline or any(v.state != "done" for v in run.variants):
                state, reason = "cancelled", over_time(self.settings.train_max_seconds)
                log.info("training run %s stopped at ATTNVIZ_TRAIN_MAX_SECONDS (%g s)", run.id,
                         self.settings.train_max_seconds)  # fmt: skip
        except Exception as exc:  # a failure is the run's state, not the server's
            log.exception("training run %s failed", run.id)
            state, reason = "failed", f"training failed: {type(exc).__name__}: {exc}"

        def end() -> None:
            run.state, run.reason, run.ended = state, reason, time.monotonic()
            trained = sum(len(v.history) for v in run.variants)
            if trained:
                run.wall_step_s = (run.ended - run.started) / trained
            for v in run.variants:
                if v.state in ("waiting", "running"):
                    v.state = "cancelled"

        self.keep(state, reason)  # stored whole before a client hears of its end
        run.emit("end", {"state": state, "reason": reason}, apply=end)
        self.done()
        heap.trim()  # what training freed (this thread's arena) back to the system

    def _train_variant(self, i: int, variant: Variant, deadline: float) -> None:
        run = self.run
        plan = run.plan
        run.emit("variant", {"variant": i, "state": "running"},
                 apply=lambda: setattr(variant, "state", "running"))  # fmt: skip
        pending: list[Step] = []
        last_flush = time.monotonic()

        def flush() -> None:
            nonlocal last_flush
            if pending:
                steps = pending[:]
                run.emit("steps", {"variant": i, **columns(steps)},
                         apply=lambda: variant.history.extend(steps))  # fmt: skip
                pending.clear()
            last_flush = time.monotonic()

        def on_step(step: Step) -> None:
            pending.append(step)
            if time.monotonic() - last_flush >= FLUSH_S:
                flush()

        def on_checkpoint(point: Checkpoint) -> None:
            flush()
            cp = TrainCheckpoint(
                step=point.step,
                heldout=round(point.heldout, 6),
                seconds=round(point.seconds, 3),
                thumbs=thumbs(point.pattern),
                cross=None if point.cross is None else thumbs(point.cross),
                encoder=None if point.encoder is None else thumbs(point.encoder),
                sample=point.sample,
            )
            self.keep(None, None, {i: [cp]})  # stored before it is told
            run.emit("checkpoint", {"variant": i, "checkpoint": cp.model_dump()},
                     apply=lambda: variant.checkpoints.append(cp))  # fmt: skip

        weighed = -math.inf

        def on_weights(so_far: Run) -> None:
            nonlocal weighed
            now = time.monotonic()
            if so_far.checkpoints[-1].step >= plan.opt.steps or now - weighed >= WEIGHTS_EVERY_S:
                self.keep_weights(i, so_far)
                weighed = now

        result = train(
            plan.task,
            variant.arch,
            plan.opt,
            on_step=on_step,
            should_stop=lambda: run.cancel.is_set() or time.monotonic() > deadline,
            device=self.device,
            checkpoints=run.checkpoints,
            on_checkpoint=on_checkpoint,
            sample=sampler(plan),
            on_weights=on_weights,
        )
        flush()
        if result.history:
            run.step_time = result.history[-1].seconds / len(result.history)
        task = plan.task
        if isinstance(task, Induction):
            n = measures.induction_letters(task)
            variant.induction = measures.as_sent(measures.induction_by_head(result.model, task, n))
        if isinstance(task, Reverse):
            n = min(measures.ALIGNMENT_LETTERS, task.max_len)
            variant.alignment = measures.as_sent(measures.alignment_by_head(result.model, task, n))
        name = model_name(run, variant)  # None: an encoder-decoder, decoded by the Train tab
        if name is not None:
            self.registry.add(served_model(run, name, result.model, self.device, variant.label))
        variant.result = result

        def finished() -> None:
            variant.model = name
            variant.state = result.state

        run.emit("variant", {"variant": i, "state": result.state, "model": name,
                             "induction": variant.induction, "alignment": variant.alignment},
                 apply=finished)  # fmt: skip

    def _measure_claims(self) -> None:
        """A preset's claims on the run's trained models, as the tests measure them."""
        from attnviz.training.ablations import PRESETS

        run = self.run
        preset = PRESETS[run.plan.preset or ""]
        # The measures feed CPU tensors: models trained on a GPU are measured from a CPU copy.
        runs = [
            r
            if r.model.param_device.type == "cpu"
            else replace(r, model=copy.deepcopy(r.model).cpu())
            for r in (v.result for v in run.variants)
            if r is not None
        ]
        if run.plan.opt.steps < preset.opt.steps:  # made shorter: what it has the steps for
            outcomes = shorter_claims(preset, runs)
        else:
            outcomes = claims(preset.outcomes(runs))
        run.emit("claims", {"claims": [o.model_dump() for o in outcomes]},
                 apply=lambda: setattr(run, "claims", outcomes))  # fmt: skip


def served_model(run: LiveRun, name: str, model: Transformer, device: torch.device,
                 label: str = "") -> PretrainedModel:  # fmt: skip
    """A run's trained model (reading one text) as a sentence-mode model named ``name``
    (``label``: its variant's, in a run of several)."""
    from attnviz.pretrained.tokenize import TextTokenizer
    from attnviz.training.export import char_tokenizer

    task = run.plan.task
    return PretrainedModel(
        name=name,
        family="attnviz",
        source=Path(name),
        origin=f"run {run.id}",
        cfg=model.cfg,
        model=model,
        tokenizer=TextTokenizer(char_tokenizer(task.vocab)),
        device=device,
        run=run.id,
        title=model_title(run, label),
        created=run.created,
        named=run.named,
        examples=[task.vocab.decode(task.probe().ids)],
    )


def sampler(plan: Plan) -> Callable[[Transformer], str] | None:
    """A char-LM writes SAMPLE_CHARS after the prompt at each checkpoint (seeded); an
    encoder-decoder writes what it makes of the probe's source (greedy)."""
    prompt, task = plan.prompt, plan.task
    if prompt is None:
        return None
    vocab, seed = task.vocab, plan.opt.seed
    if isinstance(task, Reverse):
        source = task.probe().source
        assert source is not None
        return lambda model: vocab.decode(task.decode(model, source))
    assert isinstance(task, CharLM)
    return lambda model: generate(model, vocab, prompt, SAMPLE_CHARS, SAMPLE_TEMPERATURE, seed)
