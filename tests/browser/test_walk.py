"""What a newcomer tripped on (issue 28, item 5, points 1-7), each in Chromium: the large
heatmap frames the query shown, the Learn steps speak of the run in view, *Show this head* sets
its row too, a page left open drops a model the server no longer has, the knock-out's patch
source recomputes as the text does, and the head atlas opens on a score that varies. Each test
leaves screenshots at 1280 and 480 px in test-artifacts/ (walk-<point>-<width>.png)."""

from __future__ import annotations

import pytest

from tests.browser.helpers import (
    act,
    checks,
    learn_open,
    open_sentence,
    train_from_form,
    views_drawn,
    wait_for_views,
)
from tests.browser.helpers import (
    shoot as shoot_at,
)

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

TEXT = "I sat on the river bank"
SHOWCASE = "The animal didn't cross the street because it was too tired"

# Which rows of the model view's large heatmap are framed: a row is framed when the pixel on
# the plot's left edge, half a cell down the row, is the frame's colour (theme.js TEXT), not the
# heatmap's. Read from the canvas itself, as the reader sees it.
FRAMED_ROWS = """() => {
  const root = document.querySelector('#mv-large .hc');
  const g = root.__heat.geometry, canvas = root.querySelector('canvas');
  const ctx = canvas.getContext('2d'), dpr = canvas.width / canvas.clientWidth;
  const rows = root.__heat.rowLabels.length, framed = [];
  for (let i = 0; i < rows; i++) {
    const x = Math.floor(g.left * dpr) + 0, y = Math.floor((g.top + (i + 0.5) * g.cell) * dpr);
    const [r, gr, b] = ctx.getImageData(x, y, 1, 1).data;
    if (r === 0x1d && gr === 0x23 && b === 0x30) framed.push(i);
  }
  return framed;
}"""


def shoot(page, name: str, selector: str | None = None) -> list[str]:
    """Screenshots walk-<name>-1280.png and -480.png (``helpers.shoot``)."""
    return shoot_at(page, f"walk-{name}", selector)


# ---- 1. the large heatmap frames the query shown ---------------------------------------------


def test_the_large_heatmap_frames_the_query_the_query_key_view_shows(page, live_server):
    open_sentence(page, live_server + "/", TEXT)
    labels = page.evaluate("() => document.querySelector('#mv-large .hc').__heat.rowLabels")
    assert labels[:7] == ["[CLS]", "i", "sat", "on", "the", "river", "bank"]
    assert page.evaluate(FRAMED_ROWS) == [1]  # the first ordinary token, "i"
    # Pick "river" in the query-key view: the large heatmap frames its row, and only its row,
    # at once (not on some later redraw).
    act(page, lambda: page.select_option("#qk-query", "5"))
    assert page.evaluate(FRAMED_ROWS) == [5]
    # A row clicked in the large heatmap itself, then another head: the frame follows.
    act(page, lambda: page.select_option("#qk-query", "2"))
    assert page.evaluate(FRAMED_ROWS) == [2]
    act(page, lambda: page.click('#mv-grid button.mv-cell[data-layer="2"][data-head="4"]'))
    assert page.evaluate(FRAMED_ROWS) == [2]
    shoot(page, "1-query-frame", "#model-view-card")


# ---- 2. the Learn steps speak of the run in view ---------------------------------------------


def train_in_page(page, steps: str, after: str = "") -> str:
    """Train from the form for `steps` steps; wait until the run has ended and the step's
    answer is in; the run's id."""
    train_from_form(page, steps, after)
    page.wait_for_function(
        """() => { const tasks = [...document.querySelectorAll('#learn-guide .learn-task')];
          return tasks.every((e) => e.dataset.state !== 'unchecked' && !/Still training/.test(e.textContent))
            && document.documentElement.dataset.pending === '0'; }"""
    )
    return page.evaluate("() => document.getElementById('t-run-card').dataset.run")


def look_chips(page) -> list[str]:
    return page.locator("#learn-guide [data-role=look] button").all_text_contents()


