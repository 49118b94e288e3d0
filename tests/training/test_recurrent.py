"""Why not an RNN: the LSTM and the GRU see the transformer's very batches, start from their seed
alone, learn, and are measured as the transformer is; the claims and the words a comparison ends
with follow its numbers; and the shipped comparisons show what their claims say, on several
seeds (the slow test at the end: about 50 s on two idle cores; `make test-fast` leaves it
out)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
import torch

from attnviz.training import ablations as A
from attnviz.training import recurrent as R
from attnviz.training.tasks import Batch, Induction, Reverse, Task
from attnviz.training.trainer import Architecture, Optimiser, Step, train

TINY = Architecture(layers=2, heads=2, d_model=16)


@dataclass
class Recording:
    """A task that keeps every training batch it hands out."""

    task: Task
    seen: list[Batch] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.task, name)

    def batch(self, g: torch.Generator, size: int) -> Batch:
        b = self.task.batch(g, size)
        self.seen.append(b)
        return b


def same_batches(a: list[Batch], b: list[Batch]) -> bool:
    def parts(x: Batch) -> list[torch.Tensor | None]:
        return [x.inputs, x.targets, x.mask, x.source]

    return len(a) == len(b) and all(
        all(
            (p is None and q is None) or torch.equal(p, q)
            for p, q in zip(parts(x), parts(y), strict=True)
        )
        for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize("task", [Reverse(copy=True), Reverse(), Induction()], ids=lambda t: t.name)
def test_every_model_trains_on_the_transformers_batches_for_the_same_seed(task):
    opt = Optimiser(steps=4, lr=3e-3, batch=5, seed=11)
    transformer, lstm, gru = Recording(task), Recording(task), Recording(task)
    train(transformer, TINY, opt)  # type: ignore[arg-type]
    R.train_recurrent("lstm", lstm, opt, 8)  # type: ignore[arg-type]
    R.train_recurrent("gru", gru, opt, 8)  # type: ignore[arg-type]
    assert len(transformer.seen) == 4
    assert same_batches(transformer.seen, lstm.seen) and same_batches(transformer.seen, gru.seen)
    assert same_batches(transformer.seen, list(R.batches(task, opt)))
    other = list(R.batches(task, replace(opt, seed=12)))
    assert not same_batches(transformer.seen, other)


def test_a_seed_alone_fixes_the_starting_weights_and_torchs_own_generator_is_left_alone():
    before = torch.random.get_rng_state()
    a, b, c = (R.Recurrent("lstm", 27, 16, True, s) for s in (3, 3, 4))
    assert torch.equal(torch.random.get_rng_state(), before)
    for (name, x), y, z in zip(a.state_dict().items(), b.state_dict().values(), c.state_dict().values(), strict=True):  # fmt: skip
        assert torch.equal(x, y) and not torch.equal(x, z), name
        if name.endswith("embed.weight"):
            assert 0.8 < float(x.std()) < 1.2, name  # N(0, 1)
        else:
            assert float(x.abs().max()) <= 1 / math.sqrt(16), name
    with pytest.raises(ValueError, match="kind"):
        R.Recurrent("rnn", 27, 16)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a source"):
        a(torch.zeros(1, 3, dtype=torch.long))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize(
    "task", [Reverse(copy=True, min_len=3, max_len=5), Induction(min_len=3, max_len=5)], ids=lambda t: t.name
)  # fmt: skip
def test_the_recurrent_models_learn(kind, task):
    model, history = R.train_recurrent(kind, task, Optimiser(steps=200, lr=1e-2, seed=0), 32)
    assert [s.step for s in history] == list(range(1, 201))
    first = sum(s.loss for s in history[:10]) / 10
    last = sum(s.loss for s in history[-10:]) / 10
    assert first > 3.0 and last < first - 1.0  # from about ln 26, guessing
    right = R.accuracy(R.scores_of(model), task, 3)
    assert right >= 0.5, right  # a guess is right 1 time in 26
    assert not model.training


def test_accuracy_counts_what_can_be_known_as_the_ablations_do():
    """Closed forms (a model that knows the answer, one that always says "a") and, for a
    trained transformer, exactly what the ablations' ``accuracy`` says."""
    induction, copy = Induction(min_len=4, max_len=6), Reverse(copy=True, min_len=4, max_len=6)

    def oracle(inputs, source):
        """The right next token: the repeat's, or (copying) the source, which the targets are."""
        if source is not None:
            return torch.nn.functional.one_hot(source, 27).float()
        n = (inputs.shape[1] + 1) // 2  # inputs: (B, 2n - 1)
        return torch.nn.functional.one_hot(
            torch.cat([inputs[:, 1:], inputs[:, n - 1 : n]], 1), 26
        ).float()

    def always_a(inputs, source):
        scores = torch.zeros(*inputs.shape, 27 if source is not None else 26)
        scores[..., 1 if source is not None else 0] = 1.0  # "a"
        return scores

    for n in (4, 5, 6):
        assert R.accuracy(oracle, induction, n) == 1.0
        assert R.accuracy(oracle, copy, n) == 1.0
        ids = A.measures.repeats(n, 26, torch.device("cpu"))
        assert R.accuracy(always_a, induction, n) == pytest.approx(
            float((ids[:, n + 1 :] == 0).float().mean())
        )
    run = train(induction, TINY, Optimiser(steps=20, seed=1))
    for n in (4, 6):
        assert R.accuracy(R.scores_of(run.model), induction, n) == A.accuracy(run, n)
    with pytest.raises(ValueError, match="charlm"):
        R.accuracy(oracle, type("T", (), {"name": "charlm"})(), 4)  # type: ignore[arg-type]


