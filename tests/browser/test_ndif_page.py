"""A model on NDIF as a person sees it (``ndif:<folder>``, NDIF_HOST=local: nnsight runs the
very trace in this process). A head of a layer whose queries and keys are not here yet is a trip
to the deployment: the page shows that it waits for it, with the time so far, a bar and Cancel,
keeps every other view usable, then draws the head. Each trip here waits for the test's gate,
so that there is time to look. A head knocked out there is read in the Knock-out card."""

from __future__ import annotations

import threading

import pytest

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.browser.helpers import (
    AXE,
    axe_serious,
    head_lines,
    open_sentence,
    screenshot,
    traces_drawn,
    views_drawn,
    wait_for_trace,
    wait_for_views,
)
from tests.support.checkpoints import make_tiny_llama
from tests.support.servers import served

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
    assert summary.startswith("Knocked out layer 1 head 2 (zero). Mean loss ")
    assert not errors, errors
    screenshot(page, "ndif-knocked.png")
