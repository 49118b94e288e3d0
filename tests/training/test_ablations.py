"""The ablation presets: each variant differs from the first in the one switch its preset names,
all share the task, the seed (so the data order) and the starting weights they have in common;
and each preset, trained as shipped (seed 0), shows what it says it shows, number by number.

Training every preset takes about a minute here (two cores); runs that two presets share (the
deep pre-norm stack with its residual) are trained once."""

from __future__ import annotations

import functools
import re
from dataclasses import replace

import pytest
import torch

from attnviz.engine.init import standard_weights
from attnviz.numbers import readable
from attnviz.training import ablations as A
from attnviz.training.ablations import PRESETS, Claim, Preset, Variant
from attnviz.training.tasks import Induction
from attnviz.training.trainer import (
    Architecture,
    Checkpoint,
    Optimiser,
    Run,
    Step,
    model_config,
    train,
)


@functools.cache
def _train(task: Induction, arch: Architecture, opt: Optimiser) -> Run:
    return train(task, arch, opt, checkpoints=A.CHECKPOINTS)


def runs_of(preset: Preset) -> list[Run]:
    """The preset's variants trained as ``Preset.train`` trains them (tested below)."""
    return [_train(preset.task, v.arch, preset.opt) for v in preset.variants]


def check_claims(preset: Preset, runs: list[Run]) -> dict[str, float]:
    """Every claim holds, each reported with its number; ``holds`` agrees."""
    outcomes = preset.outcomes(runs)
    failed = [str(o) for o in outcomes if not o.holds]
    assert not failed, f"{preset.name} (seed {preset.opt.seed}):\n" + "\n".join(failed)
    assert preset.holds(runs)
    return {f"{o.claim.text} {o.claim.op}": o.value for o in outcomes}


# ---------------------------------------------------------------------------------------------
# The presets' shape: cheap.


def test_presets_are_named_described_and_claimed():
    assert set(PRESETS) == {"norm-at-depth", "residual-at-depth", "scale-large-heads", "positions"}
    for name, p in PRESETS.items():
        assert p.name == name and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name), name
        assert p.title and p.question.endswith("?") and p.shows, name
        assert len(p.variants) >= 2 and len({v.label for v in p.variants}) == len(p.variants)
        assert p.claims, name
        assert all(c.op in ("<=", ">=") for c in p.claims)
        assert p.opt.seed == 0  # as shipped


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_no_two_claims_of_a_preset_read_alike(name):
    """Issue 41: two bounds on one measure (the positions preset's loss, at most 1.9 and at
    least 0.8) are two claims, each named for what it says, so the card never lists one claim
    twice."""
    claims = PRESETS[name].claims
    assert len({c.text for c in claims}) == len(claims), [c.text for c in claims]
    assert len({c.says for c in claims}) == len(claims), [c.says for c in claims]


def test_a_heads_score_is_claimed_as_a_fraction_as_the_page_shows_the_heads():
    """Issue 41: the positions preset's head scores read as the card's heads and Learn's checks
    read them (a fraction of the weight), never as a percentage beside them."""
    scores = [c for c in PRESETS["positions"].claims if "score" in c.text]
    assert scores
    for c in scores:
        said = c.sentence(0.583)
        assert f" {readable(0.583)} of its weight" in said and "%" not in said, said


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_variants_differ_only_in_the_named_switch(name):
    p = PRESETS[name]
    base = p.variants[0].arch
    values = [getattr(v.arch, p.switch) for v in p.variants]
    assert len(set(values)) == len(values)
    for v, value in zip(p.variants, values, strict=True):
        assert replace(base, **{p.switch: value}) == v.arch, v.label


