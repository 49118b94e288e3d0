"""The Learn mode in the page: every step opens from its link with its lab in the step's state,
draws, reads in order and passes axe at 1280 and 480 px; Next/Previous and `#learn/N` links;
each toy step's task done in the browser flips its answer from not done to done (and is not done
before); a train step's check on a run trained for real; the progress kept over a reload;
leaving the guide keeps the lab as it is; and coming back to a toy step reopens the learner's own
lab of it (Start this step again: its start), from a progress of any version."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.browser.helpers import (
    AXE,
    SHOTS_WANTED,
    answered,
    axe_serious,
    cell,
    checks,
    shoot,
    snap,
    table_values,
    traces_drawn,
    train_from_form,
    views_drawn,
)

SHOTS = Path(os.environ.get("LEARN_SHOTS", "/tmp/shots-learn-page"))

READY = """([id, traces, checks, toy]) => {
  const root = document.documentElement, guide = document.getElementById('learn-guide');
  return guide.dataset.ready === '1' && guide.dataset.step === id && root.dataset.pending === '0'
    && +(root.dataset.checks || 0) > checks && (!toy || +(root.dataset.traces || 0) > traces);
}"""


@pytest.fixture(scope="module")
def steps(api) -> list[dict]:
    r = api.get("/api/learn")
    assert r.status_code == 200, r.text
    return r.json()["steps"]


def open_step(page: Page, step: dict, go, fresh: bool = True) -> None:
    """Open `step` by `go()` (a click on its link, a URL) and wait until its lab is drawn (a new
    trace for a toy step whose lab is loaded anew) and its tasks are answered."""
    before = (step["id"], traces_drawn(page), checks(page), step["lab"] == "toy" and fresh)
    go()
    page.wait_for_function(READY, arg=before)


def task_states(page: Page) -> dict[str, str]:
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('#learn-guide .learn-task')]
          .map((t) => [t.dataset.task, t.dataset.state]))"""
    )


def says(page: Page, task: str) -> str:
    return page.locator(
        f'#learn-guide .learn-task[data-task="{task}"] [data-role="says"]'
    ).text_content()


def badge(page: Page, task: str) -> str:
    return page.locator(
        f'#learn-guide .learn-task[data-task="{task}"] [data-role="badge"]'
    ).text_content()


def shot(page: Page, name: str) -> None:
    page.evaluate("() => window.scrollTo(0, 0)")
    if SHOTS_WANTED:
        SHOTS.mkdir(parents=True, exist_ok=True)
        snap(page, path=str(SHOTS / name))


def at_step(page: Page, n: int) -> bool:
    """The address bar is step n's link (with the lab's state, once the learner changed it)."""
    return page.url.split("#", 1)[1].split("?")[0] == f"learn/{n}"


def link(page: Page, n: int):
    return page.locator(f'#learn-guide .learn-steps a[data-n="{n}"]')


