"""The train steps' checks over real HTTP, on real runs: step 11 on a reverse run trained to
alignment (a few seconds) and on one that is not, step 12 on a short induction run and on the
wrong task, a run that still trains, the ablation steps reading their preset's claims on the
learner's run, and step 1 reading a recurrent comparison."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import pytest

from attnviz.app import create_app
from attnviz.numbers import readable_against, readable_share, readable_weight
from attnviz.schemas.recurrent import RecurrentRun
from attnviz.schemas.train import TrainClaim, TrainRequest
from attnviz.services.ownership import Ownership
from attnviz.services.training import LiveRun, RunGone
from attnviz.settings import Settings
from attnviz.training import recurrent as R
from attnviz.training.ablations import PRESETS
from attnviz.training.marks import INDUCTION_FROM
from tests.support.runs import finished, start
from tests.support.servers import served


@pytest.fixture(scope="module")
def app():
    return create_app(Settings(device="cpu", builtin_model=False, train_slots=2))


@pytest.fixture(scope="module")
def client(app) -> Iterator[httpx.Client]:
    with served(app) as url, httpx.Client(base_url=url, timeout=120) as c:
        yield c


def check(client: httpx.Client, step: str, **body) -> dict[str, dict]:
    r = client.post(f"/api/learn/{step}/check", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["step"] == step
    return {t["id"]: t for t in r.json()["tasks"]}


@pytest.mark.slow
def test_step_11_is_done_when_the_learners_reverse_run_aligns(client):
    # The task's model at a larger step: it aligns in 200 steps (the default, 600 at 0.004).
    run = start(client, task="reverse", opt={"steps": 200, "lr": 0.01, "seed": 0}, checkpoints=1)
    state = finished(client, run)
    alignment = state["variants"][0]["alignment"]
    best = max(max(row) for row in alignment)
    layer, head = next(
        (i, j) for i, r in enumerate(alignment) for j, a in enumerate(r) if a == best
    )
    # Issue 41: the task reads the learner's view: cross-attention shown, and the head in view
    # the aligned one; the words speak of that head.
    best_view = {"layer": layer, "head": head}
    t = check(client, "encoder-decoder", run=run, view={**best_view, "attention": "self"})
    assert not t["cross-aligned"]["done"]
    assert "choose cross-attention there" in t["cross-aligned"]["says"]
    t = check(client, "encoder-decoder", run=run, view=best_view)["cross-aligned"]
    assert not t["done"] and "no attention kind" in t["says"]
    other = {"layer": 0, "head": (head + 1) % len(alignment[0]), "attention": "cross"}
    if alignment[0][other["head"]] < 0.5:
        t = check(client, "encoder-decoder", run=run, view=other)["cross-aligned"]
        assert not t["done"], t["says"]
        assert (
            f"layer {layer + 1}, head {head + 1} puts {readable_weight(best)}: choose it"
            in t["says"]
        )
    view = {**best_view, "attention": "cross"}
    t = check(client, "encoder-decoder", run=run, view=view)["cross-aligned"]
    assert best >= 0.5 and t["done"], t["says"]
    assert t["says"].startswith(
        f"Cross-attention aligns: layer {layer + 1}, head {head + 1} puts {readable_share(best)} "
        "of its weight"
    )
    assert "the head in view" not in t["says"] and "causal" in t["says"]

    # Five steps learn nothing: not aligned, and it says how far.
    short = start(client, task="reverse", opt={"steps": 5, "seed": 0}, checkpoints=1)
    alignment = finished(client, short)["variants"][0]["alignment"]
    best = max(max(row) for row in alignment)
    t = check(client, "encoder-decoder", run=short, view={"attention": "cross"})["cross-aligned"]
    assert best < 0.5 and not t["done"]
    assert (
        f"puts {readable_against(best, 0.5, readable_share)} of its weight" in t["says"]
        and "0.5 would be aligned" in t["says"]
    )

    # The wrong step for this run: step 12 wants an induction run.
    tasks = check(client, "induction", run=run)
    assert not any(t["done"] for t in tasks.values())
    assert all("This run trains reverse" in t["says"] for t in tasks.values())


@pytest.mark.slow
def test_step_12_reads_the_heads_of_a_finished_induction_run(client):
    tiny = {"layers": 2, "heads": 2, "d_model": 16}
    run = start(client, task="induction", arch=tiny, opt={"steps": 10, "seed": 1}, checkpoints=1)
    state = finished(client, run)
    induction = state["variants"][0]["induction"]
    best = max(induction[INDUCTION_FROM])  # an induction head is one of layer 2's (issue 41)
    tasks = check(client, "induction", run=run, view={"layer": 1, "head": 1, "variant": 0})
    assert not tasks["previous-token-head"]["done"] and not tasks["induction-head"]["done"]
    assert (
        f"scores {readable_against(best, 0.4, readable_weight)} (0.4 is the mark)"
        in tasks["induction-head"]["says"]
    )
    assert "No head does it yet" in tasks["previous-token-head"]["says"]
    # The head the page shows first, before the learner chose any, is found by no one (issue
    # 41: step 12 was done before the learner acted): the answer asks for a choice, whatever
    # that head scores.
    first = {"layer": 0, "head": 0, "variant": 0, "chosen": False}
    for t in check(client, "induction", run=run, view=first).values():
        assert not t["done"]
        assert t["says"].startswith("Choose a head in the card Attention as it trains"), t
    # A view past the model's heads, or a variant it does not have, is refused by name.
    r = client.post("/api/learn/induction/check", json={"run": run, "view": {"head": 2}})
    assert r.status_code == 422 and r.json()["message"].startswith("view.head: 2 is past")
    r = client.post("/api/learn/induction/check", json={"run": run, "view": {"variant": 1}})
    assert r.status_code == 422 and r.json()["message"].startswith("view.variant: 1 is past")


@pytest.mark.slow
def test_step_12_and_13_look_for_an_induction_head_from_layer_2(app, client):
    """Issue 41 (step 17's card and claim name a layer-2 head): Learn's checks hold a head to the
    same rule, the marks' (``marks.INDUCTION_FROM``): a layer-1 head is no induction head,
    whatever it scores, and the answer says why and names the one of layer 2. A real run; its
    scores then set on the service's run, since no run grows a layer-1 head over the mark."""
    tiny = {"layers": 2, "heads": 2, "d_model": 16}
    run = start(client, task="induction", arch=tiny, opt={"steps": 5, "seed": 1}, checkpoints=1)
    assert finished(client, run)["state"] == "done"
    variant = app.state.training.runs[run].variants[0]
    variant.induction = [[0.45, 0.1], [0.41, 0.2]]  # layer 1's head 1 over layer 2's best

    def says(step: str, task: str, layer: int, head: int) -> dict:
        return check(client, step, run=run, view={"layer": layer, "head": head})[task]

    t = says("induction", "induction-head", 0, 0)
    assert not t["done"] and t["says"].startswith("layer 1, head 1 scores "), t["says"]
    assert " as an induction head, but a head of layer 1 is none, whatever it scores: " in t["says"]
    assert "Look in layer 2: layer 2, head 1 scores " in t["says"]
    assert says("induction", "induction-head", 1, 0)["done"]
    t = says("induction-circuit", "key-side", 0, 0)
    assert not t["done"] and "but a head of layer 1 is none" in t["says"]
    assert "Choose layer 2, head 1 (" in t["says"], t["says"]
    variant.induction = [[0.45, 0.1], [0.2, 0.3]]  # none of layer 2 over the mark
    t = says("induction", "induction-head", 1, 0)
    assert t["says"].startswith("No head does it yet: the best, layer 2, head 2, scores "), t
    t = says("induction-circuit", "key-side", 1, 1)
    assert t["says"].startswith("No head is an induction head yet: the best, layer 2, head 2")


def test_a_run_still_training_is_not_done_and_says_where_it_is(client):
    run = start(client, task="reverse", opt={"steps": 5000, "seed": 0}, checkpoints=2)
    try:
        t = check(client, "encoder-decoder", run=run)["cross-aligned"]
        assert not t["done"] and t["says"].startswith("Still training: step ")
        assert " of 5000; its cross-attention is measured once" in t["says"]
        assert "(" not in t["says"]  # issue 41: no parentheses nested or not
    finally:
        client.delete(f"/api/train/{run}")
    state = finished(client, run)
    assert state["state"] == "cancelled"


def test_an_ablation_step_reads_its_presets_claims_on_the_learners_run(app, client):
    run = start(client, task="induction", preset="norm-at-depth")
    try:
        t = check(client, "ablate-norm", run=run)["claims-hold"]
        assert not t["done"] and "Still training: variant 1 of 2, pre-norm, step" in t["says"]
        assert "(" not in t["says"].split(";")[0]  # issue 41: no nested parentheses
        # Another step's preset: it says which this run is, and which the step wants.
        t = check(client, "ablate-residual", run=run)["claims-hold"]
        title = PRESETS["norm-at-depth"].title  # named by its title, never its id
        assert not t["done"] and f"the preset {title!r}" in t["says"]
        assert "norm-at-depth" not in t["says"]
        assert "With and without the residual connection at depth" in t["says"]
    finally:
        client.delete(f"/api/train/{run}")
    finished(client, run)
    t = check(client, "ablate-norm", run=run)["claims-hold"]
    assert not t["done"] and "cancelled before the end (cancelled)" in t["says"]

    # A finished run of the preset: done when every claim measured on it holds. (The claims
    # are set on a run of the service's table here: training all of the preset takes minutes.)
    training = app.state.training
    preset = PRESETS["norm-at-depth"].claims[:2]
    claims = [measured(preset[0], 2.61), measured(preset[1], 3.25)]
    # A run has an owner (issue 27): this one is no visitor's; the check reads it by its id.
    done = LiveRun("learn-done", TrainRequest(task="induction", preset="norm-at-depth"),
                   training.plan(TrainRequest(task="induction", preset="norm-at-depth")),
                   Ownership(owner=""))  # fmt: skip
    done.state, done.claims = "done", claims
    training.runs[done.id] = done
    t = check(client, "ablate-norm", run=done.id)["claims-hold"]
    assert t["done"], t["says"]
    # Issue 41: a run that is not the caller's (this one is no visitor's) is "this run".
    assert t["says"] == (
        "All 2 claims hold on this run: the card Trained models lists each with its number."
    )
    done.claims = [claims[0], measured(preset[1], 2.4)]
    t = check(client, "ablate-norm", run=done.id)["claims-hold"]
    assert not t["done"] and t["says"].startswith("1 of 2 claims do not hold on this run. ")
    # The failed claim as a sentence, its numbers rounded to read; never its short form.
    assert (
        "The post-norm model's held-out loss after 300 steps was 2.4 nats (the claim: at least "
        "3 nats)." in t["says"]
    )
    assert ">=" not in t["says"] and "measured" not in t["says"]
    training.runs.pop(done.id)


class Comparisons:
    """A recurrent service's interface (``get`` answers a RecurrentRun or raises RunGone; ``find``
    its owner)."""

    def __init__(self) -> None:
        self.runs: dict[str, RecurrentRun] = {}

    def get(self, run_id: str) -> RecurrentRun:
        if run_id not in self.runs:
            raise RunGone(f"run_id: no comparison {run_id!r} on this server")
        return self.runs[run_id]

    def find(self, run_id: str) -> SimpleNamespace:
        """Whose the comparison is (``access.yours``, as the service's own): the caller's."""
        self.get(run_id)
        return SimpleNamespace(access=SimpleNamespace(yours=lambda caller: True))


def measured(claim, value: float) -> TrainClaim:
    """A claim measured at ``value``, as the services send it."""
    return TrainClaim(claim=str(claim), value=value, holds=claim.holds_for(value),
                      says=claim.sentence(value), checked=claim.checked)  # fmt: skip


def test_step_1_reads_the_recurrent_comparisons_claims(app, client, monkeypatch):
    comparisons = Comparisons()
    monkeypatch.setattr(app.state, "recurrent", comparisons)
    base = {"id": "c1", "task": "copy", "seed": 0, "distances": [4, 8], "distance": "letters",
            "lengths": [16, 64], "models": []}  # fmt: skip
    comparisons.runs["c1"] = RecurrentRun(
        **base, state="running", progress=0.4, doing="training the LSTM: step 100 of 300"
    )
    t = check(client, "rnn", recurrent="c1")["run-comparison"]
    assert not t["done"] and "now training the LSTM: step 100 of 300, 40% done" in t["says"]
    # Waiting in line for a slot (services.line): where it is, and that it starts by itself.
    for place, where in ((1, "next in line"), (3, "3rd in line")):
        comparisons.runs["c1"] = RecurrentRun(**base, state="queued", place=place, wait_s=40)
        t = check(client, "rnn", recurrent="c1")["run-comparison"]
        assert not t["done"] and t["says"].startswith(
            f"The comparison waits for a slot ({where}): it starts by itself"
        ), t["says"]
    holds = TrainClaim(claim="LSTM: accuracy at distance 8 <= 0.5", value=0.31, holds=True)
    comparisons.runs["c1"] = RecurrentRun(
        **base, state="done", claims=[holds], shows="The LSTM forgot at distance 8."
    )
    t = check(client, "rnn", recurrent="c1")["run-comparison"]
    # Issue 28, 5.11: done is said in one line; the claims, each with its number, and what the
    # run showed are listed once, in the card (this test's premise changed on purpose: the
    # answer no longer repeats them).
    assert t["done"]
    assert t["says"] == (
        "The claim holds on your run: the card Why not an RNN? below lists each with its number."
    )
    assert "forgot" not in t["says"] and "measured" not in t["says"]
    comparisons.runs["c1"] = RecurrentRun(
        **base, state="done", claims=[holds] * 9, shows="The LSTM forgot at distance 8."
    )
    t = check(client, "rnn", recurrent="c1")["run-comparison"]
    assert t["done"] and t["says"].startswith("All 9 claims hold on your run")
    assert len(t["says"].split()) <= 20 and "\n" not in t["says"]
    comparisons.runs["c1"] = RecurrentRun(
        **base, state="done", claims=[holds.model_copy(update={"holds": False})]
    )
    assert not check(client, "rnn", recurrent="c1")["run-comparison"]["done"]
    # Issue 41: a time is observed, never checked. A run whose accuracies hold is done even
    # when a busy machine slowed its LSTM's longer steps (the exponent 1.463 a newcomer saw);
    # one whose accuracy fails is not, whatever its times.
    copy = R.CLAIMS["copy"]
    passing = {c.text: c.bound for c in copy}
    slow = [measured(c, 1.463 if not c.checked and c.op == "<=" else passing[c.text]) for c in copy]
    assert [c.holds for c in slow].count(False) == 2 and all(c.holds for c in slow if c.checked)
    comparisons.runs["c1"] = RecurrentRun(**base, state="done", claims=slow)
    t = check(client, "rnn", recurrent="c1")["run-comparison"]
    assert t["done"] and t["says"].startswith("All 6 claims hold on your run"), t["says"]
    # Issue 41: the same comparison opened from a learner's link is not the caller's work:
    # "this run", never "your run".
    t = check(client, "rnn", recurrent="c1", from_link=True)["run-comparison"]
    assert t["done"] and t["says"].startswith("All 6 claims hold on this run"), t["says"]
    forgot = [
        slow[0],
        measured(copy[1], 0.9),
        *slow[2:],
    ]  # the LSTM right at 12 letters: not a claim's
    comparisons.runs["c1"] = RecurrentRun(**base, state="done", claims=forgot)
    t = check(client, "rnn", recurrent="c1")["run-comparison"]
    assert not t["done"] and t["says"].startswith("1 of 6 claims do not hold on this run. ")
    assert "The LSTM's share of letters right at 12 letters in the string was 90%" in t["says"]
    assert "power" not in t["says"]
    r = client.post("/api/learn/rnn/check", json={"recurrent": "c2"})
    assert r.status_code == 404 and r.json()["message"].startswith("recurrent: no comparison")
