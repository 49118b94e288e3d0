"""The checks of the train steps' tasks: each reads the learner's run (its state, its scores,
its preset's claims) or step 1's recurrent comparison, and says what is true now and why.

The scores are those a finished run reports (``attnviz.training.measures``): the cross-attention
alignment of an encoder-decoder, each head's induction score; the previous-token score is measured
here on the run's model, by the same function the ablation presets use. Step 13 reads the QK
attribution (``attnviz.capture.attribution``) of the run's model on the heads card's probe, at
the cell the learner opened.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from attnviz.capture.attribution import qk_attribution
from attnviz.capture.decompose import Component, clean_run
from attnviz.learn.path import Result
from attnviz.learn.reading import TrainReading
from attnviz.numbers import (
    readable_against,
    readable_prose,
    readable_share,
    readable_weight,
    signed,
)
from attnviz.schemas.recurrent import RecurrentRun
from attnviz.schemas.train import TrainClaim
from attnviz.services.line import ordinal
from attnviz.training import marks, measures
from attnviz.training.ablations import PRESETS
from attnviz.training.tasks import Induction

ALIGNED = marks.ALIGNED  # step 11: a cross-attention head's weight on one (anti-)diagonal
PREVIOUS = marks.PREVIOUS  # step 12: a head's mean weight on the previous token
INDUCTIVE = marks.INDUCTIVE  # step 12: a head's induction score
INDUCTION_FROM = marks.INDUCTION_FROM  # steps 12, 13: the first layer (0-based) of one
OWN = 0.5  # step 13: a head's mean weight on the token itself, to say it carries that token

TASKS = {"reverse", "copy"}  # step 11's tasks: an encoder-decoder
LONGER = "Train longer (the task's default is 600 steps), or with RoPE positions."  # step 11


def _best(scores: torch.Tensor, first: int = 0) -> tuple[int, int, float]:
    """The best head of layers ``first`` (0-based) on: its layer, head and score."""
    layer, head = divmod(int(torch.argmax(scores[first:])), scores.shape[1])
    return layer + first, head, float(scores[layer + first, head])


def _too_early(first: int) -> str:
    """Why a head of a layer before ``first`` (0-based) is no induction head, whatever it
    scores (``marks.INDUCTION_FROM``)."""
    layers = "layer 1" if first == 1 else f"layers 1 to {first}"
    return (
        f"a head of {layers} is none, whatever it scores: an induction head matches the letter "
        "before each position, which only a head of an earlier layer can have written there"
    )


def _head(layer: int, head: int) -> str:
    return f"layer {layer + 1}, head {head + 1}"


def _unfinished(r: TrainReading, what: str) -> Result | None:
    """A not-done answer while the variant in view has no trained model yet."""
    if r.variant.result is not None:
        return None
    if r.state == "running":
        return Result(False, f"Still training: {r.progress()}; {what} once it has finished.")
    if r.state == "queued":
        return Result(False, f"Waiting for a training slot: {what} once it has trained.")
    return Result(
        False,
        f"This run {r.state} before its model was trained ({r.run.reason or 'no reason given'}): "
        "start it again.",
    )


def _score(x: float, mark: float) -> str:
    """A head's score (a weight) said beside its mark: never the mark when it is not it."""
    return readable_against(x, mark, readable_weight)


# -- step 11 --------------------------------------------------------------------------------------


def cross_aligned(r: TrainReading) -> Result:
    if r.task not in TASKS:
        return Result(
            False,
            f"This run trains {r.task}, with no decoder and so no cross-attention: choose the "
            "task Reverse (encoder-decoder) and press Start training.",
        )
    if (wait := _unfinished(r, "its cross-attention is measured")) is not None:
        return wait
    scores = torch.tensor(r.variant.alignment or [[0.0]])
    layer, head, best = _best(scores)
    walk = "a diagonal" if r.task == "copy" else "an anti-diagonal"
    shown = float(scores[r.view.layer, r.view.head])
    if r.view.attention != "cross":
        # The hint's "choose cross-attention": the heads card shows another kind (or none said).
        kind = f"its {r.view.attention} attention" if r.view.attention else "no attention kind"
        return Result(
            False,
            f"The card Attention as it trains shows {kind}: choose cross-attention there, the "
            "decoder's look at the source, then the head whose pattern walks it.",
        )
    if shown >= ALIGNED:
        return Result(
            True,
            f"Cross-attention aligns: {r.where()} puts {readable_share(shown)} of its weight on "
            f"{walk} of the source, on {measures.MEASURE_BATCH} fresh strings. Writing each "
            "letter, the decoder looks up the source letter it needs next, walking the source "
            f"{'forward' if r.task == 'copy' else 'backward'}. Its own self-attention is causal: "
            "each letter it writes sees only the letters before it.",
        )
    if best >= ALIGNED:
        return Result(
            False,
            f"{r.where()} puts {readable_against(shown, ALIGNED, readable_share)} of its "
            f"cross-attention weight on {walk} ({ALIGNED} would be aligned); {_head(layer, head)} "
            f"puts {readable_weight(best)}: choose it in the card Attention as it trains.",
        )
    return Result(
        False,
        f"The best cross-attention head, {_head(layer, head)}, puts "
        f"{readable_against(best, ALIGNED, readable_share)} of its weight on {walk} (the head in "
        f"view, {r.where()}, {readable_weight(shown)}); {ALIGNED} would be aligned. "
        f"{r.shorter() or LONGER}",
    )


