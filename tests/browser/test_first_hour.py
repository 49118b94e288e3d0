"""What a learner meets in the first hour (issue 41), each in Chromium at 1280 and 480 px: a
task's verdict is in view wherever the learner edits, and dismissible; before the first try a
task shows its question only; a step's link carries the learner's lab. Screenshots in
test-artifacts/ (hour-<name>-<width>.png)."""

from __future__ import annotations

import pytest

from attnviz.learn.service import SEEN_LAB
from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    TRAIN_TINY,
    answered,
    axe_serious,
    cell,
    fresh_page,
    learn_open,
    snap,
)

VERDICT = "#learn-mode [data-role=verdict]"

IN_VIEW = """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
  return r.width > 0 && r.top >= 0 && r.bottom <= innerHeight && r.right <= innerWidth; }"""


@pytest.mark.parametrize("width", [1280, 480])
def test_the_verdict_is_in_view_where_the_learner_edits(page, live_server, width):
    page.set_viewport_size({"width": width, "height": 800})
    page.add_init_script(path=str(AXE))
    learn_open(page, "worked-example", lambda: page.goto(f"{live_server}/#learn/4"))
    task = page.locator("#learn-guide .learn-task").first
    # Before any try: the question alone, and no note.
    assert task.locator("[data-role=badge]").inner_text() == ""
    assert task.locator("[data-role=says]").inner_text() == ""
    assert page.locator(VERDICT).is_hidden()

    # An edit far below the task (banana's fruit, not yet enough): the answer is at the bottom
    # of the window, beside the edited cell, without a scroll.
    fruit = cell(page, 4, 1)
    fruit.scroll_into_view_if_needed()
    assert not page.evaluate(IN_VIEW, "#learn-guide .learn-tasks")
    answered(page, lambda: fruit.fill("0.9"))
    assert task.get_attribute("data-state") == "todo"
    assert page.evaluate(IN_VIEW, VERDICT) and page.evaluate(IN_VIEW, "#embeddings")
    note = page.locator(VERDICT)
    assert note.locator("[data-role=verdict-badge]").inner_text() == "Not yet"
    says = task.locator("[data-role=says]").inner_text().strip()
    assert says and note.locator("[data-role=verdict-says]").inner_text() == f"Task 1: {says}"
    # Not a second live region: the task's answer is the one announced.
    assert note.get_attribute("aria-live") is None
    assert task.locator(".learn-answer").get_attribute("aria-live") == "polite"
    ARTIFACTS.mkdir(exist_ok=True)
    snap(page, path=str(ARTIFACTS / f"hour-verdict-not-yet-{width}.png"))

    # Dismissed, it stays away until the answer changes; then it is back, saying so.
    note.locator("[data-role=verdict-close]").click()
    assert note.is_hidden()
    answered(page, lambda: fruit.fill("2"))
    assert page.evaluate(IN_VIEW, VERDICT)
    assert task.get_attribute("data-state") == "done"
    assert note.get_attribute("data-state") == "done"
    assert note.locator("[data-role=verdict-badge]").inner_text() == "Done"
    # The keyboard: the note's button goes back to the tasks, which then hide the note.
    snap(page, path=str(ARTIFACTS / f"hour-verdict-done-{width}.png"))
    note.locator("[data-role=verdict-go]").focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => document.querySelector('{VERDICT}').hidden")
    assert page.evaluate(IN_VIEW, "#learn-guide .learn-tasks h3")
    assert axe_serious(page) == []


def test_a_learn_link_carries_the_learners_table_to_another_browser(page, browser, live_server):
    """Issue 41, 7: a step's link holds the learner's edits (step 4 with banana's fruit at 1.5
    opened at the start's 0.8 before); opened in a fresh context it shows that table and its
    answer at once. Untouched, a step's link is the step alone."""
    learn_open(page, "worked-example", lambda: page.goto(f"{live_server}/#learn/4"))
    page.click("#copy-link")
    assert page.evaluate("location.hash") == "#learn/4"  # the start: nothing to carry
    answered(page, lambda: cell(page, 4, 1).fill("1.5"))
    page.click("#copy-link")
    link = page.evaluate("location.href")
    assert link.startswith(f"{live_server}/#learn/4?toy=")
    with fresh_page(browser) as (other, errors):
        learn_open(other, "worked-example", lambda: other.goto(link))
        assert cell(other, 4, 1).input_value() == "1.5"
        task = other.locator("#learn-guide .learn-task").first
        # The learner's state, tried: its answer is shown, as the learner saw it, and counted
        # for no one (shown, not done: the learner's lab, not the opener's).
        assert task.get_attribute("data-state") == "shown"
        assert task.locator("[data-role=badge]").inner_text() == "Shown"
        assert other.locator("#learn-guide [data-role=seen]").inner_text() == SEEN_LAB
        assert errors == []


def test_a_train_steps_link_carries_the_run_and_the_head_chosen(page, browser, live_server):
    """Step 12's link: the learner's run and the head they chose, opened by another browser
    (a teacher) on that head, with the step's answer for it."""
    page.goto(f"{live_server}/#train")
    run = page.evaluate(TRAIN_TINY)  # the learner's run (its cookie: a run others open by link)
    learn_open(
        page, "induction", lambda: page.goto(f"{live_server}/#learn/12?train=%23train%2F{run}")
    )
    page.wait_for_function(
        "id => document.getElementById('t-run-card').dataset.run === id", arg=run
    )
    head = '#t-grids button.mv-cell[data-layer="1"][data-head="1"]'
    answered(page, lambda: page.click(head))
    page.click("#copy-link")
    link = page.evaluate("location.href")
    assert f"?train=%23train%2F{run}" in link and "at%3D0.1.1" in link, link
    with fresh_page(browser) as (other, errors):
        learn_open(other, "induction", lambda: other.goto(link))
        other.wait_for_function(
            "id => document.getElementById('t-run-card').dataset.run === id", arg=run
        )
        other.wait_for_function(
            f"() => document.querySelector('{head}')?.getAttribute('aria-pressed') === 'true'"
        )
        answer = other.locator("#learn-guide .learn-task [data-role=says]").first
        # Answered for the head chosen (a 20-step run has neither head yet): not "choose one".
        other.wait_for_function(
            "() => document.querySelector('#learn-guide .learn-task [data-role=says]')"
            ".textContent.trim() !== ''"
        )
        assert "Choose a head" not in answer.inner_text()
        assert errors == []
