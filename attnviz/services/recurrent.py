"""Why not an RNN, for the API: comparisons of the training lab's transformer with an LSTM and a
GRU (``attnviz.training.recurrent``), each started by a request and run on a thread of its own.

Bounded as training runs are, by the same settings and the same line (``services.line``): at
most ``train_slots`` comparisons at once; a start past them waits in line (``queued``, told
its place and an estimate of its wait), past ``train_queue`` waiting it is ``Busy`` (503 with
Retry-After); each visitor may have one going and one waiting, each client address
``train_per_address`` (``TooManyRuns``: 429). Each is stopped at ``train_max_seconds``,
refused when its steps or parameters are over the server's caps. Comparisons are kept in the
data directory as runs are (``services.store``): a restart keeps every ended one (one going
then is ``interrupted``) and puts the waiting ones back in line, and past the store's bounds
the oldest go (their links say when: 404). The slots and the line are the training runs'
numbers but counts of their own: a comparison and a run may train side by side, each on one
thread. What changes of a comparison is an event (``services.events``): a client follows it
as server-sent events, or reads the same state again.

A comparison belongs to the visitor who started it, as a run does (``services.ownership``): its
id is the capability to read it; only its owner or the operator may cancel it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

from attnviz.schemas.recurrent import (
    RECURRENT_MAX_SEED,
    RecurrentModel,
    RecurrentOptions,
    RecurrentRequest,
    RecurrentRun,
    RecurrentRuns,
    RecurrentSummary,
    RecurrentTaskInfo,
)
from attnviz.schemas.train import TrainClaim
from attnviz.services import compute
from attnviz.services.admission import Busy
from attnviz.services.events import EventLog, follow
from attnviz.services.line import Line, Ticker, Words
from attnviz.services.ownership import NOBODY, Caller, Ownership, new_run_id
from attnviz.services.store import (
    NEWER_RETRY_S,
    NewerIndex,
    Row,
    RunStore,
    StoreError,
    access_record,
)
from attnviz.services.training import RunGone, TrainRefused, report
from attnviz.services.training.queue import TICK_S, WAITING_CANCELLED
from attnviz.services.training.runs import NOT_TRAINING, over_time
from attnviz.settings import Settings
from attnviz.training import recurrent as R
from attnviz.training.catalog import TASKS

log = logging.getLogger(__name__)

KIND = "comparison"  # its rows in the store's index

TRAINING_SHARE = 0.85  # of the work: the rest is timing the steps
WORDS = Words(field="task", one="comparison", goes="running")
WAITING = ("queued", "running")
PROGRESS_S = 0.2  # a comparison's progress events come at most this often while it trains
ONLY_ITS_READERS = {"yours", "can_cancel", "token"}  # what an event leaves to the state


class LiveComparison(EventLog):
    """One comparison as it runs: what ``recurrent.compare`` has done so far, then its claims
    and what it showed; its events (``services.events``): ``progress``, the whole comparison
    (less what only its reader is told) whenever it changes, at most every ``PROGRESS_S`` while
    it trains, then ``end``, the same, last."""

    def __init__(
        self, run_id: str, req: RecurrentRequest, setup: R.Setup, access: Ownership
    ) -> None:
        super().__init__()
        self.id = run_id
        self.access = access  # its owner, whether shared, who opened it
        self.cancel = threading.Event()
        self.task = req.task
        self.seed = req.seed
        self.setup = setup
        self.address = ""  # the client address that started it (the per-address cap)
        self.exempt = False  # the operator's: not counted against its address
        self.state = "running"  # "queued" while it waits in line (services.line)
        self.place: int | None = None  # while queued: its place in line, 1 the next
        self.wait_s: int | None = None  # while queued: about how long until it starts
        self.reason: str | None = None
        self.started = time.monotonic()  # again when it leaves the line
        self.ended: float | None = None
        self.took: float | None = None  # a comparison that ran to its end: its seconds
        self.params = R.params(setup)
        self.result: R.Comparison | None = None  # the comparison's own, once it has begun
        self.progress: R.Progress | None = None
        self.claims: list[TrainClaim] | None = None
        self.shows = ""
        self.told_at = 0.0  # when its last progress event was logged (monotonic)
        self.created = time.time()
        self.request = req
        # A comparison read back from the store: what it showed, as it was kept.
        self.kept: RecurrentRun | None = None
        self.seen = False  # its owner was told it ended (its row says so: eviction may take it)

    @property
    def finished(self) -> bool:
        return self.state not in WAITING

    def share_done(self) -> float:
        """The share of the work done, 0 to 1."""
        if self.finished and self.state == "done":
            return 1.0
        p = self.progress
        if p is None:
            return 0.0
        order = R.KINDS.index(p.kind)
        if p.stage == "training":
            return TRAINING_SHARE * (order + p.step / p.steps) / len(R.KINDS)
        return TRAINING_SHARE + (1 - TRAINING_SHARE) * (order + p.step / p.steps) / len(R.KINDS)

    def doing(self) -> str:
        p = self.progress
        if self.state == "queued":
            return "waiting for a slot"
        if self.finished or p is None:
            return "" if self.finished else "starting"
        name = R.NAMES[p.kind]
        if p.stage == "training":
            return f"training the {name}: step {p.step} of {p.steps}"
        return f"timing a training step of the {name}: {p.step} of {p.steps} lengths"

    def remaining_s(self, deadline: float) -> float:
        """Seconds until it ends, as its pace so far says, and never past ``deadline``."""
        done = self.share_done()
        spent = time.monotonic() - self.started
        left = spent * (1 - done) / done if done > 0 else deadline - time.monotonic()
        return max(0.0, min(left, deadline - time.monotonic()))

    def tell(self) -> None:
        """Its ``progress`` event: the comparison as it is now, as any reader reads it (``GET``
        adds whether it is theirs)."""
        now = self.state_now().model_dump(mode="json", exclude=ONLY_ITS_READERS)
        self.told_at = time.monotonic()
        self.emit("progress", now)

    def end(self, final: RecurrentRun, apply: Callable[[], None]) -> None:
        """Its ``end`` event (``final``, less what only its reader is told), logged as
        ``apply`` ends it: a stream never finds it ended without its end in the log. Its log
        then keeps its end alone (each event is the whole comparison: ``EventLog.compact``)."""
        self.emit("end", final.model_dump(mode="json", exclude=ONLY_ITS_READERS), apply=apply)
        self.compact()

    def heard(self, result: R.Comparison, progress: R.Progress) -> None:
        """``recurrent.compare``'s progress: kept, and told where a model or a stage begins or
        ``PROGRESS_S`` have passed since the last event."""
        with self.lock:
            was = self.progress
            self.result, self.progress = result, progress
        moved = was is None or (was.kind, was.stage) != (progress.kind, progress.stage)
        if moved or time.monotonic() - self.told_at >= PROGRESS_S:
            self.tell()

    def state_now(self, caller: Caller = NOBODY) -> RecurrentRun:
        """What it is now, as the API sends it to ``caller``."""
        if self.kept is not None:
            with self.lock:
                told = self.access.told(caller)
            return self.kept.model_copy(update=told)
        with self.lock:
            result, state, reason = self.result, self.state, self.reason
            claims, shows = self.claims, self.shows
            place, wait_s = self.place, self.wait_s
            told = self.access.told(caller)
        models = []
        for kind in R.KINDS:
            m = result.model(kind) if result is not None else None
            history = list(m.history) if m is not None else []
            models.append(
                RecurrentModel(
                    name=kind,
                    params=self.params[kind],
                    accuracy=[round(a, 4) for a in m.accuracy] if m is not None else [],
                    step_seconds=[round(t, 6) for t in m.step_seconds] if m is not None else [],
                    loss=round(history[-1].loss, 4) if history else None,
                    steps=len(history),
                    train_seconds=None
                    if m is None or m.train_seconds is None
                    else round(m.train_seconds, 3),
                )
            )
        s = self.setup
        return RecurrentRun(
            id=self.id,
            **told,
            state=state,  # type: ignore[arg-type]
            reason=reason,
            place=place,
            wait_s=wait_s,
            task=self.task,  # type: ignore[arg-type]
            seed=self.seed,
            distances=list(s.distances),
            distance=s.distance,
            lengths=list(s.lengths),
            models=models,
            claims=claims,
            shows=shows,
            progress=round(self.share_done(), 4),
            doing=self.doing(),
        )


class RecurrentService:
    """The comparisons this server runs and keeps. ``setups``: what each task trains (the
    shipped ``recurrent.SETUPS`` by default; a test gives smaller ones)."""

    def __init__(self, settings: Settings, setups: dict[str, R.Setup] | None = None) -> None:
        self.settings = settings
        self.setups = setups or R.SETUPS
        self.runs: dict[str, LiveComparison] = {}
        self.lock = threading.Lock()
        self.line: Line[LiveComparison] = Line(settings.train_queue, WORDS)  # waiting for a slot
        self.ticker = Ticker(TICK_S, self._tick, "recurrent-line")  # their estimates, again
        self.store: RunStore | None = RunStore(settings.data_path, settings.data_lease_s)
        self._restore()

    def options(self) -> RecurrentOptions:
        tasks = [
            RecurrentTaskInfo(
                name=name,  # type: ignore[arg-type]
                title=TASKS[name].title,
                about=s.about,
                steps=s.opt.steps,
                distances=list(s.distances),
                distance=s.distance,
            )
            for name, s in self.setups.items()
        ]
        return RecurrentOptions(
            tasks=tasks,
            default=R.DEFAULT_TASK,  # type: ignore[arg-type]
            lengths=list(self.setups[R.DEFAULT_TASK].lengths),
            max_seed=RECURRENT_MAX_SEED,
            slots=self.settings.train_slots,
            queue=self.settings.train_queue,
            per_address=self.settings.train_per_address,
        )

    def _setup(self, req: RecurrentRequest) -> R.Setup:
        """The comparison ``req`` asks for, checked against the server's bounds."""
        s = self.settings
        setup = self.setups[req.task]
        if s.train_slots == 0:
            raise TrainRefused(NOT_TRAINING, "ATTNVIZ_TRAIN_SLOTS")
        if setup.opt.steps > s.train_max_steps:
            raise TrainRefused(
                f"task: {req.task} trains {setup.opt.steps:,} steps a model, over this server's "
                f"cap: it trains at most {s.train_max_steps:,} steps a run; ask its host to "
                "allow more",
                "ATTNVIZ_TRAIN_MAX_STEPS",
            )
        biggest = max(R.params(setup).values())
        if biggest > s.train_max_params:
            raise TrainRefused(
                f"task: {req.task}'s models have up to {biggest:,} parameters, over this "
                f"server's cap: it trains at most {s.train_max_params:,} parameters a model; "
                "ask its host to allow more",
                "ATTNVIZ_TRAIN_MAX_PARAMS",
            )
        return setup

    def new_id(self) -> str:
        return new_run_id(self.settings.replica)

    def start(self, req: RecurrentRequest, caller: Caller) -> RecurrentRun:
        """Start a comparison, ``caller``'s, on a thread of its own, or put it in line where
        every slot is taken (or the caller's other one runs); ``TooManyRuns`` past the caller's
        or its address's rule (the operator is exempt), ``Busy`` when the line is full too. Its
        answer carries the caller's token (a bearer token for this visitor)."""
        setup = self._setup(req)
        limit = self.settings.train_max_seconds
        if self.store is not None:
            try:
                self.store.check_writable()
            except NewerIndex as exc:  # a comparison this server could not keep
                raise Busy(f"busy: {exc}", NEWER_RETRY_S) from exc
            except (sqlite3.Error, OSError):
                pass  # an index that cannot be written: comparisons last in memory
        with self.lock:
            refused = self.line.refusal(self.runs.values(), caller,
                                        per_address=self.settings.train_per_address,
                                        retry=self._retry_after)  # fmt: skip
            if refused is not None:
                raise refused
            running = self._running()
            live = LiveComparison(self.new_id(), req, setup, Ownership(owner=caller.visitor))
            live.address, live.exempt = caller.address, caller.operator
            free = len(running) < self.settings.train_slots
            if free and not self.line.must_wait(running, caller):
                self.runs[live.id] = live
                self._launch(live)
                return live.state_now(caller).model_copy(update={"token": caller.token})
            if self.line.full:
                raise self.line.busy(running, lambda r: r.remaining_s(r.started + limit), "runs")
            self.line.add(live)
            self.runs[live.id] = live
            # Kept before anyone hears of it: a restart puts it back in line.
            self._keep(live, live.state_now())
            self._tell_line()
        self.ticker.wake()
        return live.state_now(caller).model_copy(update={"token": caller.token})

    def _running(self) -> list[LiveComparison]:
        return [r for r in self.runs.values() if r.state == "running"]

    def _retry_after(self, runs: list[LiveComparison]) -> int:
        """Whole seconds until the first of ``runs`` should end: a running one at its pace so
        far, a waiting one once it has waited and run (each within the time limit)."""
        limit = self.settings.train_max_seconds
        ends = [r.remaining_s(r.started + limit) if r.state == "running"
                else (r.wait_s or 0) + limit for r in runs]  # fmt: skip
        return max(1, math.ceil(min(ends))) if ends else 1

    def _launch(self, live: LiveComparison) -> None:
        """Start ``live`` on a thread of its own (under ``self.lock``): its time limit counts
        from now, and its row says running (until it ends) before anyone hears it started."""
        with live.lock:
            live.state, live.place, live.wait_s = "running", None, None
            live.started = time.monotonic()
        live.tell()
        self._keep(live, live.state_now())
        threading.Thread(target=self._run, args=(live,), name=f"recurrent-{live.id}",
                         daemon=True).start()  # fmt: skip

    def _length(self, live: LiveComparison) -> float:
        """How long a waiting comparison should run: as long as the last one of its task that
        ran to its end took (else of any task), never past the time limit (before any, the
        limit)."""
        limit = self.settings.train_max_seconds
        took = [(r.ended or 0.0, r.took, r.task == live.task) for r in self.runs.values()
                if r.took is not None]  # fmt: skip
        same = [t for t in took if t[2]] or took
        return min(limit, max(same)[1]) if same else limit

    def _tell_line(self) -> None:
        """Every waiting comparison's place and estimate (under ``self.lock``)."""
        limit = self.settings.train_max_seconds
        running = self._running()
        ahead = [r.remaining_s(r.started + limit) for r in running]
        lengths = [self._length(w) for w in self.line.waiting]
        for w, place, wait in self.line.lay(running, ahead, lengths, self.settings.train_slots):
            with w.lock:
                moved = (w.place, w.wait_s) != (place, wait)
                w.place, w.wait_s = place, wait
            if moved:
                w.tell()

    def _tick(self) -> bool:
        """The waiting comparisons' estimates again; False when none waits."""
        with self.lock:
            self._tell_line()
            return len(self.line) > 0

    def _start_waiting(self) -> None:
        """The first in line whose owners have none running take the free slots; the rest are
        told their places (under ``self.lock``)."""
        self.line.start_free(self.settings.train_slots, self._running, self._launch,
                             self.store, self.runs)  # fmt: skip
        self._tell_line()

    def _gone(self, run_id: str) -> RunGone:
        row = self.store.tombstone(run_id, KIND) if self.store is not None else None
        if row is not None:
            return RunGone(f"run_id: no comparison {run_id!r} on this server: it "
                           f"{row.removed_text}")  # fmt: skip
        return RunGone(
            f"run_id: no comparison {run_id!r} on this server (it never was, it was "
            "removed to keep this server's runs within its bounds, or it was forgotten)"
        )

    def find(self, run_id: str) -> LiveComparison:
        live = self.runs.get(run_id) or self._reread(run_id)
        if live is None:
            raise self._gone(run_id)
        return live

    def open(self, run_id: str, caller: Caller = NOBODY) -> LiveComparison:
        """The comparison, for ``caller`` to read (anyone with the id may; remembered as having
        opened it)."""
        live = self.find(run_id)
        with live.lock:
            before = len(live.access.viewers)
            live.access.opened_by(caller)
            changed = len(live.access.viewers) != before
            access = replace(live.access, viewers=dict(live.access.viewers))
        if changed and live.finished and self.store is not None:
            try:
                self.store.put_access(live.id, access)
            except (sqlite3.Error, OSError, StoreError) as exc:
                log.warning("comparison %s: who may read it not stored (%s)", live.id, exc)
        return live

    def get(self, run_id: str, caller: Caller = NOBODY) -> RecurrentRun:
        """The comparison as ``caller`` reads it (``open``)."""
        live = self.open(run_id, caller)
        got = live.state_now(caller)
        if got.state not in WAITING:
            self._told(live, caller)
        return got

    async def stream(self, live: LiveComparison, after: int | None,
                     caller: Caller) -> AsyncIterator[tuple[int, str, str]]:  # fmt: skip
        """(seq, event, JSON data): the comparison (one ``open``) as ``caller`` reads it, then
        its events until its end (``events.follow``)."""
        ended = live.finished  # its state, sent first, is then its end's

        def state() -> tuple[int, str]:
            seq = live.seq  # read first: an event logged meanwhile is sent again, never lost
            return seq, live.state_now(caller).model_dump_json()

        async for item in follow(live, after, state):
            yield item
            if item[1] == "end" or (item[1] == "state" and ended):
                await asyncio.to_thread(self._told, live, caller)  # a write to the index

    def _told(self, live: LiveComparison, caller: Caller) -> None:
        """``caller`` was just sent the comparison as it ended: when it is its owner, the store
        marks it ``seen``, and from then on eviction may remove it."""
        if live.seen or not live.finished or self.store is None or not live.access.yours(caller):
            return
        live.seen = self.store.told(live.id, "comparison")

    def summaries(self, caller: Caller) -> RecurrentRuns:
        """The comparisons in ``caller``'s list (those it started, those it opened by their id;
        every one for the operator), newest first, in brief: those this process holds and the
        ended ones in the store that it does not (another replica's)."""
        if self.store is not None:
            try:
                rows = self.store.finished_rows(KIND)
            except (sqlite3.Error, OSError) as exc:
                log.warning("the run index cannot be read (%s): comparisons listed as held", exc)
                rows = []
            for row in rows:
                if row.id not in self.runs and row.access().listed_for(caller):
                    self._reread(row.id)
        with self.lock:
            listed = [r for r in self.runs.values() if r.access.listed_for(caller)]
        out = []
        for live in sorted(listed, key=lambda r: r.created, reverse=True):
            with live.lock:
                told = live.access.told(caller)
                state = live.state
            if state not in WAITING:
                self._told(live, caller)  # its state, as it ended, is in the list
            out.append(
                RecurrentSummary(
                    id=live.id,
                    **told,
                    created=live.created,
                    state=state,  # type: ignore[arg-type]
                    task=live.task,  # type: ignore[arg-type]
                    seed=live.seed,
                    progress=round(live.share_done(), 4),
                )
            )
        return RecurrentRuns(comparisons=out)

    def cancel(self, run_id: str, caller: Caller) -> RecurrentRun:
        """Stop a running comparison (what it measured so far stays); forget an ended one. Only
        its owner or the operator: to anyone else it does not exist (``RunGone``)."""
        live = self.find(run_id)
        if not live.access.may_control(caller):
            raise self._gone(run_id)
        with self.lock:
            waiting = self.line.remove(live)  # it never started: it ends here
        if waiting:
            self._end_waiting(live)
            return live.state_now(caller)
        if not live.finished:
            live.cancel.set()
        else:
            with self.lock:
                self.runs.pop(live.id, None)
            if self.store is not None:
                try:
                    self.store.remove(live.id, "forgotten by its owner", forget=True)
                except (sqlite3.Error, OSError) as exc:
                    log.warning("comparison %s: not removed from the store (%s)", live.id, exc)
        return live.state_now(caller)

    def _end_waiting(self, live: LiveComparison) -> None:
        """``live``, taken out of the line, ends cancelled, never having started: stored
        before it is told, the bounds kept, the ones behind it told their new places."""
        ended = live.state_now().model_copy(
            update={
                "state": "cancelled",
                "reason": WAITING_CANCELLED,
                "place": None,
                "wait_s": None,
                "doing": "",
            }
        )
        self._keep(live, ended, ended=True)
        self._evict(ending=live)

        def end() -> None:
            live.state, live.reason = "cancelled", WAITING_CANCELLED
            live.ended, live.place, live.wait_s = time.monotonic(), None, None

        live.end(ended, end)
        with self.lock:
            self._tell_line()

    @property
    def running(self) -> int:
        return sum(r.state == "running" for r in list(self.runs.values()))

    @property
    def queued(self) -> int:
        return len(self.line)

    def _run(self, live: LiveComparison) -> None:
        deadline = live.started + self.settings.train_max_seconds
        state, reason = "done", None
        claims: list[TrainClaim] | None = None
        said = ""
        try:
            with compute.beside():  # a core of its own: traces take one thread fewer
                result = R.compare(live.task, live.seed, setup=live.setup,
                                   on_progress=live.heard,
                                   should_stop=lambda: live.cancel.is_set()
                                   or time.monotonic() > deadline)  # fmt: skip
            with live.lock:
                live.result = result
            if result.complete:
                claims = report.claims(R.outcomes(result))
                said = R.shows(result)
            elif live.cancel.is_set():
                state, reason = "cancelled", "cancelled"
            else:
                state, reason = "cancelled", over_time(self.settings.train_max_seconds)
                log.info("comparison %s stopped at ATTNVIZ_TRAIN_MAX_SECONDS (%g s)", live.id,
                         self.settings.train_max_seconds)  # fmt: skip
        except Exception as exc:  # a failure is the comparison's state, not the server's
            log.exception("comparison %s failed", live.id)
            state, reason = "failed", f"the comparison failed: {type(exc).__name__}: {exc}"
        # Stored whole before a reader sees its end.
        final = live.state_now().model_copy(
            update={
                "state": state,
                "reason": reason,
                "claims": claims,
                "shows": said,
                "progress": 1.0 if state == "done" else round(live.share_done(), 4),
                "doing": "",
            }  # fmt: skip
        )
        self._keep(live, final, ended=True)
        # The bounds are kept before anyone can read it ended: a reader who sees it done
        # never sees one it pushed past them.
        self._evict(ending=live)

        def end() -> None:  # under the log's lock: its end and its end's event at once
            live.state, live.reason, live.ended = state, reason, time.monotonic()
            live.claims, live.shows = claims, said
            if state == "done":
                live.took = live.ended - live.started

        live.end(final, end)
        with self.lock:
            self._start_waiting()  # the first in line takes its slot

    # -- the store ------------------------------------------------------------------------------

    def _keep(self, live: LiveComparison, now: RecurrentRun, ended: bool = False) -> None:
        """The comparison into its folder, then its row (finished when ``ended``); a write
        that fails is logged, and the comparison goes on in memory."""
        store = self.store
        if store is None:
            return
        try:
            store.check_writable()  # nothing of it written where a newer attnviz has the index
            with live.lock:
                access = replace(live.access, viewers=dict(live.access.viewers))
            if not (store.folder(live.id) / "request.json").exists():
                store.write_json(live.id, "request.json", live.request.model_dump(mode="json"))
            state = now.model_copy(update={"yours": False, "can_cancel": False, "token": None})
            record = {"created": live.created, "run": state.model_dump(mode="json")}
            store.write_json(live.id, "run.json", record)
            store.write_json(live.id, "access.json", access_record(access))
            store.put(live.id, KIND, replica=self.settings.replica, access=access,
                      state=now.state, step=0, created=live.created,
                      finished=time.time() if ended else None,
                      address=live.address)  # fmt: skip
        except NewerIndex:  # a newer attnviz's data directory: logged once by the store
            return
        except Exception:  # the store is a copy: a failure to write it never stops the run
            log.exception("comparison %s: could not be written to the store", live.id)

    def _load(self, row: Row) -> LiveComparison | None:
        assert self.store is not None
        try:
            req = RecurrentRequest.model_validate(self.store.read_json(row.id, "request.json"))
            data = self.store.read_json(row.id, "run.json")
            kept = RecurrentRun.model_validate(data["run"])
            live = LiveComparison(row.id, req, self.setups[req.task], row.access())
            live.created = float(data["created"])
            live.seen = row.seen is not None
        except (StoreError, KeyError, TypeError, ValueError) as exc:
            log.warning("comparison %s skipped: its folder cannot be read (%s)", row.id, exc)
            return None
        if row.state == "interrupted":
            why = "interrupted: the server stopped while it ran; start it again"
            kept = kept.model_copy(update={"state": "interrupted", "doing": "", "reason": why})
        live.kept = kept
        live.state, live.reason, live.claims, live.shows = (
            kept.state,
            kept.reason,
            kept.claims,
            kept.shows,
        )
        live.ended = time.monotonic()
        return live

    def _restore(self) -> None:
        """At start: this server's running comparisons are interrupted; every stored one is
        read back, and the ones that waited in line here wait again, in their order (oldest
        first), and start as slots free."""
        if self.store is None or not self.store.exists:
            return
        try:
            self.store.interrupt(KIND, self.settings.replica)
            rows = [r for r in self.store.rows(KIND) if r.removed is None]
        except (sqlite3.Error, OSError) as exc:
            log.warning("the run index cannot be read (%s): no comparison restored", exc)
            return
        waiting = 0
        for row in rows:
            if row.state == "queued" and row.replica == self.settings.replica:
                waiting += self._requeue(row)
            elif row.state not in WAITING and (live := self._load(row)) is not None:
                self.runs[live.id] = live
        if waiting:
            log.info("%d comparison(s) back in line", waiting)
            with self.lock:
                self._start_waiting()
            self.ticker.wake()

    def _requeue(self, row: Row) -> bool:
        """A comparison that waited in line here when the server stopped, back at the end of
        the line (past its bound too: an accepted one is never lost), where it is still this
        server's (``RunStore.take_over``). Whether it waits again."""
        assert self.store is not None
        try:
            if not self.store.take_over(row):
                return False
            req = RecurrentRequest.model_validate(self.store.read_json(row.id, "request.json"))
            created = float(self.store.read_json(row.id, "run.json")["created"])
        except (StoreError, KeyError, TypeError, ValueError, sqlite3.Error, OSError) as exc:
            log.warning("comparison %s skipped: its folder cannot be read (%s)", row.id, exc)
            return False
        live = LiveComparison(row.id, req, self.setups[req.task], row.access())
        live.address, live.created, live.state = row.address, created, "queued"
        self.runs[live.id] = live
        try:
            self._setup(req)
        except TrainRefused as exc:  # the server's bounds changed while it waited
            live.state, live.ended = "failed", time.monotonic()
            live.reason = ("it waited in line when the server restarted, and it no longer fits "
                           f"this server's bounds: {exc}")  # fmt: skip
            self._keep(live, live.state_now(), ended=True)
            log.warning("comparison %s failed at restart: %s", row.id, exc)
            return False
        self.line.waiting.append(live)
        return True

    def _reread(self, run_id: str) -> LiveComparison | None:
        """An ended comparison this process does not hold, from the store (a replica's)."""
        row = self.store.kept(run_id, KIND) if self.store is not None else None
        if row is None:
            return None  # none, or going on another replica (the proxy routes it there)
        live = self._load(row)
        if live is None:
            return None
        with self.lock:
            return self.runs.setdefault(live.id, live)

    def _evict(self, ending: LiveComparison | None = None) -> None:
        """The stored runs past the bounds go (``RunStore.evict``), and these comparisons
        from memory; without a store, the ended ones past the last ``train_keep_runs``
        (``ending``, about to be marked ended, counted among them)."""
        ids: set[str] = set()
        if self.store is not None:
            s = self.settings
            try:
                gone = self.store.evict(keep=s.train_keep_runs, max_age_days=s.data_max_age_days,
                                        max_mb=s.data_max_mb,
                                        spare=(ending.id,) if ending else ())  # fmt: skip
                ids = {i for i, kind in gone if kind == KIND}
            except (sqlite3.Error, OSError) as exc:
                log.warning("comparisons not evicted from the store (%s)", exc)
        with self.lock:
            for i in ids:
                self.runs.pop(i, None)
            done = [r for r in self.runs.values() if r.finished or r is ending]
            for r in done[: max(0, len(done) - self.settings.train_keep_runs)]:
                self.runs.pop(r.id, None)
                log.info("comparison %s evicted", r.id)
