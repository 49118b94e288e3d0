"""The Learn mode's answers: every step with its starting state and the engine's numbers beside
the article's (computed once per device), and a step's check of the learner's trace, run or
recurrent comparison, on the compute thread like any trace."""

from __future__ import annotations

import hashlib
import json
import threading

import torch

from attnviz.capture import TraceTensors
from attnviz.learn.path import TOY_PARTS, LearnRefused, Result, Step, Task, ToyStart
from attnviz.learn.reading import ToyReading, TrainReading, steps_expected
from attnviz.learn.steps import STEPS
from attnviz.presets import presets
from attnviz.schemas.common import ToyConfig
from attnviz.schemas.learn import (
    ArticleTable,
    LearnCheck,
    LearnCheckRequest,
    LearnStep,
    LearnSteps,
    LearnTask,
    LearnTaskResult,
    LearnToyState,
    LearnToyView,
    LearnTrain,
    LearnView,
)
from attnviz.schemas.trace import ToyTraceRequest
from attnviz.services import compute
from attnviz.services.ownership import Caller
from attnviz.services.recurrent import RecurrentService
from attnviz.services.toy_trace import run_toy_trace
from attnviz.services.trace_service import TraceService
from attnviz.services.training import RunGone, TrainService


def toy_request(start: ToyStart) -> ToyTraceRequest:
    """A toy step's starting table and config, as POST /api/trace takes it."""
    preset = next(p for p in presets() if p.id == start.preset)
    config = ToyConfig(**{**preset.config.model_dump(), **start.config})
    return ToyTraceRequest(
        tokens=list(preset.tokens),
        axes=list(preset.axes),
        embeddings=[list(r) for r in preset.embeddings],
        config=config,
    )


def toy_state(start: ToyStart) -> LearnToyState:
    """The whole toy state, the view as the page opens a table (core/state.js defaultView) with
    the step's layer and head."""
    req = toy_request(start)
    n, layers = len(req.tokens), req.config.layers
    view = LearnToyView(layer=start.layer, head=start.head, vlayer=layers, a=min(1, n - 1),
                        b=n - 1, trails=True)  # fmt: skip
    return LearnToyState(
        preset=start.preset,
        tokens=req.tokens,
        axes=req.axis_names(),
        embeddings=req.embeddings,
        config=req.config,
        view=view,
    )


def _step(n: int, step: Step, device: torch.device) -> LearnStep:
    toy = toy_state(step.toy) if step.toy is not None else None
    article = []
    if step.article:
        assert step.toy is not None, f"{step.id}: article tables need a toy state"
        tensors = run_toy_trace(toy_request(step.toy), device).tensors
        article = [t.computed(tensors) for t in step.article]
    return LearnStep(
        n=n,
        id=step.id,
        title=step.title,
        lab=step.lab,
        text=list(step.text),
        formula=step.formula,
        formula_text=step.formula_text,
        toy=toy,
        train=LearnTrain(settings=dict(step.train)) if step.train is not None else None,
        continues=step.continues,
        focus=list(step.focus),
        only=list(step.only),
        tasks=[
            LearnTask(
                id=t.id,
                prompt=t.prompt,
                hint=t.hint,
                finding=t.finding,
                action=t.action,
                reads=[TOY_PARTS[p] for p in _reads(t)] if step.toy else [],
            )  # fmt: skip
            for t in step.tasks
        ],
        article=article,
    )


_built: dict[str, LearnSteps] = {}
_lock = threading.Lock()


def learn_steps(device: torch.device) -> LearnSteps:
    """Every step, its engine numbers computed on ``device`` (on the compute thread) once."""
    key = str(device)
    with _lock:
        if key in _built:
            return _built[key]
    built = compute.run(
        lambda: LearnSteps(steps=[_step(i, s, device) for i, s in enumerate(STEPS, start=1)])
    )
    with _lock:
        return _built.setdefault(key, built)