def test_a_learn_step_never_judges_the_previous_steps_run(page, live_server, api):
    steps = api.get("/api/learn").json()["steps"]
    by_id = {s["id"]: s for s in steps}
    enc, ind = by_id["encoder-decoder"], steps[by_id["encoder-decoder"]["n"]]  # steps 11, 12
    assert ind["n"] == enc["n"] + 1 and ind["lab"] == "train"
    learn_open(page, enc["id"], lambda: page.goto(f"{live_server}/#learn/{enc['n']}"))
    reverse = train_in_page(page, "20")  # step 11's run: reverse
    # Next: step 12's settings (Induction) are in the form, step 11's run still in view. The
    # step does not judge that run ("This run trains reverse: choose the task Induction", with
    # Induction chosen): it says whose run it is, and to press Train.
    learn_open(page, ind["id"], lambda: page.click("#learn-guide [data-role=next]"))
    assert page.locator("#t-task").input_value() == "induction"
    problem = page.locator("#learn-guide [data-role=problem]").text_content()
    assert f"The run in view was trained in step {enc['n']}" in problem
    assert "press Start training" in problem
    says = page.locator("#learn-guide .learn-task [data-role=says]").all_text_contents()
    assert not any("choose the task Induction" in s for s in says), says
    # The chips name the cards, never a run (the header names the one in view).
    assert look_chips(page) == ["Run", "Attention as it trains"]
    shoot(page, "2-step12-previous-run", "#learn-guide")
    # A run trained in this step is checked: its answer speaks of it, not of a task to choose.
    induction = train_in_page(page, "20", after=reverse)
    assert page.locator("#learn-guide [data-role=problem]").is_hidden()
    says = page.locator("#learn-guide .learn-task [data-role=says]").all_text_contents()
    assert says and not any("choose the task" in s for s in says), says
    assert look_chips(page) == ["Run", "Attention as it trains"]
    # The header names the run in view by what it is (issue 41), never by its id.
    title = api.get(f"/api/train/{induction}").json()["title"]
    status = page.locator("#status").text_content()
    assert status.startswith(f"{title}, ") and induction not in status
    shoot(page, "2-step12-own-run", "#learn-guide")


# ---- 3. step 3's preset note says what the lab holds ------------------------------------------


def test_a_steps_start_is_not_called_edited(page, live_server, api, presets):
    steps = api.get("/api/learn").json()["steps"]
    step = steps[2]
    assert step["toy"]["preset"] == "large-d" and step["toy"]["config"]["scale"] is True
    about = next(p for p in presets["presets"] if p["id"] == "large-d")["about"]
    assert "With the scaling off" in about and "Tick" not in about
    note = page.locator("#preset-about")
    learn_open(page, step["id"], lambda: page.goto(f"{live_server}/#learn/3"))
    # The step starts from the preset with scale on: the note says so, and not that the learner
    # edited it.
    assert page.locator("#cfg-scale").is_checked()
    assert note.text_content() == about + " Here it starts with scale on."
    # Start this step again: the same start, the same words.
    before = checks(page)
    page.click("#learn-guide [data-role=reset]")
    page.wait_for_function(
        "n => +(document.documentElement.dataset.checks || 0) > n"
        " && document.documentElement.dataset.pending === '0'",
        arg=before,
    )
    assert note.text_content() == about + " Here it starts with scale on."
    shoot(page, "3-step3-start", "section:has(#preset-about)")
    # The learner's own edits: unticked, the table is the preset's again; ticked, edited.
    before = checks(page)
    page.uncheck("#cfg-scale")
    page.wait_for_function("n => +(document.documentElement.dataset.checks || 0) > n", arg=before)
    assert note.text_content() == about
    page.check("#cfg-scale")
    page.wait_for_function(
        "() => document.getElementById('preset-about').textContent.endsWith('(You have edited it.)')"
    )


# ---- 4. Show this head sets the row it names ------------------------------------------------


def test_show_this_head_opens_the_head_on_the_row_its_note_names(page, live_server, api):
    models = api.get("/api/models").json()
    (example,) = [e for e in models["example_heads"] if e["text"] == SHOWCASE]
    assert example["query"] == "it" and 'Read the row of "it"' in example["note"]
    tokens = api.post("/api/trace", json={"model": example["model"], "text": SHOWCASE}).json()[
        "tokens"
    ]
    it = tokens.index("it")
    open_sentence(page, live_server + "/", SHOWCASE)
    assert page.locator("#qk-query").input_value() != str(it)  # the views start elsewhere
    act(page, lambda: page.click("#s-pointer-go"))
    layer, head = example["layer"], example["head"]
    cell = page.locator(f'#mv-grid button.mv-cell[data-layer="{layer}"][data-head="{head}"]')
    assert cell.evaluate("e => e === document.activeElement")
    title = page.evaluate("() => document.querySelector('#mv-large .hc-title').textContent")
    assert title == f"Layer {layer + 1}, head {head + 1}"
    assert page.locator("#qk-query").input_value() == str(it)
    assert page.evaluate(FRAMED_ROWS) == [it]
    shoot(page, "4-show-this-head", "#model-view-card")
    # Another head and query, then the knock-out switch on: *Show this head* still opens the
    # head on its row (it knocks nothing out).
    act(page, lambda: page.click('#mv-grid button.mv-cell[data-layer="0"][data-head="0"]'))
    act(page, lambda: page.select_option("#qk-query", "2"))
    page.check("#mv-knock")
    act(page, lambda: page.click("#s-pointer-go"))
    assert page.locator("#qk-query").input_value() == str(it)
    assert page.evaluate(FRAMED_ROWS) == [it]
    assert page.evaluate("() => document.querySelectorAll('#mv-grid .mv-cell.knocked').length") == 0


