"""What the server keeps of each visitor's Learn path, and the operator's class view of it.

A learner's progress is recorded from the server's own answers to their checks (``checked``,
after ``POST /api/learn/{id}/check`` is answered), when the check is of the learner's own work
(``service.own``): the tasks found done, the tasks tried (a part of the lab the task
reads changed: ``Task.reads``), and how many different states of those parts each task was
tried on, the first and the latest (``tries``). Any other check (the step's
untouched start, the state a Learn link carried, another visitor's run) is seen: it moves the
learner to its step, and credits nothing. A browser cannot claim a task it never passed. A
learner is *stuck* on a task tried ``STUCK_TRIES`` times or more, over ``STUCK_S`` seconds or
more, and not done. The learner may give a nickname; the operator (``ATTNVIZ_ADMIN_TOKEN``)
sees everyone's in the class view, each by their nickname or as ``Learner <n>``, never by an
id (nor the operator's own browser, whose checks, made with the token, are not recorded). Kept
in the data directory by ``services.progress_store``, its SQLite work on a worker thread, off
the event loop. Where the file cannot be used, a check is answered all the same (logged) and
nothing is kept."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread

from attnviz.learn.path import Step
from attnviz.learn.steps import BY_ID, STEPS
from attnviz.limits import LIMITS
from attnviz.schemas.learn import (
    ClassLearner,
    ClassStep,
    ClassStuck,
    ClassStuckTask,
    LearnCheck,
    LearnClass,
    LearnProgress,
    LearnStepProgress,
)
from attnviz.services.ownership import Caller
from attnviz.services.progress_store import (
    Learner,
    ProgressStore,
    ProgressUnavailable,
    TooLarge,
    Tries,
)
from attnviz.settings import Settings

log = logging.getLogger(__name__)

POLL_S = 2.0  # the class view asks again this often (the page reads it from the answer)
# A learner is stuck on a task tried on at least STUCK_TRIES different states of the lab, the
# first and the latest at least STUCK_S seconds apart, and not done: working at it a while
# without getting there, which a teacher can help with (one wrong try is no more than a try).
# The class view says the rule (LearnClass.stuck_tries, stuck_s).
STUCK_TRIES = 3
STUCK_S = 120.0
T = TypeVar("T")


class NotOperator(Exception):
    """The class view was asked for by someone other than the operator (403)."""


def _numbers() -> dict[str, int]:
    return {s.id: n for n, s in enumerate(STEPS, start=1)}


N_OF = _numbers()


def merged(
    progress: dict, step: Step, answer: LearnCheck, *, own: bool, looked: bool = False
) -> dict:
    """``progress`` with a check's answer added: the step is the learner's latest and, when the
    check is of their own work (``own``), its done tasks go to the step's done and every task
    it found tried (a part of the lab the task reads changed, ``LearnTaskResult.tried``) to the
    step's tried (otherwise it is seen: nothing credited). Only the step's
    own task ids are kept (a task once done stays done). ``looked``: the check was of someone
    else's work (a link's state, another visitor's run), which the record keeps as ``looked``.
    The step the learner has open (``open``, from ``opened``) is kept as it was."""
    known = [t.id for t in step.tasks]
    steps = {k: v for k, v in dict(progress.get("steps") or {}).items() if k in BY_ID}
    was = steps.get(step.id) or {}
    done = [t for t in known if t in (was.get("done") or []) or (own and _done(answer, t))]
    had = was.get("tried") or []
    got = [
        t for t in known if t in had or (own and any(r.id == t and r.tried for r in answer.tasks))
    ]
    steps[step.id] = {"done": done, "tried": got}
    return {**_kept(progress), "last": step.id, "steps": steps,
            **({"looked": True} if looked else {})}  # fmt: skip


def opened(progress: dict, step: Step) -> dict:
    """``progress`` with ``step`` the one the learner has open (the page says so as it opens
    a step, before any check: a train step with no run yet is checked on nothing). Credits
    nothing."""
    return {**progress, "open": step.id}


def _kept(progress: dict) -> dict:
    """What a record keeps beside its steps: the step open, whether it looked at others' work."""
    out: dict = {}
    if str(progress.get("open")) in BY_ID:
        out["open"] = progress["open"]
    if progress.get("looked") is True:
        out["looked"] = True
    return out


