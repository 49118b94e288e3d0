"""Training runs for the API: started by a request, trained on threads of their own, watched
through an append-only log of events, and, once finished, models in the registry.

A run trains one or more variants (of one switch, or of an ablation preset) one after the other,
each with the same seed and so the same data order. Runs are bounded: by the server's slots
(a start past them is ``Busy``: 503 with Retry-After), and each by steps, seconds, parameters
and text size. The last ``train_keep_runs`` finished runs are kept; an older one is gone (404).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import logging
import math
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from attnviz.engine import Transformer, act_name, capture
from attnviz.pretrained import ModelRegistry, PretrainedModel
from attnviz.pretrained.native import quoted_each
from attnviz.schemas import (
    TRAIN_SHAPE,
    Thumbs,
    TrainArchitecture,
    TrainAsk,
    TrainCheckpoint,
    TrainClaim,
    TrainDecoded,
    TrainDecodeRequest,
    TrainHistory,
    TrainLimits,
    TrainOptimiser,
    TrainOptions,
    TrainPresetInfo,
    TrainProbe,
    TrainRequest,
    TrainRun,
    TrainRuns,
    TrainRunSummary,
    TrainRunVariantSummary,
    TrainTaskInfo,
    TrainVariant,
    TrainVariantInfo,
)
from attnviz.services import compute
from attnviz.services.admission import Busy
from attnviz.services.arrays import quantize
from attnviz.settings import Settings
from attnviz.training.catalog import SWITCHES, TASKS, slug, variants_of
from attnviz.training.sample import generate
from attnviz.training.tasks import CharLM, Induction, Reverse, Task, bigram_heldout_loss
from attnviz.training.trainer import (
    HELDOUT_BATCH,
    Architecture,
    Checkpoint,
    Optimiser,
    Run,
    Step,
    checkpoint_steps,
    model_config,
    pattern_names,
    train,
)

log = logging.getLogger(__name__)

FLUSH_S = 0.1  # steps are sent in batches, at most this often
SAMPLE_PROMPT = 24  # characters of the probe a char-LM sample continues
SAMPLE_CHARS = 80  # characters it writes at each checkpoint
SAMPLE_TEMPERATURE = 0.8
POLL_S = 0.1  # how often a stream looks for new events


class RunGone(LookupError):
    """A run id this server does not have (never had, or no longer keeps): 404."""


class TrainRefused(ValueError):
    """A request over one of the server's bounds; the message names the field: 422."""


def _arch(a: TrainArchitecture) -> Architecture:
    return Architecture(**a.model_dump())


def _arch_info(a: Architecture) -> TrainArchitecture:
    return TrainArchitecture(**a.__dict__)


def _opt_info(o: Optimiser) -> TrainOptimiser:
    return TrainOptimiser(**o.__dict__)


def param_count(arch: Architecture, task: Task) -> int:
    with torch.device("meta"):
        model = Transformer(
            model_config(arch, task.vocab.size, task.max_tokens, task.encoder_decoder)
        )
    return sum(p.numel() for p in model.parameters())


def thumbs(pattern: torch.Tensor) -> Thumbs:
    """(L, nh, T, T) weights -> 8-bit values, one scale per head (its peak), as a trace's
    compact thumbnails: weight ~ values * scale / 255."""
    values, scale = quantize(pattern)  # (L, nh, T, T), (L, nh)
    return Thumbs(
        shape=list(values.shape),
        values=base64.b64encode(values.numpy().tobytes()).decode("ascii"),
        scale=[[round(float(s), 6) for s in row] for row in scale],
    )


@dataclass
class Plan:
    """What a run trains: the task, its variants (label, architecture) and the optimiser."""

    task: Task
    variants: list[tuple[str, Architecture]]
    opt: Optimiser
    preset: str | None = None
    compare: str | None = None
    params: list[int] = field(default_factory=list)  # each variant's, once checked

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


