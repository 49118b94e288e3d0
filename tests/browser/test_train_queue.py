"""The line for a slot in the browser: with the one slot busy (visitor A's run, over the API),
visitor B's run waits; B's page shows its place ("next in line, about N s") in the run card's
live region, offers Cancel, then shows the usual progress once A's run ends and B's starts. A
comparison waits in the same line, and its card says so."""

from __future__ import annotations

import re

import httpx

from attnviz.app import create_app
from attnviz.services.recurrent import RecurrentService
from attnviz.settings import Settings
from tests.api.test_recurrent import long_copy
from tests.browser.helpers import ARTIFACTS, fresh_page, screenshot, snap
from tests.browser.test_train import RUN_OVER, open_train
from tests.support.servers import served
from tests.support.waits import until

TINY = {"layers": 2, "heads": 2, "d_model": 16}
STATE = "() => document.getElementById('train-mode').dataset.run"


def test_a_waiting_run_shows_its_place_then_its_progress(browser, tmp_path):
    app = create_app(Settings(device="cpu", builtin_model=False, data_dir=tmp_path,
                              train_slots=1, train_queue=2))  # fmt: skip
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as a:
        r = a.post("/api/train", json={"arch": TINY, "opt": {"steps": 5000}, "checkpoints": 2})
        assert r.status_code == 202 and r.json()["state"] == "running"
        ahead = r.json()["id"]
        until(lambda: a.get(f"/api/train/{ahead}").json()["variants"][0]["history"]["step"],
              bool, "A's first step", 0.02)  # fmt: skip

        with fresh_page(browser) as (b, errors):
            open_train(b, url)
            b.fill("#t-steps", "40")
            b.click("#t-start")
            b.wait_for_function(f"() => ({STATE})() === 'queued'")
            rate = b.locator("#t-rate")
            b.wait_for_function(
                "() => document.getElementById('t-rate').textContent.includes('next in line')"
            )
            text = rate.inner_text()
            assert text.startswith("Waiting for a training slot: next in line, about "), text
            assert re.match(
                r"^Waiting for a training slot: next in line, about \d+ (s|min)\. ", text
            )
            assert rate.get_attribute("aria-live") == "polite"  # said by a screen reader
            cancel = b.locator("#t-cancel")
            assert cancel.is_visible() and cancel.is_enabled()  # a waiting run is B's to cancel
            assert b.locator("#export-html").is_disabled()  # nothing to save until it ends
            assert "Waiting for a training slot" in b.locator("#t-large").inner_text()
            run_id = b.locator("#t-run-card").get_attribute("data-run")
            assert a.get(f"/api/train/{run_id}").json()["place"] == 1
            item = b.locator(f'#t-runs li[data-run="{run_id}"]')
            item.wait_for()
            assert "queued, next in line" in item.inner_text()
            screenshot(b, "train-queue-1280.png")
            snap(b.locator("#t-run-card"), path=str(ARTIFACTS / "train-queue-1280-card.png"))
            b.set_viewport_size({"width": 480, "height": 900})
            assert b.evaluate("() => document.documentElement.scrollWidth <= 480")
            screenshot(b, "train-queue-480.png")

            # A's run ends: B's starts by itself, and its page shows the usual progress.
            assert a.delete(f"/api/train/{ahead}").status_code == 200
            b.wait_for_function(f"() => ['running', 'done'].includes(({STATE})())", timeout=60_000)
            b.wait_for_function(RUN_OVER, timeout=60_000)
            assert b.evaluate(STATE) == "done"
            assert "next in line" not in rate.inner_text()
            assert "40 steps" in rate.inner_text(), rate.inner_text()
            assert b.evaluate("() => document.getElementById('t-progress').value") == 1
            assert errors == []


COMPARED = "() => document.getElementById('recurrent-card').dataset.state"


def test_a_waiting_comparison_shows_its_place_then_runs_by_itself(browser, tmp_path):
    """Comparisons wait in the same line as runs (services.line): with the one slot taken by
    visitor A's comparison, B's card says its place and estimate in its live region, its Run
    button is off and its Cancel on, and once A's ends B's runs to its end without B doing
    anything; B's Cancel stops B's next one."""
    s = Settings(device="cpu", builtin_model=False, data_dir=tmp_path, train_slots=1,
                 train_max_seconds=60)  # fmt: skip
    app = create_app(s)
    app.state.recurrent = RecurrentService(s, long_copy())
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as a:
        r = a.post("/api/recurrent", json={"task": "copy"})
        assert r.status_code == 202 and r.json()["state"] == "running", r.text
        ahead = r.json()["id"]
        with fresh_page(browser) as (b, errors):
            b.goto(url + "/#train")
            b.locator("#recurrent-card").wait_for(state="visible")
            b.select_option("#rc-task", "reverse")
            b.click("#rc-start")
            b.wait_for_function(f"() => ({COMPARED})() === 'queued'")
            doing = b.locator("#recurrent-card [data-role=doing]")
            text = doing.inner_text()
            assert re.match(
                r"^reverse, seed 0: waiting for a slot, next in line, about \d+ (s|min)\. It "
                r"starts by itself when the comparisons ahead end\.$",
                text,
            ), text
            assert doing.get_attribute("aria-live") == "polite"
            assert b.locator("#rc-start").is_disabled()
            assert b.locator("#rc-cancel").is_visible()  # B's to cancel while it waits
            mine = b.locator("#recurrent-card").get_attribute("data-run")
            assert a.get(f"/api/recurrent/{mine}").json()["place"] == 1
            snap(
                b.locator("#recurrent-card"), path=str(ARTIFACTS / "recurrent-queue-1280-card.png")
            )
            b.set_viewport_size({"width": 480, "height": 900})
            assert b.evaluate("() => document.documentElement.scrollWidth <= 480")
            snap(b.locator("#recurrent-card"), path=str(ARTIFACTS / "recurrent-queue-480-card.png"))
            # A's ends: B's starts by itself and runs to its claims.
            assert a.delete(f"/api/recurrent/{ahead}").status_code == 200
            b.wait_for_function(f"() => ({COMPARED})() === 'done'", timeout=120_000)
            assert "waiting" not in doing.inner_text()
            assert b.locator("#recurrent-card [data-role=claims] li").count() > 0
            assert b.locator("#rc-start").is_enabled() and b.locator("#rc-cancel").is_hidden()
            # B's next one runs at once (the slot is free); Cancel stops it where it is.
            b.select_option("#rc-task", "copy")
            b.click("#rc-start")
            b.wait_for_function(f"() => ({COMPARED})() === 'running'")
            b.click("#rc-cancel")
            b.wait_for_function(f"() => ({COMPARED})() === 'cancelled'", timeout=60_000)
            assert doing.inner_text().startswith("copy, seed 0: cancelled · ")  # said once
            assert b.locator("#rc-cancel").is_hidden()
            assert errors == []
