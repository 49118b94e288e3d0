"""The run table: what this server offers to train, starting a run (within its slots and
bounds; past the slots it waits in line, ``queue``), finding, cancelling and evicting runs,
and asking a finished model."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import torch

import attnviz.services.training.kept as kept
import attnviz.services.training.report as report
from attnviz.engine import capture
from attnviz.pretrained import ModelRegistry
from attnviz.pretrained.native import quoted_each
from attnviz.schemas.train import (
    TRAIN_SHAPE,
    TrainArchitecture,
    TrainDecoded,
    TrainDecodeRequest,
    TrainLimits,
    TrainOptions,
    TrainPresetInfo,
    TrainRequest,
    TrainRun,
    TrainRuns,
    TrainTaskInfo,
    TrainVariantInfo,
)
from attnviz.services.admission import Busy
from attnviz.services.line import Ticker
from attnviz.services.ownership import NOBODY, Caller, Ownership, new_run_id
from attnviz.services.store import (
    NEWER_RETRY_S,
    NewerIndex,
    Row,
    RunStore,
    StoreError,
)
from attnviz.services.training.queue import (
    TICK_S,
    WAITING_CANCELLED,
    RunQueue,
    cancel_waiting,
    tell,
)
from attnviz.services.training.runs import (
    NOT_TRAINING,
    LiveRun,
    NoRoom,
    Plan,
    RunElsewhere,
    RunGone,
    TrainRefused,
    Variant,
    megabytes,
    model_title,
    param_count,
    stored_bytes,
)
from attnviz.services.training.worker import Worker, served_model
from attnviz.settings import Settings
from attnviz.training.catalog import SWITCHES, TASKS, variants_of
from attnviz.training.tasks import Reverse
from attnviz.training.trainer import Architecture, Optimiser, Run, pattern_names

log = logging.getLogger(__name__)

# A run's model is named by its id (``ownership.new_run_id``), then its variant's label.
MODEL_OF_RUN = re.compile(r"^((?:[a-z0-9]{1,16}-)?[0-9a-f]{32})(?:-[a-z0-9-]+)?$")


def _arch(a: TrainArchitecture) -> Architecture:
    return Architecture(**a.model_dump())


class TrainService:
    def __init__(self, settings: Settings, device: torch.device, registry: ModelRegistry) -> None:
        self.settings = settings
        self.device = device
        self.registry = registry
        self.runs: dict[str, LiveRun] = {}
        self.lock = threading.Lock()
        self.queue = RunQueue(settings.train_queue)  # the runs waiting for a slot
        # Their estimates, again, while they wait.
        self.ticker = Ticker(TICK_S, self._tick, "train-queue")
        # The runs kept on disk (services.store), read back at start. Where the data directory
        # cannot be written, each write fails with a log line and runs last as long as the
        # process.
        self.store: RunStore | None = RunStore(settings.data_path, settings.data_lease_s)
        # While another server holds runs of this one's name: a look every beat for those
        # whose holder is gone, to take them over (``_take_orphans``).
        self.watcher = Ticker(self.store.beat_s, self._watch, "train-watcher")
        self.taking = threading.Lock()  # one taking over at a time (the watcher, a reader)
        self.reading = threading.Lock()  # reading a stored run in (``_adopt``)
        self.unreadable: set[str] = set()  # stored runs whose folders could not be read
        self._restore()

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
                arch=report.arch_info(t.arch),
                opt=report.opt_info(t.opt),
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
                    TrainVariantInfo(label=v.label, arch=report.arch_info(v.arch))
                    for v in p.variants
                ],  # fmt: skip
                opt=report.opt_info(p.opt),
            )
            for p in PRESETS.values()
        ]
        return TrainOptions(
            tasks=tasks,
            presets=presets,
            switches={k: list(v) for k, v in SWITCHES.items()},
            limits=self.limits(),
            slots=self.settings.train_slots,
            per_address=self.settings.train_per_address,
        )

    # -- starting -------------------------------------------------------------------------------

    def plan(self, req: TrainRequest, *, bounded: bool = True) -> Plan:
        """The run ``req`` asks for, checked against the server's bounds (TrainRefused); not
        ``bounded``: a stored run's, read back (its bounds were those it was trained under)."""
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
            opt = preset.opt
            if req.steps is not None:  # the preset's run made shorter (a lower cap)
                if req.steps > opt.steps:
                    raise TrainRefused(
                        f"steps: {req.steps:,} is more than the preset's own {opt.steps:,}: a "
                        "preset's run may only be made shorter"
                    )
                opt = replace(opt, steps=req.steps)
            plan = Plan(preset.task, [(v.label, v.arch) for v in preset.variants], opt,
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
        if bounded and plan.opt.steps > s.train_max_steps:
            raise TrainRefused(self._too_many_steps(req, plan), "ATTNVIZ_TRAIN_MAX_STEPS")
        for label, arch in plan.variants:
            n = param_count(arch, plan.task)
            plan.params.append(n)
            if bounded and n > s.train_max_params:
                what = f" ({label})" if label else ""
                raise TrainRefused(
                    f"arch: {n:,} parameters{what} are over this server's cap: it trains at "
                    f"most {s.train_max_params:,} parameters a model; fewer layers or a smaller "
                    "d_model, or ask its host to allow more",
                    "ATTNVIZ_TRAIN_MAX_PARAMS",
                )
        plan.bytes = stored_bytes(plan, req.checkpoints)
        if bounded:
            self._fits(plan, req)
        return plan

    def _too_many_steps(self, req: TrainRequest, plan: Plan) -> str:
        """A run's steps over this server's cap, as a learner reads it: the rule in words, what
        to send instead (a preset's ``steps``: its run made shorter), never the setting."""
        from attnviz.training.ablations import PRESETS

        most = self.settings.train_max_steps
        if req.preset is not None and req.steps is None:
            return (
                f"steps: the preset \u201c{PRESETS[req.preset].title}\u201d trains "
                f"{plan.opt.steps:,} steps, over this server's cap: it trains at most {most:,} "
                f"steps a run; send steps (at most {most:,}) to train it shorter, or ask its "
                "host to allow more"
            )
        field = "steps" if req.preset is not None else "opt.steps"
        return (
            f"{field}: {plan.opt.steps:,} is over this server's cap: it trains at most {most:,} "
            "steps a run; train fewer steps, or ask its host to allow more"
        )

    def _budget_mb(self) -> str:
        """This server's disk budget for runs (``ATTNVIZ_DATA_MAX_MB``), as a learner reads it:
        no setting's name."""
        return f"this server's disk budget for runs, {self.settings.data_max_mb:g} MB"

    def _fits(self, plan: Plan, req: TrainRequest) -> None:
        """A run that could never be kept within the disk budget is refused (TrainRefused,
        naming its estimated size and the budget's figure)."""
        if plan.bytes <= self.settings.data_max_mb * 2**20:
            return
        field = "preset" if req.preset is not None else "arch"
        fix = (
            "a smaller preset's task"
            if req.preset is not None
            else "fewer layers, a smaller d_model, fewer steps or fewer checkpoints"
        )
        raise TrainRefused(
            f"{field}: this run would keep about {megabytes(plan.bytes)} on disk once it "
            f"has ended (its models and its checkpoints' attention), more than "
            f"{self._budget_mb()}; {fix}"
        )

    def _room(self, plan: Plan) -> None:
        """``NoRoom`` when the disk budget is taken by runs eviction may not remove yet (ended
        runs their owners have not been told of, the runs training or waiting here) and this one
        would not fit beside them."""
        if self.store is None:
            return
        try:
            held = self.store.held_bytes()
        except (sqlite3.Error, OSError) as exc:
            log.warning("the run index cannot be read (%s): the disk budget not checked", exc)
            return
        with self.lock:
            held += sum(r.plan.bytes for r in self.runs.values() if not r.finished)
        if held + plan.bytes > self.settings.data_max_mb * 2**20:
            raise NoRoom(
                f"disk: {self._budget_mb()}, is taken: {megabytes(held)} by runs training, "
                "waiting, or ended and not yet seen by their owners (kept until they are), "
                f"and this run would keep about {megabytes(plan.bytes)} more; try again later"
            )

    def new_id(self) -> str:
        return new_run_id(self.settings.replica)

    def start(self, req: TrainRequest, caller: Caller) -> LiveRun:
        """Plan the run and start training it on a thread of its own, ``caller``'s; when every
        slot is taken it waits in line (``queued``, ``training.queue``); ``Busy`` when the line
        is full too, ``TooManyRuns`` when the caller has a run going and one waiting; ``Busy``
        too where the data directory is a newer attnviz's (no run could be saved)."""
        plan = self.plan(req)
        self._room(plan)
        self._can_save()
        s = self.settings
        with self.lock:
            if s.train_slots == 0:
                raise TrainRefused(NOT_TRAINING, "ATTNVIZ_TRAIN_SLOTS")
            refused = self.queue.refusal(self.runs.values(), caller,
                                         per_address=s.train_per_address,
                                         retry=self._retry_after)  # fmt: skip
            if refused is not None:
                raise refused
            running = self._running()
            run = LiveRun(self.new_id(), req, plan, Ownership(owner=caller.visitor))
            run.exempt, run.address = caller.operator, caller.address
            if len(running) < s.train_slots and not self.queue.must_wait(running, caller):
                self.runs[run.id] = run
                self._running_row(run)
                self._launch(run)
                return run
            if self.queue.full:
                log.info("a run refused: %d wait in line, ATTNVIZ_TRAIN_QUEUE's %d",
                         len(self.queue), s.train_queue)  # fmt: skip
                raise self.queue.busy(
                    running, lambda r: r.remaining_s(r.started + s.train_max_seconds), "trains"
                )
            self.queue.add(run)
            self.runs[run.id] = run
            # Kept before anyone hears of it (and before a slot can start it: under the lock),
            # so that a restart puts it back in line.
            self._keep(run, "queued", None)
            self._tell_queue()
        self.ticker.wake()
        return run

    def _can_save(self) -> None:
        """``Busy`` (503) where the run index is a newer attnviz's: this server would train a
        run it cannot keep. An index that cannot be written otherwise leaves runs in memory."""
        if self.store is None:
            return
        try:
            self.store.check_writable()
        except NewerIndex as exc:
            raise Busy(f"busy: {exc}", NEWER_RETRY_S) from exc
        except (sqlite3.Error, OSError):
            pass

    def _retry_after(self, runs: list[LiveRun]) -> int:
        """Whole seconds until the first of ``runs`` should end: a training one at its pace
        so far, a waiting one once it has waited and trained (each within the time limit)."""
        limit = self.settings.train_max_seconds
        ends = [r.remaining_s(r.started + limit) if r.state == "running"
                else (r.wait_s or 0) + limit for r in runs]  # fmt: skip
        return max(1, math.ceil(min(ends))) if ends else 1

    def _running(self) -> list[LiveRun]:
        return [r for r in self.runs.values() if r.state == "running"]

    def _launch(self, run: LiveRun) -> None:
        """Start training ``run`` on a thread of its own (under ``self.lock``): its time limit
        counts from now. Its row says running (until it ends) before anyone hears it started
        (``_running_row``)."""
        run.started = time.monotonic()
        worker = Worker(
            run,
            settings=self.settings,
            device=self.device,
            registry=self.registry,
            done=self._ended,
            keep=lambda st, why, ahead=None: self._keep(
                run, st, why, evict=st is not None, ahead=ahead
            ),
            keep_weights=lambda i, so_far: self._keep_weights(run, i, so_far),
        )
        threading.Thread(target=worker, name=f"train-{run.id}", daemon=True).start()

    def _running_row(self, run: LiveRun) -> None:
        """``run`` is stored as running (until it ends), before it starts and anyone hears it
        did: a restart, even a kill, finds it (``interrupted``). Under ``self.lock``."""
        self._keep(run, None, None)

    def _tell_queue(self) -> None:
        """Every waiting run's place and estimate (under ``self.lock``)."""
        ended = [r for r in self.runs.values() if r.ended is not None and r.wall_step_s > 0]
        # The pace of the run that ended last, from its start to its end (what a step costs with
        # the run's setup, checkpoints and measures: by its steps alone, a class's estimates were
        # a fifth short), else of one training now (before any run has ended, which a guess
        # made a class's first estimates four times too long).
        paces = [p for p in (r.pace() for r in self._running()) if p > 0]
        last = max(ended, key=lambda r: r.ended or 0.0).wall_step_s if ended else 0.0
        step_s = last or (max(paces) if paces else 0.0)
        self.queue.update(self._running(), slots=self.settings.train_slots,
                          max_seconds=self.settings.train_max_seconds, step_s=step_s)  # fmt: skip

    def _tick(self) -> bool:
        """The waiting runs' estimates again (the runs ahead went on); False when none waits."""
        with self.lock:
            self._tell_queue()
            return len(self.queue) > 0

    def _ended(self) -> None:
        """A run ended (the oldest finished ones gone already, ``_keep``): the first in line
        takes its slot."""
        with self.lock:
            self._start_waiting()

    def _start_waiting(self) -> None:
        """The first in line whose owners have no run training take the free slots; the rest
        are told their places (under ``self.lock``)."""
        self.queue.start_free(self.settings.train_slots, self._running, self._start_next,
                              self.store, self.runs)  # fmt: skip
        self._tell_queue()

    def _start_next(self, run: LiveRun) -> None:
        """The waiting ``run`` starts (under ``self.lock``): stored running, then told so."""
        self._running_row(run)
        tell(run, None, None)  # state running: the event says it started
        self._launch(run)

    # -- the table ------------------------------------------------------------------------------

    def _gone(self, run_id: str) -> RunGone:
        if (held := self._held_elsewhere(run_id)) is not None:
            return held
        row = self.store.tombstone(run_id, kept.KIND) if self.store is not None else None
        if row is not None:
            return RunGone(f"run: no run {run_id!r} on this server: it {row.removed_text}")
        return RunGone(
            f"run: no run {run_id!r} on this server (it never was, it was removed to keep "
            f"this server's runs within its bounds, or it was forgotten)"
        )

    def get(self, run_id: str) -> LiveRun:
        """The run ``run_id``, whoever asks (an internal reader); ``RunGone`` when there is none.
        One this process does not hold is looked for in the store (another replica's, finished
        since this one started)."""
        run = self.runs.get(run_id) or self._reread(run_id)
        if run is None and self._unended(run_id):
            self._take_orphans()  # after the watcher's, if it was taking them over meanwhile
            run = self.runs.get(run_id)  # its holder had gone: taken over, here or by it
        if run is None:
            raise self._gone(run_id)
        return run

    def _unended(self, run_id: str) -> bool:
        """Whether the index has ``run_id`` as a run waiting or training (not this process's:
        another server's, which may have stopped)."""
        try:
            row = self.store.row(run_id) if self.store is not None else None
        except (sqlite3.Error, OSError, StoreError):
            return False
        return row is not None and row.kind == kept.KIND and row.state in kept.WAITING

    def _held_elsewhere(self, run_id: str) -> RunElsewhere | None:
        """What a run another server on the data directory holds answers (it trains it or
        keeps it in line there); None where none does. The watcher then looks every beat for
        that server's end, to take its runs over."""
        if self.store is None:
            return None
        try:
            row = self.store.row(run_id)
            held = row is not None and row.kind == kept.KIND and row.removed is None and (
                row.state in kept.WAITING and self.store.held_elsewhere(row))  # fmt: skip
        except (sqlite3.Error, OSError, StoreError):
            return None
        if not held or row is None:
            return None
        self.watcher.wake()
        lease = max(1, math.ceil((row.lease or 0) - time.time()))
        retry = max(1, min(lease, math.ceil(self.store.beat_s)))
        doing = "is training it" if row.state == "running" else "keeps it in line"
        return RunElsewhere(
            f"run: another server on this data directory {doing}: this server shows the run "
            f"once it has ended there, and takes it over if that server stops; try again in "
            f"{retry} s", retry)  # fmt: skip

    def open(self, run_id: str, caller: Caller) -> LiveRun:
        """The run, read by ``caller``, who holds its id (the capability): remembered as
        having opened it, so that it is in the caller's lists."""
        run = self.get(run_id)
        self._opened(run, caller)
        return run

    def remember(self, run_id: str, caller: Caller) -> None:
        """``caller`` opened the run by a name it holds (its model's, in a link): remembered,
        when the run is still here (or in the store: a replica's, its models then loaded)."""
        run = self.runs.get(run_id) or self._reread(run_id)
        if run is not None:
            self._opened(run, caller)

    def load_model(self, name: str) -> None:
        """A model name a link holds that this process does not serve: when it is a stored
        run's (``<run id>`` or ``<run id>-<variant>``; another replica's, finished), that run
        is read from the store, its models into the registry."""
        found = MODEL_OF_RUN.match(name)
        if found is not None and found.group(1) not in self.runs:
            self._reread(found.group(1))

    def _opened(self, run: LiveRun, caller: Caller) -> None:
        with run.lock:
            before = len(run.access.viewers)
            run.access.opened_by(caller)
            changed = len(run.access.viewers) != before
            access = replace(run.access, viewers=dict(run.access.viewers))
        if changed and run.finished:
            self._put_access(run.id, access)

    def control(self, run_id: str, caller: Caller) -> LiveRun:
        """The run, for a change by ``caller``: its owner or the operator. To anyone else it
        is a run that does not exist (the same ``RunGone``), so that it is not revealed."""
        run = self.get(run_id)
        if not run.access.may_control(caller):
            raise self._gone(run_id)
        return run

    def share(self, run_id: str, caller: Caller) -> LiveRun:
        """The operator shares the run with everyone: it is in every visitor's lists, its
        models in every model list. Anyone else: ``RunGone``."""
        if not caller.operator:
            raise self._gone(run_id)
        run = self.get(run_id)
        with run.lock:
            run.access.shared = True
            access = replace(run.access, viewers=dict(run.access.viewers))
        if run.finished:
            self._put_access(run.id, access)
        return run

    def rename(self, run_id: str, title: str | None, caller: Caller) -> LiveRun:
        """Name the run ``title`` (checked: ``schemas.train.TrainRename``; None gives it back
        the name of what it trains), at any state: its owner or the operator, ``RunGone`` for
        anyone else. Its models are named after it, and its row keeps the name (every replica
        reads it there)."""
        run = self.control(run_id, caller)
        if self.store is not None:  # the row first: a list read meanwhile takes the name from it
            try:
                self.store.put_title(run.id, title)
            except (sqlite3.Error, OSError, StoreError) as exc:
                log.warning("run %s: its name not stored (%s)", run.id, exc)
        self._retitle(run, title)
        return run

    def _retitle(self, run: LiveRun, title: str | None) -> None:
        """The run and its models (those served) named ``title`` (None: what it trains)."""
        with run.lock:
            run.name = title
        for v in run.variants:
            model = self.registry.get(v.model) if v.model else None
            if model is not None and model.run == run.id:
                model.title, model.named = model_title(run, v.label), run.named

    def lists(self, run_id: str, caller: Caller) -> bool:
        """Whether the run (and its models) is in ``caller``'s lists."""
        run = self.runs.get(run_id)
        return run is not None and run.access.listed_for(caller)

    def cancel(self, run_id: str, caller: Caller) -> LiveRun:
        """Stop a running run (it keeps what it learned), end a waiting one (out of the line);
        forget a finished one and its models. Only its owner or the operator: ``RunGone`` for
        anyone else."""
        run = self.control(run_id, caller)
        with self.lock:
            waiting = self.queue.remove(run)  # it never started: it ends here
            if waiting:
                self._keep(run, "cancelled", WAITING_CANCELLED)  # stored before it is told
        if waiting:
            self._evict(ending=run)  # the bounds kept before anyone reads it ended
            with self.lock:
                cancel_waiting(run)
                self._tell_queue()  # the runs behind it move up
            return run
        if not run.finished:
            run.cancel.set()
            return run
        with self.lock:
            self.runs.pop(run.id, None)
        self.registry.remove([v.model for v in run.variants if v.model])
        if self.store is not None:
            try:
                self.store.remove(run.id, "forgotten by its owner", forget=True)
            except (sqlite3.Error, OSError) as exc:
                log.warning("run %s: not removed from the store (%s)", run.id, exc)
        return run

    def _put_access(self, run_id: str, access: Ownership) -> None:
        if self.store is None or self.store.read_only:
            return
        try:
            self.store.put_access(run_id, access)
        except (sqlite3.Error, OSError, StoreError) as exc:
            log.warning("run %s: who may read it not stored (%s)", run_id, exc)

    @property
    def training(self) -> int:
        return sum(r.state == "running" for r in list(self.runs.values()))

    @property
    def queued(self) -> int:
        return len(self.queue)

    # -- the store ------------------------------------------------------------------------------

    def _keep(self, run: LiveRun, state: str | None, reason: str | None, *,
              evict: bool = False, ahead: kept.Ahead | None = None) -> None:  # fmt: skip
        """``run`` written to the store (with ``ahead``, checkpoints not yet told); with
        ``evict`` (just before its end is told), the runs past the bounds then go, ``run``
        counted among the ended: a reader who sees it ended never reads one it pushed past
        them."""
        if self.store is not None:
            kept.save(self.store, run, self.settings.replica, state=state, reason=reason,
                      ahead=ahead)  # fmt: skip
        if evict:
            self._evict(ending=run)

    def _keep_weights(self, run: LiveRun, variant: int, so_far: Run) -> None:
        if self.store is not None:
            kept.save_weights(self.store, run, variant, so_far)

    def _load(self, row: Row) -> LiveRun | None:
        """The stored run ``row`` names, with its models in the registry; None (logged) where
        its folder cannot be read."""
        assert self.store is not None
        try:
            run = kept.load(self.store, row, self._replan, self.device)
        except (StoreError, TrainRefused) as exc:
            log.warning("run %s skipped: its folder cannot be read (%s)", row.id, exc)
            return None
        for v in run.variants:
            named = v.model and v.model not in self.registry.models
            if named and v.result is not None and not run.plan.task.encoder_decoder:
                assert v.model is not None
                self.registry.add(served_model(run, v.model, v.result.model, self.device, v.label))
        return run

    def _replan(self, req: TrainRequest) -> Plan:
        """A stored run's plan, as it was trained (whatever this server's bounds are now)."""
        return self.plan(req, bounded=False)

    def _restore(self) -> None:
        """At start: the runs this server was training when it stopped are interrupted, the
        bounds apply, every stored run left is read back (oldest first, as started), and the
        ones that waited in line here wait again, in their order, and start as slots free. A
        run another server still going holds (one started on this directory under the same
        ``ATTNVIZ_REPLICA``) is left to it while it is there (``RunStore``): the watcher takes
        it over once that server is gone (``_take_orphans``)."""
        if self.store is None or not self.store.exists:
            return
        try:
            for run_id in self.store.interrupt(kept.KIND, self.settings.replica):
                kept.settle(self.store, run_id)  # its folder final, measured: the budget counts it
            self._evict_stored()
            rows = [r for r in self.store.rows(kept.KIND) if r.removed is None]
        except (sqlite3.Error, OSError) as exc:
            log.warning("the run index in %s cannot be read (%s): no run restored",
                        self.store.path, exc)  # fmt: skip
            return
        waiting = 0
        mine = [r for r in rows if r.state == "queued" and r.replica == self.settings.replica]
        self.store.warn_shared(mine)
        for row in rows:
            if row.state == "queued" and row.replica == self.settings.replica:
                if self._take_over(row):
                    waiting += self._requeue(row)
                continue
            if row.state in kept.WAITING:
                continue  # another replica's, training or waiting (the proxy routes it there)
            run = self._load(row)
            if run is not None:
                self.runs[run.id] = run
        log.info("%d stored run(s) restored from %s, %d of them back in line", len(self.runs),
                 self.store.root, waiting)  # fmt: skip
        if waiting:
            with self.lock:
                self._start_waiting()
            self.ticker.wake()
        if any(r.state in kept.WAITING and r.id not in self.runs for r in rows):
            self.watcher.wake()  # another server's: taken over if it stops

    def _watch(self) -> bool:
        """A beat of the watcher: the runs whose holder is gone taken over; whether another
        server still holds runs of this one's name (False: the watcher stops)."""
        self._take_orphans()
        try:
            return bool(self.store and self.store.held_by_others(kept.KIND, self.settings.replica))
        except (sqlite3.Error, OSError) as exc:
            log.warning("the run index cannot be read (%s)", exc)
            return True

    def _take_orphans(self) -> bool:
        """The runs of this server's name whose holder is gone (its process no longer on this
        host, or its lease past: another server on the data directory stopped), taken over as a
        restart would take them: a training one interrupted (its folder made final, measured)
        and read in, a waiting one put back in line here; the bounds then apply. Whether any
        was."""
        with self.taking:  # a run taken once: each looks after the one before has finished
            return self._take_orphans_now()

    def _take_orphans_now(self) -> bool:
        store = self.store
        if store is None or not store.exists or store.read_only:
            return False
        replica = self.settings.replica
        try:
            ids = store.interrupt(kept.KIND, replica, warn=False)
            for run_id in ids:
                kept.settle(store, run_id)
            rows = [
                r
                for r in store.rows(kept.KIND)
                if r.removed is None
                and r.replica == replica
                and r.id not in self.runs
                and (r.state == "queued" or r.id in ids)
            ]
        except (sqlite3.Error, OSError, StoreError) as exc:
            log.warning("runs of a stopped server not taken over (%s)", exc)
            return False
        waiting = 0
        for row in rows:
            if row.id in ids:
                # Read in as a reader would (``_adopt``: one at a time, once): a page asking for
                # it meanwhile finds it ended in the store and reads it in too.
                self._adopt(row)
            elif self._take_over(row):
                waiting += self._requeue(row)
        if ids or waiting:
            log.warning("%d run(s) interrupted and %d put back in line here: the server that "
                        "held them stopped", len(ids), waiting)  # fmt: skip
            self._evict()
        if waiting:
            with self.lock:
                self._start_waiting()
            self.ticker.wake()
        return bool(ids or waiting)

    def _take_over(self, row: Row) -> bool:
        """Whether the waiting run ``row`` names is now this server's (its holder gone, and no
        other server took it first)."""
        assert self.store is not None
        try:
            return self.store.take_over(row)
        except (sqlite3.Error, OSError) as exc:
            log.warning("run %s skipped: it could not be taken over (%s)", row.id, exc)
            return False

    def _requeue(self, row: Row) -> bool:
        """A run that waited in line here when the server stopped, back at the end of the
        line (``_restore`` goes oldest first: the line's order); one whose settings no longer
        plan under this server's bounds ends ``failed``, saying so. Whether it waits again."""
        assert self.store is not None
        try:
            run = kept.requeue(self.store, row, self.plan)
        except StoreError as exc:
            log.warning("run %s skipped: its folder cannot be read (%s)", row.id, exc)
            return False
        except TrainRefused as exc:
            self._refuse_stored(row, str(exc), exc.setting)
            return False
        if self.settings.train_slots == 0:
            self._refuse_stored(row, NOT_TRAINING, "ATTNVIZ_TRAIN_SLOTS")
            return False
        self.queue.waiting.append(run)  # past the bound too: an accepted run is never lost
        self.runs[run.id] = run
        return True

    def _refuse_stored(self, row: Row, why: str, setting: str | None = None) -> None:
        """A waiting run the server restarted under bounds it no longer fits: ``failed``, its
        reason in its owner's words; the log names the host's ``setting`` that refused it."""
        assert self.store is not None
        reason = (f"it waited in line when the server restarted, and its settings no longer fit "
                  f"this server's bounds: {why}")  # fmt: skip
        try:
            run = kept.requeue(self.store, row, self._replan)
        except (StoreError, TrainRefused) as exc:
            log.warning("run %s skipped: its settings no longer plan (%s)", row.id, exc)
            return
        run.state, run.reason, run.ended = "failed", reason, time.monotonic()
        for v in run.variants:
            v.state = "cancelled"  # it never ran
        self._keep(run, "failed", reason)  # stored before its end is in its log
        run.emit("end", {"state": "failed", "reason": reason})
        self.runs[run.id] = run
        log.warning("run %s failed at restart: %s%s", row.id, why,
                    f" ({setting})" if setting else "")  # fmt: skip

    def _reread(self, run_id: str) -> LiveRun | None:
        """A finished run this process does not hold, from the store (a replica's)."""
        row = self.store.kept(run_id, kept.KIND) if self.store is not None else None
        if row is None:
            return None  # none, or going on another replica (the proxy routes it there)
        return self._adopt(row)

    def _adopt(self, row: Row) -> LiveRun | None:
        """The finished run ``row`` names, read from the store into this process (its models
        into the registry), once; None where its folder cannot be read (logged once)."""
        with self.reading:  # one reader at a time: a run's models are loaded once
            have = self.runs.get(row.id)
            if have is not None or row.id in self.unreadable:
                return have
            run = self._load(row)
            if run is None:
                self.unreadable.add(row.id)
                return None
            with self.lock:
                return self.runs.setdefault(run.id, run)

    def refresh(self, caller: Caller) -> None:
        """Before a list: the finished runs in the store that are in ``caller``'s lists and
        that this process does not hold (another replica's, ended since it started) are read
        in, each the first time it is listed; the ones it holds take what the store says of
        who may read them (another replica may have shared one, or seen it opened by its
        link), and the ones another replica removed (evicted, forgotten) go. Only the rows are
        read on each list."""
        if self.store is None:
            return
        try:
            rows = self.store.finished_rows(kept.KIND)
        except (sqlite3.Error, OSError) as exc:
            log.warning("the run index in %s cannot be read (%s): listed as held",
                        self.store.path, exc)  # fmt: skip
            return
        live = {r.id for r in rows}
        with self.lock:
            held = dict(self.runs)
        for row in rows:
            run = held.get(row.id)
            if run is None:
                if row.access().listed_for(caller):
                    self._adopt(row)
            elif run.finished:
                with run.lock:
                    run.access.merge(row.access())
                if run.name != row.title:  # another replica renamed it
                    self._retitle(run, row.title)
        gone = [r for r in held.values() if r.finished and r.stored and r.id not in live
                and self._removed(r.id)]  # fmt: skip
        if gone:
            with self.lock:
                for r in gone:
                    self.runs.pop(r.id, None)
            for r in gone:
                self.registry.remove([v.model for v in r.variants if v.model])
                log.info("run %s dropped: another replica removed it from the store", r.id)

    def _removed(self, run_id: str) -> bool:
        """Whether the store no longer keeps the run: its row is gone or a tombstone."""
        assert self.store is not None
        try:
            row = self.store.row(run_id)
        except (sqlite3.Error, OSError, StoreError):
            return False  # not known: kept
        return row is None or row.removed is not None

    def _evict_stored(self, spare: tuple[str, ...] = ()) -> list[str]:
        """The stored runs and comparisons past the bounds removed (``RunStore.evict``; never
        one in ``spare``, nor one its owner was not told ended): the ids of this kind's."""
        assert self.store is not None
        s = self.settings
        gone = self.store.evict(keep=s.train_keep_runs, max_age_days=s.data_max_age_days,
                                max_mb=s.data_max_mb, spare=spare)  # fmt: skip
        return [r for r, kind in gone if kind == kept.KIND]

    def _evict(self, ending: LiveRun | None = None) -> None:
        """As a run ends: the stored runs past the bounds go (services.store), and with
        them their runs in memory and their models; without a store, the finished runs past
        the last ``train_keep_runs`` (``ending``, about to be told ended, counted among them)."""
        gone: list[LiveRun] = []
        if self.store is not None:
            try:
                ids = set(self._evict_stored(spare=(ending.id,) if ending else ()))
            except (sqlite3.Error, OSError) as exc:
                log.warning("runs not evicted from the store (%s)", exc)
                ids = set()
            with self.lock:
                gone = [self.runs.pop(i) for i in ids if i in self.runs]
        with self.lock:
            done = [r for r in self.runs.values() if r.finished or r is ending]
            for r in done[: max(0, len(done) - self.settings.train_keep_runs)]:
                gone.append(self.runs.pop(r.id))
        for r in gone:
            self.registry.remove([v.model for v in r.variants if v.model])
            log.info("run %s evicted", r.id)

    # -- what clients read ----------------------------------------------------------------------

    def state(self, run: LiveRun, caller: Caller = NOBODY) -> TrainRun:
        got = report.run_state(run, caller)
        if got.state not in kept.WAITING:
            self._told(run, caller)
        return got

    def _told(self, run: LiveRun, caller: Caller) -> None:
        """``caller`` was just sent the run's state as it ended: when it is the run's owner,
        the store marks it ``seen``, and from then on eviction may remove it."""
        if run.seen or not run.finished or self.store is None or not run.access.yours(caller):
            return
        run.seen = self.store.told(run.id)

    def summaries(self, caller: Caller) -> TrainRuns:
        """The runs this server keeps that are in ``caller``'s lists (its own, those it opened
        by their link, the shared ones; every one for the operator), newest first, in brief:
        those this process holds and the finished ones in the store (``refresh``)."""
        self.refresh(caller)
        with self.lock:
            listed = [r for r in self.runs.values() if r.access.listed_for(caller)]
        got = report.summaries(sorted(listed, key=lambda r: r.created), caller)
        ended = {s.id for s in got.runs if s.state not in kept.WAITING}
        for run in listed:
            if run.id in ended:
                self._told(run, caller)
        return got

    def stream(
        self, run: LiveRun, after: int | None, caller: Caller = NOBODY
    ) -> AsyncIterator[tuple[int, str, str]]:
        """(seq, event, JSON data): the run's state first (unless resuming ``after`` an event
        already seen), then each event as it comes, until the run's end (told to its owner,
        ``_told``, once sent)."""
        return self._stream(run, after, caller)

    async def _stream(
        self, run: LiveRun, after: int | None, caller: Caller
    ) -> AsyncIterator[tuple[int, str, str]]:
        ended = run.finished  # its state, sent first, is then its end's
        async for item in report.stream(run, after, caller):
            yield item
            if item[1] == "end" or (item[1] == "state" and ended):
                await asyncio.to_thread(self._told, run, caller)  # a write to the index

    # -- asking a finished model ----------------------------------------------------------------

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
        stored = self.store.folder(run.id) / kept.variant_folder(variant) if self.store else None
        if stored is not None and stored.is_dir():  # as it was written when the run ended
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
                for f in sorted(stored.iterdir()):
                    z.write(f, f"{v.model}/{f.name}")
            return f"{v.model}.zip", buf.getvalue()
        with tempfile.TemporaryDirectory() as tmp:
            folder = save_run(v.result, run.plan.task, Path(tmp), name=v.model)
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
                for f in sorted(folder.iterdir()):
                    z.write(f, f"{v.model}/{f.name}")
        return f"{v.model}.zip", buf.getvalue()