# -- step 12 --------------------------------------------------------------------------------------


def _induction_run(r: TrainReading) -> Result | None:
    if r.task != "induction":
        return Result(
            False,
            f"This run trains {r.task}: choose the task Induction and press Start training (two "
            "layers, the default, are what the circuit needs).",
        )
    return _unfinished(r, "its heads are measured")


# What a step-12 task measures: its id, the heads' scores, the mark, the head's kind in words,
# and the first layer (0-based) a head of that kind can be in.
Measured = tuple[str, torch.Tensor, float, str, int]


def _named(r: TrainReading, mine: Measured) -> tuple[int, int, float, bool]:
    """The head a task names as its own: the one it was found done with earlier on this variant
    (``r.found``, as the page keeps it), while that head still passes, else the best; and
    whether it is the found one."""
    task, scores, bound, _, first = mine
    at = r.found_head(task)
    if at is not None and at[0] >= first and float(scores[at]) >= bound:
        return at[0], at[1], float(scores[at]), True
    return (*_best(scores, first), False)


def _pick(
    r: TrainReading, mine: Measured, does: str, hint: str, other: Measured | None = None
) -> Result:
    """A task that finds a head of one kind (``mine``) in view; ``other``: the kind the step's
    other task finds, which the head in view may be (that task then needs it shown)."""
    _, scores, bound, what, first = mine
    if scores.shape[0] <= first:
        return Result(
            False,
            f"This model has one layer, and {_too_early(first)}: train it with two layers (the "
            "default).",
        )
    layer, head, best, found = _named(r, mine)
    got = float(scores[r.view.layer, r.view.head])
    early = r.view.layer < first  # before the kind's first layer: none, whatever it scores
    if r.view.chosen is False:
        # The view's first head, shown before the learner chose any: a finding is theirs to make.
        return Result(
            False,
            f"Choose a head in the card Attention as it trains (click its thumbnail, or focus "
            f"it and press Enter): the page then says whether it is {what}.",
        )
    if got >= bound and not early:
        return Result(True, f"{r.where()} {does} {_score(got, bound)}. {hint}")
    if other is not None and (theirs := _theirs(r, other)) is not None:
        # The head in view is the other task's: this task's head is named, never "look away",
        # and never asked for: the page may count this task found earlier, and so done. The
        # head it was found with, when the page says which, else the strongest.
        now = (
            f"this task's head{', found earlier,' if found else ''} is {_head(layer, head)}, "
            f"which scores {_score(best, bound)}."
            if best >= bound
            else f"no head does it yet: the best, {_head(layer, head)}, scores "
            f"{_score(best, bound)}. " + _longer(r)
        )
        return Result(
            False,
            f"{theirs} As {what} it scores {_score(got, bound)} ({bound} is the mark); {now}",
        )
    if got >= bound:  # a head of too early a layer
        said = f"{r.where()} scores {_score(got, bound)} as {what}, but {_too_early(first)}."
        if best >= bound:
            return Result(False, f"{said} Look in layer {layer + 1}: {_head(layer, head)} "
                          f"scores {_score(best, bound)} ({bound} is the mark).")  # fmt: skip
        return Result(False, f"{said} No head of layer {first + 1} on does it yet: the best, "
                      f"{_head(layer, head)}, scores {_score(best, bound)} ({bound} is the "
                      f"mark). {_longer(r)}")  # fmt: skip
    if best >= bound:
        return Result(
            False,
            f"{r.where()} scores {_score(got, bound)} as {what} ({bound} is the mark). Look at "
            f"the other heads: one in layer {layer + 1} scores {_score(best, bound)}.",
        )
    return Result(
        False,
        f"No head does it yet: the best, {_head(layer, head)}, scores {_score(best, bound)} "
        f"({bound} is the mark). {_longer(r)}",
    )


