"""Sentence mode: type a sentence, read every layer and head of MiniLM in the model view, open
one, follow it in the head, query-key and trajectory views; links, modes, options, errors."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from attnviz.app import create_app
from attnviz.pretrained.registry import BUILTIN_MISSING
from attnviz.settings import Settings
from tests.browser.helpers import (
    ARTIFACTS,
    MODEL,
    assert_close,
    assert_head_lines_match,
    drawn,
    edit_cell,
    f32,
    fresh_page,
    head_lines,
    hover_large,
    large_heatmap,
    open_app,
    open_sentence,
    screenshot,
    snap,
    table_values,
    text_trace,
    trace_by_uid,
    traces_drawn,
    type_sentence,
    views_drawn,
    wait_for_trace,
    wait_for_views,
)
from tests.support.oracles import readable, token_view_oracle
from tests.support.servers import served

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

TEXT = "The fisherman sat on the river bank"
PIECES = "Unbelievably, tokenization works"


def click_cell(page, layer: int, head: int) -> None:
    before = views_drawn(page)
    page.click(f'#mv-grid button.mv-cell[data-layer="{layer}"][data-head="{head}"]')
    wait_for_views(page, before)


def assert_head_view_shows(page, trace: dict, layer: int, heads: list[int]) -> None:
    """The head view shows this layer and these heads, lines from the trace's weights."""
    svg = page.locator("#head-view svg.hv")
    assert svg.get_attribute("data-layer") == str(layer)
    assert svg.get_attribute("data-heads") == ",".join(map(str, heads))
    assert_head_lines_match(page, {h: trace["attentions"][layer][h] for h in heads})


def assert_large_shows(page, matrix: list[list[float]], exact=f32) -> dict:
    """The large heatmap draws exactly these weights (the float32 values a model sent)."""
    large = large_heatmap(page)
    assert_close(large["z"], exact(matrix), tol=0)
    return large


