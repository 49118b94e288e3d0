"""What a newcomer tripped on (issue 28, item 5, points 9-12), each in Chromium: the layout (a
note that scrolls with the cards, cell numbers that fit their cells, titles that fit their plots,
a note said once, a header that keeps its height), byte tokens drawn visibly, step 1's answer in
one line, and the article's tables recomputed from the learner's table. Each test leaves
screenshots at 1280 and 480 px in test-artifacts/ (look-<point>-<width>.png)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from attnviz.presets import APPLE_X
from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    VIEWPORT,
    act,
    answered,
    axe_serious,
    learn_open,
    open_sentence,
    snap,
    traces_drawn,
    wait_for_trace,
)
from tests.browser.helpers import (
    shoot as shoot_at,
)
from tests.browser.recurrent_card import check_done_card

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

SHOWCASE = "The animal didn't cross the street because it was too tired"

# ---- 9. layout -----------------------------------------------------------------------------


def shoot(page, name: str, selector: str | None = None) -> list[str]:
    """Screenshots look-<name>-1280.png and -480.png (``helpers.shoot``)."""
    return shoot_at(page, f"look-{name}", selector)


def test_the_token_note_scrolls_away_and_never_covers_a_cards_controls(page, live_server):
    open_sentence(page, live_server + "/", SHOWCASE)
    act(page, lambda: page.check("#s-hide-special"))
    assert page.locator("#s-note").is_visible()
    # Scroll until the model view's pickers are at the top of the window: what is drawn there
    # is the picker itself, not the note over it.
    for width in (1280, 480):
        page.set_viewport_size({"width": width, "height": VIEWPORT["height"]})
        page.wait_for_timeout(500)
        on_top = page.evaluate(
            """() => {
              const picker = document.querySelector('#model-view-card .pickers label');
              const r = picker.getBoundingClientRect();
              window.scrollBy(0, r.top - 4);
              const s = picker.getBoundingClientRect();
              const hit = document.elementFromPoint(s.left + s.width / 2, s.top + s.height / 2);
              return picker.contains(hit) ? 'picker' : hit.id || hit.className;
            }"""
        )
        assert on_top == "picker", width
    page.set_viewport_size(VIEWPORT)
    shoot(page, "9a-note-scrolls", "#model-view-card")


# Each written cell text of a Plotly heatmap, its box and the box of its cell (from the axes).
CELL_TEXTS = """id => {
  const el = document.getElementById(id), size = el._fullLayout._size;
  const n = el.data[0].z.length, w = size.w / n, h = size.h / n;
  const box = el.querySelector('.nsewdrag').getBoundingClientRect();
  return {cell: {w, h}, font: el.dataset.cellFont, texts: [...el.querySelectorAll('.annotation-text')]
    .map((t) => { const r = t.getBoundingClientRect();
      return {text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
              col: Math.floor((r.left + r.width / 2 - box.left) / w),
              row: Math.floor((r.top + r.height / 2 - box.top) / h)}; })};
}"""


def assert_cells_fit(page, plot: str) -> dict:
    """No cell's number runs into its neighbour's: each written text lies inside its cell."""
    found = page.evaluate(CELL_TEXTS, plot)
    w = found["cell"]["w"]
    for t in found["texts"]:
        assert t["right"] - t["left"] <= w, (plot, t, w)
    by_row: dict[int, list[dict]] = {}
    for t in found["texts"]:
        by_row.setdefault(t["row"], []).append(t)
    for row in by_row.values():
        row.sort(key=lambda t: t["left"])
        for a, b in zip(row, row[1:], strict=False):
            assert a["right"] <= b["left"], (plot, a, b)
    return found


def test_step_3s_small_heatmaps_fit_their_numbers_and_titles(page, live_server):
    page.add_init_script(path=str(AXE))
    steps = page.request.get(live_server + "/api/learn").json()["steps"]
    step = next(s for s in steps if s["n"] == 3)
    learn_open(page, step["id"], lambda: page.goto(f"{live_server}/#learn/3"))
    for width in (1280, 480):
        page.set_viewport_size({"width": width, "height": VIEWPORT["height"]})
        page.wait_for_timeout(1200)  # the plots redraw to the new width, and fit again
        for plot in ("scores-plot", "weights-plot"):
            found = assert_cells_fit(page, plot)
            n = 6
            assert found["font"] == "0" and found["texts"] == [] or len(found["texts"]) == n * n
            # The title is whole inside its plot ("... mean entropy 1.62 nats", not "1.62 n").
            title = page.locator(f"#{plot} .gtitle")
            box, plot_box = title.bounding_box(), page.locator(f"#{plot}").bounding_box()
            assert box["x"] + box["width"] <= plot_box["x"] + plot_box["width"], (plot, width)
        assert "nats" in page.locator("#weights-plot .gtitle").text_content()
        # Every value is still on the keyboard (the live region reads the cell) and in the table.
        page.focus("#weights-plot")
        page.keyboard.press("ArrowRight")
        said = page.evaluate(
            "() => document.querySelector('#weights-plot + .plot-text .plot-live').textContent"
        )
        assert "weight 0." in said, said
    page.set_viewport_size(VIEWPORT)
    assert axe_serious(page) == []
    shoot(page, "9b-small-heatmaps", "#attention-card")


def test_the_value_weighted_note_is_said_once(page, live_server):
    open_sentence(page, live_server + "/", SHOWCASE)
    act(page, lambda: page.check('input[name="mv-measure"][value="value_weighted"]'))
    notes = page.locator("#model-view-card figure p:visible").all_text_contents()
    said = [t for t in notes if "Kobayashi" in t]
    assert len(said) == 1, notes
    shoot(page, "9d-value-weighted-once", "#model-view-card")


@pytest.mark.parametrize("width", [1280, 480])
def test_the_header_keeps_its_height_whatever_the_status_says(page, live_server, width):
    page.set_viewport_size({"width": width, "height": VIEWPORT["height"]})
    page.goto(live_server + "/")
    wait_for_trace(page, 0)
    lines = [
        "",
        "computing…",
        "n = 5, d = 3, 1 layer, 1 head",
        "saved attnviz-toy-2026-12-01T15-04-05.html: it opens offline, with no server",
        "busy, retrying in 12 s",
    ]
    seen = set()
    for text in lines:
        got = page.evaluate(
            """text => { document.getElementById('status').textContent = text;
              const h = document.querySelector('.app-header').getBoundingClientRect();
              const t = document.getElementById('mode-sentence').getBoundingClientRect();
              return [Math.round(h.height), Math.round(t.left), Math.round(t.top)]; }""",
            text,
        )
        seen.add(tuple(got))
    assert len(seen) == 1, seen
    # Moving between the modes (each with its own status) moves nothing either.
    before = traces_drawn(page)
    page.click("#mode-sentence")
    wait_for_trace(page, before)
    got = page.evaluate(
        """() => { const h = document.querySelector('.app-header').getBoundingClientRect();
          const t = document.getElementById('mode-sentence').getBoundingClientRect();
          return [Math.round(h.height), Math.round(t.left), Math.round(t.top)]; }"""
    )
    assert tuple(got) in seen
    assert page.locator("#status").get_attribute("title") == page.locator("#status").text_content()
    page.evaluate("() => window.scrollTo(0, 0)")
    ARTIFACTS.mkdir(exist_ok=True)
    snap(page, path=str(ARTIFACTS / f"look-9e-header-{width}.png"))


# ---- 11. step 1's answer in one line, the claims listed once ---------------------------------


@contextlib.contextmanager
def busy() -> Iterator[None]:
    """A process that keeps a core busy while the comparison runs: on CI's two cores, with the
    test's own work (its server, Chromium) and `make test`'s other pytest worker, more work
    than the machine has cores."""
    loop = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        loop.kill()
        loop.wait()


def test_step_1_opens_on_the_comparison_alone_and_passes_on_a_busy_machine(page, live_server, api):
    """Issue 41, 1: step 1 shows the comparison's card alone (no Train form, no Train button),
        its one button in the first screen and named by the hint; run with its default seed while
        a busy loop takes a core, its verdict is done (a time is observed, never checked)
        and said in one line; each claim is on the page once, as a sentence; the card's plots, their
    text and its claims are the server's (``recurrent_card``)."""
    page.add_init_script(path=str(AXE))
    learn_open(page, "rnn", lambda: page.goto(f"{live_server}/#learn/1"))
    for away in ("#t-run-card", "#t-start", "#t-form", "#t-heads-card", "#t-models-card"):
        assert page.locator(away).is_hidden(), away
    assert page.locator("#rc-start").is_visible()
    assert page.locator("#rc-start").inner_text() == "Run comparison"
    # The task's one action, in the first screen beside its question: the same button's name,
    # and it presses the card's.
    start = page.locator("#learn-guide .learn-task .learn-do")
    assert start.count() == 1 and start.inner_text() == "Run comparison"
    box = start.bounding_box()
    assert box and box["y"] + box["height"] <= VIEWPORT["height"], box
    # On a phone's width too: the tasks come before the step's text there.
    page.set_viewport_size({"width": 480, "height": VIEWPORT["height"]})
    box = start.bounding_box()
    assert box and box["y"] + box["height"] <= VIEWPORT["height"], box
    page.set_viewport_size(VIEWPORT)
    hint = page.locator("#learn-guide .learn-hint p").first.text_content()
    assert "Run comparison" in hint and "Start" not in hint
    # Before a run: the question only.
    assert page.locator("#learn-guide .learn-task [data-role=badge]").inner_text() == ""
    shoot(page, "41-1-step1-first-screen", "top")
    assert page.locator("#rc-seed").input_value() == "0"
    with busy():
        answered(page, lambda: start.click())
        page.wait_for_function(
            """() => document.getElementById('recurrent-card').dataset.state === 'done'
              && document.querySelector('#learn-guide .learn-task').dataset.state === 'done'""",
            timeout=300_000,
        )
    run_id = page.locator("#recurrent-card").get_attribute("data-run")
    run = api.get(f"/api/recurrent/{run_id}").json()
    checked = [c for c in run["claims"] if c["checked"]]
    assert len(checked) == 6 and all(c["holds"] for c in checked), checked
    says = page.locator("#learn-guide .learn-task [data-role=says]").inner_text()
    assert len(says.split()) <= 25, says
    assert "Why not an RNN?" in says and "measured" not in says
    # Each claim is on the page once, as its sentence: the checks marked, the times apart.
    text = page.locator("body").inner_text()
    checks_ = page.locator("#recurrent-card [data-role=checks] li").all_inner_texts()
    seen = page.locator("#recurrent-card [data-role=observed] li").all_inner_texts()
    assert len(checks_) == 6 and len(seen) == 3
    for c in run["claims"]:
        assert text.count(c["says"]) == 1, c["says"]
        assert c["claim"] not in text, c["claim"]
    assert all(i.startswith("✓") for i in checks_)
    assert all("not checked" in i for i in seen)
    # What it showed is said once too.
    assert text.count(run["shows"][:60]) == 1
    assert axe_serious(page) == []
    shoot(page, "41-1-step1-done", "top")
    shoot(page, "41-1-step1-card", "#recurrent-card")
    # The card's plots, their text and its claims, as the Train tab draws them.
    assert check_done_card(page, api)["id"] == run_id
    # Step 11 sets the comparison aside with its card, and the header no longer names it.
    assert page.locator("#status").inner_text() == "a comparison in view (Why not an RNN?)"
    learn_open(page, "encoder-decoder", lambda: page.goto(f"{live_server}/#learn/11"))
    assert page.locator("#recurrent-card").is_hidden()
    assert page.locator("#status").inner_text() == "nothing trained yet"


