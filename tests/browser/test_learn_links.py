"""A Learn step's link as a teacher opens it (issue 41, "for a teacher"), each in Chromium on
real runs, the teacher in a browser context of their own (no cookie, no progress of the
learner's): step 1's link shows the learner's comparison (its id travels in the link, so the
numbers are the very ones the learner saw), and step 1 opened in a new tab reopens the
learner's newest comparison, or says what to press; step 12's link opens the head the learner
chose and step 13's the cell, its Why this score and its answer; step 12's words about a head
that is the other task's ask the learner to keep it shown; no run's or comparison's id is shown
on the page (it is only in the address). Screenshots at 1280 and 480 px in test-artifacts/
(links-<name>-<width>.png).

Step 1 runs on a server of its own whose comparisons train for two steps (a second: the real
ones, and their claims, are tests/browser/test_walk_look.py's); steps 12 and 13 on one induction
run of the step's own settings, 600 steps (the circuit has formed: tests/learn/test_circuit.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from urllib.parse import parse_qs, unquote, urlsplit

import httpx
import pytest
import torch

from attnviz.api.visitor import COOKIE
from attnviz.app import create_app
from attnviz.learn.service import SEEN_COMPARISON, SEEN_RUN, SEEN_RUN_BEFORE
from attnviz.numbers import readable_against, readable_weight
from attnviz.services.recurrent import RecurrentService
from attnviz.settings import Settings
from tests.api.test_recurrent import small
from tests.browser.helpers import (
    AXE,
    TRAIN_TINY,
    VIEWPORT,
    axe_serious,
    fresh_page,
    learn_open,
    shoot,
)
from tests.browser.test_circuit import WHY, click_cell, induction_cell
from tests.browser.test_walk_guide import task_badge, task_says
from tests.support.servers import served

CARD_RUN = "id => document.getElementById('recurrent-card').dataset.run === id"
SEEN = "#learn-guide [data-role=seen]"  # whose work the answers are of, when not the reader's
RUN_OPEN = "id => document.getElementById('t-run-card').dataset.run === id"
# A task answered on what the lab holds (not the wait before it, not "still running"), with
# nothing pending.
ANSWERED = """t => { const e = document.querySelector(`#learn-guide .learn-task[data-task='${t}']`);
  const says = (e?.querySelector('[data-role=says]')?.textContent ?? '').trim();
  return e && e.dataset.state !== 'unchecked' && says !== '' && !/still running/.test(says)
    && document.documentElement.dataset.pending === '0'; }"""
# Everything on the page a person reads or hears: its text, and the attributes read aloud or
# shown on hover, and the values of its fields.
SHOWN = """() => {
  const said = [document.body.innerText];
  for (const e of document.querySelectorAll('[title], [aria-label], [alt], [placeholder]'))
    for (const a of ['title', 'aria-label', 'alt', 'placeholder'])
      if (e.getAttribute(a)) said.push(e.getAttribute(a));
  for (const f of document.querySelectorAll('input, select, textarea')) said.push(f.value);
  return said.join('\\n'); }"""


def progress(**done: list[str]) -> str:
    """An init script that gives the browser a progress with these tasks done (by step id)."""
    kept = {"v": 1, "last": None, "done": done}
    return f"localStorage.setItem('attnviz.learn', {json.dumps(json.dumps(kept))})"


def copy_link(page) -> str:
    """The step's link as Copy link gives it (the address bar's, written as it copies)."""
    page.click("#copy-link")
    page.wait_for_function(
        "() => /link copied|copy the address bar/.test(document.getElementById('status').textContent)"
    )
    return page.url


def train_link(url: str) -> dict[str, str]:
    """The Train link a Learn link carries, read as a query: its run and its own parameters."""
    inner = parse_qs(urlsplit(url).fragment.split("?", 1)[1])["train"][0]
    path, _, query = inner.partition("?")
    return {"run": unquote(path.removeprefix("#train").lstrip("/"))} | {
        k: v[0] for k, v in parse_qs(query).items()
    }


# ---- step 1: the comparison ------------------------------------------------------------------


@pytest.fixture(scope="module")
def compare_server(tmp_path_factory) -> Iterator[str]:
    """A server whose comparisons train two steps a model, with a data directory of its own."""
    s = Settings(device="cpu", builtin_model=False,
                 data_dir=tmp_path_factory.mktemp("links-data"))  # fmt: skip
    app = create_app(s)
    app.state.recurrent = RecurrentService(s, small(steps=2))
    with served(app) as url:
        yield url


def test_step_1s_link_shows_the_learners_comparison_and_a_new_tab_reopens_it(
    page, browser, compare_server
):
    url = compare_server
    page.add_init_script(path=str(AXE))
    learn_open(page, "rnn", lambda: page.goto(f"{url}/#learn/1"))
    task = page.locator("#learn-guide .learn-task").first.get_attribute("data-task")
    # The learner runs it with a seed of their own.
    page.fill("#rc-seed", "3")
    page.press("#rc-seed", "Tab")
    page.locator("#learn-guide .learn-task .learn-do").click()
    page.wait_for_function(
        "() => document.getElementById('recurrent-card').dataset.state === 'done'"
    )
    page.wait_for_function(ANSWERED, arg=task)
    run_id = page.locator("#recurrent-card").get_attribute("data-run")
    run = page.evaluate("id => fetch(`/api/recurrent/${id}`).then((r) => r.json())", run_id)
    assert run["seed"] == 3 and run["state"] == "done"
    says = task_says(page, task)
    link = copy_link(page)
    assert urlsplit(link).fragment.startswith("learn/1?train=")
    assert train_link(link)["comparison"] == run_id  # the id is in the address, only there
    assert run_id not in page.evaluate(SHOWN)

    # 1. The teacher, in a browser of their own: the learner's comparison, its numbers and its
    # answer, its task and seed in the card's form.
    with fresh_page(browser) as (teacher, errors):
        teacher.add_init_script(path=str(AXE))
        learn_open(teacher, "rnn", lambda: teacher.goto(link))
        teacher.wait_for_function(CARD_RUN, arg=run_id)
        teacher.wait_for_function(ANSWERED, arg=task)
        assert task_says(teacher, task) == says
        # The learner's comparison, not the teacher's: its answers count for no one, and say so.
        assert teacher.locator(SEEN).inner_text() == SEEN_COMPARISON
        assert task_badge(teacher, task) != "Done"
        drawn = teacher.evaluate(
            "() => document.getElementById('rc-accuracy').data.map((t) => Array.from(t.y))"
        )
        assert drawn == [m["accuracy"] for m in run["models"]]
        assert teacher.locator("#rc-seed").input_value() == "3"
        assert teacher.locator("#rc-task").input_value() == run["task"]
        assert f"{run['task']}, seed 3: done" in teacher.locator("#recurrent-card").inner_text()
        assert run_id not in teacher.evaluate(SHOWN)
        # The header says what is in view (not "nothing trained yet").
        teacher.wait_for_function(
            "() => document.getElementById('status').innerText.includes('comparison in view')"
        )
        assert axe_serious(teacher) == []
        shoot(teacher, "links-1-teacher", "top")
        shoot(teacher, "links-1-teacher-card", "#recurrent-card")

        # 2. Done before, and nothing of the teacher's to reopen (the learner's comparison is
        # theirs to read, not the teacher's own): the step says what to press. (The first tab
        # closed: it writes its own progress as it checks.)
        teacher.goto("about:blank")
        plain = teacher.context.new_page()
        plain.set_viewport_size(VIEWPORT)
        plain.add_init_script(progress(rnn=[task]))
        learn_open(plain, "rnn", lambda: plain.goto(f"{url}/#learn/1"))
        assert plain.locator("#recurrent-card").get_attribute("data-run") == ""
        assert task_badge(plain, task) == "Done before, not now"
        problem = plain.locator("#learn-guide [data-role=problem]")
        assert problem.is_visible()
        assert "Press Run comparison to run it again" in problem.inner_text()
        shoot(plain, "links-1-done-before-none", "top")
        # A link whose comparison the server no longer keeps says so, without its id.
        plain.goto(f"{url}/#learn/1?train=%23train%3Fcomparison%3Dgone0000")
        plain.wait_for_function("() => !document.getElementById('error').hidden")
        said = plain.locator("#error").inner_text()
        assert said.startswith("This link's comparison could not be opened: it is no longer on")
        assert "Press Run comparison" in said and "gone0000" not in said
        assert [e for e in errors if "status of 404" not in e] == []

    # 2. The learner's new tab, the step done before: their newest comparison opens in the card,
    # answered on it as the first tab was, and its link carries it.
    page.goto("about:blank")
    tab = page.context.new_page()
    tab.set_viewport_size(VIEWPORT)
    tab.add_init_script(progress(rnn=[task]))
    learn_open(tab, "rnn", lambda: tab.goto(f"{url}/#learn/1"))
    tab.wait_for_function(CARD_RUN, arg=run_id)
    tab.wait_for_function(ANSWERED, arg=task)
    assert tab.locator("#learn-guide [data-role=problem]").is_hidden()
    holds = all(c["holds"] for c in run["claims"] if c["checked"])
    assert task_badge(tab, task) == ("Done" if holds else "Done before, not now")
    assert says in task_says(tab, task)
    assert train_link(copy_link(tab))["comparison"] == run_id
    shoot(tab, "links-1-new-tab", "top")
    tab.close()


# ---- steps 12 and 13: the head, the cell -----------------------------------------------------


@pytest.fixture(scope="module")
def learner(live_server) -> Iterator[httpx.Client]:
    """The learner of steps 12 and 13, a visitor of their own (their cookie): they train the
    run, and their page (``as_learner``) is its owner's, whose checks of it count."""
    with httpx.Client(base_url=live_server, timeout=60) as client:
        assert client.get("/healthz").status_code == 200 and COOKIE in client.cookies
        yield client