def _answer(
    step: Step,
    results: list[Result],
    article: list[ArticleTable] | None = None,
    tried: list[bool] | None = None,
) -> LearnCheck:
    tried = tried or [True] * len(results)
    return LearnCheck(
        step=step.id,
        tasks=[
            LearnTaskResult(
                id=t.id, done=r.done, says=r.says, tried=y, cell=list(r.cell) if r.cell else None
            )  # fmt: skip
            for t, r, y in zip(step.tasks, results, tried, strict=True)
        ],
        article=article,
    )


def toy_parts(req: ToyTraceRequest, view: LearnView | None) -> dict[str, object]:
    """A toy lab's parts (``path.TOY_PARTS``) as the engine and the check read them: each is
    compared with the step's start (a task tried) and digested (a try at it)."""
    data = _canonical(req.model_dump())
    config = dict(data["config"])
    weights = config.pop("weights", None) or {}
    v = view or LearnView()
    return {
        "table": [data["tokens"], data["axes"], data["embeddings"]],
        "settings": config,
        **{f"W_{m.upper()}": weights.get(m) for m in "qkvo"},
        "layer": v.layer,
        "head": v.head,
    }


def _start_parts(step: Step) -> dict[str, object]:
    assert step.toy is not None
    start = toy_state(step.toy).view
    return toy_parts(toy_request(step.toy), LearnView(layer=start.layer, head=start.head))


def _reads(task: Task) -> tuple[str, ...]:
    return task.reads or tuple(TOY_PARTS)


def tried_tasks(step: Step, body: LearnCheckRequest) -> list[bool]:
    """Whether the learner has tried each task of the step: changed a part of the lab the task
    reads (``Task.reads``) from the step's start. A train step's tasks are tried by any check
    (a run the learner trained or chose)."""
    if body.toy is None or step.toy is None:
        return [True] * len(step.tasks)
    now, start = toy_parts(body.toy, body.view), _start_parts(step)
    return [any(now[p] != start[p] for p in _reads(t)) for t in step.tasks]


def task_states(step: Step, body: LearnCheckRequest) -> list[str]:
    """A digest of what each task reads in the state checked (``fingerprint`` for a train
    step's): a try at a task is a state whose digest differs from its latest, so a change to a
    part it does not read is no try at it."""
    if body.toy is None or step.toy is None:
        return [fingerprint(body)] * len(step.tasks)
    now = toy_parts(body.toy, body.view)
    out = []
    for t in step.tasks:
        text = json.dumps({p: now[p] for p in _reads(t)}, sort_keys=True, separators=(",", ":"))
        out.append(hashlib.sha256(text.encode()).hexdigest()[:16])
    return out


def not_tried(task: Task) -> Result:
    """A task's answer before the learner has tried it: that it is not started, and what a try
    at it changes, never how to solve it."""
    names = [TOY_PARTS[p] for p in _reads(task)]
    parts = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return Result(False, f"Not tried yet: this task is answered once you change {parts}.")


def live_article(
    step: Step, req: ToyTraceRequest, tensors: TraceTensors
) -> list[ArticleTable] | None:
    """The step's article tables, their engine numbers read from the learner's trace: as the
    learner edits the table, they follow it. None when the table is not the article's case any
    more (other tokens or axes, or fewer layers than a table reads): its rows name the
    article's tokens, which are then not the table's."""
    if not step.article:
        return []
    start = toy_request(step.toy) if step.toy is not None else None
    if start is None or req.tokens != start.tokens or req.axis_names() != start.axis_names():
        return None
    try:
        return [t.computed(tensors) for t in step.article]
    except (IndexError, ValueError):  # a layer the learner's config no longer has
        return None


def changed(step: Step, body: LearnCheckRequest) -> bool:
    """Whether a check is of a lab the learner changed (their try, in the progress kept): a
    run, a comparison, or a toy table or view other than the step's start (which the page
    checks as the step opens, before the learner has done anything)."""
    if body.toy is None or step.toy is None:
        return True
    if _canonical(body.toy.model_dump()) != _canonical(toy_request(step.toy).model_dump()):
        return True
    v, start = body.view or LearnView(), toy_state(step.toy).view
    return (v.layer, v.head, v.vlayer, v.a, v.b) != (
        start.layer, start.head, start.vlayer, start.a, start.b
    )  # fmt: skip