# ---- 12. the article's tables follow the learner's table ------------------------------------

ARTICLE = """() => [...document.querySelectorAll('#learn-guide figure.learn-table')].map((f) => ({
  source: f.dataset.source, note: f.querySelector('figcaption').textContent,
  heads: [...f.querySelectorAll('tr.engine-row th.source')].map((t) => t.textContent),
  engine: [...f.querySelectorAll('tr.engine-row')].map((r) =>
    [...r.querySelectorAll('td')].map((d) => d.firstChild.textContent)),
}))"""


def test_the_articles_tables_are_recomputed_from_the_learners_table(page, live_server, api):
    page.add_init_script(path=str(AXE))
    steps = api.get("/api/learn").json()["steps"]
    step = next(s for s in steps if s["id"] == "worked-example")
    learn_open(page, step["id"], lambda: page.goto(f"{live_server}/#learn/{step['n']}"))
    tables = page.evaluate(ARTICLE)
    assert len(tables) == 3
    # Edit apple's fruit: every engine row is now the learner's table's, by hand.
    x = np.array(APPLE_X)
    x[1, 1] = 0.2
    answered(
        page,
        lambda: page.locator('#embeddings input[data-kind="value"][data-r="1"][data-c="1"]').fill(
            "0.2"
        ),
    )
    page.wait_for_function(
        "() => document.querySelector('#learn-guide figure.learn-table').dataset.source === 'live'"
    )
    weights_t, before_after, gap = page.evaluate(ARTICLE)
    assert all(
        t["heads"] == ["your table"] * len(t["heads"]) for t in (weights_t, before_after, gap)
    )
    scores = x @ x.T / np.sqrt(3)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    after = w @ x
    assert weights_t["engine"][0] == [f"{v:.2f}" for v in w[1]]
    assert before_after["engine"][1] == [f"{v:.2f}" for v in after[1]]
    assert gap["engine"][0] == [
        f"{np.linalg.norm(x[1] - x[4]):.3f}",
        f"{np.linalg.norm(after[1] - after[4]):.3f}",
    ]
    assert "recomputed" in weights_t["note"]
    assert page.locator("#learn-guide figure.learn-table td.differs").count() > 0  # changed
    assert axe_serious(page) == []
    shoot(page, "12-article-live", "#learn-guide [data-role=article]")
    # A token renamed: the table is no longer the article's case, and the tables say so.
    answered(
        page, lambda: page.locator('#embeddings input[data-kind="label"][data-r="1"]').fill("pear")
    )
    page.wait_for_function(
        "() => document.querySelector('#learn-guide figure.learn-table').dataset.source === 'kept'"
    )
    kept = page.evaluate(ARTICLE)
    assert all("the article's case" in t["note"] for t in kept)
    assert [t["engine"] for t in kept] == [t["engine"] for t in tables]  # the step's own again
    shoot(page, "12-article-kept", "#learn-guide [data-role=article]")


