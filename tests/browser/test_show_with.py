"""Sentence mode with the default model, an encoder: the cards that have no predictions (the
Predictions card, What pushed this, the Knock-out's losses) offer the character model that ships with attnviz in one button,
and pressing it (from the keyboard) shows the same text's predictions, logit lens and What
pushed this; a text with characters that model lacks is told in words, beside the button and,
once pressed, by the text box."""

from __future__ import annotations

import pytest

from tests.browser.helpers import (
    AXE,
    MODEL,
    axe_serious,
    f32,
    open_sentence,
    quoted_token,
    screenshot,
    traces_drawn,
    wait_for_trace,
)

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

TEXT = "The animal didn't cross the street because it was too tired."
SHIPPED = "charlm-pydoc"
TITLE = "Tiny character model (Python's help text)"


def percent(p: float) -> str:
    """lens.js's percent(): one decimal, two below 1%, "<0.01%" below that; "over 99.9%" where
    one decimal would say all of it short of it, "0%" only for none."""
    if p >= 0.01:
        s = f"{p * 100:.1f}"
        return "over 99.9%" if s == "100.0" and p < 1 else f"{s}%"
    if p >= 0.0001:
        return f"{p * 100:.2f}%"
    return "<0.01%" if p > 0 else "0%"


def test_one_button_shows_the_same_text_with_the_model_that_predicts(page, live_server, api):
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/", TEXT)
    assert page.locator("#s-model").input_value() == MODEL
    note = page.locator("#lens-view .lens-unavailable")
    assert "No predictions here" in note.text_content() and "is an encoder" in note.text_content()
    button = page.locator("#lens-view button.show-with")
    assert button.text_content() == f"Show with {TITLE}"
    assert page.locator("#lens-view .show-with-why").text_content() == (
        " It predicts each next character of the same text."
    )
    # Once on the first screen: in the Predictions card, not again under Generate's note
    # (issue 41), which offers the causal models in its own chooser.
    assert page.locator("button.show-with:visible").count() == 1
    assert page.locator("#s-gen-causal").is_visible()
    assert axe_serious(page) == []
    page.locator("#lens-card").scroll_into_view_if_needed()
    screenshot(page, "show-with-before-1280.png")

    # From the keyboard: Tab reaches it from the card's "?" past the note's one glossary term
    # (what a masked-language-model head is), Enter presses it.
    page.locator("#lens-card summary").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.term") == "mlm-head"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == f"Show with {TITLE}"
    before = traces_drawn(page)
    page.keyboard.press("Enter")
    wait_for_trace(page, before)
    # The model chosen, named by its title; the text kept; the focus on the card's heading.
    assert page.locator("#s-model").input_value() == SHIPPED
    assert page.locator("#s-model option:checked").text_content() == TITLE
    assert page.locator("#s-text").input_value() == TEXT
    assert page.evaluate("document.activeElement.id") == "lens-h"
    assert page.locator("#lens-view button.show-with").count() == 0
    assert page.locator("#s-gen-go").is_visible()

    # The predictions drawn are the API's for the same text: one token a character.
    page.locator("#lens-view .lens-grid").wait_for()
    r = api.post(
        "/api/trace", params={"fields": "top_k,lens"}, json={"model": SHIPPED, "text": TEXT}
    )
    assert r.status_code == 200
    t = r.json()
    assert t["tokens"] == list(TEXT)
    heading = page.locator("#lens-view .lens-sub").first.text_content()
    q = int(heading.split("(token ")[1].split(")")[0]) - 1
    items = page.locator("#lens-view .lens-top-row")
    assert items.count() == t["top_k"]["k"]
    for j in range(items.count()):
        token = t["top_k"]["vocab"][str(t["top_k"]["ids"][q][j])]
        assert items.nth(j).locator(".lens-top-token").text_content() == quoted_token(token)
        p = items.nth(j).locator(".lens-top-p").text_content()
        assert p.startswith(percent(f32(t["top_k"]["probs"][q][j])))
    rows = t["lens"]["rows"]
    cols = page.locator('#lens-view .lens-cell[data-row="0"]').count()
    assert rows == 4 and page.locator("#lens-view .lens-cell").count() == rows * cols
    # What pushed this: its bars, one per component.
    page.locator("#pushed-view .pushed-chart").wait_for()
    assert "sum to the logit" in page.locator("#pushed-view").text_content()
    assert axe_serious(page) == []
    page.locator("#lens-card").scroll_into_view_if_needed()
    screenshot(page, "show-with-after-1280.png")
    page.set_viewport_size({"width": 480, "height": 800})
    page.locator("#lens-card").scroll_into_view_if_needed()
    screenshot(page, "show-with-after-480.png")
    assert page.evaluate("document.documentElement.scrollWidth <= 480")


def test_characters_the_model_lacks_are_named_in_words(page, live_server):
    page.set_viewport_size({"width": 480, "height": 800})
    text = "It\u2019s a caf\u00e9."
    open_sentence(page, live_server + "/", text)
    lacks = page.locator("#lens-view .show-with-lacks")
    assert lacks.text_content() == (
        " It cannot read “\u2019” and “\u00e9” in this text: it knows only the characters it "
        "was trained on, so change those to see its predictions."
    )
    page.locator("#lens-card").scroll_into_view_if_needed()
    screenshot(page, "show-with-lacks-480.png")
    page.locator("#lens-view button.show-with").click()
    # Said by the text box, not in a red banner over the page, and no trace refused (issue 41).
    note = page.locator("#s-unreadable .unreadable-text")
    note.wait_for()
    assert note.text_content() == (
        f"{TITLE} cannot read “\u2019” and “\u00e9” in this text: it knows only the characters "
        f"it was trained on; the views still show {MODEL}."
    )
    error = page.locator("#error")
    assert error.is_hidden()
    # Changing them shows the predictions, with no error left.
    before = traces_drawn(page)
    page.fill("#s-text", "It's a cafe.")
    wait_for_trace(page, before)
    page.locator("#lens-view .lens-grid").wait_for()
    assert error.is_hidden()


def test_the_knock_outs_missing_losses_offer_it_too(page, live_server):
    """A head of the encoder knocked out: the card has no losses to compare, and its button
    shows the same text with the shipped model, whose losses it compares (the head kept: the
    same layer 1, head 2 there)."""
    open_sentence(page, live_server + "/", TEXT)
    page.check("#mv-knock")
    before = traces_drawn(page)
    page.locator('#mv-grid button.mv-cell[data-layer="0"][data-head="1"]').click()
    wait_for_trace(page, before)
    missing = page.locator("#ko-view .ko-no-losses")
    missing.wait_for()
    assert missing.text_content().startswith("No losses here: model all-MiniLM-L6-v2 is an encoder")
    button = page.locator("#ko-view button.show-with")
    assert button.text_content() == f"Show with {TITLE}"
    before = traces_drawn(page)
    button.click()
    wait_for_trace(page, before)
    assert page.locator("#s-model").input_value() == SHIPPED
    assert page.evaluate("document.activeElement.id") == "ko-h"
    page.locator("#ko-view .ko-table").wait_for()
    assert page.locator("#ko-heads button.ko-chip").count() == 1
    assert page.locator("#ko-view button.show-with").count() == 0