def _longer(r: TrainReading) -> str:
    """What to do when no head of step 12's kinds formed: a run shorter than the step expects
    says so (this server's cap may have made it so), else train longer."""
    return r.shorter() or "Train longer, or with RoPE positions and two layers."


def _theirs(r: TrainReading, other: Measured) -> str | None:
    """What the head in view is when it passes the other task's mark, else None."""
    _, scores, bound, what, first = other
    got = float(scores[r.view.layer, r.view.head])
    if got < bound or r.view.layer < first:
        return None
    return (
        f"{r.where()} is {what} ({_score(got, bound)}; {bound} is the mark), the head the "
        "step's other task asks for: keep it shown for that task."
    )


def fresh_letters(task: Induction) -> int:
    """The letters of each fresh string (``measures.MEASURE_BATCH`` of them, then the same
    again) step 12's scores are measured on: not the heads card's probe; those the run reports
    its scores on (``measures.induction_letters``)."""
    return measures.induction_letters(task)


def probe_letters(task: Induction) -> int:
    """The letters of the heads card's probe (``Induction.probe``): then the same again, but
    the last, so its induction stripe lies this many tokens less one left of the diagonal."""
    return (len(task.probe().ids) + 1) // 2


def measured_on(task: Induction) -> str:
    """What step 12's scores are measured on, in words, and the card's probe when it differs."""
    n, p = fresh_letters(task), probe_letters(task)
    said = f"on {measures.MEASURE_BATCH} fresh strings of {n} letters, repeated"
    return said if n == p else f"{said} (the card's probe has {p} letters, then the same again)"


def _previous_scores(r: TrainReading) -> Measured:
    """Each head's mean weight on the token before, measured on the run's trained model."""
    result, task = r.variant.result, r.run.plan.task
    assert result is not None and isinstance(task, Induction)
    scores = measures.previous_token_by_head(
        result.model, fresh_letters(task), task.vocab.size
    ).double()
    return "previous-token-head", scores, PREVIOUS, "a previous-token head", 0


def _induction_scores(r: TrainReading) -> Measured:
    """Each head's induction score, as the finished run reports it."""
    scores = torch.tensor(r.variant.induction or [[0.0]], dtype=torch.float64)
    return "induction-head", scores, INDUCTIVE, "an induction head", INDUCTION_FROM


def previous_token_head(r: TrainReading) -> Result:
    if (wait := _induction_run(r)) is not None:
        return wait
    task = r.run.plan.task
    assert isinstance(task, Induction)
    return _pick(
        r,
        _previous_scores(r),
        f"attends to the previous token: {measured_on(task)}, each token puts on the one before "
        "it a mean weight of",
        "It copies each letter's predecessor into it, so a later head can look for \"the "
        'letter that came after this one".',
        _induction_scores(r),
    )


def induction_head(r: TrainReading) -> Result:
    if (wait := _induction_run(r)) is not None:
        return wait
    task = r.run.plan.task
    assert isinstance(task, Induction)
    mine = _induction_scores(r)
    # The previous-token scores run the model: only when the head in view is not this task's.
    passes = (
        float(mine[1][r.view.layer, r.view.head]) >= INDUCTIVE and r.view.layer >= INDUCTION_FROM
    ) or r.view.chosen is False
    return _pick(
        r,
        mine,
        f"is an induction head: {measured_on(task)}, from each letter of the repeat it attends "
        "to the letter after that letter's earlier occurrence with a mean weight of",
        "It reads what the previous-token head wrote there, finds its match and copies the "
        "letter that followed: that predicts the repeat.",
        None if passes else _previous_scores(r),
    )


# -- step 13 --------------------------------------------------------------------------------------


def _part(c: Component) -> str:
    """A component of the residual stream in words, layers and heads from 1 as on the page."""
    at = "" if c.layer is None else f"layer {c.layer + 1}"
    return {
        "embed": "the token embedding",
        "pos": "the position embedding",
        "type": "the token type",
        "head": f"{at}, head {(c.head or 0) + 1}",
        "attn_bias": f"{at}'s attention bias",
        "mlp": f"{at}'s feed-forward",
        "bias": "the norms' biases",
    }.get(c.kind, c.name)


