"""The checks of the train steps' tasks: each reads the learner's run (its state, its scores,
its preset's claims) or step 1's recurrent comparison, and says what is true now and why.

The scores are those a finished run reports (``attnviz.training.measures``): the cross-attention
alignment of an encoder-decoder, each head's induction score; the previous-token score is measured
here on the run's model, by the same function the ablation presets use.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from attnviz.learn.path import Result
from attnviz.learn.reading import TrainReading
from attnviz.schemas.recurrent import RecurrentRun
from attnviz.schemas.train import TrainClaim
from attnviz.training import measures
from attnviz.training.tasks import Induction

ALIGNED = 0.5  # step 11: a cross-attention head's weight on one (anti-)diagonal
PREVIOUS = 0.3  # step 12: a head's mean weight on the previous token
INDUCTIVE = 0.4  # step 12: a head's induction score

TASKS = {"reverse", "copy"}  # step 11's tasks: an encoder-decoder


def _best(scores: torch.Tensor) -> tuple[int, int, float]:
    layer, head = divmod(int(torch.argmax(scores)), scores.shape[1])
    return layer, head, float(scores[layer, head])


def _head(layer: int, head: int) -> str:
    return f"layer {layer + 1}, head {head + 1}"


def _unfinished(r: TrainReading, what: str) -> Result | None:
    """A not-done answer while the variant in view has no trained model yet."""
    if r.variant.result is not None:
        return None
    if r.state == "running":
        return Result(False, f"Still training ({r.progress()}): {what} once it has finished.")
    if r.state == "queued":
        return Result(False, f"Waiting for a training slot: {what} once it has trained.")
    return Result(
        False,
        f"This run {r.state} before its model was trained ({r.run.reason or 'no reason given'}): "
        "start it again.",
    )


# -- step 11 --------------------------------------------------------------------------------------


def cross_aligned(r: TrainReading) -> Result:
    if r.task not in TASKS:
        return Result(
            False,
            f"This run trains {r.task}, with no decoder and so no cross-attention: choose the "
            "task Reverse (encoder-decoder) and press Train.",
        )
    if (wait := _unfinished(r, "its cross-attention is measured")) is not None:
        return wait
    scores = torch.tensor(r.variant.alignment or [[0.0]])
    layer, head, best = _best(scores)
    walk = "a diagonal" if r.task == "copy" else "an anti-diagonal"
    shown = float(scores[r.view.layer, r.view.head])
    view = (
        ""
        if (layer, head) == (r.view.layer, r.view.head)
        else f" (the head in view, {_head(r.view.layer, r.view.head)}, scores {shown:.2f})"
    )
    if best >= ALIGNED:
        return Result(
            True,
            f"Cross-attention aligns: {_head(layer, head)} puts {best:.2f} of its weight on "
            f"{walk} of the source{view}, on 64 fresh strings. Writing each letter, the "
            "decoder looks up the source letter it needs next, walking the source "
            f"{'forward' if r.task == 'copy' else 'backward'}. Its own self-attention is "
            "causal: each letter it writes sees only the letters before it.",
        )
    return Result(
        False,
        f"The best cross-attention head, {_head(layer, head)}, puts {best:.2f} of its weight "
        f"on {walk}{view}; {ALIGNED} would be aligned. Train longer (the task's default is 600 "
        "steps), or with RoPE positions.",
    )


# -- step 12 --------------------------------------------------------------------------------------


def _induction_run(r: TrainReading) -> Result | None:
    if r.task != "induction":
        return Result(
            False,
            f"This run trains {r.task}: choose the task Induction and press Train (two layers, "
            "the default, are what the circuit needs).",
        )
    return _unfinished(r, "its heads are measured")


def _pick(
    r: TrainReading, scores: torch.Tensor, bound: float, what: str, does: str, hint: str
) -> Result:
    layer, head, best = _best(scores)
    got = float(scores[r.view.layer, r.view.head])
    if got >= bound:
        return Result(True, f"{r.where()} {does} {got:.2f}. {hint}")
    if best >= bound:
        return Result(
            False,
            f"{r.where()} scores {got:.2f} as {what} ({bound} is the mark). Look at the other "
            f"heads: one in layer {layer + 1} scores {best:.2f}.",
        )
    return Result(
        False,
        f"No head does it yet: the best, {_head(layer, head)}, scores {best:.2f} ({bound} is "
        "the mark). Train longer, or with RoPE positions and two layers.",
    )


def previous_token_head(r: TrainReading) -> Result:
    if (wait := _induction_run(r)) is not None:
        return wait
    result = r.variant.result
    task = r.run.plan.task
    assert result is not None and isinstance(task, Induction)
    n = min(measures.INDUCTION_LETTERS, task.max_len)
    scores = measures.previous_token_by_head(result.model, n, task.vocab.size).double()
    return _pick(
        r,
        scores,
        PREVIOUS,
        "a previous-token head",
        f"attends to the previous token: on fresh strings of {n} letters, repeated, each token "
        "puts on the one before it a mean weight of",
        "It copies each letter's predecessor into it, so a later head can look for \"the "
        'letter that came after this one".',
    )


def induction_head(r: TrainReading) -> Result:
    if (wait := _induction_run(r)) is not None:
        return wait
    scores = torch.tensor(r.variant.induction or [[0.0]], dtype=torch.float64)
    return _pick(
        r,
        scores,
        INDUCTIVE,
        "an induction head",
        "is an induction head: from each letter of the repeat it attends to the letter after "
        "that letter's earlier occurrence, with a mean weight of",
        "It reads what the previous-token head wrote there, finds its match and copies the "
        "letter that followed: that predicts the repeat.",
    )


# -- steps 13 to 16 -------------------------------------------------------------------------------


def _claims(claims: list[TrainClaim]) -> str:
    return "; ".join(
        f"{c.claim}: measured {c.value:.3f} ({'holds' if c.holds else 'does not hold'})"
        for c in claims
    )


def claims_hold(preset: str, title: str) -> Callable[[TrainReading], Result]:
    """The check of an ablation step: the learner's run of ``preset`` has finished and every
    claim of the preset holds on it."""

    def check(r: TrainReading) -> Result:
        if r.preset != preset:
            now = f"the preset {r.preset}" if r.preset else f"one model of {r.task}"
            return Result(
                False,
                f"This run trains {now}. This step's question is the preset {title!r}: choose "
                "it under Ablation and press Train.",
            )
        if r.state == "running":
            return Result(
                False,
                f"Still training ({r.progress()}): the claims are measured on the trained "
                "models once every variant has finished.",
            )
        if r.state == "queued":
            return Result(
                False,
                "Waiting for a training slot: the claims are measured on the trained models "
                "once it has trained.",
            )
        claims = r.claims
        if r.state != "done" or claims is None:
            return Result(
                False,
                f"This run {r.state} before the end ({r.run.reason or 'no reason given'}): the "
                "claims are measured only on a finished run. Train it again.",
            )
        if all(c.holds for c in claims):
            return Result(True, f"Every claim holds on your run: {_claims(claims)}.")
        failed = [c for c in claims if not c.holds]
        return Result(
            False,
            f"{len(failed)} of {len(claims)} claims do not hold on this run: {_claims(failed)}. "
            "They held on seeds 0 to 4 when the preset was made; a run on other hardware can "
            "differ in the last digits, and at the edge of training that can change the "
            "outcome. Train it again.",
        )

    return check


# -- step 1 ---------------------------------------------------------------------------------------


def recurrent_claims(r: RecurrentRun) -> Result:
    if r.state == "running":
        now = f" (now {r.doing}, {r.progress:.0%} done)" if r.doing else ""
        return Result(
            False,
            f"The comparison is still running{now}: its claims are measured once the "
            "transformer, the LSTM and the GRU have all been trained and timed.",
        )
    claims = r.claims
    if r.state != "done" or claims is None:
        reason = r.reason or "no reason given"
        return Result(False, f"The comparison {r.state} before the end ({reason}): run it again.")
    if all(c.holds for c in claims):
        # One line: the claims, each with its number, and what the run showed are the card's,
        # listed there once (a wall of them here said it all twice).
        every = "The claim holds" if len(claims) == 1 else f"All {len(claims)} claims hold"
        return Result(
            True,
            f"{every} on your run: the card Why not an RNN? below lists each with its number.",
        )
    failed = [c for c in claims if not c.holds]
    return Result(
        False,
        f"{len(failed)} of {len(claims)} claims do not hold on this run: {_claims(failed)}. "
        "Run it again, or with another seed.",
    )