class LiveRun:
    """One run as it trains: its variants' histories and checkpoints, and its event log."""

    def __init__(self, run_id: str, req: TrainRequest, plan: Plan):
        self.id = run_id
        self.plan = plan
        self.task_name = req.task
        self.checkpoints = req.checkpoints
        self.state = "running"
        self.reason: str | None = None
        pairs = zip(plan.variants, plan.params, strict=True)
        self.variants = [Variant(label, arch, n) for (label, arch), n in pairs]
        self.cancel = threading.Event()
        self.started = time.monotonic()
        self.ended: float | None = None
        self.events: list[tuple[str, str]] = []  # (event name, JSON data)
        self.lock = threading.Lock()
        self.step_time = 0.0  # the last variant's mean seconds per step
        self.claims: list[TrainClaim] | None = None
        self.baseline: float | None = None
        if isinstance(plan.task, CharLM):
            self.baseline = round(bigram_heldout_loss(plan.task, HELDOUT_BATCH), 6)

    @property
    def finished(self) -> bool:
        return self.state != "running"

    def emit(self, name: str, data: dict, apply: Callable[[], None] | None = None) -> None:
        """Log an event; ``apply`` makes the change it reports, at the same moment, so that a
        state read between the two can never hold the change without the event counted in
        its ``seq`` (a stream would then deliver it twice)."""
        text = json.dumps(data, separators=(",", ":"))
        with self.lock:
            if apply is not None:
                apply()
            self.events.append((name, text))

    def events_from(self, seq: int) -> list[tuple[int, str, str]]:
        with self.lock:
            return [(i + 1, n, d) for i, (n, d) in enumerate(self.events[seq:], start=seq)]

    def remaining_s(self, deadline: float) -> float:
        """Seconds until the run ends, as its pace so far says, and never past ``deadline``."""
        steps = self.plan.opt.steps
        left = sum(steps - len(v.history) for v in self.variants if v.state != "cancelled")
        pace = self.step_time
        for v in self.variants:
            if v.state == "running" and v.history:
                pace = v.history[-1].seconds / len(v.history)
        return min(left * (pace or 0.05), max(0.0, deadline - time.monotonic()))