def _probe_weights(r: TrainReading, layer: int, head: int) -> torch.Tensor:
    """The head's own attention weights on the heads card's probe (the run's model, exact, not
    the card's rounded snapshot): (T, T)."""
    model = r.variant.result.model if r.variant.result is not None else None
    assert model is not None
    ids = torch.tensor([r.probe.ids], device=model.param_device)
    return measures.patterns(model, ids)[layer][0, head].double()


def _example(r: TrainReading, w: torch.Tensor, n: int) -> tuple[int, int]:
    """The cell the hint names and the page marks, chosen from the head's weights ``w`` on the
    probe: a letter of the repeat whose largest weight is on the letter after that letter's
    first occurrence (the probe's own query where it is one, else the one with the most weight
    there); where no letter's is, the letter with the most weight on it."""
    repeat = range(n, 2 * n - 1)
    wins = [q for q in repeat if int(w[q, : q + 1].argmax()) == q - n + 1]
    if r.probe.query in wins:
        return r.probe.query, r.probe.query - n + 1
    q = max(wins or repeat, key=lambda q: float(w[q, q - n + 1]))
    return q, q - n + 1


def _cell_hint(r: TrainReading, n: int, cell: tuple[int, int]) -> str:
    q, k = cell
    return (
        f"click its heatmap's cell from a letter of the repeat (tokens {n + 1} to {2 * n - 1}) "
        f"to the letter after that letter's first occurrence, {n - 1} tokens left of the "
        f"diagonal: for example from {_token(r, q)} to {_token(r, k)}"
    )


def _which(q: int, k: int, n: int) -> str:
    """What key ``k`` is to a query ``q`` of the repeat, in words."""
    return {
        q - n + 1: "the letter after that letter's first occurrence",
        q - n: "that letter's first occurrence itself",
        q: "the letter itself",
        q - 1: "the letter before it",
    }.get(k, "")


def _looks_elsewhere(r: TrainReading, w: torch.Tensor, q: int, n: int, ex: tuple[int, int]) -> str:
    """Why a repeat's query ``q`` is no example of induction on this head: where its largest
    weight goes instead, and the cell ``ex`` where the head does what the step says."""
    top, match = int(w[q, : q + 1].argmax()), q - n + 1
    which = _which(q, top, n)
    weight = lambda i, j: readable_weight(float(w[i, j]))  # noqa: E731
    return (
        f"From {_token(r, q)}, {r.where()} gives its largest weight, {weight(q, top)}, to "
        f"{_token(r, top)}{f', {which}' if which else ''}, not to {_token(r, match)}, the "
        f"letter after that letter's first occurrence ({weight(q, match)}): there it is not "
        "doing induction. "
        + (
            f"From {_token(r, ex[0])} it is ({weight(*ex)} on {_token(r, ex[1])}): open Why this "
            "score on that cell (marked on the heatmap)."
            if int(w[ex[0], : ex[0] + 1].argmax()) == ex[1]
            else "From no letter of the repeat does it give its largest weight to the letter after "
            "that letter's first occurrence: train longer, or choose another induction head."
        )
    )


def _token(r: TrainReading, i: int) -> str:
    return f"'{r.probe.labels[i]}' (token {i + 1})"