def test_each_preset_asks_the_articles_question():
    values = {name: {getattr(v.arch, p.switch) for v in p.variants} for name, p in PRESETS.items()}
    assert PRESETS["norm-at-depth"].switch == "norm" and values["norm-at-depth"] == {"pre", "post"}
    assert PRESETS["residual-at-depth"].switch == "residual"
    assert values["residual-at-depth"] == {True, False}
    assert PRESETS["scale-large-heads"].switch == "scale"
    assert values["scale-large-heads"] == {True, False}
    assert values["positions"] == {"none", "sinusoidal", "learned", "rope"}
    for name in ("norm-at-depth", "residual-at-depth"):
        assert PRESETS[name].variants[0].arch.layers >= 6, name  # at depth
    wide = PRESETS["scale-large-heads"].variants[0].arch
    assert wide.d_model // wide.heads >= 64  # large heads
    assert all(isinstance(p.task, Induction) for p in PRESETS.values())


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_variants_start_alike_wherever_they_share_a_tensor(name):
    p = PRESETS[name]
    vocab, T = p.task.vocab.size, p.task.max_tokens
    weights = [standard_weights(model_config(v.arch, vocab, T), p.opt.seed) for v in p.variants]
    for w in weights[1:]:
        shared = set(w) & set(weights[0])
        assert len(shared) >= len(weights[0]) // 2  # most tensors are shared
        for key in shared:
            assert torch.equal(w[key], weights[0][key]), (name, key)


@pytest.mark.slow
def test_train_trains_every_variant_in_order_with_one_data_order():
    """``Preset.train`` gives what ``train`` gives for each variant with the preset's optimiser
    (its seed replaced when asked), and keeps the checkpoints the claims need."""
    p = PRESETS["norm-at-depth"]
    short = replace(p, opt=replace(p.opt, steps=3))
    runs = short.train(seed=1)
    assert len(runs) == len(p.variants)
    for v, run in zip(p.variants, runs, strict=True):
        alone = train(p.task, v.arch, replace(short.opt, seed=1))
        assert [s.loss for s in run.history] == [s.loss for s in alone.history], v.label
        assert run.checkpoints[0].step == 0 and run.checkpoints[-1].step == 3


def test_a_preset_whose_variants_differ_in_two_switches_is_refused():
    p = PRESETS["norm-at-depth"]
    pre = p.variants[0].arch
    with pytest.raises(ValueError, match="differs in more than norm"):
        replace(p, variants=(p.variants[0], Variant("post", replace(pre, norm="post", layers=3))))
    with pytest.raises(ValueError, match="the same norm"):
        replace(p, variants=(p.variants[0], Variant("pre again", pre)))
    with pytest.raises(ValueError, match="not an Architecture field"):
        replace(p, switch="lr")
    with pytest.raises(ValueError, match="op"):
        Claim("x", lambda task, runs: 0.0, "<", 1.0, "x was {}")


def test_the_measures_on_runs_made_by_hand():
    history = [
        Step(i, loss=float(i), grad_norms=[0.1 * i, 1.0, 0.2 * i], seconds=0.0)
        for i in range(1, 11)
    ]
    T = 12
    one_hot = torch.eye(T).expand(1, 2, T, T)  # every token on itself
    causal = torch.tril(torch.ones(T, T))
    uniform = (causal / causal.sum(-1, keepdim=True)).expand(1, 2, T, T)
    run = Run(
        cfg=None,
        model=None,
        history=history,
        checkpoints=[Checkpoint(0, 3.0, one_hot, 0.0), Checkpoint(10, 1.0, uniform, 1.0)],
    )
    assert A.mean_loss(run, 9, 10) == 9.5
    assert A.grad_ratio(run, 1, 10) == pytest.approx(0.5)  # 0.1 i / 0.2 i
    assert A.sharpness(run, 0) == 1.0
    assert A.sharpness(run, -1) == pytest.approx(sum(1 / (t + 1) for t in range(8, T)) / (T - 8))
    assert A.lowest_mean_loss(run, window=3) == 2.0  # steps 1-3
    with pytest.raises(ValueError, match="no steps"):
        A.mean_loss(run, 11, 20)
    with pytest.raises(ValueError, match="fewer than 20 steps"):
        A.lowest_mean_loss(run)


# ---------------------------------------------------------------------------------------------
# Each preset trained as shipped: its claims, and the article's effect in plain numbers.