def as_learner(page, learner: httpx.Client, url: str) -> None:
    """The page in the learner's browser: their visitor cookie."""
    value = learner.cookies[COOKIE]
    page.context.add_cookies([{"name": COOKIE, "value": value, "url": url}])


@pytest.fixture(scope="module")
def circuit(learner) -> dict:
    """Step 12's run with the step's own settings (the task Induction, its default model), 600
    steps at seed 0, the learner's: its state once done."""
    api = learner
    r = api.post("/api/train", json={"task": "induction", "opt": {"steps": 600, "seed": 0},
                                     "checkpoints": 2})  # fmt: skip
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    with api.stream("GET", f"/api/train/{run_id}/events", timeout=300) as events:
        for line in events.iter_lines():
            if line == "event: end":
                break
    state = api.get(f"/api/train/{run_id}").json()
    assert state["state"] == "done", state["reason"]
    return state


def test_steps_12_and_13_links_open_the_head_the_cell_and_the_answers(
    page, browser, live_server, api, circuit, learner
):
    """The learner's own run answered in their page (Done); the teacher, in a browser of their
    own, sees the same answers on it, each task passed there shown, not done: the run is the
    learner's, and the step says so (issue 41)."""
    run, run_id = circuit, circuit["id"]
    as_learner(page, learner, live_server)
    induction = torch.tensor(run["variants"][0]["induction"])
    il, ih = divmod(int(induction.argmax()), induction.shape[1])
    assert il == 1  # the induction head is in layer 2
    score = float(induction[il, ih])
    # The learner found the previous-token head earlier (the walk's case), then shows the
    # induction head: task 2 is done, and task 1's words ask to keep that head shown.
    page.add_init_script(progress(induction=["previous-token-head"]))
    page.add_init_script(path=str(AXE))
    learn_open(page, "induction",
               lambda: page.goto(f"{live_server}/#learn/12?train=%23train%2F{run_id}"))  # fmt: skip
    page.wait_for_function(RUN_OPEN, arg=run_id)
    page.click(f'#t-grids button.mv-cell[data-layer="{il}"][data-head="{ih}"]')
    page.wait_for_function(
        "() => document.querySelector(\"#learn-guide .learn-task[data-task='induction-head'] "
        "[data-role=badge]\").textContent === 'Done' && document.documentElement.dataset.pending === '0'"
    )
    assert task_badge(page, "previous-token-head") == "Done: found earlier"
    said = task_says(page, "previous-token-head")
    head = f"layer 2, head {ih + 1}"
    # 5. Consistent with task 2, which needs this head shown: no "look at the other heads".
    assert "Look at the other heads" not in said
    assert (
        f"{head} is an induction head ({readable_against(score, 0.4, readable_weight)}; 0.4 is "
        "the mark), the head the step's "
        "other task asks for: keep it shown for that task." in said
    ), said
    # Found earlier, so done: this task's head is named, never asked for again (issue 41).
    # The score as the answer words it: "0.83", or "over 0.999" (issue 41).
    prev = re.search(r"this task's head is layer 1, head (\d+), which scores (.+?)\.$", said)
    assert prev, said
    assert "show it" not in said
    assert said.startswith("You found one earlier, so this task stays done. About the lab now: ")
    shoot(page, "links-12-found-earlier", ".learn-tasks")
    link12 = copy_link(page)
    # 4. The run is named in the address by its id (its 128 bits are what lets a link read
    # it), and nowhere on the page.
    assert train_link(link12)["run"] == run_id and train_link(link12)["at"] == f"0.{il}.{ih}"
    assert run_id not in page.evaluate(SHOWN)

    # Step 13 keeps the run; the learner opens Why this score on the induction head's repeat
    # cell, and the task is done.
    learn_open(page, "induction-circuit", lambda: page.click("#learn-guide [data-role=next]"))
    q, k = induction_cell(api, run, il, ih)
    page.wait_for_function(
        "() => document.querySelector(\"#learn-guide .learn-task[data-task='key-side']\")"
        ".dataset.state === 'todo' && document.documentElement.dataset.pending === '0'"
    )
    click_cell(page, q, k)
    page.wait_for_function(
        "() => document.querySelector(\"#learn-guide .learn-task[data-task='key-side']\")"
        ".dataset.state === 'done' && document.documentElement.dataset.pending === '0'"
    )
    says13 = task_says(page, "key-side")
    link13 = copy_link(page)
    assert train_link(link13)["cell"] == f"{q}.{k}"  # 3. the cell travels
    assert run_id not in page.evaluate(SHOWN)

    with fresh_page(browser) as (teacher, errors):
        teacher.add_init_script(path=str(AXE))
        # 3. Step 13's link: the run, the head, the cell's Why this score and the answer.
        learn_open(teacher, "induction-circuit", lambda: teacher.goto(link13))
        teacher.wait_for_function(RUN_OPEN, arg=run_id)
        teacher.wait_for_function(
            "() => document.querySelector(\"#learn-guide .learn-task[data-task='key-side']\")"
            ".dataset.state === 'shown' && document.documentElement.dataset.pending === '0'"
        )
        assert task_badge(teacher, "key-side") == "Shown"
        assert task_says(teacher, "key-side") == says13
        assert teacher.locator(SEEN).inner_text() == SEEN_RUN_BEFORE.format(n=12)
        teacher.wait_for_function("() => document.querySelector('#t-why-view').__why")
        why = teacher.evaluate(WHY)
        assert (why["layer"], why["head"], why["query"], why["key"]) == (il, ih, q, k)
        assert run_id not in teacher.evaluate(SHOWN)
        assert axe_serious(teacher) == []
        shoot(teacher, "links-13-teacher", "top")
        shoot(teacher, "links-13-teacher-why", "#t-heads-card")

        # 4, 5. Step 12's link, in a new tab: the head the learner chose; task 2 done, task 1
        # in the learner's words (without the learner's earlier finding, which is theirs).
        tab = teacher.context.new_page()
        tab.set_viewport_size(VIEWPORT)
        tab.add_init_script(path=str(AXE))
        learn_open(tab, "induction", lambda: tab.goto(link12))
        tab.wait_for_function(RUN_OPEN, arg=run_id)
        tab.wait_for_function(ANSWERED, arg="previous-token-head")
        assert task_badge(tab, "induction-head") == "Shown"
        assert task_badge(tab, "previous-token-head") == "Not yet"
        assert tab.locator(SEEN).inner_text() == SEEN_RUN
        assert task_says(tab, "previous-token-head") == said.split("About the lab now: ", 1)[1]
        assert run_id not in tab.evaluate(SHOWN)
        shoot(tab, "links-12-teacher", "top")
        # The head the words name is the previous-token head, with the number they said.
        ph, weight = int(prev.group(1)) - 1, prev.group(2)
        tab.click(f'#t-grids button.mv-cell[data-layer="0"][data-head="{ph}"]')
        # The teacher's choice of a head on the learner's run: still the learner's run.
        tab.wait_for_function(
            "() => document.querySelector(\"#learn-guide .learn-task[data-task='previous-token-head']\")"
            ".dataset.state === 'shown' && document.documentElement.dataset.pending === '0'"
        )
        assert f"a mean weight of {weight}." in task_says(tab, "previous-token-head")
        assert axe_serious(tab) == []
        assert errors == []

    # Each task done with its own head: the learner, back on step 12, does task 1 with the
    # previous-token head, then task 2 with the induction head; the link carries the head task 1
    # was done with (`found=`) beside the head in view (`at=`), and the teacher, in a browser of
    # their own, sees both tasks done, each checked on its own head of the run.
    learn_open(page, "induction", lambda: page.click("#learn-guide [data-role=prev]"))
    page.click(f'#t-grids button.mv-cell[data-layer="0"][data-head="{ph}"]')
    page.wait_for_function(
        "() => document.querySelector(\"#learn-guide .learn-task[data-task='previous-token-head'] "
        "[data-role=badge]\").textContent === 'Done' && document.documentElement.dataset.pending === '0'"
    )
    said1 = task_says(page, "previous-token-head")
    page.click(f'#t-grids button.mv-cell[data-layer="{il}"][data-head="{ih}"]')
    page.wait_for_function(
        "() => document.querySelector(\"#learn-guide .learn-task[data-task='induction-head'] "
        "[data-role=badge]\").textContent === 'Done' && document.documentElement.dataset.pending === '0'"
    )
    said2 = task_says(page, "induction-head")
    both = copy_link(page)
    assert train_link(both)["at"] == f"0.{il}.{ih}"
    assert parse_qs(urlsplit(both).fragment.split("?", 1)[1])["found"] == [
        f"previous-token-head:0.0.{ph}"
    ]
    with fresh_page(browser) as (teacher, errors):
        teacher.add_init_script(path=str(AXE))
        learn_open(teacher, "induction", lambda: teacher.goto(both))
        teacher.wait_for_function(RUN_OPEN, arg=run_id)
        teacher.wait_for_function(
            """() => [...document.querySelectorAll('#learn-guide .learn-task [data-role=badge]')]
              .every((b) => b.textContent === 'Shown') && document.documentElement.dataset.pending === '0'"""
        )
        assert task_badge(teacher, "previous-token-head") == "Shown"
        assert task_badge(teacher, "induction-head") == "Shown"
        assert teacher.locator(SEEN).inner_text() == SEEN_RUN
        # Each task in the words of its own head's check, as the learner read them there.
        assert task_says(teacher, "previous-token-head") == said1
        assert task_says(teacher, "induction-head") == said2
        assert run_id not in teacher.evaluate(SHOWN)
        assert axe_serious(teacher) == []
        shoot(teacher, "links-12-teacher-both", "top")
        shoot(teacher, "links-12-teacher-both-tasks", ".learn-tasks")
        assert errors == []