def induction_circuit(r: TrainReading) -> Result:
    """Done once the learner has opened Why this score on an induction head (its score at least
    INDUCTIVE) at a letter of the repeat whose largest weight on the probe (the head's own, from
    the run's model) is on the letter after that letter's first occurrence, and on that key; the
    cell it marks is chosen from the same weights. The answer says that the key wins, splits its
    score by the key side's parts, and says whether the largest is a previous-token head."""
    if (wait := _induction_run(r)) is not None:
        return wait
    result, task, v = r.variant.result, r.run.plan.task, r.view
    assert result is not None and isinstance(task, Induction)
    n = (len(r.probe.ids) + 1) // 2  # the probe: n letters, then the same again but the last
    ind = torch.tensor(r.variant.induction or [[0.0]], dtype=torch.float64)
    if ind.shape[0] <= INDUCTION_FROM:
        return Result(
            False,
            f"This model has one layer, and {_too_early(INDUCTION_FROM)}: train step 12's run "
            "with two layers (the default).",
        )
    il, ih, best = _best(ind, INDUCTION_FROM)
    got = float(ind[v.layer, v.head])
    if best < INDUCTIVE:
        return Result(
            False,
            f"No head is an induction head yet: the best, {_head(il, ih)}, scores "
            f"{_score(best, INDUCTIVE)} ({INDUCTIVE} is the mark). "
            + (r.shorter() or "Train step 12's run longer (800 steps, the default)."),
        )
    if got < INDUCTIVE or v.layer < INDUCTION_FROM:
        early = "" if got < INDUCTIVE else f", but {_too_early(INDUCTION_FROM)}. Choose"
        hint = _cell_hint(r, n, _example(r, _probe_weights(r, il, ih), n))
        return Result(
            False,
            f"{r.where()} scores {_score(got, INDUCTIVE)} as an induction head ({INDUCTIVE} is the "
            f"mark){early or ': choose'} {_head(il, ih)} ({_score(best, INDUCTIVE)}) in the card "
            f"Attention as it trains, then open Why this score: {hint}.",
        )
    w = _probe_weights(r, v.layer, v.head)  # (T, T): where this head looks on the probe
    example = _example(r, w, n)  # the hint's cell, marked on the heatmap
    if v.query is None or v.key is None:
        return Result(
            False, f"Open Why this score on {r.where()}: {_cell_hint(r, n, example)}.", cell=example
        )
    q, k = v.query, v.key
    if not n <= q <= 2 * n - 2:
        return Result(
            False,
            f"The cell open is from {_token(r, q)}, in the first copy: no earlier occurrence "
            f"says what follows it. Open Why this score on the repeat instead: "
            f"{_cell_hint(r, n, example)}.",
            cell=example,
        )
    match = q - n + 1  # the letter after the query's letter in the first copy
    if int(w[q, : q + 1].argmax()) != match:
        return Result(False, _looks_elsewhere(r, w, q, n, example), cell=example)
    if k != match:
        return Result(
            False,
            f"The cell open is from {_token(r, q)} to {_token(r, k)}. The induction head "
            f"attends from {_token(r, q)} to {_token(r, match)}, the letter after its first "
            "occurrence: open Why this score on that cell (marked on the heatmap).",
            cell=(q, match),
        )
    wins = (
        f"From {_token(r, q)}, {r.where()} gives its largest weight on the probe, "
        f"{readable_weight(float(w[q, k]))}, to {_token(r, k)}, the letter after that letter's "
        "first occurrence: the winning key. "
    )
    return Result(True, wins + _circuit_says(r, q, k))


def _circuit_says(r: TrainReading, q: int, k: int) -> str:
    """Why the score from ``q`` to ``k`` is large: the QK attribution's largest key-side part
    (a previous-token head, or not), its largest query-side part and its largest pair."""
    result, task, v = r.variant.result, r.run.plan.task, r.view
    assert result is not None and isinstance(task, Induction)
    model = result.model
    a = qk_attribution(clean_run(model, torch.tensor([r.probe.ids], device=model.param_device)),
                       v.layer, v.head, q, k)  # fmt: skip
    keyside, queryside = a.matrix.sum(0), a.matrix.sum(1)  # (N,) each: columns', rows' sums
    top, tq = int(keyside.argmax()), int(queryside.argmax())
    m = fresh_letters(task)  # step 12's strings
    strings = measures.repeats(m, task.vocab.size, model.param_device)[:, :-1]  # (B, 2m - 1)
    pats = measures.patterns(model, strings)
    prev = torch.stack([measures.previous_token(p) for p in pats]).double()  # (L, nh)
    own = torch.stack([measures.at_offset(p, 0) for p in pats]).double()  # on the token itself
    says = (
        f"Of the score {readable_prose(a.score)} of {r.where()} from {_token(r, q)} to "
        f"{_token(r, k)}, the key side's {_part(a.components[top])} gives "
        f"{signed(float(keyside[top]))}, the most of any part"
    )
    c = a.components[top]
    if v.layer > 0:
        pl, ph, pbest = _best(prev[: v.layer])  # the previous-token head of an earlier layer
        at = next(j for j, p in enumerate(a.components) if (p.kind, p.layer, p.head) == (
            "head", pl, ph))  # fmt: skip
        theirs = (
            f"{_head(pl, ph)} ({readable_weight(pbest)} on the token before), gives "
            f"{signed(float(keyside[at]))}"
        )
        earlier = c.kind == "head" and c.layer is not None and c.layer < v.layer
        mine = float(prev[c.layer, c.head or 0]) if earlier and c.layer is not None else 0.0
        if mine >= PREVIOUS:
            says += (
                f": it is a previous-token head (a mean weight of {_score(mine, PREVIOUS)} on the "
                "token "
                f'before), so at {_token(r, k)} it wrote "the letter before me was '
                f"'{r.probe.labels[k - 1]}'\""
            )
            says += "." if at == top else f"; the strongest one, {theirs} here."
        elif earlier:
            says += (
                f": no previous-token head ({_score(mine, PREVIOUS)} on the token before); the "
                f"previous-token head, {theirs} here."
            )
        else:
            says += f". The previous-token head, {theirs} here."
    else:
        says += "."
    cq = a.components[tq]
    says += f" On the query side, {_part(cq)} gives {signed(float(queryside[tq]))}"
    if cq.kind == "head" and cq.layer is not None and cq.head is not None:
        weight = float(own[cq.layer, cq.head])
        if weight >= OWN:
            says += (
                f": it attends to the letter itself ({readable_share(weight)} of its weight), so "
                f"it carries '{r.probe.labels[q]}'"
            )
    i, j = divmod(int(a.matrix.argmax()), a.matrix.shape[1])
    N = len(a.components)
    return says + (
        f". The largest pair is the query side's {_part(a.components[i])} with the key side's "
        f"{_part(a.components[j])}: {signed(float(a.matrix[i, j]))}. The {N} × {N} pairs sum to "
        "the score."
    )


