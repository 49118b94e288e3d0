"""Issue 41 (walk 41e, step 17): the card Trained models and the positions preset's claims
measure and name the same head. A preset run trained for real over HTTP (the positions preset,
its four variants, cut to a few steps so the test is quick: the measures and the words do not
depend on how far it trained), then: each claim on a head's score equals the best score the
run reports for a head of the layer the marks say an induction head starts at (``marks`` in the
run's state: the page's card names its best head from those scores), and says on what strings
it was measured, the strings the run's own scores are measured on."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest

from attnviz.app import create_app
from attnviz.settings import Settings
from attnviz.training import ablations, marks, measures
from attnviz.training.claims import said
from tests.learn.test_train_checks import finished, start
from tests.support.servers import served

STEPS = 6  # the preset's 600, cut: what is compared is how each number is measured, not its size


@pytest.fixture
def client(monkeypatch) -> Iterator[httpx.Client]:
    preset = ablations.PRESETS["positions"]
    short = replace(preset, opt=replace(preset.opt, steps=STEPS))
    monkeypatch.setitem(ablations.PRESETS, "positions", short)
    app = create_app(Settings(device="cpu", builtin_model=False, train_slots=1))
    with served(app) as url, httpx.Client(base_url=url, timeout=120) as c:
        yield c


@pytest.mark.slow
def test_a_claim_on_a_head_is_the_score_the_card_names_its_best_head_by(client):
    run = start(client, task="induction", preset="positions", checkpoints=1)
    state = finished(client, run)
    assert state["state"] == "done", state["reason"]
    first = state["marks"]["induction_from"]
    assert first == marks.INDUCTION_FROM == 1  # layer 2, as the claims say
    task = ablations.PRESETS["positions"].task
    n = measures.induction_letters(task)
    assert n == 16  # the preset's longest strings (the default task's 20 is past them)
    where = f"on {measures.MEASURE_BATCH} fresh strings of {n} letters, repeated"
    by_label = {v["label"]: v for v in state["variants"]}
    checked = 0
    for c in state["claims"]:
        if "induction score" not in c["claim"]:
            continue
        label = c["claim"].split(":")[0]
        scores = by_label[label]["induction"]
        best = max(max(row) for row in scores[first:])  # the card's best layer-2 head
        # The same number, measured on the same strings: equal (the claim's value is sent to 4
        # places; its sentence says the exact value as the card does), not close.
        assert c["value"] == round(best, 4), (label, c["value"], scores)
        assert f"layer-{first + 1} induction score, {n} letters" in c["claim"]
        assert f"the best layer-{first + 1} head put {said(best, 'weight')} of its" in c["says"]
        assert where in c["says"], c["says"]
        checked += 1
    assert checked == 3, state["claims"]  # RoPE, learned and sinusoidal positions
    for c in state["claims"]:
        if "previous-token score" in c["claim"]:
            assert f"{n} letters" in c["claim"] and where in c["says"], c