def test_every_step_opens_from_its_link_draws_and_reads_in_order(page, live_server, steps):
    """Walk the path by its progress links: each step's lab in its state, the URL its link, the
    formula drawn as MathML with its plain text, the article's tables, axe nothing serious;
    then Next and Previous; then every step again at 480 px."""
    assert len(steps) == 17  # issue 29 added step 13, induction-circuit (16 before)
    assert [s["n"] for s in steps] == list(range(1, len(steps) + 1))
    page.add_init_script(path=str(AXE))
    open_step(page, steps[0], lambda: page.goto(live_server + "/#learn"))
    assert page.url.endswith("#learn/1")  # a first visit starts at the start
    # The Learn tab is the first tab, and selected.
    tabs = page.locator(".modes [role=tab]")
    assert tabs.first.get_attribute("id") == "mode-learn"
    assert tabs.first.get_attribute("aria-selected") == "true"
    for step in steps:
        n = step["n"]
        if n > 1:
            open_step(page, step, lambda n=n: link(page, n).click())
        assert at_step(page, n)
        guide = page.locator("#learn-guide")
        assert guide.locator("[data-role=title]").text_content() == step["title"]
        assert link(page, n).get_attribute("aria-current") == "step"
        assert page.locator("#learn-guide [aria-current]").count() == 1
        # The lab beneath: the step's, in its state.
        lab = "toy-mode" if step["lab"] == "toy" else "train-mode"
        assert page.locator(f"#{lab}").is_visible()
        other = "train-mode" if step["lab"] == "toy" else "toy-mode"
        assert page.locator(f"#{other}").is_hidden()
        if step["lab"] == "toy":
            t = step["toy"]
            seen = table_values(page)
            assert seen["tokens"] == t["tokens"] and seen["axes"] == t["axes"]
            assert [[float(v) for v in row] for row in seen["values"]] == t["embeddings"]
            for key in ("scale", "residual", "ffn"):
                if key in t["config"]:
                    assert page.locator(f"#cfg-{key}").is_checked() == t["config"][key], key
            for key in ("layers", "positional", "norm", "projections"):
                if key in t["config"]:
                    assert page.locator(f"#cfg-{key}").input_value() == str(t["config"][key]), key
            page.wait_for_selector("#weights-plot.js-plotly-plot .main-svg")
        else:
            for name, value in step["train"]["settings"].items():
                field = page.locator(f"#t-form [name={name}], #t-{name}").first
                if field.count():
                    assert field.input_value() == value, name
        # Text, formula (MathML, with its plain text), the article's numbers, the tasks.
        paragraphs = guide.locator("[data-role=text] p")
        assert paragraphs.all_text_contents() == step["text"]
        assert guide.locator("[data-role=formula] math").count() == 1
        assert guide.locator("[data-role=formula-text]").text_content() == step["formula_text"]
        assert guide.locator("figure.learn-table").count() == len(step["article"])
        for i, table in enumerate(step["article"]):
            engine = guide.locator("figure.learn-table").nth(i).locator("tr.engine-row")
            assert engine.count() == len(table["rows"])
            # The article's rounding agrees with the engine's on every cell the step restates.
            assert guide.locator("figure.learn-table").nth(i).locator("td.differs").count() == 0
        assert list(task_states(page)) == [t["id"] for t in step["tasks"]]
        for cards in step["focus"]:
            if page.locator(f"#{cards}").count():
                assert "learn-focus" in page.locator(f"#{cards}").get_attribute("class")
        assert axe_serious(page) == [], f"step {n}"
        shot(page, f"step-{n:02d}-1280.png")

    # Next and Previous are links too: each opens its step.
    first, second = steps[0], steps[1]
    open_step(page, first, lambda: link(page, 1).click())
    assert page.locator("#learn-guide [data-role=prev]").is_hidden()
    open_step(page, second, lambda: page.locator("#learn-guide [data-role=next]").click())
    assert page.url.endswith("#learn/2")
    open_step(page, first, lambda: page.locator("#learn-guide [data-role=prev]").click())
    assert page.url.endswith("#learn/1")
    last = steps[-1]
    open_step(page, last, lambda: link(page, last["n"]).click())
    assert page.locator("#learn-guide [data-role=next]").is_hidden()

    # 480 px: the same path, numbers for the steps, nothing wider than the screen.
    page.set_viewport_size({"width": 480, "height": 900})
    held = second["n"]  # the toy lab holds step 2 (Next opened it): opened again, it is kept
    for step in steps:
        n = step["n"]
        open_step(page, step, lambda n=n: page.goto(f"{live_server}/#learn/{n}"), fresh=n != held)
        if step["lab"] == "toy":
            held = n
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 480, f"step {n} is {width} px wide"
        if n in (2, 4, len(steps) - 4, len(steps)):
            assert axe_serious(page) == [], f"step {n} at 480 px"
        shot(page, f"step-{n:02d}-480.png")


def test_the_focus_order_follows_the_reading_order(page, live_server, steps):
    """Tab from the tabs: the path's links, then the step's text and formula (nothing to
    focus), its hints, Previous/Next, the guide's buttons, then the lab."""
    step = next(s for s in steps if s["lab"] == "toy" and s["n"] > 1)
    open_step(page, step, lambda: page.goto(f"{live_server}/#learn/{step['n']}"))
    page.focus("#export-html")
    order = []
    for _ in range(len(steps) + 12):
        page.keyboard.press("Tab")
        order.append(
            page.evaluate(
                """() => { const e = document.activeElement;
              if (e.closest('.learn-steps')) return 'steps';
              if (e.closest('.learn-hint')) return 'hint';
              if (e.closest('.learn-article')) return 'article';
              const role = e.dataset.role;
              if (role) return role;
              if (e.closest('#toy-mode')) return 'lab';
              return e.tagName; }"""
            )
        )
        if order[-1] == "lab":
            break
    seen = [x for i, x in enumerate(order) if i == 0 or order[i - 1] != x]
    want = ["steps", "formula-box", "article", "hint", "prev", "next", "reset", "explore", "lab"]
    if not step["article"]:
        want.remove("article")
    if not any(t["hint"] for t in step["tasks"]):
        want.remove("hint")
    looks = [x for x in seen if x == "BUTTON"]  # the "Look at" buttons, after the tasks
    assert [x for x in seen if x != "BUTTON"] == want, order
    assert len(looks) <= 1