def test_type_a_sentence_and_follow_one_head_through_every_view(page, live_server, api, models):
    page.goto(live_server + "/")
    wait_for_trace(page, 0)
    assert page.locator("#mode-toy").get_attribute("aria-selected") == "true"
    before = traces_drawn(page)
    page.click("#mode-sentence")
    wait_for_trace(page, before)
    assert page.locator("#toy-mode").is_hidden() and page.locator("#sentence-mode").is_visible()
    # The model picker lists the server's models (the shipped one by its title) and describes
    # the chosen one.
    names = page.locator("#s-model option").all_text_contents()
    assert names == [m["title"] or m["name"] for m in models["models"]]
    assert page.locator("#s-model").input_value() == MODEL
    assert page.locator("#s-model-info").text_content() == (
        "BERT · 6 layers × 12 heads · d_model 384 · up to 512 tokens · cpu"
    )
    assert page.locator("#s-examples button").all_text_contents() == models["examples"]
    assert page.locator("#s-text").input_value() == models["examples"][0]

    type_sentence(page, TEXT)
    trace = text_trace(api, TEXT)
    assert page.locator("#s-count").text_content() == f"{trace['n']} / 512 tokens"
    assert page.locator("#error").is_hidden()

    # Model view: 6 x 12 canvases, labelled; open layer 3, head 5.
    assert page.locator("#mv-grid button.mv-cell canvas").count() == 72
    assert page.locator("#mv-grid .mv-row").all_text_contents() == [f"L{i}" for i in range(1, 7)]
    assert page.locator("#mv-grid .mv-col").count() == 12
    page.locator("#model-view-card").scroll_into_view_if_needed()
    click_cell(page, 2, 4)
    cell = page.locator('#mv-grid button.mv-cell[data-layer="2"][data-head="4"]')
    assert cell.get_attribute("aria-pressed") == "true"
    assert page.locator('#mv-grid button.mv-cell[aria-pressed="true"]').count() == 1
    large = assert_large_shows(page, trace["attentions"][2][4])  # the numbers the API sent
    assert large["labels"] == trace["tokens"] and large["dtype"] == "F32"
    assert large["title"] == "Layer 3, head 5"
    # Hover: the tokens and the weight, the JSON trace's number to 3 significant digits (the
    # heatmap above draws it exactly; so does the CSV).
    tip = hover_large(page, 1, 2)
    assert tip.split("\n") == [
        f"query {trace['tokens'][1]}",
        f"key {trace['tokens'][2]}",
        f"weight {readable(trace['attentions'][2][4][1][2])}",
    ]

    # Head view: the same layer and head, every line's weight from the trace.
    assert page.locator("#hv-layer").input_value() == "2"
    assert page.locator("#hv-heads input:checked").count() == 1
    assert_head_view_shows(page, trace, 2, [4])
    # Add head 1: two colours, both heads' lines.
    before = views_drawn(page)
    page.locator('#hv-heads input[value="0"]').check()
    wait_for_views(page, before)
    assert_head_view_shows(page, trace, 2, [0, 4])
    strokes = page.evaluate(
        """() => [0, 4].map((h) => document.querySelector(
          `#head-view line[data-head="${h}"]`).getAttribute('stroke'))"""
    )
    assert strokes[0] != strokes[1]
    # Hovering a query keeps only its lines; hovering a key only the lines into it.
    page.hover('#head-view .hv-left .hv-token[data-index="3"]')
    shown = page.evaluate(
        """() => [...document.querySelectorAll('#head-view line')]
          .filter((l) => getComputedStyle(l).display !== 'none')
          .map((l) => +l.dataset.query)"""
    )
    assert shown and set(shown) == {3}
    page.hover('#head-view .hv-right .hv-token[data-index="5"]')
    keys = page.evaluate(
        """() => [...document.querySelectorAll('#head-view line')]
          .filter((l) => getComputedStyle(l).display !== 'none').map((l) => +l.dataset.key)"""
    )
    assert keys and set(keys) == {5}
    # Token text is text: the labels read exactly as the tokens.
    assert page.locator("#head-view .hv-left text").all_text_contents() == trace["tokens"]

    # Query-key view: same layer and head; clicking a query token in the head view picks it.
    assert page.locator("#qk-layer").input_value() == "2"
    assert page.locator("#qk-head").input_value() == "4"
    before = views_drawn(page)
    page.click('#head-view .hv-left .hv-token[data-index="6"]')
    wait_for_views(page, before)
    assert page.locator("#qk-query").input_value() == "6"
    assert "chosen" in page.locator('#head-view .hv-left .hv-token[data-index="6"]').get_attribute(
        "class"
    )
    assert "layer 3" in page.locator("#qk-view").inner_text()

    # Trajectories: one path per token; a token chip hides that token's path.
    paths = page.evaluate("() => document.querySelector('#traj-view .js-plotly-plot').data.length")
    assert page.locator("#traj-tokens button.token-chip").count() == trace["n"]
    before = views_drawn(page)
    page.click('#traj-tokens button.token-chip[data-index="0"]')
    wait_for_views(page, before)
    assert (
        page.evaluate("() => document.querySelector('#traj-view .js-plotly-plot').data.length")
        < paths
    )
    assert page.locator('#traj-tokens button[aria-pressed="false"]').count() == 1

    # Keyboard: arrows move between cells, Enter opens one.
    cell.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    before = views_drawn(page)
    page.keyboard.press("Enter")
    wait_for_views(page, before)
    assert_large_shows(page, trace["attentions"][3][5])
    assert_head_view_shows(page, trace, 3, [5])
    page.mouse.move(0, 0)
    screenshot(page, "sentence-1280.png")


def test_example_buttons_and_errors_from_the_server(page, live_server, api, models, console):
    console.allow(r"status of 422 .*/api/trace")  # the refusal this test asks for
    open_sentence(page, live_server + "/")
    before = traces_drawn(page)
    page.locator("#s-examples button").nth(2).click()
    wait_for_trace(page, before)
    text = models["examples"][2]
    assert page.locator("#s-text").input_value() == text
    trace = text_trace(api, text)
    assert_large_shows(page, trace["attentions"][0][0])

    # Too many tokens: the server's own message, and the last good views stay.
    page.fill("#s-text", "word " * 600)
    page.wait_for_function("() => !document.getElementById('error').hidden")
    message = page.locator("#error").text_content()
    assert message.startswith("text: ") and "exceed the cap of 512" in message
    assert page.locator("#status").text_content() == "not updated"
    assert page.locator("#mv-grid button.mv-cell").count() == 72

    # Empty text.
    page.fill("#s-text", "   ")
    page.wait_for_function(
        "() => document.getElementById('error').textContent === 'text: must not be empty'"
    )
    assert page.evaluate("document.documentElement.dataset.pending") == "0"
    type_sentence(page, "Back to normal")
    assert page.locator("#error").is_hidden()