# ---- 10. byte tokens drawn visibly, the same in every view -----------------------------------

BYTES = "I  sat\non\x06 the bank"
GPT2 = "tiny-gpt2"


def test_spaces_newlines_and_bytes_are_drawn_visibly_in_every_view(page, live_server, api):
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/")
    before = traces_drawn(page)
    page.select_option("#s-model", GPT2)
    wait_for_trace(page, before)
    before = traces_drawn(page)
    page.fill("#s-text", BYTES)
    wait_for_trace(page, before)
    tokens = api.post("/api/trace", json={"model": GPT2, "text": BYTES}).json()["tokens"]
    assert " " in tokens and "\n" in tokens and any("\x06" in t for t in tokens), tokens
    space, newline = tokens.index(" "), tokens.index("\n")

    # The logit lens: no column is headed by a blank, and the space's column reads "␣".
    act(page, lambda: page.select_option("#qk-query", str(space)))
    heads = page.locator("#lens-view .lens-col").all_text_contents()
    assert all(h.split(". ", 1)[1].strip() for h in heads), heads
    assert f"{space + 1}. ␣" in heads
    # "The text continues with ..." names the token after the query, never a blank “ ”.
    act(page, lambda: page.select_option("#qk-query", str(space - 1)))
    said = page.locator("#lens-view .lens-next").text_content()
    assert "“ ”" not in said and "“␣” (space)" in said, said
    top = page.locator("#lens-view .lens-top-token").all_text_contents()
    assert all(t.strip("“”").strip() for t in top), top

    # The model view's large heatmap draws and reads them; the query picker lists them.
    drawn = page.evaluate("() => document.querySelector('#mv-large .hc').__heat.drawn.labels")
    assert "␣" in drawn and "⏎" in drawn and any("<0x06>" in t for t in drawn), drawn
    assert not any(ch in t for t in drawn for ch in " \n\x06"), drawn
    options = page.locator("#qk-query option").all_text_contents()
    assert f"{space + 1}. ␣" in options and f"{newline + 1}. ⏎" in options, options
    # The head view's tokens, and their names for a screen reader.
    hv = page.locator("#head-view .hv-left .hv-token").all_text_contents()
    assert "␣" in hv and "⏎" in hv, hv
    names = page.locator("#head-view .hv-left .hv-token").evaluate_all(
        "ts => ts.map((t) => t.getAttribute('aria-label'))"
    )
    assert any(n.startswith("query space") for n in names), names
    assert any(n.startswith("query newline") for n in names), names
    # The large heatmap's keyboard cursor says "space", not a blank.
    page.focus("#mv-large canvas")
    for _ in range(space):
        page.keyboard.press("ArrowDown")
    live = page.evaluate("() => document.querySelector('#mv-large .plot-live').textContent")
    assert live.startswith("space →"), live
    # Nothing in the page's text is a control character (a tofu box).
    text = page.locator("#sentence-mode").inner_text()
    assert "\x06" not in text
    assert axe_serious(page) == []
    shoot(page, "10-lens-bytes", "#lens-card")
    shoot(page, "10-model-bytes", "#model-view-card")
    shoot(page, "10-head-bytes", "#head-view-card")
    shoot(page, "10-qk-bytes", "#qk-card")