def own(
    step: Step,
    body: LearnCheckRequest,
    caller: Caller,
    *,
    training: TrainService,
    recurrent: RecurrentService | None,
) -> bool:
    """Whether a check is of the caller's own work, which their progress credits (tasks done
    and tried): a lab they changed (``changed``), not the state a Learn link carried, unchanged
    (``from_link``: the page says so, and a flag can only withhold credit), and not a run or a
    comparison another visitor started (whose owner the server knows). Anything else is seen."""
    if body.from_link or not changed(step, body):
        return False
    try:
        if body.run is not None:
            return training.get(body.run).access.yours(caller)
        if body.recurrent is not None and recurrent is not None:
            return recurrent.find(body.recurrent).access.yours(caller)
    except RunGone:
        return False
    return True


def anothers(
    body: LearnCheckRequest,
    caller: Caller,
    *,
    training: TrainService,
    recurrent: RecurrentService | None,
) -> bool:
    """Whether a check is of someone else's work: the state a Learn link carried, unchanged
    (``from_link``), or a run or a comparison another visitor started. The class view says so of
    a learner who has tried nothing of their own (a teacher's browser without the token)."""
    return body.from_link or _theirs(body, caller, training=training, recurrent=recurrent)


def _theirs(
    body: LearnCheckRequest,
    caller: Caller,
    *,
    training: TrainService,
    recurrent: RecurrentService | None,
) -> bool:
    """Whether a check is of a run or a comparison another visitor started."""
    try:
        if body.run is not None:
            return not training.get(body.run).access.yours(caller)
        if body.recurrent is not None and recurrent is not None:
            return not recurrent.find(body.recurrent).access.yours(caller)
    except RunGone:
        return False
    return False


# What a check of someone else's work says of it (``LearnCheck.seen``): whose it is, that its
# answers count for no one, and what makes the learner's own.
SEEN_LAB = (
    "This is the shared link's lab, as it came: its answers count for no one. Change it "
    "yourself, or start this step again, to count it as yours."
)
SEEN_RUN = (
    "This run is someone else's, opened from a shared link: its answers count for no one. "
    "Train a run of your own (Start this step again, then Start training) to count it as yours."
)
SEEN_RUN_BEFORE = (  # a step that reads an earlier step's run (13 reads 12's)
    "This run is someone else's, opened from a shared link: its answers count for no one. "
    "Train a run of your own in step {n}, which this step reads, to count it as yours."
)
SEEN_COMPARISON = (
    "This comparison is someone else's, opened from a shared link: its answers count for no "
    "one. Run your own (Run comparison) to count it as yours."
)


def seen(
    step: Step,
    body: LearnCheckRequest,
    caller: Caller,
    *,
    own: bool,
    training: TrainService,
    recurrent: RecurrentService | None,
) -> str | None:
    """Why a check of someone else's work counts for no one, in words (``LearnCheck.seen``):
    another visitor's run or comparison, or the state a Learn link carried, unchanged
    (``from_link``: the caller's own run with the head a link carried is such a lab, which
    choosing the head makes theirs). None for the caller's own work, and for the step's
    untouched start (its tasks are not tried: nothing on it is done)."""
    if own:
        return None
    if _theirs(body, caller, training=training, recurrent=recurrent):
        if body.recurrent is not None:
            return SEEN_COMPARISON
        before = next((s for s in STEPS if s.id == step.continues), None)
        return SEEN_RUN_BEFORE.format(n=STEPS.index(before) + 1) if before else SEEN_RUN
    return SEEN_LAB if body.from_link else None