def test_step_12_names_the_head_the_learner_found_not_the_strongest(
    page, live_server, api, circuit, learner
):
    """Issue 41 (walk 41e, step 12): the learner does task 1 with a previous-token head that is
    not the strongest (the walk's layer 1, head 1, beside head 4), then shows the induction head:
    task 1, found earlier, names the head they found, with the number its own answer gave, never
    the strongest (the page tells the check which head each task was found with)."""
    run_id = circuit["id"]
    induction = torch.tensor(circuit["variants"][0]["induction"])
    H = induction.shape[1]
    il, ih = divmod(int(induction.argmax()), H)

    def tasks(layer: int, head: int) -> dict[str, dict]:
        view = {"variant": 0, "layer": layer, "head": head}
        r = api.post("/api/learn/induction/check", json={"run": run_id, "view": view})
        assert r.status_code == 200, r.text
        return {t["id"]: t for t in r.json()["tasks"]}

    # The heads of layer 1 that pass task 1, and the one the words name when none is known.
    passing = [h for h in range(H) if tasks(0, h)["previous-token-head"]["done"]]
    plain = tasks(il, ih)["previous-token-head"]["says"]
    strongest = int(re.search(r"this task's head is layer 1, head (\d+),", plain)[1]) - 1
    mine = next(h for h in passing if h != strongest)

    as_learner(page, learner, live_server)  # the learner's own run
    page.add_init_script(progress(induction=["previous-token-head"]))
    learn_open(page, "induction",
               lambda: page.goto(f"{live_server}/#learn/12?train=%23train%2F{run_id}"))  # fmt: skip
    page.wait_for_function(RUN_OPEN, arg=run_id)
    page.click(f'#t-grids button.mv-cell[data-layer="0"][data-head="{mine}"]')
    page.wait_for_function(
        "() => document.querySelector(\"#learn-guide .learn-task[data-task='previous-token-head'] "
        "[data-role=badge]\").textContent === 'Done' && document.documentElement.dataset.pending === '0'"
    )
    weight = re.search(r"a mean weight of (.+?)\. ", task_says(page, "previous-token-head"))[1]
    page.click(f'#t-grids button.mv-cell[data-layer="{il}"][data-head="{ih}"]')
    page.wait_for_function(
        "() => document.querySelector(\"#learn-guide .learn-task[data-task='induction-head'] "
        "[data-role=badge]\").textContent === 'Done' && document.documentElement.dataset.pending === '0'"
    )
    assert task_badge(page, "previous-token-head") == "Done: found earlier"
    said = task_says(page, "previous-token-head")
    assert said.startswith("You found one earlier, so this task stays done. About the lab now: ")
    assert said.endswith(
        f"; this task's head, found earlier, is layer 1, head {mine + 1}, which scores {weight}."
    ), said
    assert f"layer 1, head {strongest + 1}" not in said
    shoot(page, "links-12-found-head", ".learn-tasks")


