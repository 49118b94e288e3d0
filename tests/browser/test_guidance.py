"""What a newcomer is told: why the heads changed, when RoPE does nothing, how to read each view
(reachable by keyboard), which article each preset comes from, where the API docs are (offline),
and, for the articles' sentence, a head of MiniLM where "it" attends to "animal" (measured)."""

from __future__ import annotations

import pytest

from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    MODEL,
    axe_serious,
    open_app,
    open_sentence,
    select_and_wait,
    snap,
    traces_drawn,
    views_drawn,
    wait_for_trace,
    wait_for_views,
)
from tests.browser.test_table_fit import shot

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)


def status(page) -> str:
    return page.locator("#status").text_content()


def click_and_wait(page, selector: str) -> None:
    before = traces_drawn(page)
    page.click(selector)
    wait_for_trace(page, before)


def test_the_status_line_says_why_the_heads_changed(page, live_server):
    open_app(page, live_server + "/")
    select_and_wait(page, "#cfg-heads", "3")
    assert status(page) == "n = 5, d = 3, 1 layer, 3 heads"
    click_and_wait(page, "#add-dim")
    assert page.locator("#cfg-heads").input_value() == "2"
    assert status(page) == "n = 5, d = 4, 1 layer, 2 heads · heads: 3 does not divide d = 4, now 2"
    shot(page, "heads-changed-1280.png", ".app-header")

    # Removing a dimension: 2 heads do not divide 3 either.
    click_and_wait(page, '#embeddings button[data-remove-col="3"]')
    assert status(page) == "n = 5, d = 3, 1 layer, 1 head · heads: 2 does not divide d = 3, now 1"
    # An edit that leaves the heads alone says nothing about them.
    click_and_wait(page, "#add-token")
    assert status(page) == "n = 6, d = 3, 1 layer, 1 head"


def test_rope_says_it_does_nothing_on_heads_of_one_dimension(page, live_server, api):
    open_app(page, live_server + "/")
    select_and_wait(page, "#preset", "two-heads")  # d = 4, 2 heads: d_h = 2
    note = page.locator("#cfg-positional-note")
    select_and_wait(page, "#cfg-positional", "rope")
    assert note.is_hidden()
    select_and_wait(page, "#cfg-heads", "4")  # d_h = 1
    assert note.is_visible()
    assert "RoPE does nothing here" in note.text_content()
    shot(page, "rope-note-1280.png", "#toy-mode .panel")
    select_and_wait(page, "#cfg-positional", "sinusoidal")
    assert note.is_hidden()

    # What the note says is what the server computes: with d_h = 1 RoPE changes no number, with
    # d_h = 2 it does.
    preset = next(p for p in api.get("/api/presets").json()["presets"] if p["id"] == "two-heads")
    body = {k: preset[k] for k in ("tokens", "axes", "embeddings")}

    def attentions(heads: int, positional: str) -> list:
        config = {"heads": heads, "positional": positional}
        r = api.post("/api/trace", json={**body, "config": config})
        assert r.status_code == 200, r.text
        return r.json()["attentions"]

    assert attentions(4, "rope") == attentions(4, "none")
    assert attentions(2, "rope") != attentions(2, "none")


# Every view's "How to read" by mode; each mode's cards must have one.
HOWTO = {
    "toy": ["table-h", "attention-h", "vectors-h", "ba-h", "dist-h"],
    "sentence": [
        "lens-h",
        "mv-h",
        "why-h",
        "hv-h",
        "qk-h",
        "traj-h",
        "atlas-h",
        "comp-h",
        "corpus-h",
    ],
    "train": ["t-run-h", "t-loss-h", "t-grads-h", "t-heads-h", "t-models-h"],
}

FOCUSED = """() => {
  const e = document.activeElement;
  const d = e && e.matches('details.howto > summary') ? e.parentElement : null;
  return d ? d.parentElement.querySelector('h2').id : null;
}"""


def tab_to_every_howto(page, start: str, want: list[str], limit: int = 400) -> None:
    """Press Tab from `start` until each how-to of `want` has had the focus; open each with
    Enter, read it, close it with Enter."""
    page.focus(start)
    seen: list[str] = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        title = page.evaluate(FOCUSED)
        if title and title not in seen:
            seen.append(title)
            details = page.locator(f"#{title}").locator("xpath=..").locator("details.howto")
            text = details.locator("p")
            assert text.is_hidden()
            page.keyboard.press("Enter")
            assert details.evaluate("d => d.open") and text.is_visible()
            words = text.text_content().split()
            assert 10 <= len(words) <= 60, words  # one or two sentences
            page.keyboard.press("Enter")
            assert text.is_hidden()
        if set(want) <= set(seen):
            return
    raise AssertionError(f"not reached by Tab: {sorted(set(want) - set(seen))}")