def stuck_on(tries: Tries) -> bool:
    """Whether tries at a task not done make the learner stuck on it (STUCK_TRIES, STUCK_S)."""
    return tries.count >= STUCK_TRIES and tries.last - tries.first >= STUCK_S


def _done(answer: LearnCheck, task: str) -> bool:
    return any(r.id == task and r.done for r in answer.tasks)


def step_done(step: Step, record: dict) -> bool:
    return bool(step.tasks) and all(t.id in (record.get("done") or []) for t in step.tasks)


def unrecorded(caller: Caller) -> str | None:
    """Why nothing is kept for ``caller``, or None: a visitor the server knew (a cookie or a
    token it signed came with the request) is recorded; a client that keeps neither is a new
    visitor at every request, and the operator's token names no learner."""
    if caller.operator:
        return "The operator's token names no learner: nothing is kept for it."
    if caller.new or not caller.visitor:
        return (
            "This request came without the cookie (or token) the server gave you, so nothing "
            "can be kept for you: a browser keeps it by itself; a client sends it back."
        )
    return None


def label(learner: Learner) -> str:
    return learner.nickname or f"Learner {learner.n}"


def class_row(learner: Learner, now: float) -> ClassLearner:
    """One learner as the class view shows them: no id, no cookie. ``on``: the step they have
    open, else that of their latest check; ``started``: any task tried or done on their own
    work, which a browser that only opened steps or others' links (a teacher's without the
    token) has not."""
    steps = learner.progress.get("steps") or {}
    done, stuck = [], []
    started = False
    for n, step in enumerate(STEPS, start=1):
        record = steps.get(step.id) if isinstance(steps, dict) else None
        record = record if isinstance(record, dict) else {}  # a file edited by hand
        started = started or bool(record.get("done") or record.get("tried"))
        if step_done(step, record):
            done.append(n)
            continue
        did = record.get("done") or []
        left = []
        for t in step.tasks:
            at = learner.tries.get((step.id, t.id))
            if t.id not in did and at is not None and stuck_on(at):
                left.append(ClassStuckTask(prompt=t.prompt, tries=at.count, first_try=at.first,
                                           last_try=at.last))  # fmt: skip
        if left:
            stuck.append(ClassStuck(n=n, id=step.id, title=step.title, tasks=left))
    p = learner.progress
    last = BY_ID.get(str(p.get("open"))) or BY_ID.get(str(p.get("last")))
    on = None if last is None else ClassStep(n=N_OF[last.id], id=last.id, title=last.title)
    return ClassLearner(label=label(learner), named=learner.nickname is not None, on=on,
                        done=done, stuck=stuck, started=started, looked=p.get("looked") is True,
                        last_seen=learner.last_seen,
                        seen_s=max(0.0, now - learner.last_seen))  # fmt: skip


