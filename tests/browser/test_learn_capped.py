"""The Learn path on a server capped below its runs (issue 42): ATTNVIZ_TRAIN_MAX_STEPS under
step 16's preset. The page lowers the run to the server's cap (which it reads from the training
options, never a number of its own), says so beside Start training, trains it, and the step's
answer says the claims failed on a run shorter than the step expects, and why; the trained
models' card says the same of its claims. No setting's name anywhere. Screenshots in
test-artifacts/ (capped-*-1280.png, -480.png)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.browser.helpers import AXE, RUN_TIMEOUT_MS, axe_serious, learn_open, shoot
from tests.support.servers import served

CAP = 5
PRESET = "scale-large-heads"  # step 16's

TASK = "#learn-guide .learn-task"


@pytest.fixture(scope="module")
def capped() -> Iterator[str]:
    settings = Settings(device="cpu", builtin_model=False, train_max_steps=CAP)
    with served(create_app(settings)) as url:
        yield url


def test_a_capped_server_runs_step_16_at_its_cap_and_the_step_says_why_it_fails(page, capped):
    page.add_init_script(path=str(AXE))
    options = page.request.get(f"{capped}/api/train/options").json()
    assert options["limits"]["max_steps"] == CAP
    wants = next(p for p in options["presets"] if p["id"] == PRESET)["opt"]["steps"]
    assert wants > CAP
    learn_open(page, "ablate-scale", lambda: page.goto(f"{capped}/#learn/16"))
    note = page.locator("#t-capped")
    assert note.is_visible()
    assert note.inner_text() == (
        f"This server trains at most {CAP} steps a run: the run is shorter than this preset's "
        f"{wants} steps, and its claims may not hold."
    )
    # The form shows the steps the run will train; Start training is described by the note.
    assert page.locator("#t-steps").input_value() == str(CAP)
    assert page.locator("#t-start").get_attribute("aria-describedby") == "t-capped t-start-why"
    assert axe_serious(page) == []
    shoot(page, "capped-step16-start", "#t-run-card")

    page.locator(f"{TASK} .learn-do").click()  # the task's Start training
    page.wait_for_function(
        "() => document.getElementById('train-mode').dataset.run === 'done'",
        timeout=RUN_TIMEOUT_MS,
    )
    run_id = page.locator("#t-run-card").get_attribute("data-run")
    run = page.request.get(f"{capped}/api/train/{run_id}").json()
    assert (run["preset"], run["steps"], run["preset_steps"]) == (PRESET, CAP, wants)
    assert not all(c["holds"] for c in run["claims"])
    said = (
        f"This run trained {CAP} steps each, fewer than the {wants} this step expects (this "
        f"server trains at most {CAP} steps a run): the shorter run may be why."
    )
    page.wait_for_function(
        "([sel, said]) => document.querySelector(sel + ' [data-role=says]').innerText.includes(said)",
        arg=[TASK, said],
    )
    assert page.locator(TASK).get_attribute("data-state") == "todo"
    claims = page.locator("#t-models-card [data-role=claims]").inner_text()
    assert claims.startswith(
        f"These models trained {CAP} steps each, fewer than the preset's {wants} (this server's "
        "cap), and a claim may not hold on a shorter run."
    ), claims
    assert "ATTNVIZ_" not in page.locator("body").inner_text()
    assert axe_serious(page) == []
    shoot(page, "capped-step16-answer", "#learn-guide .learn-tasks")
    shoot(page, "capped-step16-claims", "#t-models-card")
