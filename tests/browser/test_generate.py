"""Step through generation in the browser: a causal model writes after the text; the Generation
card scrubs its steps, and each step's heatmap is the trace's exact row for the token it read
last."""

from __future__ import annotations

from tests.browser.helpers import (
    ARTIFACTS,
    assert_close,
    f32,
    open_sentence,
    quoted_token,
    screenshot,
    shown_token,
    slide,
    snap,
    traces_drawn,
    wait_for_trace,
)

TEXT = "I sat on the river bank"


def gen_heat(page) -> dict:
    return page.evaluate(
        "() => { const h = document.querySelector('#gen-view .gen-heat .hc').__heat;"
        " return {labels: h.labels, rows: h.rowLabels, z: Array.from(h.matrix.data),"
        " dtype: h.matrix.dtype, title: document.querySelector('#gen-view .gen-heat .hc-title').textContent}; }"
    )


def test_generate_then_scrub_the_steps(page, live_server, api):
    open_sentence(page, live_server + "/", TEXT)
    assert page.locator("#s-gen-row").is_hidden()  # MiniLM is an encoder: it does not write
    before = traces_drawn(page)
    page.select_option("#s-model", "tiny-gpt2")
    wait_for_trace(page, before)
    assert page.locator("#s-gen-row").is_visible() and page.locator("#gen-card").is_hidden()
    page.fill("#s-gen-steps", "6")
    before = traces_drawn(page)
    page.click("#s-gen-go")
    wait_for_trace(page, before)
    assert page.locator("#gen-card").is_visible()
    trace = api.post("/api/trace", json={"model": "tiny-gpt2", "text": TEXT,
                                         "generate": {"steps": 6, "temperature": 0, "seed": 0}}).json()  # fmt: skip
    g = trace["generated"]
    assert g["steps"] == 6 and trace["n"] == g["start"] + 6
    assert page.locator("#gen-step-out").inner_text() == "step 6 / 6"
    assert page.locator("#gen-view .gen-text span.written").count() == 6
    # What it wrote is said under the text, where Generate was pressed (issue 41), and the card
    # is one button away.
    wrote_line = page.locator("#s-gen-wrote")
    assert wrote_line.is_visible()
    wrote_text = page.locator("#s-gen-wrote-text").inner_text()
    assert wrote_text == f"The model wrote: “{shown_token(g['text'])}”."
    # Byte-aware as the tokens are (issue 42): greedy tiny-gpt2 writes bytes of no whole
    # character, each read as its label ("<0x90>"), never as a replacement character.
    written = trace["tokens"][g["start"] :]
    assert any(label.startswith("<0x") for label in written), written
    assert "\ufffd" not in wrote_text and g["text"] == "".join(written)
    size = page.viewport_size
    for width in (1280, 480):
        page.set_viewport_size({"width": width, "height": 800})
        ARTIFACTS.mkdir(exist_ok=True)
        snap(wrote_line, path=str(ARTIFACTS / f"generation-wrote-{width}.png"))
    if size:
        page.set_viewport_size(size)
    page.click("#s-gen-wrote-go")
    assert page.evaluate("() => document.activeElement === document.querySelector('#gen-card h2')")
    screenshot(page, "generation.png")

    for step in (6, 1, 3):
        if step != 6:
            slide(page, "#gen-step", step)
        row = g["start"] + step - 2  # the last token read
        drawn = gen_heat(page)
        assert drawn["labels"] == trace["tokens"][: row + 1]
        assert drawn["rows"] == [trace["tokens"][row]]
        assert_close(drawn["z"], f32(trace["attentions"][0][0][row][: row + 1]), tol=0)
        wrote = trace["tokens"][g["start"] + step - 1]
        assert drawn["title"].startswith(
            # tokens quoted as the page draws them (issue 28, 5.10: spaces and bytes visible)
            f"Step {step}: reading up to {quoted_token(trace['tokens'][row])}, "
            f"the model wrote {quoted_token(wrote)}"
        )
        assert page.locator("#gen-view .gen-text span.new").inner_text() == wrote
    # Play runs to the last step.
    page.click("#gen-play")
    page.wait_for_function(
        "() => document.getElementById('gen-step-out').textContent === 'step 6 / 6'"
        " && document.getElementById('gen-play').getAttribute('aria-pressed') === 'false'",
        timeout=20_000,
    )
    # Back to the text alone: no generation card.
    before = traces_drawn(page)
    page.click("#s-gen-clear")
    wait_for_trace(page, before)
    assert page.locator("#gen-card").is_hidden() and wrote_line.is_hidden()