def test_every_view_says_how_to_read_it_by_keyboard(page, live_server):
    page.goto(live_server + "/#train")
    page.locator("#t-start").wait_for()
    page.wait_for_function("() => document.documentElement.dataset.mode === 'train'")
    tab_to_every_howto(page, "#mode-train", HOWTO["train"])

    open_app(page, live_server + "/")
    tab_to_every_howto(page, "#mode-toy", HOWTO["toy"])
    page.locator("#attention-h ~ details.howto > summary").click()
    shot(page, "howto-attention-1280.png", "#attention-card")
    page.set_viewport_size({"width": 480, "height": 900})
    shot(page, "howto-attention-480.png", "#attention-card")
    page.set_viewport_size({"width": 1280, "height": 800})

    before = traces_drawn(page)
    page.click("#mode-sentence")
    wait_for_trace(page, before)
    tab_to_every_howto(page, "#mode-sentence", HOWTO["sentence"])
    # Every card in every mode has one (the generation card's and ask-the-model's included).
    cards = page.locator("section.card:has(> .card-head > h2)")
    for i in range(cards.count()):
        card = cards.nth(i)
        title = card.locator("h2").first.get_attribute("id")
        if title in ("preset-h", "config-h", "s-input-h", "t-task-h", "t-plan-h", "t-arch-h"):
            continue  # inputs, not views
        if title == "more-h":
            continue  # More views: the buttons that open views, each named as its card
        assert card.locator(":scope > .card-head > details.howto").count() == 1, title


def test_the_api_docs_link_opens_the_docs_offline(page, live_server):
    """The page fixture refuses every request to another host and fails on any console error."""
    open_app(page, live_server + "/")
    link = page.get_by_role("link", name="API docs")
    assert link.get_attribute("href") == "/docs"
    link.focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url == live_server + "/docs"
    page.locator(".swagger-ui .info .title").wait_for()
    assert page.locator(".swagger-ui .info .title").text_content().startswith("attnviz")
    page.locator(".opblock-summary-path[data-path='/api/trace']").first.wait_for()


def test_each_preset_names_the_article_it_comes_from(page, live_server, presets):
    open_app(page, live_server + "/")
    source = page.locator("#preset-source")
    for preset in presets["presets"]:
        select_and_wait(page, "#preset", preset["id"])
        assert source.text_content() == f"Source: {preset['source']}"
        assert '"You could have invented transformers from memory"' in source.text_content()
    shot(page, "preset-source-1280.png", "#toy-mode .panel > section.card >> nth=0")


SHOWCASE = "The animal didn't cross the street because it was too tired"


def test_the_showcase_sentence_points_to_a_head_where_it_attends_to_animal(page, live_server, api):
    models = api.get("/api/models").json()
    pointers = {e["text"]: e for e in models["example_heads"] if e["model"] == MODEL}
    pointer = pointers[SHOWCASE]
    open_sentence(page, live_server + "/")
    box = page.locator("#s-pointer")
    # The first example has a pointer of its own (measured: services.pointers), shown with it.
    first = page.locator("#s-text").input_value()
    assert box.is_visible() and first in pointers and first != SHOWCASE
    assert page.locator("#s-pointer-text").text_content() == pointers[first]["note"]
    before = traces_drawn(page)
    page.get_by_role("button", name=SHOWCASE).click()
    wait_for_trace(page, before)
    assert box.is_visible()
    assert page.locator("#s-pointer-text").text_content() == pointer["note"]
    layer, head = pointer["layer"], pointer["head"]
    assert f"layer {layer + 1}, head {head + 1}" in pointer["note"]

    # The button opens that head: the model view marks it, the large heatmap shows it, and its
    # row for "it" gives "animal" the weight the note states.
    page.locator("#s-pointer-go").focus()
    before = views_drawn(page)
    page.keyboard.press("Enter")
    wait_for_views(page, before)
    cell = f'#mv-grid button.mv-cell[data-layer="{layer}"][data-head="{head}"]'
    assert page.locator(cell).get_attribute("aria-pressed") == "true"
    assert page.evaluate("() => document.activeElement.matches('button.mv-cell')")
    large = page.evaluate(
        """() => { const h = document.querySelector('#mv-large .hc').__heat, m = h.matrix,
          n = m.shape[0], i = h.labels.indexOf('it'), j = h.labels.indexOf('animal');
          return {title: document.querySelector('#mv-large .hc-title').textContent,
                  w: m.data[i * n + j]}; }"""
    )
    assert large["title"] == f"Layer {layer + 1}, head {head + 1}"
    assert round(large["w"], 2) == pointer["weight"]
    shot(page, "pointer-1280.png", ".sentence-input")
    page.set_viewport_size({"width": 480, "height": 900})
    shot(page, "pointer-480.png", ".sentence-input")
    page.set_viewport_size({"width": 1280, "height": 800})

    # Another text, its own pointer; a text the page has none for: none.
    before = traces_drawn(page)
    page.fill("#s-text", first)
    wait_for_trace(page, before)
    assert page.locator("#s-pointer-text").text_content() == pointers[first]["note"]
    before = traces_drawn(page)
    page.fill("#s-text", "I sat on the bank of the river")
    wait_for_trace(page, before)
    assert box.is_hidden()