def fingerprint(body: LearnCheckRequest) -> str:
    """A short digest of the state a check reads (the toy table as the engine reads it and its
    view; the run or the comparison and its view): a try is a state other than the latest."""
    data = body.model_dump(exclude={"from_link", "found"})  # found: what was, not the lab
    if data.get("toy") is not None:
        data["toy"] = _canonical(data["toy"])
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _canonical(toy: dict) -> dict:
    """A toy request as the engine reads it: custom weights without ``o`` have the identity
    there (what the page sends in full), so the two spellings of one start are one."""
    weights = (toy.get("config") or {}).get("weights")
    if weights and weights.get("o") is None:
        d = len(weights["q"])
        weights["o"] = [[float(i == j) for j in range(d)] for i in range(d)]
    return toy


def _expects(n: int, step: Step) -> tuple[str, str]:
    """The body field a step's check needs, and what to send in it."""
    if step.lab == "toy":
        return "toy", f"step {n} ({step.id}) is a toy step: send the table as toy, with its view"
    if step.id == "rnn":
        return "recurrent", f"step {n} ({step.id}) checks the recurrent comparison: send its id"
    return "run", f"step {n} ({step.id}) is a train step: send the run's id as run, with its view"


async def check(
    step: Step,
    body: LearnCheckRequest,
    *,
    traces: TraceService,
    training: TrainService,
    recurrent: RecurrentService | None,
    client: str,
    yours: bool = True,
) -> LearnCheck:
    """The step's tasks checked on what ``body`` sends; ``LearnRefused`` when it sends the wrong
    lab's body or a view past the model; ``RunGone`` for a run (or comparison) not kept.
    ``yours``: the run or comparison is the caller's own work (``own``): the answers then say
    "your run", else "this run"."""
    n = STEPS.index(step) + 1
    field, need = _expects(n, step)
    if getattr(body, field) is None:
        raise LearnRefused(field, need)
    view = body.view or LearnView()
    if body.toy is not None:
        req = body.toy
        cheap = traces.cache.holds(traces.key(req))
        results, article = await traces.admission.run(
            client, lambda: _toy(step, req, view, traces), cheap=cheap
        )
        tried = tried_tasks(step, body)
        results = [r if y else not_tried(t)
                   for t, r, y in zip(step.tasks, results, tried, strict=True)]  # fmt: skip
        return _answer(step, results, article, tried)
    if body.recurrent is not None:
        if recurrent is None:
            raise LearnRefused("recurrent", "this server runs no recurrent comparisons")
        try:
            comparison = recurrent.get(body.recurrent)
        except RunGone as exc:  # its message names the path's run_id: here the body's field
            raise RunGone(f"recurrent: {str(exc).split(': ', 1)[-1]}") from None
        return _answer(step, [t.check(comparison, yours=yours) for t in step.tasks])
    assert body.run is not None
    ids = [t.id for t in step.tasks]
    for i, f in enumerate(body.found):
        if f.task not in ids:
            raise LearnRefused(
                f"found.{i}.task", f"{f.task!r} is not a task of step {n} ({', '.join(ids)})"
            )
    reading = TrainReading(training.get(body.run), view, yours=yours,
                           expects=steps_expected(step.train),
                           cap=training.settings.train_max_steps, found=body.found)  # fmt: skip
    # The previous-token score (and step 13's attribution) runs the model.
    measures = step.id in ("induction", "induction-circuit")
    results = await traces.admission.run(
        client, lambda: [t.check(reading) for t in step.tasks], cheap=not measures
    )
    return _answer(step, results)


def _toy(
    step: Step, req: ToyTraceRequest, view: LearnView, traces: TraceService
) -> tuple[list[Result], list[ArticleTable] | None]:
    """On the compute thread: the learner's trace (from the cache when the page has just drawn
    it) read by every task of the step, and the step's article tables read from it."""
    trace, cached = traces.computed(req)
    try:
        reading = ToyReading(req, view, trace.tensors, traces.device)
        return [t.check(reading) for t in step.tasks], live_article(step, req, trace.tensors)
    finally:
        if not cached:  # keep only what the cache counts: q, k, v and the states
            trace.tensors.release(derive=False)