def snapshot(page) -> dict:
    return {
        "mode": page.evaluate("document.documentElement.dataset.mode"),
        "text": page.locator("#s-text").input_value(),
        "model": page.locator("#s-model").input_value(),
        "hide": page.locator("#s-hide-special").is_checked(),
        "merge": page.locator("#s-merge-words").is_checked(),
        "large": large_heatmap(page),
        "pressed": page.locator('#mv-grid button[aria-pressed="true"]').get_attribute("aria-label"),
        "lines": head_lines(page),
        "hv_layer": page.locator("#hv-layer").input_value(),
        "chosen": page.locator("#head-view .hv-token.chosen").text_content(),
        "qk": [page.locator(s).input_value() for s in ("#qk-layer", "#qk-head", "#qk-query")],
        "qk_text": page.locator("#qk-view").inner_text(),
        "traj_chips": page.locator('#traj-tokens button[aria-pressed="true"]').all_text_contents(),
        "dims": page.locator("#traj-3d").is_checked(),
        "traj": page.evaluate(
            "() => JSON.parse(JSON.stringify("
            "document.querySelector('#traj-view .js-plotly-plot').data))"
        ),
        "note": page.locator("#s-note").text_content(),
    }


def test_a_sentence_link_restores_the_same_view(page, browser, live_server):
    open_sentence(page, live_server + "/", PIECES)
    page.check("#s-merge-words")
    page.wait_for_function("() => !document.getElementById('s-note').hidden")
    click_cell(page, 4, 7)
    before = views_drawn(page)
    page.locator('#hv-heads input[value="2"]').check()
    wait_for_views(page, before)
    before = views_drawn(page)
    page.click('#head-view .hv-left .hv-token[data-index="3"]')  # "tokenization"
    wait_for_views(page, before)
    before = views_drawn(page)
    assert page.locator("#traj-2d").is_checked()  # 2-D unless the link says 3-D
    page.check("#traj-3d")
    wait_for_views(page, before)
    before = views_drawn(page)
    # A chip per word under the merge option: "tokenization" stands for its pieces.
    page.locator("#traj-tokens button.token-chip", has_text="tokenization").click()
    wait_for_views(page, before)
    url = page.evaluate("location.href")
    assert "#s=" in url
    here = snapshot(page)
    assert here["mode"] == "sentence" and here["text"] == PIECES and here["merge"]
    assert here["chosen"] == "tokenization"
    assert here["dims"] and here["pressed"] == "layer 5, head 8"

    with fresh_page(browser) as (fresh, errors):
        fresh.goto(url)
        wait_for_trace(fresh, 0)
        drawn(fresh, "#traj-view .traj-plot")  # in 3-D, out of view: drawn once brought near
        there = snapshot(fresh)
        assert fresh.evaluate("location.href") == url
    assert errors == []
    assert there == here


def test_switching_modes_keeps_both_states(page, live_server, api):
    open_app(page, live_server + "/")
    edit_cell(page, 1, 0, "0.25")
    toy_url = page.evaluate("location.href")
    toy_weights = trace_by_uid(page, "weights-plot", "weights")
    before = traces_drawn(page)
    page.click("#mode-sentence")
    wait_for_trace(page, before)
    type_sentence(page, TEXT)
    click_cell(page, 1, 2)
    sentence_url = page.evaluate("location.href")
    assert sentence_url != toy_url

    page.click("#mode-toy")
    assert page.locator("#sentence-mode").is_hidden()
    assert table_values(page)["values"][1][0] == "0.25"
    # The toy link now carries the sentence as well (tests/browser/test_share.py opens both).
    back = page.evaluate("location.href")
    assert back != toy_url and back != sentence_url
    assert trace_by_uid(page, "weights-plot", "weights") == toy_weights
    assert page.locator("#error").is_hidden()

    drawn = traces_drawn(page)
    before = views_drawn(page)
    page.click("#mode-sentence")
    wait_for_views(page, before)
    page.wait_for_function("() => document.documentElement.dataset.pending === '0'")
    assert traces_drawn(page) == drawn  # no new request: the trace was kept
    assert page.locator("#s-text").input_value() == TEXT
    assert page.evaluate("location.href") == sentence_url
    trace = text_trace(api, TEXT)
    assert_large_shows(page, trace["attentions"][1][2])


