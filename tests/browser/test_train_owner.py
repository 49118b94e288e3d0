"""Two visitors in two browser contexts (two cookie jars): A starts a run and is offered Cancel;
B opens A's run by its link, reads it as it trains, has it listed as opened by link, and is
offered no Cancel (nor can B's page cancel it: 404); A's Cancel still works."""

from __future__ import annotations

from tests.browser.helpers import ARTIFACTS, fresh_page, screenshot, snap
from tests.browser.test_train import RUN_OVER, open_train

RUNNING = (
    "id => document.getElementById('t-run-card').dataset.run === id"
    " && document.getElementById('train-mode').dataset.run === 'running'"
)


def test_b_opens_as_run_by_its_link_and_is_offered_no_cancel(page, browser, live_server):
    open_train(page, live_server)
    page.click("#t-start")
    page.wait_for_function("() => document.getElementById('train-mode').dataset.run === 'running'")
    run_id = page.locator("#t-run-card").get_attribute("data-run")
    assert len(run_id) == 32
    cancel = page.locator("#t-cancel")
    assert cancel.is_visible() and cancel.is_enabled()
    assert page.locator("#t-owner").is_hidden()
    page.wait_for_selector(f'#t-runs li[data-run="{run_id}"]')
    assert "yours" in page.locator(f'#t-runs li[data-run="{run_id}"]').inner_text()

    with fresh_page(browser) as (b, errors):
        b.goto(f"{live_server}/#train/{run_id}")
        b.wait_for_function(RUNNING, arg=run_id)
        # B reads A's run as it trains, and is offered no Cancel: it says why.
        assert b.locator("#t-cancel").is_hidden()
        owner = b.locator("#t-owner")
        assert owner.is_visible() and "Opened by its link" in owner.inner_text()
        # Opened, it is in B's list, marked so.
        item = b.locator(f'#t-runs li[data-run="{run_id}"]')
        item.wait_for()
        assert "opened by link" in item.inner_text()
        b.wait_for_function(
            "() => document.getElementById('t-loss').data?.[0]?.x.length > 0", timeout=60_000
        )
        screenshot(b, "train-owner-b-1280.png")
        b.set_viewport_size({"width": 480, "height": 900})
        assert b.evaluate("() => document.documentElement.scrollWidth <= 480")
        assert b.locator("#t-cancel").is_hidden() and owner.is_visible()
        screenshot(b, "train-owner-b-480.png")
        snap(b.locator("#t-run-card"), path=str(ARTIFACTS / "train-owner-b-480-card.png"))
        # Nor can B's page cancel it behind the button's back: the 404 of no such run.
        status = b.evaluate(
            "id => fetch(`/api/train/${id}`, {method: 'DELETE'}).then(r => r.status)", run_id
        )
        assert status == 404
        assert (
            b.evaluate(
                "id => fetch(`/api/train/${id}`).then(r => r.json()).then(r => r.can_cancel)",
                run_id,
            )
            is False
        )
        # A's Cancel: A's run ends, and B's page follows it there, still without Cancel.
        assert page.locator("#t-cancel").is_visible()
        page.click("#t-cancel")
        page.wait_for_function(RUN_OVER, timeout=60_000)
        assert page.evaluate("() => document.getElementById('train-mode').dataset.run") == (
            "cancelled"
        )
        b.wait_for_function(
            "() => document.getElementById('train-mode').dataset.run === 'cancelled'"
        )
        assert b.locator("#t-cancel").is_hidden()
        assert [e for e in errors if "404" not in e] == []