# ---- coming back to a train step: the run trained for it -------------------------------------


def test_coming_back_to_a_train_step_reopens_the_run_trained_for_it(page, live_server):
    """Issue 41: a learner back at a train step sees the run they trained for it, answered on it
    (never the run of the step they come from, which stays in the Train tab as they go): from
    another train step, and in a new tab; its link carries it. Two tiny runs of the learner's
    own, trained through the page's fetch: one for step 11 (reverse), one for step 12
    (induction)."""
    page.add_init_script(path=str(AXE))
    page.goto(f"{live_server}/")
    page.wait_for_function("() => +(document.documentElement.dataset.traces || 0) > 0")
    induction = page.evaluate(TRAIN_TINY)
    reverse = page.evaluate(TRAIN_TINY.replace("task: 'induction'", "task: 'reverse'"))
    steps = {
        s["id"]: s
        for s in page.evaluate("() => fetch('/api/learn').then((r) => r.json())")["steps"]
    }
    t11 = steps["encoder-decoder"]["tasks"][0]["id"]
    t12 = steps["induction"]["tasks"][0]["id"]

    learn_open(page, "encoder-decoder", lambda: page.goto(f"{live_server}/#learn/11"))
    page.wait_for_function(RUN_OPEN, arg=reverse)
    page.wait_for_function(ANSWERED, arg=t11)
    # Step 12 next: its own run replaces step 11's in the lab, answered on it.
    learn_open(page, "induction", lambda: page.goto(f"{live_server}/#learn/12"))
    page.wait_for_function(RUN_OPEN, arg=induction)
    page.wait_for_function(ANSWERED, arg=t12)
    assert "was trained in step" not in page.locator("#learn-guide").inner_text()
    assert train_link(copy_link(page))["run"] == induction
    # Back to step 11: its run again, not step 12's.
    learn_open(page, "encoder-decoder", lambda: page.goto(f"{live_server}/#learn/11"))
    page.wait_for_function(RUN_OPEN, arg=reverse)
    page.wait_for_function(ANSWERED, arg=t11)
    assert page.locator("#learn-guide [data-role=problem]").is_hidden()
    assert train_link(copy_link(page))["run"] == reverse
    assert reverse not in page.evaluate(SHOWN) and induction not in page.evaluate(SHOWN)
    assert axe_serious(page) == []
    shoot(page, "learn-returned-11", "top")
    # A new tab (nothing in its Train tab): step 12's run.
    tab = page.context.new_page()
    tab.set_viewport_size(VIEWPORT)
    learn_open(tab, "induction", lambda: tab.goto(f"{live_server}/#learn/12"))
    tab.wait_for_function(RUN_OPEN, arg=induction)
    tab.wait_for_function(ANSWERED, arg=t12)
    tab.close()