TOY_TASKS = {
    # step id -> what the learner does in the lab, per task
    "dot-products": lambda page, s: answered(page, lambda: cell(page, 4, 1).fill("2")),
    "scaling": lambda page, s: answered(page, lambda: page.locator("#cfg-scale").uncheck()),
    "worked-example": lambda page, s: answered(page, lambda: cell(page, 4, 1).fill("2")),
    "positions": lambda page, s: answered(
        page, lambda: page.select_option("#cfg-positional", "sinusoidal")
    ),
    "residual-norm": lambda page, s: (
        answered(page, lambda: page.locator("#cfg-residual").check()),
        answered(page, lambda: page.select_option("#cfg-norm", "pre")),
    ),
    "ffn-block": lambda page, s: answered(page, lambda: page.locator("#cfg-ffn").check()),
}


def walk(page: Page, picker: str, count: int, task: str) -> None:
    """Pick each layer (or head) in turn from the first until `task` is done."""
    for i in range(count):
        if i > 0:
            answered(page, lambda i=i: page.select_option(picker, str(i)))
        if task_states(page)[task] == "done":
            return


def qkv(page: Page, step: dict) -> None:
    """Step 6: W_V's grammar row to zero; W_Q's and W_K's grammar entry on."""
    d = len(step["toy"]["axes"])
    last = d - 1

    def weight(matrix: str, i: int, j: int):
        return page.locator(
            f'#custom-weights table[data-matrix="{matrix}"] input[data-i="{i}"][data-j="{j}"]'
        )

    def put(matrix: str, i: int, j: int, value: str) -> None:
        if float(weight(matrix, i, j).input_value()) != float(value):  # an edit, a new answer
            answered(page, lambda: weight(matrix, i, j).fill(value))

    for j in range(d):
        put("v", last, j, "0")
    for m in ("q", "k"):
        put(m, last, last, "2")


def test_a_toy_task_is_answered_only_once_tried(page, live_server, steps):
    """Issue 41: step 6's W_V edit answers its first task; the second (W_Q and W_K) says only
    that it is not tried yet, no word of its solution, until W_Q changes: then its answer says
    W_Q and W_K as they are, and the note at the window's bottom speaks of it."""
    step = next(s for s in steps if s["id"] == "qkv")
    first, second = (t["id"] for t in step["tasks"])
    page.goto(live_server + "/")
    page.wait_for_function("() => +(document.documentElement.dataset.traces || 0) > 0")
    open_step(page, step, lambda: page.goto(f"{live_server}/#learn/{step['n']}"))

    def weight(matrix: str, i: int, j: int):
        return page.locator(
            f'#custom-weights table[data-matrix="{matrix}"] input[data-i="{i}"][data-j="{j}"]'
        )

    answered(page, lambda: weight("v", 0, 0).fill("0.5"))  # a try at task 1, not done
    assert badge(page, first) == "Not yet" and "Zero W_V's grammar row" in says(page, first)
    assert badge(page, second) == ""
    assert (
        says(page, second).strip()
        == "Not tried yet: this task is answered once you change W_Q or W_K."
    )
    shoot(page, "qkv-untried", "#learn-guide .learn-task-list")
    answered(page, lambda: weight("q", 2, 2).fill("2"))  # a try at task 2, W_K still 0
    assert badge(page, second) == "Not yet"
    said = says(page, second)
    assert 'W_Q reads "fruit" and "grammar"' in said and "a's key is zero" in said, said
    assert "W_Q reads only fruit" not in said
    note = page.locator('[data-role="verdict-says"]').text_content()
    assert note.startswith("Task 2 of 2: ") and "a's key is zero" in note, note
    shoot(page, "qkv-tried", "#learn-guide .learn-task-list")


