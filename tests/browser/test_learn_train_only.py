"""Train steps show what the step needs (issue 41): a Learn step in the Train tab shows only the
cards it declares (`only` in GET /api/learn), the form and the other cards set aside, and the
header names what is in view; Start training is greyed while the step's run trains, its reason
said beside both buttons (the task's and the Run card's), and back once the run ends; the
answer note sits where it covers none of the step's card.
Screenshots in test-artifacts/ (learn-only-*-1280.png, -480.png)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    RUN_TIMEOUT_MS,
    axe_serious,
    learn_open,
    shoot,
    snap,
)
from tests.support.servers import served

CAP = 40  # steps a run: a short run, whose running state the page still shows
TASK = "#learn-guide .learn-task"

# The ids of the Train tab's cards (and its form's panel) a reader can see.
SHOWN = """() => [...document.querySelectorAll('#train-mode section.card, #train-mode aside.panel')]
  .filter((e) => e.checkVisibility()).map((e) => e.id || e.getAttribute('aria-label') || e.getAttribute('aria-labelledby'))"""

# Each time the run card says a run trains (or waits), whether both Start training buttons are
# greyed then and the reason the task's says; and the same once it is done.
WATCH = """() => {
  window.__starts = [];
  new MutationObserver(() => {
    const state = document.getElementById('train-mode').dataset.run;
    const task = document.querySelector('#learn-guide .learn-do');
    window.__starts.push({state, lab: document.getElementById('t-start').disabled,
      task: task.disabled, why: document.getElementById('t-start-why').innerText,
      said: document.querySelector('#learn-guide .learn-do-why').innerText});
  }).observe(document.getElementById('train-mode'), {attributes: true, attributeFilter: ['data-run']});
}"""


@pytest.fixture(scope="module")
def short() -> Iterator[str]:
    settings = Settings(device="cpu", builtin_model=False, train_max_steps=CAP)
    with served(create_app(settings)) as url:
        yield url


def only_of(page, url: str, step_id: str) -> list[str]:
    steps = page.request.get(f"{url}/api/learn").json()["steps"]
    return next(s for s in steps if s["id"] == step_id)["only"]


def test_step_11_shows_its_cards_alone_and_greys_start_training_while_it_trains(page, short):
    page.add_init_script(path=str(AXE))
    learn_open(page, "encoder-decoder", lambda: page.goto(f"{short}/#learn/11"))
    only = only_of(page, short, "encoder-decoder")
    assert "recurrent-card" not in only and "t-run-card" in only
    # The step's cards and nothing else: the Model card (its steps), not the task or the
    # ablation, no Why not an RNN?, no loss, no trained models.
    shown = page.evaluate(SHOWN)
    assert "t-run-card" in shown and "t-heads-card" in shown and "What to train" in shown, shown
    assert set(shown) - {"What to train"} <= set(only), shown
    for away in ("#t-task", "#t-preset", "#t-loss", "#t-models-card", "#recurrent-card"):
        assert page.locator(away).is_hidden(), away
    assert page.locator("#t-steps").is_visible()
    assert "comparison" not in page.locator("#status").inner_text()
    assert axe_serious(page) == []
    shoot(page, "learn-only-step11")

    page.evaluate(WATCH)
    page.locator(f"{TASK} .learn-do").click()  # the task's Start training
    page.wait_for_function(
        "() => document.getElementById('train-mode').dataset.run === 'done'", timeout=RUN_TIMEOUT_MS
    )
    starts = page.evaluate("window.__starts")
    training = [s for s in starts if s["state"] in ("running", "queued")]
    assert training, starts
    for s in training:  # greyed, both, and why said beside each
        assert s["lab"] and s["task"], s
        assert (
            s["why"].startswith("Start training is off while this run") and s["said"] == s["why"]
        ), s
    # Ended: offered again, no reason left.
    assert page.locator("#t-start").is_enabled() and page.locator(f"{TASK} .learn-do").is_enabled()
    assert (
        page.locator("#t-start-why").is_hidden()
        and page.locator(f"{TASK} .learn-do-why").is_hidden()
    )
    # The header names the run in view once the step's check of it is in.
    page.wait_for_function("() => document.getElementById('status').innerText.endsWith(': done')")
    shoot(page, "learn-only-step11-done", "top")

    # Explore freely: the whole Train tab again.
    page.get_by_role("button", name="Explore freely in Train").click()
    page.wait_for_function(
        "() => document.getElementById('recurrent-card').checkVisibility() || "
        "document.getElementById('t-models-card').checkVisibility()"
    )
    assert page.locator("#t-task").is_visible()


def test_an_ablation_step_shows_the_run_the_loss_and_the_claims_not_the_heads(page, short):
    learn_open(page, "ablate-norm", lambda: page.goto(f"{short}/#learn/14"))
    only = only_of(page, short, "ablate-norm")
    shown = page.evaluate(SHOWN)
    assert {"t-models-card", "t-run-card", "t-grads-card", "t-loss-card"} <= set(shown), shown
    assert "t-heads-card" not in shown and "What to train" not in shown, shown
    assert page.locator("#t-loss").is_visible()  # the loss the variants are compared on
    assert set(shown) <= set(only), shown
    shoot(page, "learn-only-step14")


NOTE = "#learn-mode [data-role=verdict]"
BOX = """sel => { const r = document.querySelector(sel).getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; }"""


def test_the_answer_note_covers_none_of_the_card_the_step_is_about(page, short):
    page.set_viewport_size({"width": 1280, "height": 800})
    learn_open(page, "heads", lambda: page.goto(f"{short}/#learn/7"))
    # The weights heatmap's bottom just above the window's bottom edge, where the note appears
    # (the card is taller than the window: its heading above it, as a learner reading the
    # heatmap has it).
    page.evaluate(
        "() => { const r = document.getElementById('weights-plot').getBoundingClientRect();"
        " scrollBy({top: r.bottom - innerHeight + 12, behavior: 'instant'}); }"
    )
    before = page.evaluate(BOX, "#attention-card")
    # Another head (chosen where it is, the page not scrolled to the picker): the task answered.
    page.evaluate(
        "() => { const s = document.getElementById('att-head'); s.value = s.options[1].value;"
        " s.dispatchEvent(new Event('change', {bubbles: true})); }"
    )
    page.wait_for_function(f"() => !document.querySelector('{NOTE}').hidden")
    note, card, plot = (page.evaluate(BOX, s) for s in (NOTE, "#attention-card", "#weights-plot"))
    # The note sits where it covers no part of the card in the window (the column beside it,
    # notespot.js), or, in one line, the heatmap is lifted above it; a heading in the window
    # before stays in it.
    seen = {**card, "top": max(0, card["top"]), "bottom": min(800, card["bottom"])}
    clear = (
        note["right"] <= seen["left"]
        or note["left"] >= seen["right"]
        or note["bottom"] <= seen["top"]
        or note["top"] >= seen["bottom"]
    )
    assert clear or plot["bottom"] <= note["top"], (note, card, plot)
    if before["top"] >= 0:
        assert card["top"] >= 0, (before, card)
    snap(page, path=str(ARTIFACTS / "learn-only-step7-note-1280.png"))