def test_growth_is_the_exponent_of_a_power_law():
    lengths = (16, 32, 64, 128, 256)
    assert R.growth([3e-4 * L**1.0 for L in lengths], lengths, 2) == pytest.approx(1.0)
    assert R.growth([1e-6 * L**2.0 + 9.0 for L in lengths], lengths, 4 - 1) < 0.01  # flat
    assert R.growth([5e-7 * L**2.0 for L in lengths], lengths, 0) == pytest.approx(2.0)


def made(task: str, acc: dict[str, list[float]], secs: dict[str, list[float]]) -> R.Comparison:
    setup = R.SETUPS[task]
    models = [
        R.ModelResult(k, 1000, acc[k], secs[k], [Step(i, 1.0, [], 0.0) for i in (1, 2)], 1.0)
        for k in R.KINDS
    ]
    return R.Comparison(task, 7, setup, models, complete=True)


def test_the_claims_and_the_words_follow_the_numbers():
    L = R.TIMING_LENGTHS
    good = made(
        "copy",
        {
            "transformer": [1.0, 1.0, 0.99, 0.98, 0.97],
            "lstm": [0.97, 0.9, 0.8, 0.6, 0.5],
            "gru": [0.9, 0.75, 0.6, 0.5, 0.4],
        },  # fmt: skip
        {
            "transformer": [1e-6 * x**2 for x in L],
            "lstm": [1e-4 * x for x in L],
            "gru": [2e-4 * x for x in L],
        },  # fmt: skip
    )
    out = R.outcomes(good)
    assert [str(o.claim) for o in out] == [str(c) for c in R.CLAIMS["copy"]]
    assert all(o.holds for o in out), [str(o) for o in out if not o.holds]
    values = {o.claim.text: o.value for o in out}
    # Six checks, then the three times: observations, never counted (issue 41).
    assert [o.counts for o in out] == [True] * 6 + [False] * 3
    assert all("exponent" in o.claim.text for o in out if not o.counts)
    assert out[0].claim.sentence(out[0].value) == (
        "The transformer's share of letters right at 12 letters in the string was 97% (the "
        "claim: at least 90%)."
    )
    assert out[6].claim.sentence(out[6].value) == (
        "The LSTM's step time grew with the length to the power 1 from 64 to 256 tokens: a power "
        "of 1 is a time in proportion to the length, 2 a time that grows with its square. On an "
        "idle machine it is at most 1.4; a time depends on how busy the machine is, so this one "
        "is shown here and not checked."
    )
    assert values["transformer: accuracy at 12"] == 0.97
    assert values["transformer minus the better recurrent model: accuracy at 12"] == pytest.approx(
        0.47
    )
    assert values["LSTM: accuracy lost from the shortest distance to 12"] == pytest.approx(0.47)
    said = R.shows(good)
    assert said.startswith("Copy, seed 7, 600 training steps each")
    assert "transformer 100% and 97%; LSTM 97% and 50%; GRU 90% and 40%" in said
    assert "they lost 47 points and 50 points" in said and "47 points ahead of the LSTM" in said
    assert "power 1 and 1" in said and "as the power 2" in said
    # LSTM 0.1 ms a token, transformer 0.001 ms a token squared: the LSTM's is the cheaper
    # from 100 tokens on (64: 6.4 ms against 4.1; 128: 12.8 against 16.4).
    assert "the LSTM's step cost the less at 128, 256 tokens" in said
    # An RNN that remembers as well as attention, with a step growing as fast: claims fail.
    bad = made(
        "copy",
        {k: [1.0] * 5 for k in R.KINDS},
        {k: [1e-6 * x**2 for x in L] for k in R.KINDS},
    )
    failed = {o.claim.text for o in R.outcomes(bad) if not o.holds}
    assert failed == {
        c.text for c in R.CLAIMS["copy"] if c.text.startswith(("LSTM", "GRU", "transformer minus"))
    }
    with pytest.raises(ValueError, match="did not finish"):
        R.outcomes(replace(good, complete=False))
    with pytest.raises(ValueError, match="op"):
        R.Claim("x", lambda c: 0.0, "<", 1.0, "x was {}")
    with pytest.raises(ValueError, match="says"):
        R.Claim("x", lambda c: 0.0, "<=", 1.0, "x")