def test_each_toy_task_flips_from_not_done_to_done_in_the_browser(page, live_server, steps):
    page.goto(live_server + "/")
    page.wait_for_function("() => +(document.documentElement.dataset.traces || 0) > 0")
    for step in (s for s in steps if s["lab"] == "toy"):
        n = step["n"]
        open_step(page, step, lambda n=n: page.goto(f"{live_server}/#learn/{n}"))
        states = task_states(page)
        assert set(states.values()) == {"todo"}, (step["id"], states)
        for t in step["tasks"]:
            # Before the learner tries anything, the question alone (issue 41): no "Not yet"
            # and no reason, which would give the answer away; the hint behind its button.
            assert not says(page, t["id"]).strip(), (step["id"], t["id"])
            assert badge(page, t["id"]) == "", (step["id"], t["id"])
        assert page.locator("#learn-guide details.learn-hint[open]").count() == 0
        config = step["toy"]["config"]
        if step["id"] == "collapse":
            walk(page, "#att-layer", config.get("layers", 1), step["tasks"][0]["id"])
        elif step["id"] == "heads":
            walk(page, "#att-head", config.get("heads", 1), step["tasks"][0]["id"])
        elif step["id"] == "qkv":
            qkv(page, step)
        else:
            TOY_TASKS[step["id"]](page, step)
        states = task_states(page)
        assert set(states.values()) == {"done"}, (
            step["id"],
            states,
            page.locator("#learn-guide .learn-task-list").text_content(),
        )
        assert link(page, n).get_attribute("data-done") == "true"
        # Its link's name says so (Chromium puts a space around each part of a flex item).
        name = re.compile(rf"^{n}\s?\.\s{re.escape(step['title'])}\s?, done$")
        assert page.get_by_role("link", name=name).count() == 1
        shot(page, f"task-{n:02d}-done-1280.png")


def test_progress_links_and_leaving_keep_the_learner_where_they_were(page, live_server, steps, api):
    step = next(s for s in steps if s["id"] == "dot-products")
    n = step["n"]
    open_step(page, step, lambda: page.goto(f"{live_server}/#learn/{n}"))
    answered(page, lambda: cell(page, 4, 1).fill("2"))
    assert set(task_states(page).values()) == {"done"}
    # The URL stays the step's while the learner works in its lab, carrying the lab's state
    # once changed (issue 41: a teacher opens what the learner sees).
    assert page.url.split("?")[0].endswith(f"#learn/{n}") and "?toy=" in page.url
    answered(page, lambda: cell(page, 4, 0).fill("0.5"))
    assert page.url.split("?")[0].endswith(f"#learn/{n}") and "?toy=" in page.url

    # Explore freely: the guide closes, the lab stays exactly as it is.
    page.locator("#learn-guide [data-role=explore]").click()
    page.wait_for_function("() => document.documentElement.dataset.mode === 'toy'")
    assert page.locator("#learn-mode").is_hidden()
    assert page.locator("#mode-toy").get_attribute("aria-selected") == "true"
    assert table_values(page)["values"][4][:2] == ["0.5", "2"]
    assert "#s=" in page.url
    # Back to Learn by its tab: the same step, the lab still as the learner left it.
    before = views_drawn(page)
    page.click("#mode-learn")
    page.wait_for_function(
        "n => document.getElementById('learn-guide').dataset.ready === '1'"
        " && +(document.documentElement.dataset.views || 0) > n"
        " && document.documentElement.dataset.pending === '0'",
        arg=before,
    )
    assert at_step(page, n)
    assert table_values(page)["values"][4][:2] == ["0.5", "2"]
    # Start this step again: the step's own table.
    before_traces = traces_drawn(page)
    page.locator("#learn-guide [data-role=reset]").click()
    page.wait_for_function(
        "n => +(document.documentElement.dataset.traces || 0) > n"
        " && document.documentElement.dataset.pending === '0'",
        arg=before_traces,
    )
    assert [[float(v) for v in r] for r in table_values(page)["values"]] == step["toy"][
        "embeddings"
    ]

    # A reload: the progress is the browser's; #learn opens the last step open.
    later = steps[6]
    open_step(page, later, lambda: page.goto(f"{live_server}/#learn/{later['n']}"))
    page.goto("about:blank")
    page.goto(live_server + "/#learn")
    page.wait_for_function("() => document.getElementById('learn-guide').dataset.ready === '1'")
    assert at_step(page, later["n"])
    assert link(page, n).get_attribute("data-done") == "true"
    assert (
        page.locator("#learn-guide [data-role=count]").text_content() == f"(1 of {len(steps)} done)"
    )
    # A link that names no step says so, and opens the last one.
    page.goto(live_server + "/#learn/99")
    # (The same document: the guide was ready before; the last step's own address is waited for.)
    page.wait_for_function(
        "n => location.hash.split('?')[0] === `#learn/${n}`"
        " && document.getElementById('learn-guide').dataset.ready === '1'",
        arg=len(steps),
    )
    assert at_step(page, len(steps))
    assert "no step 99" in page.locator("#error").text_content()

    # The toy lab's first view points a newcomer here.
    page.goto(live_server + "/")
    pointer = page.get_by_role("link", name="Start at step 1")
    assert pointer.is_visible()
    first = steps[0]
    open_step(page, first, lambda: pointer.click())
    assert page.url.endswith("#learn/1")
    assert page.locator(".learn-pointer").is_hidden()