class Classroom:
    """The learners' progress, kept under the settings' data directory."""

    def __init__(self, settings: Settings) -> None:
        self.store = ProgressStore(
            settings.data_path,
            max_learners=settings.learn_max_learners,
            keep_days=settings.learn_keep_days,
            max_bytes=LIMITS.max_learner_bytes,
        )
        token = settings.admin_token.get_secret_value() if settings.admin_token else ""
        self.watched = bool(token)
        self.clock: Callable[[], float] = time.time  # when a check or a look happens

    async def _off_loop(self, work: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(work)

    async def checked(
        self,
        caller: Caller,
        step: Step,
        answer: LearnCheck,
        *,
        own: bool,
        states: list[str],
        looked: bool = False,
    ) -> None:
        """Record a check the server answered for ``caller``: a visitor it knew (a cookie or a
        token it signed came with the request; not the operator's token). ``own``: of the
        learner's own work (credited), else seen; ``looked``: of someone else's work (a link's
        state, another visitor's run); ``states``: for each task, a digest of the parts of the
        lab it reads in the state checked (``service.task_states``): a try at a task is a task
        tried (``LearnTaskResult.tried``) whose digest is another than its latest, so an edit
        of a part the task does not read is no try at it. Never raises: a store that cannot be
        used is logged, and the check's answer stands."""
        if unrecorded(caller):
            return

        def edit(was: Learner | None) -> tuple[str | None, dict]:
            progress = merged(was.progress if was else {}, step, answer, own=own, looked=looked)
            return (was.nickname if was else None), progress

        tried = [(step.id, r.id, state) for r, state in zip(answer.tasks, states, strict=True)
                 if own and r.tried and not r.done]  # fmt: skip
        await self._record(caller, edit, tried)

    async def open(self, caller: Caller, step: Step) -> None:
        """Record that ``caller`` has ``step`` open in the Learn path (the class view's "on step
        N"), seen now; credits nothing. As ``checked``: nothing for a caller the server cannot
        know again or for the operator's token; never raises."""
        if unrecorded(caller):
            return

        def edit(was: Learner | None) -> tuple[str | None, dict]:
            return (was.nickname if was else None), opened(was.progress if was else {}, step)

        await self._record(caller, edit, [])

    async def _record(
        self,
        caller: Caller,
        edit: Callable[[Learner | None], tuple[str | None, dict]],
        tried: list[tuple[str, str, str]],
    ) -> None:
        now = self.clock()
        try:
            await self._off_loop(
                lambda: self.store.change(caller.visitor, edit, now=now, tried=tried)
            )
        except ProgressUnavailable as exc:
            log.debug("Learn progress not kept: %s", exc)  # the store said why, once
        except TooLarge as exc:
            log.warning("Learn progress of a learner not kept: %s", exc)

    async def progress(self, caller: Caller) -> LearnProgress:
        """The caller's progress as kept (seen now, when kept)."""
        now = self.clock()
        try:
            learner = await self._off_loop(
                lambda: self.store.change(caller.visitor, lambda was: None, create=False, now=now)
            )
        except (ProgressUnavailable, TooLarge) as exc:
            return self._answer(None, note=f"Progress is not kept on this server now: {exc}.")
        return self._answer(learner)

    async def rename(self, caller: Caller, nickname: str | None) -> LearnProgress:
        """Give the caller's nickname (None: none), recording them if not yet (not a caller
        the server cannot know again: answered with why, nothing kept)."""
        why = unrecorded(caller)
        if why:
            return self._answer(None, note=why)

        def edit(was: Learner | None) -> tuple[str | None, dict]:
            return nickname, (was.progress if was else {})

        now = self.clock()
        try:
            learner = await self._off_loop(lambda: self.store.change(caller.visitor, edit, now=now))
        except (ProgressUnavailable, TooLarge) as exc:
            raise ProgressUnavailable(f"nickname: not kept on this server now: {exc}") from exc
        return self._answer(learner)

    def _answer(self, learner: Learner | None, note: str | None = None) -> LearnProgress:
        steps = (learner.progress.get("steps") or {}) if learner else {}
        return LearnProgress(
            kept=learner is not None,
            nickname=learner.nickname if learner else None,
            last=(str(learner.progress.get("last") or "") or None) if learner else None,
            steps={
                k: LearnStepProgress(
                    done=list(v.get("done") or []), tried=list(v.get("tried") or [])
                )
                for k, v in steps.items()
                if k in BY_ID
            },  # fmt: skip
            watched=self.watched,
            note=note,
        )

    async def class_view(self, caller: Caller) -> LearnClass:
        """Every learner kept, the one seen most recently first: for the operator alone, whose
        own browser (the visitor of the cookie that came with the token) is no learner of the
        class, even for what it did before it held the token."""
        if not caller.operator:
            why = "" if self.watched else " (this server has none: its host set no token)"
            raise NotOperator(
                "class: only this server's operator, with their token (Authorization: Bearer), "
                f"sees the class{why}; a learner's own progress is at GET /api/learn/progress"
            )
        now = self.clock()
        note = None
        try:
            learners = await self._off_loop(lambda: self.store.learners(now))
        except ProgressUnavailable as exc:
            learners, note = [], f"The learners' progress cannot be read now: {exc}."
        return LearnClass(
            learners=[class_row(x, now) for x in learners if x.visitor != caller.visitor],
            steps=len(STEPS),
            now=now,
            poll_s=POLL_S,
            stuck_tries=STUCK_TRIES,
            stuck_s=STUCK_S,
            max_learners=self.store.max_learners,
            keep_days=self.store.keep_days,
            note=note,
        )
