"""Learn step 13 (induction-circuit) and the Train tab's Why this score, in Chromium, on an
induction run trained in the page: step 12's run stays in view when step 13 opens (it continues
it); a click on the induction head's repeat cell in the heads card's large heatmap opens Why
this score under it, whose numbers sum to the trace's score there (read through the API), and
the step's task is done with the API's own answer; at an earlier checkpoint the panel says its
numbers are the trained model's; Enter on a cell through the keyboard path opens another; axe
finds nothing serious with the panel open; then the run as the Train tab shows it
(``test_train.watch_the_head_form``). Screenshots at 1280 and 480 px (test-artifacts/circuit-*.png,
or $CIRCUIT_SHOTS)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import torch

from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    VIEWPORT,
    axe_serious,
    learn_open,
    snap,
    train_from_form,
)
from tests.browser.test_train import watch_the_head_form
from tests.support.oracles import readable

SHOTS = Path(os.environ.get("CIRCUIT_SHOTS", ARTIFACTS))


def induction_cell(api, run: dict, layer: int, head: int) -> tuple[int, int]:
    """The cell step 13 names and marks, from the head's own weights on the probe (read through
    the API): a letter of the repeat whose largest weight is on the letter after its first
    occurrence (issue 41: not one where the head looks elsewhere), the probe's query where it
    is one, else the one with the most weight there."""
    probe = run["probe"]
    n = (len(probe["tokens"]) + 1) // 2
    r = api.post("/api/trace", json={"model": run["id"], "text": probe["text"]},
                 params={"fields": "attentions", "layer": layer, "head": head})  # fmt: skip
    w = torch.tensor(r.json()["attentions"][0][0], dtype=torch.float64)
    wins = [q for q in range(n, 2 * n - 1) if int(w[q, : q + 1].argmax()) == q - n + 1]
    assert wins, w
    q = probe["query"] if probe["query"] in wins else max(wins, key=lambda q: w[q, q - n + 1])
    return q, q - n + 1


STEPS = "600"  # the circuit has formed by then (tests/learn/test_circuit.py), at seed 0

WHY = """() => { const box = document.querySelector('#t-why-view'), w = box.__why;
  if (!w) return null;
  const a = w.attribution, N = a.components.length;
  return {layer: a.layer, head: a.head, query: a.query, key: a.key, score: a.score,
    names: a.components.map((c) => c.name),
    matrix: Array.from({length: N}, (_, i) => Array.from(a.matrix.data.subarray(i * N, (i + 1) * N))),
    text: box.querySelector('.why-score').textContent,
    pairs: [...box.querySelectorAll('.why-pairs li')].map((li) => li.textContent)}; }"""

TASK_ANSWERED = """([task, old]) => {
  const e = document.querySelector(`#learn-guide .learn-task[data-task='${task}']`);
  const says = (e?.querySelector('[data-role=says]')?.textContent ?? '').trim();
  return e && e.dataset.state !== 'unchecked' && says !== old && !/Still training/.test(says)
    && document.documentElement.dataset.pending === '0'; }"""


def drawn(page) -> int:
    return int(page.evaluate("+(document.querySelector('#t-why-view').dataset.drawn || 0)"))


def says(page, task: str) -> str:
    got = page.locator(f'#learn-guide .learn-task[data-task="{task}"] [data-role="says"]')
    return (got.text_content() or "").strip()


def state(page, task: str) -> str | None:
    return page.locator(f'#learn-guide .learn-task[data-task="{task}"]').get_attribute("data-state")


def click_cell(page, i: int, j: int) -> None:
    at = page.evaluate(
        """([i, j]) => { const root = document.querySelector('#t-large .hc');
          const g = root.__heat.geometry, canvas = root.querySelector('canvas');
          canvas.scrollIntoView({block: 'center'});
          const r = canvas.getBoundingClientRect();
          return {x: r.left + g.left + (j + 0.5) * g.cell, y: r.top + g.top + (i + 0.5) * g.cell}; }""",
        [i, j],
    )
    page.mouse.click(at["x"], at["y"])


def answer(api, step: str, run: str, view: dict) -> dict:
    r = api.post(f"/api/learn/{step}/check", json={"run": run, "view": view})
    assert r.status_code == 200, r.text
    return r.json()["tasks"][0]


def api_says_choose(api, step: str, run: str) -> bool:
    """What the check says of the view's first head (layer 1, head 1): not the induction head,
    and where the one is."""
    got = answer(api, step, run, {"variant": 0, "layer": 0, "head": 0})
    return "as an induction head (0.4 is the mark): choose layer 2" in got["says"]


def test_step_13_reads_the_induction_heads_key_side_on_the_learners_run(page, live_server, api):
    steps = api.get("/api/learn").json()["steps"]
    by_id = {s["id"]: s for s in steps}
    ind, circuit = by_id["induction"], by_id["induction-circuit"]
    assert circuit["n"] == ind["n"] + 1 and circuit["continues"] == "induction"
    task = circuit["tasks"][0]["id"]
    page.add_init_script(path=str(AXE))

    # Step 12: train the induction run in the page (600 steps, seed 0).
    learn_open(page, ind["id"], lambda: page.goto(f"{live_server}/#learn/{ind['n']}"))
    train_from_form(page, STEPS)
    run_id = page.locator("#t-run-card").get_attribute("data-run")
    run = api.get(f"/api/train/{run_id}").json()
    assert run["state"] == "done"

    # Step 13 keeps that run in view and checks it (it continues step 12): no "press Train".
    learn_open(page, circuit["id"], lambda: page.click("#learn-guide [data-role=next]"))
    assert page.locator("#t-run-card").get_attribute("data-run") == run_id
    assert page.locator("#learn-guide [data-role=problem]").is_hidden()
    page.wait_for_function(
        "t => document.querySelector(`#learn-guide .learn-task[data-task='${t}']`).dataset.state"
        " === 'todo' && document.documentElement.dataset.pending === '0'",
        arg=task,
    )
    # Answered, but not yet tried in this step: the question alone (issue 41), and no verdict.
    assert says(page, task) == ""
    assert api_says_choose(api, circuit["id"], run_id)
    # The panel says what to do, and draws nothing yet.
    assert "Click a cell of the large heatmap" in page.locator("#t-why-hint").text_content()
    assert page.locator("#t-why-view .why").count() == 0

    # The induction head (the run's best), then its repeat cell: the repeat's first letter on
    # the letter after its first occurrence.
    scores = torch.tensor(run["variants"][0]["induction"])
    layer, head = divmod(int(scores.argmax()), scores.shape[1])
    assert layer == 1
    old = says(page, task)
    page.click(f'#t-grids button.mv-cell[data-layer="{layer}"][data-head="{head}"]')
    page.wait_for_function(TASK_ANSWERED, arg=[task, old])
    assert says(page, task).startswith(f"Open Why this score on layer 2, head {head + 1}")
    probe = run["probe"]
    q, k = induction_cell(api, run, layer, head)
    # The cell the answer names is marked on the large heatmap (issue 41: most of its tokens
    # are unlabelled at this size).
    page.wait_for_function(
        "c => JSON.stringify(document.querySelector('#t-large .hc').__heat.target) === c",
        arg=f"[{q},{k}]",
    )
    snap(page.locator("#t-heads-card"), path=str(ARTIFACTS / "circuit-target-1280.png"))
    # Where the heatmap labels only every k-th token of the probe, its summary names each token
    # with its position too (issue 41: "y → t" named a token with no label); where it labels
    # every token, the labels alone (describe.test.mjs checks the words).
    every = page.evaluate("() => document.querySelector('#t-large .hc').__heat.every")
    said = page.locator("#t-large .plot-summary").text_content()
    named = re.search(r"\S+ \(\d+\) → \S+ \(\d+\) ", said)
    assert (every > 1) == bool(named), (every, said)
    before, old = drawn(page), says(page, task)
    click_cell(page, q, k)
    page.wait_for_function("n => +(document.querySelector('#t-why-view').dataset.drawn || 0) > n",
                           arg=before)  # fmt: skip
    page.wait_for_function(TASK_ANSWERED, arg=[task, old])
    got = page.evaluate(WHY)
    assert (got["layer"], got["head"], got["query"], got["key"]) == (layer, head, q, k)
    # The panel's numbers are the trace's: the cells sum to the score at that cell.
    r = api.post("/api/trace", json={"model": run_id, "text": probe["text"]},
                 params={"fields": "scores", "layer": layer, "head": head, "query": q})  # fmt: skip
    score = r.json()["scores"][0][0][0][k]
    assert abs(sum(map(sum, got["matrix"])) - score) < 1e-4 and abs(got["score"] - score) < 1e-4
    assert got["names"][:1] == ["embed"] and "L0.H" in " ".join(got["names"])
    assert got["text"].startswith(f"layer 2 head {head + 1}, query ")
    assert any("a previous-token head" in p for p in got["pairs"]), got["pairs"]
    # The step's task is done, with the API's answer for that very view.
    theirs = answer(api, circuit["id"], run_id,
                    {"variant": 0, "layer": layer, "head": head, "query": q, "key": k})  # fmt: skip
    assert theirs["done"] and state(page, task) == "done"
    assert says(page, task).strip() == theirs["says"]
    assert (
        f"the winning key. Of the score {readable(got['score'])} of layer 2, head {head + 1}"
        in (theirs["says"])
    )
    assert "the most of any part: it is a previous-token head" in theirs["says"]
    note = page.locator("#t-why-note").text_content()
    assert note.startswith("The trained model's numbers, at step 600")
    assert axe_serious(page) == []
    shots(page)

    # At an earlier checkpoint the heatmap is that step's; the panel says its numbers are the
    # trained model's.
    before = drawn(page)
    page.evaluate(
        "() => { const s = document.getElementById('t-checkpoint'); s.value = '0';"
        " s.dispatchEvent(new Event('input')); }"
    )
    page.wait_for_function("n => +(document.querySelector('#t-why-view').dataset.drawn || 0) > n",
                           arg=before)  # fmt: skip
    assert page.locator("#t-why-note").text_content() == (
        "The heatmap shows step 0; these numbers are the trained model's, at step 600."
    )
    assert page.evaluate(WHY)["score"] == got["score"]

    # Enter on a cell through the heatmap's keyboard path (the cursor starts at (0, 0)).
    canvas = page.locator("#t-large canvas")
    assert "Enter opens Why this score for that cell" in canvas.get_attribute("aria-label")
    canvas.focus()
    for _ in range(q + 1):
        page.keyboard.press("ArrowDown")
    for _ in range(k + 1):
        page.keyboard.press("ArrowRight")
    before = drawn(page)
    page.keyboard.press("Enter")
    page.wait_for_function("n => +(document.querySelector('#t-why-view').dataset.drawn || 0) > n",
                           arg=before)  # fmt: skip
    again = page.evaluate(WHY)
    assert (again["query"], again["key"]) == (q + 1, k + 1)

    # The run in the Train tab (it stays in view there): the head formed, its checkpoints, the
    # model opened in sentence mode (the suite's one induction run trained in the page).
    page.click("#mode-train")
    page.wait_for_function(
        "id => document.documentElement.dataset.mode === 'train'"
        " && document.getElementById('t-run-card').dataset.run === id",
        arg=run_id,
    )
    watch_the_head_form(page, api, run)


def shots(page) -> None:
    """The step's guide and the heads card with the panel open, at 1280 and 480 px."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 480):
        page.set_viewport_size({"width": width, "height": VIEWPORT["height"]})
        page.wait_for_timeout(700)  # the views redraw to the new width
        snap(page.locator("#learn-guide"), path=str(SHOTS / f"circuit-guide-{width}.png"))
        page.locator("#t-heads-card").scroll_into_view_if_needed()
        snap(page.locator("#t-heads-card"), path=str(SHOTS / f"circuit-why-{width}.png"))
    page.set_viewport_size(VIEWPORT)
    page.wait_for_timeout(700)