def test_a_difference_under_a_point_is_said_never_as_0_points():
    """Issue 41: shares 0.4 points apart read "0.4 points", not "0 points" nor "level with"
    (Python's round() made 0.4 points "0" and 0.5 "0", half to even); whole points beside the
    whole percentages otherwise, halves away from zero."""
    L = R.TIMING_LENGTHS
    c = made(
        "copy",
        {
            "transformer": [0.973, 0.97, 0.97, 0.97, 0.97],
            "lstm": [0.968, 0.9, 0.8, 0.6, 0.966],
            "gru": [0.9, 0.75, 0.6, 0.5, 0.895],
        },  # fmt: skip
        {k: [1e-4 * x for x in L] for k in R.KINDS},
    )
    said = R.shows(c)
    # The LSTM lost 0.2 points, the GRU 0.5 (whole: 1 point), the transformer 0.3, and it is
    # 0.4 points ahead of the LSTM.
    assert "they lost 0.2 points and 1 point." in said, said
    assert "the transformer lost 0.3 points, and at 12 it was 0.4 points ahead of the LSTM" in said
    assert " 0 points" not in said and "level with" not in said
    out = {o.claim.text: o for o in R.outcomes(c)}
    drop = out["LSTM: accuracy lost from the shortest distance to 12"]
    assert drop.claim.sentence(drop.value) == (
        "From the shortest distance to 12 letters in the string, the LSTM lost 0.2 points (the "
        "claim: at least 20 points)."
    )
    level = made(
        "copy",
        {"transformer": [1.0] * 5, "lstm": [1.0] * 4 + [1.0], "gru": [1.0] * 5},
        {k: [1e-4 * x for x in L] for k in R.KINDS},
    )
    assert "it was level with the LSTM" in R.shows(level)


@pytest.mark.slow
def test_a_comparison_reports_its_progress_and_stops_when_told():
    setup = replace(R.SETUPS["induction"], opt=Optimiser(steps=6, seed=0), lengths=(4, 8, 16, 32))
    heard: list[R.Progress] = []
    c = R.compare("induction", 3, setup=setup, on_progress=lambda _, p: heard.append(p))
    assert c.complete and c.seed == 3
    assert [m.kind for m in c.models] == ["transformer", "lstm", "gru"]
    assert [m.params for m in c.models] == list(R.params(setup).values())
    for m in c.models:
        assert len(m.history) == 6 and len(m.accuracy) == 5 and len(m.step_seconds) == 4
        assert all(0 <= a <= 1 for a in m.accuracy) and all(t > 0 for t in m.step_seconds)
    training = [(p.kind, p.step) for p in heard if p.stage == "training"]
    assert training == [(k, s) for k in R.KINDS for s in [*range(1, 7), 6]]
    timing = [(p.kind, p.step, p.steps) for p in heard if p.stage == "timing"]
    assert timing == [(k, i, 4) for k in R.KINDS for i in (1, 2, 3, 4)]
    # Told to stop after the LSTM's 2nd step: the transformer trained, the rest did not.
    stop = R.compare("induction", 3, setup=setup, on_progress=lambda _, p: heard.append(p),
                     should_stop=lambda: heard[-1].kind == "lstm" and heard[-1].step >= 2)  # fmt: skip
    assert not stop.complete
    assert [len(m.history) for m in stop.models] == [6, 2, 0]
    assert stop.models[0].accuracy == c.models[0].accuracy  # the same seed, the same model
    with pytest.raises(ValueError, match="lengths: 4 or more"):
        replace(setup, lengths=(8, 16, 32))


def test_a_step_is_timed_with_denormals_flushed_on_its_thread_alone():
    """A denormal float (below 1.18e-38 in float32) reads as zero while a step is timed, and
    as itself again after (some processors compute them tens of times slower)."""
    x = torch.tensor([1e-39])
    assert (x * 1).item() > 0
    with R.flushing_denormals():
        assert (x * 1).item() == 0
    assert (x * 1).item() > 0


# ---------------------------------------------------------------------------------------------
# The shipped comparisons, as the server runs them: slow (15 to 25 s each on two idle cores).


@pytest.mark.slow
@pytest.mark.parametrize(("task", "seed"), [("copy", 1), ("reverse", 2), ("induction", 3)])
def test_the_claims_hold_on_several_seeds(task, seed):
    """The bounds were found on seeds 0 to 4 of every task; each task is checked here on a
    seed of its own (reverse's and induction's are the ones whose transformer learns the
    slowest), copy (the default) on seed 0 too, in the page (tests/browser)."""
    c = R.compare(task, seed)
    assert c.complete
    failed = [str(o) for o in R.outcomes(c) if o.counts and not o.holds]
    assert not failed, f"{task} (seed {seed}):\n" + "\n".join(failed)
    # In plain numbers: the recurrent state loses letters as the distance grows, and the GRU's
    # (never the better one at the longest) ends far below attention. (On reverse the LSTM can
    # keep up: see CLAIMS.)
    tr, lstm, gru = (c.model(k) for k in R.KINDS)
    for m in (lstm, gru):
        assert m.accuracy[-1] < m.accuracy[0] - 0.1, (m.name, m.accuracy)
    assert gru.accuracy[-1] < tr.accuracy[-1] - 0.15, (gru.accuracy, tr.accuracy)
    assert R.shows(c).startswith(f"{task.capitalize()}, seed {seed}")
