"""What a newcomer's walk of the Learn path tripped on (issue 41, the guide), each in Chromium:
step 13 opened in a new tab opens the learner's run (or says to train it first); Next and
Previous bring the new step's title into view and focus it; the verdict note speaks of the task
the learner's change answered, with its reason, whenever that answer is out of the window; the
training steps' task has the Run card's Start training beside it; a task found or done earlier
says so in words. Screenshots at 1280 and 480 px in test-artifacts/ (guide-<name>-<width>.png)."""

from __future__ import annotations

import json

import pytest

from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    NEW_RUN_DONE,
    RUN_TIMEOUT_MS,
    TRAIN_TINY,
    VIEWPORT,
    answered,
    axe_serious,
    learn_open,
    shoot,
    snap,
)

VERDICT = "#learn-mode [data-role=verdict]"

IN_VIEW = """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
  return r.height > 0 && r.top >= -1 && r.bottom <= innerHeight + 1; }"""

TASK = "#learn-guide .learn-task[data-task='{}']"


def task_says(page, task: str) -> str:
    return page.locator(f"{TASK.format(task)} [data-role=says]").inner_text().strip()


def task_badge(page, task: str) -> str:
    return page.locator(f"{TASK.format(task)} [data-role=badge]").inner_text().strip()


def note_text(page) -> tuple[str, str]:
    note = page.locator(VERDICT)
    return (
        note.locator("[data-role=verdict-badge]").inner_text().strip(),
        note.locator("[data-role=verdict-says]").inner_text().strip(),
    )


def test_step_13_in_a_new_tab_opens_the_learners_newest_run_or_says_to_train_it(page, live_server):
    """Step 13 reads step 12's run. A learner without one is told to train it there first; one
    who trained it (twice) and opens step 13 in a new tab gets the newer run open, as by Next,
    and the step answered on it."""
    page.add_init_script(path=str(AXE))
    learn_open(page, "induction-circuit", lambda: page.goto(f"{live_server}/#learn/13"))
    problem = page.locator("#learn-guide [data-role=problem]")
    assert problem.is_visible()
    assert problem.inner_text().startswith("Train the run of step 12 first:"), problem.inner_text()
    shoot(page, "guide-13-no-run", "top")

    older = page.evaluate(TRAIN_TINY)
    newer = page.evaluate(TRAIN_TINY)  # the learner's (its cookie's) newest
    assert older != newer
    tab = page.context.new_page()
    tab.set_viewport_size(VIEWPORT)
    tab.add_init_script(path=str(AXE))
    learn_open(tab, "induction-circuit", lambda: tab.goto(f"{live_server}/#learn/13"))
    tab.wait_for_function(
        "id => document.getElementById('t-run-card').dataset.run === id", arg=newer
    )
    assert tab.locator("#learn-guide [data-role=problem]").is_hidden()
    assert tab.locator("#learn-guide .learn-task").get_attribute("data-state") != "unchecked"
    assert "nothing trained yet" not in tab.locator("#status").inner_text()
    assert axe_serious(tab) == []
    shoot(tab, "guide-13-new-tab-run-open", "top")
    tab.close()


@pytest.mark.parametrize("width", [1280, 480])
def test_next_and_previous_bring_the_new_steps_title_into_view_and_focus_it(
    page, live_server, width
):
    page.set_viewport_size({"width": width, "height": VIEWPORT["height"]})
    learn_open(page, "scaling", lambda: page.goto(f"{live_server}/#learn/3"))
    for role, step in (("next", "worked-example"), ("prev", "scaling")):
        button = page.locator(f"#learn-guide [data-role={role}]")
        button.scroll_into_view_if_needed()
        if width == 480:  # the buttons are far below the title there
            assert not page.evaluate(IN_VIEW, "#learn-title"), role
        learn_open(page, step, lambda button=button: button.click())
        assert page.evaluate("() => document.activeElement.id") == "learn-title"
        assert page.evaluate(IN_VIEW, "#learn-title"), role
        assert page.evaluate(IN_VIEW, "#learn-guide [data-role=where]"), role
        snap(page, path=str(ARTIFACTS / f"guide-{role}-lands-on-title-{width}.png"))


def test_the_note_speaks_of_the_task_the_edit_answered(page, live_server):
    """Step 6: the W_V edit passes task 1; the note says task 1 is done, why, and that task 2
    is still to do (not task 2's "Not yet" alone)."""
    learn_open(page, "qkv", lambda: page.goto(f"{live_server}/#learn/6"))
    cell = page.locator('#custom-weights table[data-matrix="v"] input[data-i="2"][data-j="2"]')
    cell.scroll_into_view_if_needed()
    answered(page, lambda: cell.fill("0"))
    assert task_badge(page, "quiet-values") == "Done"
    # Task 2 reads W_Q and W_K, untouched: not tried, so no answer gives its solution away.
    assert task_badge(page, "determiner-finds-a") == ""
    assert task_says(page, "determiner-finds-a").startswith("Not tried yet"), task_says(
        page, "determiner-finds-a"
    )
    page.wait_for_function(f"() => !document.querySelector('{VERDICT}').hidden")
    badge, says = note_text(page)
    assert badge == "Done"
    assert says == f"Task 1 of 2: {task_says(page, 'quiet-values')} Task 2 is not done yet.", says
    assert page.locator(VERDICT).get_attribute("data-state") == "done"
    shoot(page, "guide-6-note-speaks-of-task-1", "top")
    page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
    snap(page, path=str(ARTIFACTS / "guide-6-note-bottom-1280.png"))


