"""A long text's trace as a person sees it: the server computes it as a job, the page shows a
line with the layers done and the time left, a bar and a Cancel button while the rest of the
page stays usable, then draws the trace; Cancel stops the job and keeps the views.

The server is the real one with the job threshold at 0 (every text trace the page asks for is
a job) and each layer of a job made 0.25 s slower, so that there is time to look."""

from __future__ import annotations

import time

import pytest

from attnviz.app import create_app
from attnviz.services.jobs import TraceJob
from attnviz.settings import Settings
from tests.browser.helpers import (
    AXE,
    axe_serious,
    open_sentence,
    screenshot,
    traces_drawn,
    wait_for_trace,
)
from tests.support.servers import served
from tests.support.waits import until

SLOW_S = 0.25


@pytest.fixture
def job_server(monkeypatch):
    listen = TraceJob.listen

    def slowed(self, stage, done, total):
        time.sleep(SLOW_S)  # pacing, not a wait: each layer is slower, so the page can be seen
        listen(self, stage, done, total)

    monkeypatch.setattr(TraceJob, "listen", slowed)
    app = create_app(Settings(device="cpu", trace_job_after_s=0))
    with served(app) as url:
        yield url, app.state.trace_jobs


def line(page) -> str:
    return page.locator(".job-progress .job-line").inner_text()


def test_the_page_shows_a_long_traces_progress_then_draws_it(page, job_server):
    url, jobs = job_server
    open_sentence(page, url)  # its first trace is a job too, drawn once done
    assert page.locator(".job-progress").is_hidden()
    before = traces_drawn(page)
    page.fill("#s-text", "The cat sat on the mat because it was tired")
    page.wait_for_selector(".job-progress:not([hidden]) .job-line")
    page.wait_for_function(
        "() => /layer [1-9]\\d* of 6 · about \\d+ s left/"
        ".test(document.querySelector('.job-progress .job-line')?.textContent || '')"
    )
    said = line(page)
    assert said.startswith("A long text: running the model, layer ") or "thumbnail" in said
    bar = page.locator(".job-progress progress")
    assert float(bar.get_attribute("max")) == 12  # 6 layers, then their thumbnails
    assert page.locator(".job-progress .job-line").get_attribute("role") == "status"
    # The page stays usable: the text can be edited, the Cancel button reached by keyboard.
    assert page.locator("#s-text").is_editable()
    page.locator(".job-progress .job-cancel").focus()
    assert page.evaluate("document.activeElement.textContent") == "Cancel"
    screenshot(page, "trace-job-progress.png")
    wait_for_trace(page, before)
    assert page.locator(".job-progress").is_hidden()
    tokens = page.evaluate("() => document.querySelector('#s-text').value")
    assert tokens.startswith("The cat sat")
    assert [j.state for j in jobs._jobs.values()][-1] == "done"
    screenshot(page, "trace-job-drawn.png")


def test_cancel_stops_the_job_and_keeps_the_views(page, job_server):
    url, jobs = job_server
    open_sentence(page, url)
    drawn = traces_drawn(page)
    page.fill("#s-text", "A long walk in the rain on a cold day")
    page.wait_for_selector(".job-progress:not([hidden]) .job-cancel")
    page.wait_for_function(
        "() => /layer [1-9]/.test(document.querySelector('.job-progress .job-line')?.textContent"
        " || '')"
    )
    page.locator(".job-progress .job-cancel").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(".job-progress", state="hidden")
    page.wait_for_function("() => /cancelled/.test(document.querySelector('#status').textContent)")
    assert "the views show the last trace" in page.locator("#status").inner_text()
    assert page.evaluate("document.activeElement.id") == "s-text"
    newest = list(jobs._jobs.values())[-1]
    until(lambda: newest.state, lambda s: s in ("done", "cancelled", "failed"), "the job's end")
    assert newest.state == "cancelled" and newest.message == "cancelled by its page"
    assert newest.done < newest.total
    assert traces_drawn(page) == drawn  # nothing new drawn, the old trace stays
    screenshot(page, "trace-job-cancelled.png")


def test_at_480_px_the_line_wraps_and_cancel_stays_in_view(page, job_server):
    """A phone's width: the line, the bar and Cancel wrap under the text, all in view, and
    axe finds nothing serious while the job runs."""
    url, _ = job_server
    page.add_init_script(path=str(AXE))
    page.set_viewport_size({"width": 480, "height": 900})
    open_sentence(page, url)
    before = traces_drawn(page)
    page.fill("#s-text", "On a narrow screen the progress of a long text wraps")
    page.wait_for_function(
        "() => /layer [1-9]/.test(document.querySelector('.job-progress .job-line')?.textContent"
        " || '')"
    )
    box = page.locator(".job-progress .job-cancel").bounding_box()
    assert box is not None and box["x"] + box["width"] <= 480
    assert page.evaluate("document.documentElement.scrollWidth") <= 480
    assert axe_serious(page) == []
    screenshot(page, "trace-job-480.png")
    wait_for_trace(page, before)
