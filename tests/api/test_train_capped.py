"""A server whose cap on steps (``train_max_steps``, ATTNVIZ_TRAIN_MAX_STEPS) is below the Learn
path's runs (issue 42), over real HTTP: the cap reaches the page through the training options; a
preset over it is refused naming ``steps`` and trains at the cap when the request sends it; its
claims are measured where the shorter run has the steps they read, and said not measured where it
has not; and each train step's check, on a run the cap made shorter, says so and why, in words
that name no setting."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx
import pytest

from attnviz.app import create_app
from attnviz.settings import Settings
from attnviz.training.ablations import PRESETS
from attnviz.training.catalog import TASKS
from tests.support.runs import finished, start
from tests.support.servers import served

CAP = 5  # steps: under every Learn step's run (300 to 800)
SCALE = PRESETS["scale-large-heads"]  # step 16's preset: one head of 64 dimensions, quick


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    settings = Settings(device="cpu", builtin_model=False, train_max_steps=CAP, train_slots=2)
    with served(create_app(settings)) as url, httpx.Client(base_url=url, timeout=120) as c:
        yield c


def check(client: httpx.Client, step: str, **body) -> dict[str, dict]:
    r = client.post(f"/api/learn/{step}/check", json=body)
    assert r.status_code == 200, r.text
    return {t["id"]: t for t in r.json()["tasks"]}


def capped(expects: int, each: str = "") -> str:
    return (
        f"This run trained {CAP} steps{each}, fewer than the {expects} this step expects (this "
        f"server trains at most {CAP} steps a run): the shorter run may be why."
    )


def test_the_cap_reaches_the_page_and_a_preset_over_it_is_refused_in_a_learners_words(
    client, caplog
):
    caplog.set_level(logging.INFO, logger="attnviz.api.errors")
    assert client.get("/api/train/options").json()["limits"]["max_steps"] == CAP
    r = client.post("/api/train", json={"task": "induction", "preset": SCALE.name})
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    assert message.startswith(
        f"steps: the preset \u201c{SCALE.title}\u201d trains {SCALE.opt.steps} steps, over this "
        f"server's cap: it trains at most {CAP} steps a run; send steps (at most {CAP})"
    ), message
    assert message.endswith("ask its host to allow more") and "ATTNVIZ_" not in message
    # The setting is the host's: the server's log names it.
    assert "POST /api/train refused by ATTNVIZ_TRAIN_MAX_STEPS: steps: " in caplog.text
    r = client.post("/api/train", json={"task": "induction", "preset": SCALE.name, "steps": 6})
    assert r.status_code == 422 and r.json()["message"].startswith("steps: 6 is over this server")


@pytest.mark.slow
def test_a_preset_made_shorter_trains_at_the_cap_and_its_step_says_why_it_fails(client):
    run = start(client, task="induction", preset=SCALE.name, steps=CAP, checkpoints=2)
    state = finished(client, run)
    assert state["state"] == "done", state["reason"]
    assert (state["steps"], state["opt"]["steps"], state["preset_steps"]) == (
        CAP, CAP, SCALE.opt.steps
    )  # fmt: skip
    assert all(v["history"]["step"] == list(range(1, CAP + 1)) for v in state["variants"])
    claims = state["claims"]
    assert [c["claim"] for c in claims] == [str(c) for c in SCALE.claims]
    # Measured where the run has the steps a claim reads, by the claim's own rule; a mean over
    # steps past its end is not measured, and does not hold.
    for c, claim in zip(claims, SCALE.claims, strict=True):
        if c["value"] is None:
            assert not c["holds"] and c["says"].startswith(f"Not measured ({claim.text}): the "
                                                           "run has no steps"), c  # fmt: skip
        else:
            assert c["holds"] == claim.holds_for(c["value"]), c
    assert any(c["value"] is None for c in claims) and not all(c["holds"] for c in claims)

    t = check(client, "ablate-scale", run=run)["claims-hold"]
    assert not t["done"]
    assert t["says"].endswith(capped(SCALE.opt.steps, " each")), t["says"]
    assert "Not measured (" in t["says"] and "ATTNVIZ_" not in t["says"]


@pytest.mark.slow
def test_steps_11_and_12_on_runs_the_cap_shortened_say_so(client):
    reverse = start(client, task="reverse", opt={"steps": CAP, "seed": 0}, checkpoints=1)
    alignment = finished(client, reverse)["variants"][0]["alignment"]
    assert max(max(row) for row in alignment) < 0.5  # five steps align no head
    t = check(client, "encoder-decoder", run=reverse, view={"attention": "cross"})
    t = t["cross-aligned"]
    assert not t["done"] and t["says"].endswith(capped(TASKS["reverse"].opt.steps)), t
    # Shorter than the cap too: the learner may train it at the cap, not at the task's 600.
    shorter = start(client, task="reverse", opt={"steps": CAP - 2, "seed": 0}, checkpoints=1)
    alignment = finished(client, shorter)["variants"][0]["alignment"]
    assert max(max(row) for row in alignment) < 0.5
    t = check(client, "encoder-decoder", run=shorter, view={"attention": "cross"})
    assert t["cross-aligned"]["says"].endswith(
        f"This run trained {CAP - 2} steps, fewer than the {TASKS['reverse'].opt.steps} this "
        f"step expects: train it with {CAP} steps (this server trains at most {CAP} steps a run)."
    ), t

    tiny = {"layers": 2, "heads": 2, "d_model": 16}
    induction = start(client, task="induction", arch=tiny, opt={"steps": CAP}, checkpoints=1)
    scores = finished(client, induction)["variants"][0]["induction"]
    assert max(max(row) for row in scores) < 0.4  # no induction head in five steps
    said = check(client, "induction", run=induction, view={"layer": 1, "head": 1})
    said = said["induction-head"]["says"]
    assert "No head does it yet" in said, said
    assert said.endswith(capped(TASKS["induction"].opt.steps)), said