# ---- 5. a model the server no longer has leaves the page ---------------------------------------


def test_a_model_the_server_no_longer_has_leaves_the_picker(page, live_server, console):
    from tests.browser.helpers import MODEL, TRAIN_TINY, traces_drawn

    console.allow(r"status of 404 .*/api/trace")  # the trace of the model gone

    page.goto(live_server + "/")
    run = page.evaluate(TRAIN_TINY)  # a run of this visitor's (its cookie)
    models = page.evaluate("async () => (await (await fetch('/api/models')).json()).models")
    ((name, title, chars),) = [
        (m["name"], m["title"], m["characters"]) for m in models if m.get("run") == run
    ]
    # A text the run can read (else the page says so by the box and asks nothing of the server).
    open_sentence(page, live_server + "/", (chars * 4)[:12])
    options = lambda: page.locator("#s-model option").evaluate_all("os => os.map((o) => o.value)")  # noqa: E731
    assert name in options() and page.locator("#s-model").input_value() == MODEL
    # The run is removed while the page stays open (its owner forgets it, or it is evicted).
    gone = page.evaluate(
        f"async () => (await fetch('/api/train/{run}', {{method: 'DELETE'}})).status"
    )
    assert gone == 200
    before = traces_drawn(page)
    page.select_option("#s-model", name)
    page.wait_for_function(
        """n => document.documentElement.dataset.pending === '0'
          && (+(document.documentElement.dataset.traces || 0) > n
              || !document.getElementById('error').hidden)""",
        arg=before,
    )
    page.wait_for_function("() => document.documentElement.dataset.pending === '0'")
    # The picker is back on the model whose views are shown, the gone one is not offered, and
    # the page says plainly what happened.
    assert page.locator("#s-model").input_value() == MODEL
    assert name not in options()
    error = page.locator("#error").text_content()
    # Named as the picker named it, by what it is (issue 41), never by its id.
    assert f"The model '{title}, " in error and "is no longer on this server" in error
    assert name not in error
    assert error.endswith(f"showing {MODEL}.")
    assert page.locator("#s-model-info").text_content().startswith("BERT")
    assert traces_drawn(page) > before  # MiniLM's views drawn again, for the picker's model
    shoot(page, "5-model-gone", "top")


# ---- 6. the knock-out's patch source recomputes as it is typed ------------------------------


def test_the_patch_source_recomputes_as_it_is_typed_as_the_text_does(page, live_server, api):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    from tests.browser.helpers import select_and_wait, traces_drawn, wait_for_trace

    open_sentence(page, live_server + "/", SHOWCASE)
    select_and_wait(page, "#s-model", "tiny-gpt2")
    page.check("#mv-knock")
    before = traces_drawn(page)
    page.click('#mv-grid button.mv-cell[data-layer="1"][data-head="0"]')
    wait_for_trace(page, before)
    page.select_option("#ko-mode", "patch")
    box = page.locator("#ko-source-box")
    box.wait_for(state="visible")
    assert "follows as you type" in box.text_content()  # the card says how it behaves
    # Keys typed into the source, no Enter, the focus kept there: a new trace, as for the text.
    before = traces_drawn(page)
    page.locator("#ko-source").press_sequentially("A cat sat.")
    try:
        page.wait_for_function(
            "n => +(document.documentElement.dataset.traces || 0) > n"
            " && document.documentElement.dataset.pending === '0'",
            arg=before,
            timeout=10_000,
        )
    except PlaywrightTimeout:
        raise AssertionError("typing the patch source asked for no new trace") from None
    assert page.evaluate("() => document.activeElement.id") == "ko-source"
    body = {"model": "tiny-gpt2", "text": SHOWCASE, "ablate": [
        {"layer": 1, "head": 0, "mode": "patch", "source": "A cat sat."}]}  # fmt: skip
    patched = api.post("/api/trace", json=body).json()["ablated"][0]["patched"]
    assert f"The source text has {patched} tokens" in page.locator("#ko-note").text_content()
    # The text above follows as it is typed too (the same debounce): one rule for both.
    before = traces_drawn(page)
    page.locator("#s-text").press_sequentially(" Then")
    wait_for_trace(page, before)
    shoot(page, "6-patch-source-live", "#knock-card")


