"""Sentence mode, the model picker switched to a character model that cannot read the text (a
trained run, an English sentence in the box; issue 41): one sentence by the text box says so,
naming the model as the picker does and the characters it lacks, never its id; no red banner,
no trace asked for (no 422), Generate waiting; its example or the model still shown, a click
away. The page's header agrees with it: its status says the views are not updated (or, opened
from a link, that there is no trace), never a stale "waiting", and the token count under the
box stays the shown trace's, over its own model's cap."""

from __future__ import annotations

from tests.browser.helpers import (
    MODEL,
    TRAIN_TINY,
    open_sentence,
    screenshot,
    text_trace,
    traces_drawn,
    wait_for_trace,
)
from tests.browser.test_contrast import AAA, contrasts

NOT_UPDATED = "not updated: the model can't read it"
# The header's status box: two lines, the rest cut (its title holds it all).
WHOLE = "() => { const s = document.getElementById('status'); return s.scrollHeight <= s.clientHeight; }"


def test_a_model_that_cannot_read_the_text_says_so_by_the_text_box(page, live_server, api):
    page.goto(f"{live_server}/#train")
    run = page.evaluate(TRAIN_TINY)
    refused: list[str] = []
    page.on("response", lambda r: refused.append(r.url) if r.status == 422 else None)
    open_sentence(page, live_server + "/")
    models = page.evaluate("async () => (await (await fetch('/api/models')).json()).models")
    served = next(m for m in models if m["run"] == run)
    text = page.locator("#s-text").input_value()
    assert set(text) - set(served["characters"])  # the English example: capitals, spaces
    note = page.locator("#s-unreadable")
    assert note.is_hidden()
    # What the header and the count say of the default model's trace of this text.
    shown = text_trace(api, text)
    minilm = next(m for m in models if m["name"] == MODEL)
    drawn = f"{shown['n']} tokens · {shown['layers']} layers × {shown['heads']} heads"
    count = f"{shown['n']} / {minilm['max_tokens']} tokens"
    assert page.locator("#status").text_content() == drawn
    assert page.locator("#s-count").text_content() == count

    for width in (1280, 480):
        page.set_viewport_size({"width": width, "height": 800})
        page.select_option("#s-model", served["name"])
        note.wait_for()
        label = page.locator("#s-model option:checked").text_content()
        said = note.locator(".unreadable-text").text_content()
        assert said == (
            f"{label} cannot read “I” and a space in this text: it knows only the characters it "
            f"was trained on; the views still show {MODEL}."
        )
        assert run not in note.text_content() and served["name"] not in note.text_content()
        assert page.locator("#error").is_hidden()
        assert page.locator("#s-gen-go").is_disabled()
        # The header agrees with the note; the count is still the views' (MiniLM's) trace's.
        assert page.locator("#status").text_content() == NOT_UPDATED
        assert page.locator("#status").get_attribute("title") == NOT_UPDATED
        assert page.evaluate(WHOLE)  # said whole, not cut by the box
        assert page.locator("#s-count").text_content() == count
        # The note on pale red reads at 7:1 or more (its text and its buttons').
        said = contrasts(page, "#s-unreadable")
        assert len(said) == 3 and all(t["ratio"] >= AAA for t in said), said
        screenshot(page, f"sentence-unreadable-{width}.png")
        # Keep the model still shown: back to it, the note gone, the header on its trace again.
        page.locator("#s-unreadable .unreadable-back").click()
        assert page.locator("#s-model").input_value() == MODEL and note.is_hidden()
        page.wait_for_function(
            "s => document.getElementById('status').textContent === s", arg=drawn
        )
    assert refused == []

    # A link to the model and this text, opened afresh: no views, and the header says so.
    page.select_option("#s-model", served["name"])
    note.wait_for()
    link = page.url
    page.goto("about:blank")
    page.goto(link)
    note.wait_for()
    page.wait_for_function("() => document.documentElement.dataset.pending === '0'")
    assert page.locator("#status").text_content() == "no trace: the model can't read it"
    assert page.evaluate(WHOLE)
    assert page.locator("#error").is_hidden() and refused == []

    # Its own example: the text it reads, traced with it, and Generate writes.
    page.select_option("#s-model", served["name"])
    example = served["examples"][0]
    button = note.locator(".unreadable-example")
    assert button.text_content() == f"Use its example: {example}"
    before = traces_drawn(page)
    button.click()
    wait_for_trace(page, before)
    assert page.locator("#s-text").input_value() == example and note.is_hidden()
    assert page.locator("#s-model").input_value() == served["name"]
    gen = page.locator("#s-gen-go")
    assert gen.is_enabled()
    before = traces_drawn(page)
    gen.click()
    wait_for_trace(page, before)
    assert page.locator("#s-gen-wrote").is_visible()
    assert page.locator("#error").is_hidden() and refused == []