@pytest.mark.parametrize(
    ("hide", "merge", "note"),
    [
        (True, False, "Special tokens hidden; each row renormalised to sum to 1."),
        (
            False,
            True,
            "Word pieces merged: attention to a word is summed over its pieces, "
            "attention from a word averaged.",
        ),
        (True, True, "Special tokens hidden"),
    ],
)
def test_token_options_change_the_numbers_as_the_rules_say(
    page, live_server, api, hide, merge, note
):
    open_sentence(page, live_server + "/", PIECES)
    trace = text_trace(api, PIECES)
    click_cell(page, 1, 3)
    assert page.locator("#s-note").is_hidden()
    for box, on in (("#s-hide-special", hide), ("#s-merge-words", merge)):
        if on:
            before = views_drawn(page)
            page.check(box)
            wait_for_views(page, before)
    assert note in page.locator("#s-note").text_content()
    assert page.locator("#s-note").is_visible()
    expected, groups = token_view_oracle(trace, 1, 3, hide, merge)
    large = large_heatmap(page)
    assert large["dtype"] == "F64"  # computed on the server from the float32 weights
    assert_close(large["z"], expected, tol=1e-12)
    labels = large["labels"]
    assert len(labels) == len(groups)
    assert ("[CLS]" in labels) is not hide
    assert ("tokenization" in labels) is merge
    # The head view draws the same rows and columns.
    assert page.locator("#head-view .hv-left text").all_text_contents() == labels
    assert_head_lines_match(page, {3: expected})
    # Trajectories leave the special tokens out when they are hidden.
    chips = page.locator("#traj-tokens button.token-chip").all_text_contents()
    assert ("[CLS]" in chips) is not hide


def test_no_model_installed_says_in_words_that_its_host_can_install_one(page):
    """A server with no model for sentences (neither the default one nor the character model
    that ships with attnviz, nor a folder): the page says so in words a learner reads, that its
    host can install the default one, never the host's command (issue 41)."""
    settings = Settings(device="cpu", builtin_model=False)
    with served(create_app(settings)) as url:
        page.goto(url + "/")
        wait_for_trace(page, 0)
        page.click("#mode-sentence")
        install = page.locator("#s-install")
        install.wait_for(state="visible")
        said = install.text_content()
        assert (
            said == httpx.get(url + "/api/models", timeout=60).json()["install"] == BUILTIN_MISSING
        )
        assert said.startswith("This server has no model for sentences. Its host can install")
        assert "pip" not in said and "install --" not in said
        assert page.locator("#s-text").is_disabled()
        assert page.locator("#model-view-card").is_hidden()
        page.wait_for_function("() => document.documentElement.dataset.pending === '0'")


@pytest.mark.parametrize("width", [1280, 480])
def test_sentence_mode_fits_the_window(page, live_server, width):
    page.set_viewport_size({"width": width, "height": 800})
    open_sentence(
        page, live_server + "/", "The animal didn't cross the street because it was tired"
    )
    page.wait_for_selector("#traj-view .js-plotly-plot .main-svg")
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0
    screenshot(page, f"sentence-{width}-full.png")
    # The query-key view fits its card too (issue 41: at 480 px its canvas ran past the card,
    # its axis title and the keys' numbers out of sight): side by side where there is room,
    # else the numbers under the heatmaps, each key's row labelled again.
    qk_fits(page, stacked=width == 480)
    snap(page.locator("#qk-card"), path=str(ARTIFACTS / f"sentence-{width}-qk.png"))
    if width == 1280:  # narrowed, the view is drawn again for the card it has
        page.set_viewport_size({"width": 480, "height": 800})
        page.wait_for_function(
            "() => document.querySelector('#qk-view .qk').__qk.geometry.stacked === true"
        )
        qk_fits(page, stacked=True)


QK_FIT = """() => { const box = document.querySelector('#qk-view .qk-scroll'),
  c = box.querySelector('canvas'), g = document.querySelector('#qk-view .qk').__qk.geometry;
  const b = box.getBoundingClientRect(), r = c.getBoundingClientRect();
  return {box: [b.left, b.right], canvas: [r.left, r.right], scroll: box.scrollWidth,
          client: box.clientWidth, g}; }"""