def kept_progress(page: Page) -> dict:
    """The progress this browser keeps (localStorage, progress.js), as stored."""
    return json.loads(page.evaluate("() => localStorage.getItem('attnviz.learn')") or "{}")


def test_coming_back_to_a_toy_step_reopens_the_learners_own_lab(page, live_server, steps):
    """Issue 41: a learner back at a step they worked in sees their own lab, answered at once
    (not the step's start, "Done before, not now"): from another step, and in a new tab; Start
    this step again gives the start, and coming back after it the start too. A version 1
    progress (before labs were kept) is migrated, nothing done lost."""
    two = next(s for s in steps if s["id"] == "dot-products")
    four = next(s for s in steps if s["id"] == "worked-example")
    task = two["tasks"][0]["id"]
    start = [[float(v) for v in row] for row in two["toy"]["embeddings"]]
    page.add_init_script(path=str(AXE))
    # An older page's progress: version 1, step 3 done (written once the page has saved its own).
    open_step(page, four, lambda: page.goto(f"{live_server}/#learn/{four['n']}"))
    page.evaluate(
        """() => localStorage.setItem('attnviz.learn', JSON.stringify(
          {v: 1, last: 4, done: {scaling: ['unscaled-one-hot']}}))"""
    )
    page.goto("about:blank")
    open_step(page, two, lambda: page.goto(f"{live_server}/#learn/{two['n']}"))
    answered(page, lambda: cell(page, 4, 1).fill("2"))
    assert task_states(page) == {task: "done"}
    kept = kept_progress(page)
    assert kept["v"] == 2 and kept["done"]["scaling"] == ["unscaled-one-hot"]
    assert kept["done"]["dot-products"] == [task]
    lab = kept["labs"]["dot-products"]
    assert f"?toy={lab}" in page.url  # what the step's link carries
    assert link(page, 3).get_attribute("data-done") == "true"

    # Another step, then back: the learner's table, answered at once (no change needed).
    open_step(page, four, lambda: page.goto(f"{live_server}/#learn/{four['n']}"))
    assert [[float(v) for v in r] for r in table_values(page)["values"]] == [
        [float(v) for v in row] for row in four["toy"]["embeddings"]
    ]
    open_step(page, two, lambda: page.goto(f"{live_server}/#learn/{two['n']}"))
    assert table_values(page)["values"][4][1] == "2"
    assert task_states(page) == {task: "done"} and badge(page, task) == "Done"
    assert says(page, task).strip()
    assert f"?toy={lab}" in page.url
    assert axe_serious(page) == []
    shoot(page, "learn-returned-2", "top")

    # A new tab (the same browser): the same, from the progress it keeps.
    tab = page.context.new_page()
    tab.add_init_script(path=str(AXE))
    open_step(tab, two, lambda: tab.goto(f"{live_server}/#learn/{two['n']}"))
    assert table_values(tab)["values"][4][1] == "2"
    assert task_states(tab) == {task: "done"}
    # Start this step again: the start, the question alone; and coming back, the start too.
    before = traces_drawn(tab)
    tab.locator("#learn-guide [data-role=reset]").click()
    tab.wait_for_function(
        "n => +(document.documentElement.dataset.traces || 0) > n"
        " && document.documentElement.dataset.pending === '0'",
        arg=before,
    )
    assert [[float(v) for v in r] for r in table_values(tab)["values"]] == start
    assert "dot-products" not in kept_progress(tab)["labs"]
    open_step(tab, four, lambda: tab.goto(f"{live_server}/#learn/{four['n']}"))
    open_step(tab, two, lambda: tab.goto(f"{live_server}/#learn/{two['n']}"))
    assert [[float(v) for v in r] for r in table_values(tab)["values"]] == start
    # Done stays done, and the start does not pass it: said so.
    assert task_states(tab) == {task: "todo"} and badge(tab, task) == "Done before, not now"
    assert kept_progress(tab)["done"]["dot-products"] == [task]
    tab.close()


