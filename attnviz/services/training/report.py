"""What goes to clients: a run's state (``GET /api/train/{id}``), the summaries of every run
kept, the event stream, and the pieces they are made of (loss columns, 8-bit thumbnails)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import TYPE_CHECKING

import torch

from attnviz.capture.thumbs import quantize
from attnviz.schemas.train import (
    Thumbs,
    TrainArchitecture,
    TrainAsk,
    TrainClaim,
    TrainHistory,
    TrainOptimiser,
    TrainProbe,
    TrainRun,
    TrainRuns,
    TrainRunSummary,
    TrainRunVariantSummary,
    TrainVariant,
)
from attnviz.services.events import follow
from attnviz.services.ownership import NOBODY, Caller
from attnviz.services.training.runs import LiveRun
from attnviz.training.claims import Outcome
from attnviz.training.tasks import Reverse, Task
from attnviz.training.trainer import Architecture, Optimiser, Run, Step, checkpoint_steps

if TYPE_CHECKING:
    from attnviz.training.ablations import Preset


def shorter_claims(preset: Preset, runs: Sequence[Run]) -> list[TrainClaim]:
    """A preset's claims on its run made shorter than the preset's own steps (a server capped
    below them), each measured where the run has the steps it reads; one it has not (a
    mean over steps 281 to 300 of a 40-step run) is not measured, and does not hold (the run's
    ``preset_steps`` says why: the card and the step's check say it once)."""
    out: list[TrainClaim] = []
    for claim in preset.claims:
        try:
            value = claim.measure(preset.task, runs)
        except ValueError as exc:  # the measure's steps are past the run's end
            out.append(
                TrainClaim(
                    claim=str(claim),
                    value=None,
                    holds=False,
                    says=f"Not measured ({claim.text}): {exc}.",
                    checked=claim.checked,
                )
            )
            continue
        out += claims([Outcome(claim, value, claim.holds_for(value))])
    return out


def preset_steps(preset: str | None) -> int | None:
    """The steps of the preset ``preset`` (its id), None for none or one no longer offered."""
    from attnviz.training.ablations import PRESETS

    found = PRESETS.get(preset) if preset is not None else None
    return found.opt.steps if found is not None else None


def claims(outcomes: Iterable[Outcome]) -> list[TrainClaim]:
    """Measured claims (a preset's on a run, a comparison's) as clients get them."""
    return [
        TrainClaim(
            claim=str(o.claim),
            value=round(o.value, 4),
            holds=o.holds,
            says=o.claim.sentence(o.value),
            checked=o.claim.checked,
        )
        for o in outcomes
    ]


def arch_info(a: Architecture) -> TrainArchitecture:
    return TrainArchitecture(**a.__dict__)


def opt_info(o: Optimiser) -> TrainOptimiser:
    return TrainOptimiser(**o.__dict__)


def thumbs(pattern: torch.Tensor) -> Thumbs:
    """(L, nh, T, T) weights -> 8-bit values, one scale per head (its peak), as a trace's
    compact thumbnails: weight ~ values * scale / 255."""
    values, scale = quantize(pattern)  # (L, nh, T, T), (L, nh)
    return Thumbs(
        shape=list(values.shape),
        values=base64.b64encode(values.numpy().tobytes()).decode("ascii"),
        scale=[[round(float(s), 6) for s in row] for row in scale],
    )


def columns(steps: list[Step]) -> dict:
    """Steps as the wire's columns (a ``steps`` event, a variant's history)."""
    return {
        "step": [s.step for s in steps],
        "loss": [round(s.loss, 6) for s in steps],
        "grad_norms": [[round(g, 6) for g in s.grad_norms] for s in steps],
        "seconds": [round(s.seconds, 4) for s in steps],
    }


def ask(task: Task) -> TrainAsk | None:
    """What an encoder-decoder's model can be asked: the letters, and how many."""
    if not isinstance(task, Reverse):
        return None
    return TrainAsk(alphabet="".join(task.vocab.chars[1:]), max_len=task.max_len,
                    min_len=task.min_len)  # fmt: skip


def writes(task: Task) -> list[str] | None:
    """What each of an encoder-decoder probe's decoder tokens is trained to write."""
    if not isinstance(task, Reverse):
        return None
    p = task.probe()
    return list(task.vocab.decode(p.ids[1:] + [0]))


def run_state(run: LiveRun, caller: Caller = NOBODY) -> TrainRun:
    """The whole run as it stands, with ``seq``: the number of events it already holds, and
    what ``caller`` may do with it."""
    plan = run.plan
    probe = plan.task.probe()
    with run.lock:
        variants = [
            TrainVariant(
                label=v.label,
                arch=arch_info(v.arch),
                params=v.params,
                state=v.state,  # type: ignore[arg-type]
                model=v.model,
                model_step=v.weights["step"] if v.weights and run.state == "interrupted" else None,
                history=TrainHistory(**columns(v.history)),
                checkpoints=list(v.checkpoints),
                induction=v.induction,
                alignment=v.alignment,
            )
            for v in run.variants
        ]
        seq = run.seq
        state, reason, claims = run.state, run.reason, run.claims
        place, wait_s = run.place, run.wait_s
        told = run.access.told(caller, shared=True)
        title, named = run.title, run.named
    return TrainRun(
        id=run.id,
        **told,
        can_rename=told["can_cancel"],  # its owner or the operator, as for cancel
        title=title,
        named=named,
        created=run.created,
        state=state,  # type: ignore[arg-type]
        reason=reason,
        place=place,
        wait_s=wait_s,
        task=run.task_name,  # type: ignore[arg-type]
        about=plan.task.about,
        preset=plan.preset,
        compare=plan.compare,
        opt=opt_info(plan.opt),
        steps=plan.opt.steps,
        checkpoint_steps=checkpoint_steps(plan.opt.steps, run.checkpoints),
        probe=TrainProbe(
            tokens=probe.labels,
            text=plan.task.vocab.decode(probe.ids),
            look=probe.look,
            query=probe.query,
            prompt=plan.prompt,
            verb=plan.verb,
            source=probe.source_labels,
            writes=writes(plan.task),
        ),  # fmt: skip
        baseline=run.baseline,
        claims=claims,
        preset_steps=preset_steps(plan.preset),
        variants=variants,
        ask=ask(plan.task),
        seq=seq,
    )


def summaries(runs: Iterable[LiveRun], caller: Caller = NOBODY) -> TrainRuns:
    """``runs`` in brief, newest first, with what ``caller`` may do with each."""
    out = []
    for run in reversed(list(runs)):
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
            state, reason, place = run.state, run.reason, run.place
            told = run.access.told(caller, shared=True)
            title, named = run.title, run.named
        out.append(
            TrainRunSummary(
                id=run.id,
                **told,
                can_rename=told["can_cancel"],  # its owner or the operator, as for cancel
                title=title,
                named=named,
                created=run.created,
                state=state,  # type: ignore[arg-type]
                reason=reason,
                place=place,
                task=run.task_name,  # type: ignore[arg-type]
                preset=run.plan.preset,
                compare=run.plan.compare,
                steps=run.plan.opt.steps,
                variants=variants,
            )
        )
    return TrainRuns(runs=out)


async def stream(
    run: LiveRun, after: int | None, caller: Caller = NOBODY
) -> AsyncIterator[tuple[int, str, str]]:
    """(seq, event, JSON data): the run's state first (as ``caller`` reads it; unless resuming
    ``after`` an event already seen: ``events.follow``), then each event as it comes, until the
    run's end."""

    def state() -> tuple[int, str]:
        now = run_state(run, caller)
        return now.seq, now.model_dump_json()

    async for item in follow(run, after, state):
        yield item