def qk_fits(page, stacked: bool) -> None:
    """The query-key view's canvas lies inside its card (nothing to scroll sideways), laid out
    side by side or stacked, and a key's numbers, where they are drawn, tell that key's sum,
    score and weight when hovered."""
    got = page.evaluate(QK_FIT)
    g = got["g"]
    assert got["scroll"] <= got["client"], got
    assert got["box"][0] <= got["canvas"][0] and got["canvas"][1] <= got["box"][1] + 0.5, got
    assert g["stacked"] is stacked and g["width"] <= got["client"]
    if stacked:  # the numbers below the heatmaps' axis title, from the labels' column
        assert g["nTop"] > g["dimY"] and g["xSum"] == g["left"]
    else:  # right of the products, on their rows
        assert g["nTop"] == g["pTop"] and g["xSum"] > g["x0"] + g["heatW"]
    at = {"x": g["xSum"] + 20, "y": g["nTop"] + 1.5 * g["row"]}  # the second key's numbers
    page.locator("#qk-view .qk-canvas").hover(position=at)
    tip = page.locator("#qk-view .qk-tip")
    tip.wait_for(state="visible")
    want = page.evaluate("() => document.querySelector('#qk-view .qk').__qk.tipAt('row', 1, -1)")
    assert tip.inner_text() == "\n".join(want) and want[-1].startswith("weight = ")
    page.mouse.move(0, 0)


def test_exports_and_markup_in_the_text_stays_text(page, live_server, api):
    text = "<b>bold</b> & <img src=x>"
    open_sentence(page, live_server + "/", text)
    trace = text_trace(api, text)
    assert page.locator("#sentence-mode b, #sentence-mode img").count() == 0
    assert page.locator("#head-view .hv-left text").all_text_contents() == trace["tokens"]
    assert "<" in trace["tokens"]
    with page.expect_download() as download:
        page.click("#mv-png")
    assert download.value.suggested_filename == "attnviz-model-view.png"
    assert Path(download.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with page.expect_download() as download:
        page.click("#hv-svg")
    svg = Path(download.value.path()).read_text(encoding="utf-8")
    assert svg.startswith("<svg") and "&lt;" in svg and "<b>" not in svg
    with page.expect_download() as download:
        page.click("#mv-downloads > summary")
        page.click("#mv-large-png")
    assert download.value.suggested_filename == "attnviz-layer1-head1.png"
    assert Path(download.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with page.expect_download() as download:
        page.click("#export-json")
    assert download.value.suggested_filename == "attnviz-sentence-trace.json"
    saved = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert saved["tokens"] == trace["tokens"] and saved["attentions"] == trace["attentions"]


def test_another_model_reshapes_the_views(page, live_server, api, models):
    other = next((m for m in models["models"] if m["name"] != MODEL), None)
    if other is None:
        pytest.skip("the server has one model")
    open_sentence(page, live_server + "/", TEXT)
    click_cell(page, 5, 11)  # the last head of MiniLM
    before = traces_drawn(page)
    page.select_option("#s-model", other["name"])
    wait_for_trace(page, before)
    trace = text_trace(api, TEXT, other["name"])
    layers, heads = trace["layers"], trace["heads"]
    assert page.locator("#mv-grid button.mv-cell").count() == layers * heads
    assert page.locator("#hv-heads input").count() == heads
    # The model that ships with attnviz is described as such, any other by its family.
    described = "shipped with attnviz" if other["title"] else other["family"].upper()
    assert page.locator("#s-model-info").text_content().startswith(described)
    # The chosen head stays inside the smaller model.
    large = assert_large_shows(page, trace["attentions"][min(5, layers - 1)][min(11, heads - 1)])
    if trace["causal"]:  # nothing attends to a later token
        assert all(w == 0 for i, row in enumerate(large["z"]) for w in row[i + 1 :])
    assert_head_view_shows(page, trace, min(5, layers - 1), [min(11, heads - 1)])


@pytest.fixture(scope="module")
def models(live_server) -> dict:
    """The models a new visitor is offered, as the page's own fresh browser context is: the
    session's ``api`` client is a visitor of its own, whose trained runs only it is shown."""
    return httpx.get(live_server + "/api/models", timeout=60).json()