@pytest.mark.parametrize("mode", ["toy", "sentence", "train"])
def test_axe_finds_nothing_serious_with_a_how_to_open(page, live_server, mode):
    assert AXE.exists(), "axe-core is missing: run `make install-dev` (npm ci)"
    page.add_init_script(path=str(AXE))  # outside the page's CSP, as a test's tool
    if mode == "train":
        page.goto(live_server + "/#train")
        page.locator("#t-start").wait_for()
        page.wait_for_function("() => document.documentElement.dataset.mode === 'train'")
    elif mode == "sentence":
        open_sentence(page, live_server + "/", SHOWCASE)
    else:
        open_app(page, live_server + "/")
        select_and_wait(page, "#cfg-positional", "rope")
        select_and_wait(page, "#cfg-heads", "3")  # d_h = 1: the RoPE note shows
        assert page.locator("#cfg-positional-note").is_visible()
    summary = page.locator(f"#{HOWTO[mode][1]} ~ details.howto > summary")
    summary.click()
    assert page.locator(f"#{HOWTO[mode][1]} ~ details.howto > p").is_visible()
    assert axe_serious(page) == []


# The model view's large heatmap (its drawing, whole) and the head's cell (a selector) within
# the window.
HEAD_IN_VIEW = """(cell) => {
  const large = document.querySelector('#mv-large .hc-canvas').getBoundingClientRect();
  const c = document.querySelector(cell).getBoundingClientRect();
  return large.top >= 0 && large.bottom <= innerHeight && c.top >= 0 && c.bottom <= innerHeight;
}"""


def test_show_this_head_brings_its_view_into_sight_and_the_focus_to_it(page, live_server, api):
    """Issue 41: *Show this head* chose the head, but its large heatmap stayed below the fold.
    Pressed at 1280 x 800 the model view scrolls up (smoothly; at once for a reader who asks for
    less motion) until the large heatmap's top and the head's cell are in the window, and the
    focus is on that cell; axe finds nothing serious."""
    page.add_init_script(path=str(AXE))
    models = api.get("/api/models").json()
    pointers = {e["text"]: e for e in models["example_heads"] if e["model"] == MODEL}
    open_sentence(page, live_server + "/")
    pointer = pointers[page.locator("#s-text").input_value()]
    cell = (
        f'#mv-grid button.mv-cell[data-layer="{pointer["layer"]}"][data-head="{pointer["head"]}"]'
    )
    top = "() => document.getElementById('mv-large').getBoundingClientRect().top"
    assert page.evaluate(top) > 800, "the large heatmap starts below the fold"
    before = views_drawn(page)
    page.locator("#s-pointer-go").click()
    wait_for_views(page, before)
    page.wait_for_function(HEAD_IN_VIEW, arg=cell)  # the smooth scroll under way, or ended
    assert page.evaluate("s => document.activeElement === document.querySelector(s)", cell)
    assert page.locator(cell).get_attribute("aria-pressed") == "true"
    assert page.locator("#mv-large .hc-title").text_content() == (
        f"Layer {pointer['layer'] + 1}, head {pointer['head'] + 1}"
    )
    assert axe_serious(page) == []
    snap(page, path=str(ARTIFACTS / "show-head-smooth-1280.png"))

    # Less motion asked for: the page is there as the press ends, no scroll to wait for; by
    # keyboard, the focus lands on the cell.
    page.emulate_media(reduced_motion="reduce")
    for width, height in ((1280, 800), (480, 900)):
        page.set_viewport_size({"width": width, "height": height})
        # The large heatmap drawn again for the window's width (a debounced resize).
        page.wait_for_function(
            "() => document.querySelector('#mv-large .hc-canvas').getBoundingClientRect().right"
            " <= document.documentElement.clientWidth"
        )
        page.evaluate("() => window.scrollTo(0, 0)")
        assert not page.evaluate(HEAD_IN_VIEW, cell)
        page.locator("#s-pointer-go").focus()
        page.keyboard.press("Enter")
        assert page.evaluate(HEAD_IN_VIEW, cell)
        assert page.evaluate("s => document.activeElement === document.querySelector(s)", cell)
        snap(page, path=str(ARTIFACTS / f"show-head-{width}.png"))