# ---- 7. the head atlas opens on a score that varies, and stays under the pointer ---------------


def spread(score: dict) -> float:
    """The standard deviation of a score's grid (views/atlas.js spread)."""
    cells = [v for row in score["grid"] for v in row]
    mean = sum(cells) / len(cells)
    return (sum((v - mean) ** 2 for v in cells) / len(cells)) ** 0.5


def test_the_atlas_opens_on_the_score_that_varies_most_and_stays_in_view(page, live_server, api):
    from tests.browser.helpers import (
        MODEL,
        traces_drawn,
        wait_for_trace,
        why_drawn,
    )

    atlas = api.get(f"/api/models/{MODEL}/atlas").json()
    varied = max(atlas["scores"], key=spread)  # the first on a tie, as max keeps it
    by_name = {s["name"]: s for s in atlas["scores"]}
    assert varied["name"] != "induction"  # an encoder's induction grid is near blank
    assert spread(varied) > 5 * spread(by_name["induction"])
    open_sentence(page, live_server + "/", TEXT)
    page.click("#atlas-go")
    page.locator("#atlas-view button.atlas-cell").nth(71).wait_for()
    assert page.locator("#atlas-score").input_value() == varied["name"]
    assert page.locator("#atlas-definition").text_content() == varied["definition"]
    shoot(page, "7-atlas-opens", "#atlas-card")
    # A click opens the head on the probe (a new text: every view redrawn, taller): the atlas
    # stays where it was under the pointer, and the focus on the cell clicked.
    cell = page.locator('#atlas-view button.atlas-cell[data-layer="1"][data-head="2"]')
    cell.scroll_into_view_if_needed()
    top = cell.evaluate("c => c.getBoundingClientRect().top")
    before, why_before = traces_drawn(page), why_drawn(page)
    cell.click()
    wait_for_trace(page, before)
    # The Why card, far above (the atlas is under More views), waits until it comes near the
    # window: nothing above the atlas grows after the views are drawn.
    assert page.evaluate(
        "() => document.getElementById('why-card').getBoundingClientRect().bottom < -200"
    )
    assert why_drawn(page) == why_before
    assert page.locator("#s-text").input_value() == atlas["probe"]["text"]
    title = page.evaluate("() => document.querySelector('#mv-large .hc-title').textContent")
    assert title == "Layer 2, head 3"
    assert abs(cell.evaluate("c => c.getBoundingClientRect().top") - top) <= 2
    assert cell.evaluate("c => c === document.activeElement")
    # Another head on the same text (no new trace): the same.
    other = page.locator('#atlas-view button.atlas-cell[data-layer="4"][data-head="7"]')
    top = other.evaluate("c => c.getBoundingClientRect().top")
    act(page, lambda: other.click())
    assert abs(other.evaluate("c => c.getBoundingClientRect().top") - top) <= 2
    assert other.evaluate("c => c === document.activeElement")
    shoot(page, "7-atlas-after-click", "#atlas-card")


ANIMAL = "The animal didn't cross the street because it was too tired"


def test_8_a_word_that_draws_a_head_is_not_called_a_sink(page, live_server, api):
    """Issue 28, 5.8: with special tokens hidden and word pieces merged, MiniLM's layer 6 head
    12 gives most of each row's weight to "animal", which the page called "an attention sink".
    A sink draws weight whatever the text ([CLS], [SEP], a first token, punctuation): the note
    names the word as what the head reads."""
    open_sentence(page, live_server + "/", ANIMAL)
    for box in ("#s-hide-special", "#s-merge-words"):
        before = views_drawn(page)
        page.check(box)
        wait_for_views(page, before)
    before = views_drawn(page)
    page.click('#mv-grid button.mv-cell[data-layer="5"][data-head="11"]')
    wait_for_views(page, before)
    sink = page.locator("#mv-sink")
    page.wait_for_function("() => !document.getElementById('mv-sink').hidden")
    text = sink.text_content()
    assert text.startswith("One token draws this head: "), text
    assert "“animal”" in text and "it is not an attention sink" in text
    shoot(page, "8-not-a-sink", "#model-view-card")