@pytest.mark.slow
def test_norm_at_depth():
    p = PRESETS["norm-at-depth"]
    runs = runs_of(p)
    pre, post = (runs[p.variant(label)] for label in ("pre-norm", "post-norm"))
    check_claims(p, runs)
    held_pre, held_post = A.heldout_loss(p.task, pre), A.heldout_loss(p.task, post)
    assert held_post > A.CHANCE - 0.2, f"post-norm should stay near chance: {held_post:.3f}"
    assert held_pre < held_post - 0.3, f"pre-norm {held_pre:.3f} vs post-norm {held_post:.3f}"
    ratio_pre, ratio_post = A.grad_ratio(pre, 11, 100), A.grad_ratio(post, 11, 100)
    assert ratio_pre > 4 * ratio_post, (
        f"first/last layer gradient: pre-norm {ratio_pre:.3f}, post-norm {ratio_post:.3f}"
    )
    # At step 1 (the same batch, weights alike) the gradient reaches every post-norm layer;
    # it is training at this step size that makes it fade.
    assert 0.5 < post.history[0].grad_norms[0] / post.history[0].grad_norms[-1] < 2.0


@pytest.mark.slow
def test_residual_at_depth():
    p = PRESETS["residual-at-depth"]
    runs = runs_of(p)
    on, off = (runs[p.variant(label)] for label in ("residual", "no residual"))
    check_claims(p, runs)
    held_on, held_off = A.heldout_loss(p.task, on), A.heldout_loss(p.task, off)
    assert abs(held_off - A.CHANCE) < 0.1, f"no residual should stay at chance: {held_off:.3f}"
    assert held_on < held_off - 0.4, f"residual {held_on:.3f} vs none {held_off:.3f}"
    # Not even for a while: the lowest 20-step mean is at chance too.
    low_on, low_off = A.lowest_mean_loss(on), A.lowest_mean_loss(off)
    assert low_off > A.CHANCE - 0.1, f"no residual ever got to {low_off:.3f}"
    assert low_on < low_off - 0.4, f"residual {low_on:.3f} vs none {low_off:.3f}"


@pytest.mark.slow
def test_scale_large_heads():
    p = PRESETS["scale-large-heads"]
    runs = runs_of(p)
    scaled, unscaled = (runs[p.variant(label)] for label in ("1/√d scaling", "no scaling"))
    check_claims(p, runs)
    s0, u0 = A.sharpness(scaled, 0), A.sharpness(unscaled, 0)
    assert u0 > 2.5 * s0, f"largest weight per query at step 0: scaled {s0:.3f}, not {u0:.3f}"
    late_scaled, late_unscaled = A.mean_loss(scaled, 281, 300), A.mean_loss(unscaled, 281, 300)
    assert late_unscaled > A.CHANCE - 0.15, f"unscaled stays near chance: {late_unscaled:.3f}"
    assert late_scaled < late_unscaled - 0.4, f"{late_scaled:.3f} vs {late_unscaled:.3f}"


@pytest.mark.slow
def test_positions():
    p = PRESETS["positions"]
    runs = runs_of(p)
    rope, learned, sinusoidal, none = (
        runs[p.variant(label)] for label in ("RoPE", "learned", "sinusoidal", "no positions")
    )
    check_claims(p, runs)
    held = {
        label: A.heldout_loss(p.task, runs[p.variant(label)])
        for label in ("RoPE", "learned", "sinusoidal", "no positions")
    }
    assert held["RoPE"] < min(held["learned"], held["sinusoidal"]) - 0.4, held
    assert max(held["learned"], held["sinusoidal"]) < held["no positions"] - 0.4, held
    # RoPE's induction head attends straight to the letter to copy: the direct path dominates
    # the relayed one. It works alike at every length trained on.
    ind = [A.induction_score(p.task, rope, n, 1) for n in (8, 12, 16)]
    assert min(ind) >= 0.25 and A.relay_score(rope, 12) < 0.5 * min(ind), ind
    assert min(A.accuracy(rope, n) for n in (8, 12, 16)) >= 0.6
    # The first layer alone cannot do it, whatever the positions.
    for run in runs:
        assert A.induction_score(p.task, run, 12, 0) < 0.3
    # Without positions no head can single out the previous token.
    assert A.previous_token_score(none, 12, 0) < 0.25
    for run, label in ((learned, "learned"), (sinusoidal, "sinusoidal")):
        short, long = A.accuracy(run, 8), A.accuracy(run, 16)
        assert short >= long + 0.2, f"{label}: accuracy {short:.2f} at 8 letters, {long:.2f} at 16"