class TrainService:
    def __init__(self, settings: Settings, device: torch.device, registry: ModelRegistry) -> None:
        self.settings = settings
        self.device = device
        self.registry = registry
        self.runs: dict[str, LiveRun] = {}
        self.lock = threading.Lock()

    # -- what is offered ------------------------------------------------------------------------

    def limits(self) -> TrainLimits:
        s = self.settings
        return TRAIN_SHAPE.model_copy(
            update={
                "max_steps": s.train_max_steps,
                "max_seconds": s.train_max_seconds,
                "max_params": s.train_max_params,
                "max_text_chars": s.train_max_text_chars,
            }
        )

    def options(self) -> TrainOptions:
        from attnviz.training.ablations import PRESETS

        tasks = [
            TrainTaskInfo(
                name=t.name,
                title=t.title,
                about=t.about,
                arch=_arch_info(t.arch),
                opt=_opt_info(t.opt),
            )  # fmt: skip
            for t in TASKS.values()
        ]
        presets = [
            TrainPresetInfo(
                id=p.name,
                title=p.title,
                question=p.question,
                shows=p.shows,
                claims=[str(c) for c in p.claims],
                task=p.task.name,
                switch=p.switch,
                variants=[
                    TrainVariantInfo(label=v.label, arch=_arch_info(v.arch)) for v in p.variants
                ],  # fmt: skip
                opt=_opt_info(p.opt),
            )
            for p in PRESETS.values()
        ]
        return TrainOptions(
            tasks=tasks,
            presets=presets,
            switches={k: list(v) for k, v in SWITCHES.items()},
            limits=self.limits(),
            slots=self.settings.train_slots,
        )

    # -- starting -------------------------------------------------------------------------------

    def plan(self, req: TrainRequest) -> Plan:
        """The run ``req`` asks for, checked against the server's bounds (TrainRefused)."""
        from attnviz.training.ablations import PRESETS

        s = self.settings
        if req.preset is not None:
            preset = PRESETS.get(req.preset)
            if preset is None:
                raise TrainRefused(
                    f"preset: no preset {req.preset!r} (one of {', '.join(PRESETS)})"
                )
            if preset.task.name != req.task:
                raise TrainRefused(f"task: preset {preset.name} trains {preset.task.name}")
            plan = Plan(preset.task, [(v.label, v.arch) for v in preset.variants], preset.opt,
                        preset=preset.name, compare=preset.switch)  # fmt: skip
        else:
            entry = TASKS[req.task]
            try:
                task = entry.make(req.text, s.train_max_text_chars)
            except ValueError as exc:
                raise TrainRefused(str(exc)) from exc
            arch = _arch(req.arch) if req.arch is not None else entry.arch
            opt = Optimiser(**req.opt.model_dump()) if req.opt is not None else entry.opt
            variants = variants_of(arch, req.compare) if req.compare else [("", arch)]
            plan = Plan(task, variants, opt, compare=req.compare)
        if plan.opt.steps > s.train_max_steps:
            raise TrainRefused(
                f"opt.steps: {plan.opt.steps:,} is over this server's cap of "
                f"{s.train_max_steps:,} (ATTNVIZ_TRAIN_MAX_STEPS)"
            )
        for label, arch in plan.variants:
            n = param_count(arch, plan.task)
            plan.params.append(n)
            if n > s.train_max_params:
                what = f" ({label})" if label else ""
                raise TrainRefused(
                    f"arch: {n:,} parameters{what} are over this server's cap of "
                    f"{s.train_max_params:,} (ATTNVIZ_TRAIN_MAX_PARAMS); fewer layers or a "
                    "smaller d_model"
                )
        return plan

    def new_id(self) -> str:
        token = secrets.token_hex(5)
        return f"{self.settings.replica}-{token}" if self.settings.replica else token

    def start(self, req: TrainRequest) -> LiveRun:
        """Plan the run and start training it on a thread of its own; ``Busy`` when every slot
        is taken."""
        plan = self.plan(req)
        with self.lock:
            running = [r for r in self.runs.values() if not r.finished]
            if len(running) >= self.settings.train_slots:
                if self.settings.train_slots == 0:
                    raise TrainRefused("task: this server does not train (ATTNVIZ_TRAIN_SLOTS=0)")
                limit = self.settings.train_max_seconds
                soonest = min(r.remaining_s(r.started + limit) for r in running)
                retry = max(1, math.ceil(soonest))
                raise Busy(
                    f"busy: this server trains {len(running)} run(s) at once and all are "
                    f"running; try again in {retry} s",
                    retry,
                )
            run = LiveRun(self.new_id(), req, plan)
            self.runs[run.id] = run
        thread = threading.Thread(target=self._train, args=(run,), name=f"train-{run.id}",
                                  daemon=True)  # fmt: skip
        thread.start()
        return run

    def get(self, run_id: str) -> LiveRun:
        run = self.runs.get(run_id)
        if run is None:
            raise RunGone(
                f"run: no run {run_id!r} on this server (it never was, it was evicted after "
                f"the last {self.settings.train_keep_runs} runs, or the server restarted)"
            )
        return run

    def cancel(self, run_id: str) -> LiveRun:
        """Stop a running run (it keeps what it learned); forget a finished one and its
        models."""
        run = self.get(run_id)
        if not run.finished:
            run.cancel.set()
            return run
        with self.lock:
            self.runs.pop(run.id, None)
        self.registry.remove([v.model for v in run.variants if v.model])
        return run

    @property
    def training(self) -> int:
        return sum(not r.finished for r in list(self.runs.values()))

    # -- the training thread --------------------------------------------------------------------

    def _train(self, run: LiveRun) -> None:
        with compute.beside():  # the run has a core of its own: traces take one thread fewer
            self._train_run(run)

    def _train_run(self, run: LiveRun) -> None:
        state, reason = "done", None
        try:
            deadline = run.started + self.settings.train_max_seconds
            for i, variant in enumerate(run.variants):
                if run.cancel.is_set() or time.monotonic() > deadline:
                    break
                self._train_variant(run, i, variant, deadline)
            if run.plan.preset is not None and all(v.state == "done" for v in run.variants):
                self._measure_claims(run)
            if run.cancel.is_set():
                state, reason = "cancelled", "cancelled"
            elif time.monotonic() > deadline or any(v.state != "done" for v in run.variants):
                state = "cancelled"
                reason = (
                    f"stopped at this server's time limit of {self.settings.train_max_seconds:g}"
                    " s (ATTNVIZ_TRAIN_MAX_SECONDS)"
                )
        except Exception as exc:  # a failure is the run's state, not the server's
            log.exception("training run %s failed", run.id)
            state, reason = "failed", f"training failed: {type(exc).__name__}: {exc}"

        def end() -> None:
            run.state, run.reason, run.ended = state, reason, time.monotonic()
            for v in run.variants:
                if v.state in ("waiting", "running"):
                    v.state = "cancelled"

        run.emit("end", {"state": state, "reason": reason}, apply=end)
        self._evict()

    def _train_variant(self, run: LiveRun, i: int, variant: Variant, deadline: float) -> None:
        plan = run.plan
        run.emit("variant", {"variant": i, "state": "running"},
                 apply=lambda: setattr(variant, "state", "running"))  # fmt: skip
        pending: list[Step] = []
        last_flush = time.monotonic()

        def flush() -> None:
            nonlocal last_flush
            if pending:
                steps = pending[:]
                run.emit("steps", {"variant": i, **_columns(steps)},
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
            run.emit("checkpoint", {"variant": i, "checkpoint": cp.model_dump()},
                     apply=lambda: variant.checkpoints.append(cp))  # fmt: skip

        result = train(
            plan.task,
            variant.arch,
            plan.opt,
            on_step=on_step,
            should_stop=lambda: run.cancel.is_set() or time.monotonic() > deadline,
            device=self.device,
            checkpoints=run.checkpoints,
            on_checkpoint=on_checkpoint,
            sample=self._sampler(plan),
        )
        flush()
        if result.history:
            run.step_time = result.history[-1].seconds / len(result.history)
        if isinstance(plan.task, Induction):
            variant.induction = _induction_scores(result.model, plan.task)
        if isinstance(plan.task, Reverse):
            variant.alignment = _alignment_scores(result.model, plan.task)
        # An encoder-decoder is not a sentence-mode model (a trace reads one text); the Train
        # tab decodes with it (``decode``).
        name: str | None = None
        if not plan.task.encoder_decoder:
            name = run.id if len(run.variants) == 1 else f"{run.id}-{slug(variant.label)}"
            self.registry.add(self._as_model(run, name, result.model))
        variant.result = result

        def finished() -> None:
            variant.model = name
            variant.state = result.state

        run.emit("variant", {"variant": i, "state": result.state, "model": name,
                             "induction": variant.induction, "alignment": variant.alignment},
                 apply=finished)  # fmt: skip

    @staticmethod
    def _measure_claims(run: LiveRun) -> None:
        """A preset's claims on the run's trained models, as the tests measure them."""
        from attnviz.training.ablations import PRESETS

        preset = PRESETS[run.plan.preset or ""]
        # The measures feed CPU tensors: models trained on a GPU are measured from a CPU copy.
        runs = [
            r
            if r.model.param_device.type == "cpu"
            else replace(r, model=copy.deepcopy(r.model).cpu())
            for r in (v.result for v in run.variants)
            if r is not None
        ]
        outcomes = [
            TrainClaim(claim=str(o.claim), value=round(o.value, 4), holds=o.holds)
            for o in preset.outcomes(runs)
        ]
        run.emit("claims", {"claims": [o.model_dump() for o in outcomes]},
                 apply=lambda: setattr(run, "claims", outcomes))  # fmt: skip

    @staticmethod
    def _sampler(plan: Plan):
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
        return lambda model: generate(model, vocab, prompt, SAMPLE_CHARS, SAMPLE_TEMPERATURE, seed)

    def decode(self, run: LiveRun, req: TrainDecodeRequest) -> TrainDecoded:
        """What a finished encoder-decoder variant writes for ``req.text`` (greedy), with every
        head's attention on its last pass."""
        task = run.plan.task
        if not isinstance(task, Reverse):
            raise TrainRefused(f"task: {task.name} has no decoder to ask; open its model instead")
        v = self._finished(run, req.variant)
        text = req.source
        letters = task.vocab.chars[1:]
        wrong = "".join(sorted(set(text) - set(letters)))
        if wrong:
            raise TrainRefused(
                f"source: the model has no token for {quoted_each(wrong)}; it reads only "
                f"lowercase letters {letters[0]} to {letters[-1]}"
            )
        if len(text) > task.max_len:
            raise TrainRefused(
                f"source: {len(text)} letters; the model was trained on {task.min_len} to "
                f"{task.max_len}"
            )
        assert v.result is not None
        model = v.result.model
        source = task.vocab.encode(text) + [0]
        out = task.decode(model, source)
        ended = len(out) < len(source)  # it wrote the end mark before the step cap
        inputs = [0, *out] if ended else [0, *out[:-1]]
        groups = pattern_names(model.cfg)
        device = model.param_device
        with torch.no_grad(), capture(model, [n for g in groups.values() for n in g]) as cache:
            model(torch.tensor([inputs], device=device), torch.tensor([source], device=device))
        got = {k: [cache[n][0].float().cpu().tolist() for n in g] for k, g in groups.items()}
        written = out + [0] if ended else out
        return TrainDecoded(
            source=list(task.vocab.decode(source)),
            tokens=list(task.vocab.decode(inputs)),
            writes=list(task.vocab.decode(written)),
            output=task.vocab.decode(out),
            expected=text if task.copy else text[::-1],
            self_attention=got["self"],
            cross=got["cross"],
            encoder=got["encoder"],
        )

    @staticmethod
    def _finished(run: LiveRun, variant: int) -> Variant:
        if not 0 <= variant < len(run.variants):
            raise TrainRefused(f"variant: {variant} is not one of 0 to {len(run.variants) - 1}")
        v = run.variants[variant]
        if v.result is None:
            raise TrainRefused(f"variant: {v.label or 'the model'} has not finished training")
        return v

    def folder_zip(self, run: LiveRun, variant: int) -> tuple[str, bytes]:
        """A finished variant as a zip of its Hugging Face-style folder (config.json,
        model.safetensors, tokenizer.json), which ``attnviz serve --model FOLDER`` loads."""
        import io
        import tempfile
        import zipfile

        from attnviz.training.export import save_run

        if run.plan.task.encoder_decoder:
            raise TrainRefused(
                "variant: an encoder-decoder is not saved as a folder: attnviz serves models "
                "that read one text, and this one reads a source and writes; ask it in the "
                "Train tab (POST /api/train/{id}/decode)"
            )
        v = self._finished(run, variant)
        assert v.model is not None and v.result is not None
        buf = io.BytesIO()
        with tempfile.TemporaryDirectory() as tmp:
            folder = save_run(v.result, run.plan.task, Path(tmp), name=v.model)
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
                for f in sorted(folder.iterdir()):
                    z.write(f, f"{v.model}/{f.name}")
        return f"{v.model}.zip", buf.getvalue()

    def _as_model(self, run: LiveRun, name: str, model: Transformer) -> PretrainedModel:
        from attnviz.pretrained.tokenize import TextTokenizer
        from attnviz.training.export import char_tokenizer

        return PretrainedModel(
            name=name,
            family="attnviz",
            source=Path(name),
            origin=f"run {run.id}",
            cfg=model.cfg,
            model=model,
            tokenizer=TextTokenizer(char_tokenizer(run.plan.task.vocab)),
            device=self.device,
            run=run.id,
            examples=[run.plan.task.vocab.decode(run.plan.task.probe().ids)],
        )

    def _evict(self) -> None:
        with self.lock:
            done = [r for r in self.runs.values() if r.finished]
            gone = done[: max(0, len(done) - self.settings.train_keep_runs)]
            for r in gone:
                self.runs.pop(r.id, None)
        for r in gone:
            self.registry.remove([v.model for v in r.variants if v.model])
            log.info("run %s evicted", r.id)

    # -- what clients read ----------------------------------------------------------------------

    def state(self, run: LiveRun) -> TrainRun:
        plan = run.plan
        probe = plan.task.probe()
        with run.lock:
            variants = [
                TrainVariant(
                    label=v.label,
                    arch=_arch_info(v.arch),
                    params=v.params,
                    state=v.state,  # type: ignore[arg-type]
                    model=v.model,
                    history=TrainHistory(**_columns(v.history)),
                    checkpoints=list(v.checkpoints),
                    induction=v.induction,
                    alignment=v.alignment,
                )
                for v in run.variants
            ]
            seq = len(run.events)
            state, reason, claims = run.state, run.reason, run.claims
        return TrainRun(
            id=run.id,
            state=state,  # type: ignore[arg-type]
            reason=reason,
            task=run.task_name,  # type: ignore[arg-type]
            about=plan.task.about,
            preset=plan.preset,
            compare=plan.compare,
            opt=_opt_info(plan.opt),
            steps=plan.opt.steps,
            checkpoint_steps=checkpoint_steps(plan.opt.steps, run.checkpoints),
            probe=TrainProbe(
                tokens=probe.labels,
                text=plan.task.vocab.decode(probe.ids),
                look=probe.look,
                prompt=plan.prompt,
                verb=plan.verb,
                source=probe.source_labels,
                writes=_writes(plan.task),
            ),  # fmt: skip
            baseline=run.baseline,
            claims=claims,
            variants=variants,
            ask=_ask(plan.task),
            seq=seq,
        )

    def summaries(self) -> TrainRuns:
        """Every run this server keeps, newest first, in brief."""
        with self.lock:
            kept = list(self.runs.values())
        out = []
        for run in reversed(kept):
            with run.lock:
                variants = [
                    TrainRunVariantSummary(
                        label=v.label,
                        state=v.state,  # type: ignore[arg-type]
                        model=v.model,
                        steps=len(v.history),
                        heldout=v.checkpoints[-1].heldout if v.checkpoints else None,
                    )
                    for v in run.variants
                ]
                state, reason = run.state, run.reason
            out.append(
                TrainRunSummary(
                    id=run.id,
                    state=state,  # type: ignore[arg-type]
                    reason=reason,
                    task=run.task_name,  # type: ignore[arg-type]
                    preset=run.plan.preset,
                    compare=run.plan.compare,
                    steps=run.plan.opt.steps,
                    variants=variants,
                )
            )
        return TrainRuns(runs=out)

    async def stream(self, run: LiveRun, after: int | None) -> AsyncIterator[tuple[int, str, str]]:
        """(seq, event, JSON data): the run's state first (unless resuming ``after`` an event
        already seen), then each event as it comes, until the run's end."""
        if after is None:
            state = self.state(run)
            yield state.seq, "state", state.model_dump_json()
            after = state.seq
        while True:
            finished = run.finished  # read first: its end is then in the log already
            items = run.events_from(after)
            for item in items:
                after = item[0]
                yield item
                if item[1] == "end":  # the last event of every run
                    return
            if finished:  # its end was sent before (a resumed stream): nothing more comes
                return
            await asyncio.sleep(POLL_S)


def _columns(steps: list[Step]) -> dict:
    return {
        "step": [s.step for s in steps],
        "loss": [round(s.loss, 6) for s in steps],
        "grad_norms": [[round(g, 6) for g in s.grad_norms] for s in steps],
        "seconds": [round(s.seconds, 4) for s in steps],
    }


@torch.no_grad()
def _induction_scores(model: Transformer, task: Induction, n: int = 20) -> list[list[float]]:
    """Each head's induction score (L, nh) on 64 fresh strings of ``n`` letters, repeated."""
    n = min(n, task.max_len)
    g = torch.Generator().manual_seed(99)
    half = torch.randint(0, task.vocab.size, (64, n), generator=g)
    ids = torch.cat([half, half], dim=1)[:, :-1].to(model.param_device)  # (64, 2n - 1)
    names = [act_name("pattern", i) for i in range(model.cfg.n_layers)]
    with capture(model, names) as cache:
        model(ids)
    return [[round(float(x), 4) for x in task.induction_score(cache[name].cpu(), n)]
            for name in names]  # fmt: skip


def _ask(task: Task) -> TrainAsk | None:
    """What an encoder-decoder's model can be asked: the letters, and how many."""
    if not isinstance(task, Reverse):
        return None
    return TrainAsk(alphabet="".join(task.vocab.chars[1:]), max_len=task.max_len,
                    min_len=task.min_len)  # fmt: skip


def _writes(task: Task) -> list[str] | None:
    """What each of an encoder-decoder probe's decoder tokens is trained to write."""
    if not isinstance(task, Reverse):
        return None
    p = task.probe()
    return list(task.vocab.decode(p.ids[1:] + [0]))


@torch.no_grad()
def _alignment_scores(model: Transformer, task: Reverse, n: int = 10) -> list[list[float]]:
    """Each cross-attention head's alignment (L, nh) on 64 fresh strings of ``n`` letters."""
    n = min(n, task.max_len)
    g = torch.Generator().manual_seed(99)
    batch = task._pairs(task._letters(g, 64, n)).to(model.param_device)
    names = pattern_names(model.cfg)["cross"]
    with capture(model, names) as cache:
        model(batch.inputs, batch.source)
    return [[round(float(x), 4) for x in task.alignment(cache[name].cpu(), n)]
            for name in names]  # fmt: skip