def test_step_11_starts_from_its_task_and_its_done_note_says_why(page, live_server, api):
    """Step 11's task has the Run card's Start training beside it, in the first screen; a run
    started there that passes while the learner looks at the Run card shows the note: Done, the
    task's own reason, and that the task is done. Steps 14 to 17 have the same button."""
    page.add_init_script(path=str(AXE))
    learn_open(page, "encoder-decoder", lambda: page.goto(f"{live_server}/#learn/11"))
    start = page.locator("#learn-guide .learn-task .learn-do")
    assert start.count() == 1 and start.inner_text() == "Start training"
    box = start.bounding_box()
    assert box and box["y"] + box["height"] <= VIEWPORT["height"], box
    shoot(page, "guide-11-start-beside-task", "top")
    page.fill("#t-steps", "200")
    page.fill("#t-lr", "0.01")
    start.click()
    page.locator("#t-run-card").scroll_into_view_if_needed()
    page.wait_for_function(NEW_RUN_DONE, arg="", timeout=RUN_TIMEOUT_MS)
    page.wait_for_function(
        f"""() => document.querySelector("{TASK.format("cross-aligned")}").dataset.state === 'done'
          && document.documentElement.dataset.pending === '0'"""
    )
    # The step shows its cards alone (issue 41), the page shorter: the learner reads on to the
    # heads card's end, the answer out of the window.
    page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
    assert not page.evaluate(IN_VIEW, f"{TASK.format('cross-aligned')} .learn-answer")
    page.wait_for_function(f"() => !document.querySelector('{VERDICT}').hidden")
    badge, says = note_text(page)
    reason = task_says(page, "cross-aligned")
    assert badge == "Done" and reason
    assert says == f"Task 1: {reason} The task is done: on to the next step when you are ready."
    assert axe_serious(page) == []
    snap(page, path=str(ARTIFACTS / "guide-11-done-note-1280.png"))
    page.set_viewport_size({"width": 480, "height": VIEWPORT["height"]})
    page.locator("#t-run-card").scroll_into_view_if_needed()
    page.wait_for_timeout(300)  # the observer's report of the new layout
    snap(page, path=str(ARTIFACTS / "guide-11-done-note-480.png"))
    page.set_viewport_size(VIEWPORT)
    for n in (12, 14, 15, 16, 17):
        page.goto(f"{live_server}/#learn/{n}")
        page.wait_for_function(
            "n => document.querySelector('#learn-guide [data-role=where]').textContent"
            ".startsWith(`Step ${n} `)",
            arg=n,
        )
        assert page.locator("#learn-guide .learn-task .learn-do").inner_text() == "Start training"


def test_a_task_done_earlier_says_so_in_words(page, live_server):
    """Step 12's finding done earlier, the head in view not it: the words say the task stays
    done first, and what is true of the head now apart. Step 13's task done before and not now:
    a line says what that badge means."""
    progress = {
        "v": 1,
        "last": 12,
        "done": {"induction": ["previous-token-head"], "induction-circuit": ["key-side"]},
    }
    page.add_init_script(
        f"localStorage.setItem('attnviz.learn', {json.dumps(json.dumps(progress))})"
    )
    page.goto(f"{live_server}/#train")
    run = page.evaluate(TRAIN_TINY)
    learn_open(
        page, "induction", lambda: page.goto(f"{live_server}/#learn/12?train=%23train%2F{run}")
    )
    page.wait_for_function(
        "id => document.getElementById('t-run-card').dataset.run === id", arg=run
    )
    head = '#t-grids button.mv-cell[data-layer="0"][data-head="1"]'
    answered(page, lambda: page.click(head))
    assert task_badge(page, "previous-token-head") == "Done: found earlier"
    said = task_says(page, "previous-token-head")
    assert said.startswith("You found one earlier, so this task stays done. About the lab now: ")
    page.locator(TASK.format("previous-token-head")).scroll_into_view_if_needed()
    shoot(page, "guide-12-found-earlier", ".learn-tasks")

    learn_open(page, "induction-circuit", lambda: page.click("#learn-guide [data-role=next]"))
    assert task_badge(page, "key-side") == "Done before, not now"
    said = task_says(page, "key-side")
    assert said.startswith("You did this task before; what the lab shows now does not pass it")
    shoot(page, "guide-13-done-before", ".learn-tasks")


def test_step_6_says_what_w_o_is_and_both_tasks_done_reads_as_words(page, live_server):
    """Step 6's lab shows W_O: its text says what it is and that step 7 uses it. With both tasks
    done the note says "Both tasks are done", not "All 2 tasks" (issue 41)."""
    learn_open(page, "qkv", lambda: page.goto(f"{live_server}/#learn/6"))
    text = page.locator("#learn-guide [data-role=text]").inner_text()
    assert page.locator('#custom-weights table[data-matrix="o"]').is_visible()
    assert "W_O, the output matrix" in text and "step 7 uses it" in text
    for matrix, value in (("v", "0"), ("q", "2"), ("k", "2")):
        cell = page.locator(
            f'#custom-weights table[data-matrix="{matrix}"] input[data-i="2"][data-j="2"]'
        )
        cell.scroll_into_view_if_needed()
        answered(page, lambda cell=cell, value=value: cell.fill(value))
    assert task_badge(page, "quiet-values") == "Done"
    assert task_badge(page, "determiner-finds-a") == "Done"
    page.wait_for_function(f"() => !document.querySelector('{VERDICT}').hidden")
    _, says = note_text(page)
    assert says.endswith(" Both tasks are done: on to the next step when you are ready."), says
    assert "All 2" not in says
    shoot(page, "guide-6-both-done", "top")