def test_a_train_step_is_checked_on_a_run_trained_in_the_page(page, live_server, steps, api):
    """Step 11 (the encoder-decoder): before a run the answer says to train; each run trained
    in the page is checked when it ends, with the same answer the API gives on the view the page
    sent (its cross-attention, the card's first view, and the head in view): 20 steps are not
    enough to align; 200 at a higher learning rate are, once the learner chooses the aligned
    head, as the hint says."""
    step = next(s for s in steps if s["id"] == "encoder-decoder")
    task = step["tasks"][0]["id"]
    open_step(page, step, lambda: page.goto(f"{live_server}/#learn/{step['n']}"))
    assert task_states(page) == {t["id"]: "unchecked" for t in step["tasks"]}
    # Nothing trained yet: the task's question, and what to press is its hint's to say.
    assert page.locator("#learn-guide [data-role=problem]").is_hidden()
    assert "Press Start training" in step["tasks"][0]["hint"]

    def train(steps: str, lr: str | None = None, after: str = "") -> str:
        """Train from the form; wait until the run has ended and its answer is in."""
        train_from_form(page, steps, after, lr)
        # Answered while it trained ("still training"), then once more when it ended.
        page.wait_for_function(
            """t => { const e = document.querySelector(`#learn-guide .learn-task[data-task='${t}']`);
              return e.dataset.state !== 'unchecked' && !/Still training/.test(e.textContent)
                && document.documentElement.dataset.pending === '0'; }""",
            arg=task,
        )
        return page.evaluate("() => document.getElementById('t-run-card').dataset.run")

    sent: list[dict] = []  # the bodies of the page's checks of this step, in order
    page.on(
        "request",
        lambda q: (
            sent.append(q.post_data_json)
            if q.method == "POST" and q.url.endswith(f"/api/learn/{step['id']}/check")
            else None
        ),
    )

    def api_answer(run: str) -> dict:
        """The API's answer on the view the page sent last: the same run, attention, head."""
        body = sent[-1]
        assert body["run"] == run
        # The card shows cross-attention (its first view), and the page says so in the check.
        assert page.locator("#t-attention").input_value() == "cross"
        assert body["view"]["attention"] == "cross", body
        r = api.post(f"/api/learn/{step['id']}/check", json={"run": run, "view": body["view"]})
        assert r.status_code == 200, r.text
        (theirs,) = [t for t in r.json()["tasks"] if t["id"] == task]
        return theirs

    # 20 steps: cross-attention has not aligned yet.
    short = train("20")
    theirs = api_answer(short)
    assert theirs["done"] is False
    assert task_states(page)[task] == "todo"
    assert says(page, task).strip() == theirs["says"]
    assert at_step(page, step["n"])
    shot(page, f"task-{step['n']:02d}-short-run-1280.png")
    # 200 steps at a higher learning rate (a few seconds): it aligns; the learner chooses the
    # head whose pattern walks the source (the run's best aligned), and the step is done.
    long = train("200", "0.01", after=short)
    alignment = api.get(f"/api/train/{long}").json()["variants"][0]["alignment"]
    best = max(max(row) for row in alignment)
    layer, head = next(
        (i, j) for i, row in enumerate(alignment) for j, x in enumerate(row) if x == best
    )

    # (The head first in view may be done already: the check of the chosen one is waited for.)
    def of_chosen(q) -> bool:
        if q.method != "POST" or not q.url.endswith(f"/api/learn/{step['id']}/check"):
            return False
        view = (q.post_data_json or {}).get("view") or {}
        return (view.get("layer"), view.get("head")) == (layer, head)

    with page.expect_request(of_chosen) as asked:
        page.click(f'#t-grids button.mv-cell[data-layer="{layer}"][data-head="{head}"]')
    asked.value.response()  # answered
    page.wait_for_function(
        f"""() => document.querySelector("#learn-guide .learn-task[data-task='{task}']")
          .dataset.state === 'done' && document.documentElement.dataset.pending === '0'"""
    )
    theirs = api_answer(long)
    assert (sent[-1]["view"]["layer"], sent[-1]["view"]["head"]) == (layer, head)
    assert theirs["done"] is True
    assert task_states(page)[task] == "done"
    assert says(page, task).strip() == theirs["says"]
    assert link(page, step["n"]).get_attribute("data-done") == "true"
    shot(page, f"task-{step['n']:02d}-done-1280.png")