# -- steps 14 to 17 -------------------------------------------------------------------------------


def _claims(claims: list[TrainClaim]) -> str:
    """Claims as a learner reads them: each its sentence, rounded (a run kept before claims had
    sentences: the claim in short and its value, to 3 significant digits)."""
    return " ".join(c.says or f"{c.claim}: measured {readable_prose(c.value)}." for c in claims)


def claims_hold(preset: str, title: str) -> Callable[[TrainReading], Result]:
    """The check of an ablation step: the learner's run of ``preset`` has finished and every
    claim of the preset holds on it."""

    def check(r: TrainReading) -> Result:
        if r.preset != preset:
            other = PRESETS.get(r.preset) if r.preset else None  # by its title, never its id
            now = (f"the preset {other.title!r}" if other else "another preset" if r.preset
                   else f"one model of {r.task}")  # fmt: skip
            return Result(
                False,
                f"This run trains {now}. This step's question is the preset {title!r}: choose "
                "it under Ablation and press Start training.",
            )
        if r.state == "running":
            return Result(
                False,
                f"Still training: {r.progress()}; the claims are measured on the trained "
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
            return Result(
                True,
                f"All {len(claims)} claims hold on {r.whose}: the card Trained models lists each "
                "with its number.",
            )
        failed = [c for c in claims if not c.holds]
        why = r.shorter() or (
            "A run on other hardware can differ in the last digits, and at the edge of training "
            "that can change the outcome. Train it again."
        )
        return Result(
            False,
            f"{len(failed)} of {len(claims)} claims do not hold on this run. {_claims(failed)} "
            f"They held on seeds 0 to 4 when the preset was made. {why}",
        )

    return check


# -- step 1 ---------------------------------------------------------------------------------------


def recurrent_claims(r: RecurrentRun, yours: bool = True) -> Result:
    """Step 1's check; ``yours``: the comparison is the caller's ("your run", else "this run")."""
    if r.state == "queued":
        where = "next in line" if r.place == 1 else f"{ordinal(r.place or 1)} in line"
        return Result(
            False,
            f"The comparison waits for a slot ({where}): it starts by itself when the "
            "comparisons ahead end, and its claims are measured once it has run.",
        )
    if r.state == "running":
        now = f" (now {r.doing}, {r.progress:.0%} done)" if r.doing else ""
        return Result(
            False,
            f"The comparison is still running{now}: its claims are measured once the "
            "transformer, the LSTM and the GRU have all been trained and timed.",
        )
    if r.state != "done" or r.claims is None:
        reason = r.reason or "no reason given"
        return Result(False, f"The comparison {r.state} before the end ({reason}): run it again.")
    # A time is an observation: how busy the machine is never decides the verdict.
    claims = [c for c in r.claims if c.checked]
    if all(c.holds for c in claims):
        # One line: the claims, each with its number, and what the run showed are the card's,
        # listed there once (a wall of them here said it all twice).
        every = "The claim holds" if len(claims) == 1 else f"All {len(claims)} claims hold"
        return Result(
            True,
            f"{every} on {'your' if yours else 'this'} run: the card Why not an RNN? below "
            "lists each with its number.",
        )
    failed = [c for c in claims if not c.holds]
    return Result(
        False,
        f"{len(failed)} of {len(claims)} claims do not hold on this run. {_claims(failed)} "
        "Run it again, or with another seed.",
    )
