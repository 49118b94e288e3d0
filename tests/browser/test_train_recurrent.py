"""Why not an RNN, in the page's Train tab: the comparison's card offers the server's tasks
(copy first), seed 0, and nothing measured yet (its Run and Cancel buttons on a busy server:
test_train_queue.py). The card once a comparison has run (its plots, their text, its claims)
is checked on the comparison Learn step 1 runs (test_walk_look.py, with
``recurrent_card.check_done_card``): the suite trains that comparison once."""

from __future__ import annotations

from tests.browser.helpers import AXE, axe_serious


def test_the_train_tabs_card_offers_the_servers_tasks_before_a_run(page, live_server, api):
    page.add_init_script(path=str(AXE))
    page.goto(live_server + "/#train")
    card = page.locator("#recurrent-card")
    card.wait_for(state="visible")
    options = api.get("/api/recurrent/options").json()
    assert page.locator("#rc-task option").evaluate_all("os => os.map((o) => o.value)") == [
        t["name"] for t in options["tasks"]
    ]
    assert page.locator("#rc-task").input_value() == options["default"] == "copy"
    assert page.locator("#rc-seed").input_value() == "0"
    assert card.locator("[data-role=plots]").is_hidden()  # nothing measured yet
    assert page.locator("#rc-cancel").is_hidden()
    assert axe_serious(page) == []