def test_a_link_followed_as_the_step_before_rewrites_the_address_opens_its_step(
    page, live_server, steps
):
    """The page keeps its address the open step's link (rewritten as the lab's work comes in: a
    trace drawn, an answer). A link followed just as the step before rewrites it opens the link's
    step, never the one the address was rewritten to: the navigation's own address is read."""
    first, second = [s for s in steps if s["lab"] == "toy"][:2]
    open_step(page, first, lambda: page.goto(f"{live_server}/#learn/{first['n']}"))
    # The link followed, then the step before's rewrite, before the page hears of the link.
    follow_then_rewrite = """([to, back]) => {
      location.hash = to;
      history.replaceState(null, '', back);
    }"""
    open_step(
        page,
        second,
        lambda: page.evaluate(
            follow_then_rewrite, [f"#learn/{second['n']}", f"#learn/{first['n']}"]
        ),
    )
    assert at_step(page, second["n"])
    assert page.locator("#learn-guide").get_attribute("data-step") == second["id"]


TICKS = """() => [...document.querySelectorAll('#learn-guide .learn-steps a')].map((a) => {
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const tick = a.querySelector('.learn-tick');
  return {n: +a.dataset.n, done: a.dataset.done === 'true', link: box(a),
          num: box(a.querySelector('.learn-num')), tick: tick.checkVisibility({visibilityProperty: true})
            ? box(tick) : null, border: parseFloat(getComputedStyle(a).borderTopWidth)}; })"""


def overlap(a: list[float], b: list[float]) -> bool:
    """Two boxes [left, top, right, bottom] share some area."""
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


@pytest.mark.parametrize("width", [1280, 480])
def test_a_done_steps_tick_sits_inside_its_link_at_any_width(page, live_server, steps, width):
    """Issue 41: at 480 px the path is a row of numbered buttons, and a done step's tick sat on
    its button's border and over the row above. Every done step's tick (and only a done
    step's) is inside its own link, within the border, clear of its number and of every other
    link, in the column of titles and in the row of numbers alike."""
    toy = [s for s in steps if s["lab"] == "toy"]
    done = {s["id"]: [t["id"] for t in s["tasks"]] for s in toy}  # a returning learner's
    page.add_init_script(
        f"localStorage.setItem('attnviz.learn', JSON.stringify({{v: 1, last: 1, done: {json.dumps(done)}}}))"
    )
    page.set_viewport_size({"width": width, "height": 900})
    first = toy[0]
    open_step(page, first, lambda: page.goto(f"{live_server}/#learn/{first['n']}"))
    links = page.evaluate(TICKS)
    assert {x["n"] for x in links if x["done"]} == {s["n"] for s in toy}
    for x in links:
        assert (x["tick"] is not None) is x["done"], x
        if not x["done"]:
            continue
        (left, top, right, bottom), b = x["link"], x["border"]
        t = x["tick"]
        assert left + b <= t[0] and top + b <= t[1] and t[2] <= right - b and t[3] <= bottom - b, x
        assert not overlap(t, x["num"]), x
        assert not any(overlap(t, y["link"]) for y in links if y["n"] != x["n"]), x
    SHOTS.mkdir(parents=True, exist_ok=True)
    snap(page.locator("#learn-guide .learn-steps"), path=str(SHOTS / f"ticks-{width}.png"))
