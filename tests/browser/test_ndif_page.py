"""A model on NDIF as a person sees it (``ndif:<folder>``, NDIF_HOST=local: nnsight runs the
very trace in this process). A head of a layer whose queries and keys are not here yet is a trip
to the deployment: the page shows that it waits for it, with the time so far, a bar and Cancel,
keeps every other view usable, then draws the head. Each trip here waits for the test's gate,
so that there is time to look. A head knocked out there is read in the Knock-out card. The
query-key view's notes say a layer's window as the trace read it, and, where it was not read
over NDIF, say so on every layer rather than "no window"."""

from __future__ import annotations

import threading

import pytest

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    axe_serious,
    choose,
    head_lines,
    open_sentence,
    screenshot,
    select_and_wait,
    snap,
    traces_drawn,
    views_drawn,
    wait_for_trace,
    wait_for_views,
)
from tests.support.checkpoints import make_tiny_llama
from tests.support.checkpoints_bridge import WINDOW, _causal, make_tiny_gemma2
from tests.support.servers import served

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

pytest.importorskip("nnsight")


@pytest.fixture
def gated_server(tmp_path):
    folder = make_tiny_llama(tmp_path / "tiny-llama")
    settings = Settings(device="cpu", builtin_model=False, models=f"ndif:{folder}",
                        ndif_host="local", trace_job_after_s=0.3)  # fmt: skip
    app = create_app(settings)
    gate = threading.Event()
    gate.set()
    with served(app) as url:
        model = app.state.registry.get("ndif:tiny-llama")
        remote = model._remote

        def gated(trace):
            assert gate.wait(120)
            return remote(trace)

        model._remote = gated
        try:
            yield url, gate
        finally:
            gate.set()


def test_a_head_that_needs_a_trip_to_ndif_shows_the_wait_then_draws(page, gated_server):
    url, gate = gated_server
    page.add_init_script(path=str(AXE))
    open_sentence(page, url)
    assert page.locator(".job-progress").is_hidden()
    layer1 = page.locator('#mv-grid button.mv-cell[data-layer="1"][data-head="3"]')
    gate.clear()  # layer 1's q, k and v are not here yet: the deployment is asked for them
    before = views_drawn(page)
    layer1.click()
    page.wait_for_function(
        "() => /^Asking the model's deployment · about \\d+ s so far$/"
        ".test(document.querySelector('.job-progress:not([hidden]) .job-line')?.textContent || '')"
    )
    bar = page.locator(".job-progress progress")
    assert bar.get_attribute("value") is None  # how far, unknown here: an indeterminate bar
    page.locator(".job-progress .job-cancel").focus()
    assert page.evaluate("document.activeElement.textContent") == "Cancel"
    assert page.locator("#s-text").is_editable()
    assert axe_serious(page) == []
    screenshot(page, "ndif-part-waiting.png")
    gate.set()
    wait_for_views(page, before)
    page.wait_for_selector(".job-progress", state="hidden")
    lines = head_lines(page)
    assert lines and {line["head"] for line in lines} == {3}
    screenshot(page, "ndif-part-drawn.png")


def test_a_head_knocked_out_on_ndif_is_read_in_the_card(page, gated_server):
    """The switch on, a click knocks a head out: the knocked trace and the clean run's parts
    (two kept traces of the visitor, each part perhaps a job) both come, neither cancelling
    the other, and the card compares them."""
    url, _gate = gated_server
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    open_sentence(page, url)
    page.check("#mv-knock")
    before = traces_drawn(page)
    page.click('#mv-grid button.mv-cell[data-layer="0"][data-head="1"]')
    wait_for_trace(page, before)
    page.locator("#ko-view .ko-table").wait_for()
    summary = page.locator("#ko-view .ko-summary").inner_text()
    assert summary.startswith("Knocked out layer 1 head 2 by zeroing its output. Mean loss ")
    assert not errors, errors
    screenshot(page, "ndif-knocked.png")


# A Gemma 2 whose window's masks (1,004 tokens: 31 MB) are over the probe's cap of 16 MB.
LONG_WINDOW = 1000


def test_a_window_read_or_not_over_ndif_is_said_in_the_query_key_view(page, tmp_path):
    """Gemma 2's first layer slides a window of 8, read at start on the meta device: its note
    says so. A Gemma 2 whose window is too long to probe here: every layer's note says its
    window was not read over NDIF, and why, never that it has none."""
    short = make_tiny_gemma2(tmp_path / "tiny-gemma2")
    long = _causal(
        tmp_path / "long-gemma2", "gemma2", 0, hidden_size=32, intermediate_size=64,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
        sliding_window=LONG_WINDOW, max_position_embeddings=2048, query_pre_attn_scalar=8,
    )  # fmt: skip
    settings = Settings(device="cpu", builtin_model=False, ndif_host="local", probe_mb=16,
                        models=f"ndif:{short}:ndif:{long}")  # fmt: skip
    page.add_init_script(path=str(AXE))
    with served(create_app(settings)) as url:
        open_sentence(page, url)
        select_and_wait(page, "#s-model", "ndif:tiny-gemma2")
        choose(page, "#qk-layer", "0")
        notes = page.locator("#qk-view .qk-about").all_text_contents()
        said = f"This layer slides a window: a query sees only the last {WINDOW} tokens"
        assert any(note.startswith(said) for note in notes), notes
        assert not any("not read" in note for note in notes), notes
        select_and_wait(page, "#s-model", "ndif:long-gemma2")
        for layer in ("0", "1"):
            choose(page, "#qk-layer", layer)
            notes = page.locator("#qk-view .qk-about").all_text_contents()
            unread = [n for n in notes if n.startswith("This layer's sliding window, if it has")]
            assert unread == [
                "This layer's sliding window, if it has one, was not read over NDIF: its window "
                f"of {LONG_WINDOW:,} tokens is read from masks of {LONG_WINDOW + 4:,} tokens, "
                "30.8 MB, more than this server reads when it starts (16 MB)."
            ], notes
            assert not any(n.startswith("This layer slides a window") for n in notes), notes
        assert axe_serious(page) == []
        card = page.locator("#qk-card")
        card.scroll_into_view_if_needed()
        snap(card, path=str(ARTIFACTS / "ndif-window-unread-qk-1280.png"))
        page.set_viewport_size({"width": 480, "height": 900})
        card.scroll_into_view_if_needed()
        snap(card, path=str(ARTIFACTS / "ndif-window-unread-qk-480.png"))
        assert page.evaluate("document.documentElement.scrollWidth") <= 480
        page.goto("about:blank")  # its views' last requests end with the page, not the server
