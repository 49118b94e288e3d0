"""The operator's class view in the page (issue 41, "for a teacher"): three learners, each in a
browser context of their own (their own cookie), work on different steps of the Learn path
while the operator, in a fourth, opens `#learn/class` with the operator's token (typed, by the
keyboard alone) and sees all three, each by nickname or as a numbered learner, with the steps
done and where each is stuck; as the learners go on, the table follows without a reload. A
learner sees no class: the form asks for the token, and the server answers 403. The view passes
axe at 1280 and 480 px, with nothing scrolling sideways; screenshots of both."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.browser.helpers import AXE, answered, axe_serious, cell, fresh_page, shoot
from tests.browser.test_learn import READY, task_states
from tests.support.servers import served

OPERATOR = "a-teachers-token-for-the-browser-test"
ROWS = "#learn-class tbody tr"


@pytest.fixture(scope="module")
def class_server(tmp_path_factory) -> Iterator[str]:
    """A server with an operator, and a data directory of its own."""
    settings = Settings(device="cpu", builtin_model=False, admin_token=OPERATOR,
                        data_dir=tmp_path_factory.mktemp("class-data"))  # fmt: skip
    with served(create_app(settings)) as url:
        yield url


def open_step(page: Page, url: str, n: int, step_id: str) -> None:
    """Step n from its link, its lab drawn and its tasks answered (the start's check)."""
    before = [step_id, traces(page), checks(page), True]
    page.goto(f"{url}/#learn/{n}")
    page.wait_for_function(READY, arg=before)


def traces(page: Page) -> int:
    return int(page.evaluate("+(document.documentElement.dataset.traces || 0)"))


def checks(page: Page) -> int:
    return int(page.evaluate("+(document.documentElement.dataset.checks || 0)"))


def name_myself(page: Page, name: str) -> None:
    """The nickname, by the keyboard: the field, typed, Enter."""
    field = page.locator("#learn-nickname")
    assert field.is_visible()
    field.focus()
    page.keyboard.type(name)
    page.keyboard.press("Enter")
    said = page.locator("#learn-guide [data-role=name-said]")
    said.filter(has_text=f"the class sees you as {name}").wait_for()


def rows(page: Page) -> dict[str, dict[str, str]]:
    """The class table as read: each learner's cells by column."""
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('#learn-class tbody tr')]
          .map((r) => [r.dataset.label, {
            who: r.querySelector('th').innerText.replace(/\\s+/g, ' ').trim(),
            done: r.querySelector('[data-col=done]').innerText.trim(),
            stuck: r.querySelector('[data-col=stuck]').innerText.replace(/\\s+/g, ' ').trim(),
            seen: r.querySelector('[data-col=seen]').innerText.trim()}]))"""
    )


def wait_row(page: Page, label: str, col: str, text: str) -> None:
    """Until the operator's table (polled, never reloaded) shows `text` in a learner's cell."""
    page.wait_for_function(
        """([label, col, text]) => [...document.querySelectorAll('#learn-class tbody tr')]
          .some((r) => r.dataset.label === label
            && r.querySelector(`[data-col=${col}]`).innerText.includes(text))""",
        arg=[label, col, text],
    )


def test_the_operator_sees_three_learners_live(browser, class_server):
    url = class_server
    with (
        fresh_page(browser) as (ada, ada_errors),
        fresh_page(browser) as (bo, bo_errors),
        fresh_page(browser) as (cy, cy_errors),
        fresh_page(browser) as (op, op_errors),
    ):
        # Ada does step 2 and gives her name.
        ada.add_init_script(path=str(AXE))
        open_step(ada, url, 2, "dot-products")
        answered(ada, lambda: cell(ada, 4, 1).fill("2"))
        assert set(task_states(ada).values()) == {"done"}
        name_myself(ada, "Ada")
        assert axe_serious(ada) == []
        shoot(ada, "learn-nickname", "#learn-guide .learn-progress")
        # Bo opens step 2 and leaves it untouched (no try), then tries step 4 and is stuck.
        open_step(bo, url, 2, "dot-products")
        open_step(bo, url, 4, "worked-example")
        answered(bo, lambda: cell(bo, 4, 0).fill("0.5"))
        assert set(task_states(bo).values()) == {"todo"}
        # Cy does step 3.
        open_step(cy, url, 3, "scaling")
        answered(cy, lambda: cy.locator("#cfg-scale").uncheck())
        assert set(task_states(cy).values()) == {"done"}
        # No learner is offered the class.
        assert ada.locator("#learn-guide [data-role=class-link]").is_hidden()

        # The operator: the class view asks for the token; typed and sent by the keyboard.
        op.add_init_script(path=str(AXE))
        op.goto(f"{url}/#learn/class")
        token = op.locator("#learn-class-token")
        token.wait_for()
        assert op.locator("#learn-guide").is_hidden() and op.locator("#toy-mode").is_hidden()
        op.locator("#learn-class-h").focus()
        op.keyboard.press("Tab")
        assert op.evaluate("() => document.activeElement.id") == "learn-class-token"
        op.keyboard.type(OPERATOR)
        op.keyboard.press("Enter")
        op.wait_for_function(f"() => document.querySelectorAll('{ROWS}').length === 3")
        seen = rows(op)
        bo_label = "Learner 2"  # numbered as first seen: Ada 1, Bo 2, Cy 3
        assert set(seen) == {"Ada", bo_label, "Learner 3"}
        assert seen["Ada"]["done"] == "1 of 17: 2" and seen["Ada"]["stuck"] == "nowhere"
        assert seen["Ada"]["who"] == "Ada on step 2, Everyone looks at everyone"
        assert seen[bo_label]["done"] == "none yet"
        assert seen[bo_label]["stuck"].startswith("4. An apple and a banana, by hand Edit only")
        assert "2." not in seen[bo_label]["stuck"]  # opened, not tried
        assert seen["Learner 3"]["done"] == "1 of 17: 3"
        for row in seen.values():
            assert re.fullmatch(r"just now|\d+ (second|minute|hour)s? ago", row["seen"]), row
        summary = op.locator("#learn-class [data-role=class-summary]").inner_text()
        assert summary == "3 learners; 1 stuck on a task (tried, not done)."
        caption = op.locator("#learn-class caption").inner_text()
        assert caption == "Learners on this server, the one seen most recently first"
        # Nothing of a visitor's id or cookie in the view.
        for page in (ada, bo, cy):
            cookie = next(
                c["value"] for c in page.context.cookies() if c["name"] == "attnviz_visitor"
            )
            assert cookie.rsplit(".", 1)[0] not in op.content()
        assert axe_serious(op) == []
        # Screens at 1280 and 480: nothing sideways, axe clean at both.
        shoot(op, "learn-class")
        op.set_viewport_size({"width": 480, "height": 900})
        assert op.evaluate("() => document.documentElement.scrollWidth <= 480")
        assert axe_serious(op) == []
        op.set_viewport_size({"width": 1280, "height": 800})

        # The learners go on; the operator's table follows, with no reload.
        polls = int(op.evaluate("+document.getElementById('learn-class').dataset.polls"))
        op.evaluate("() => { window.sameDocument = true; }")  # gone with any reload
        answered(bo, lambda: cell(bo, 4, 1).fill("2"))
        assert set(task_states(bo).values()) == {"done"}
        wait_row(op, bo_label, "done", "1 of 17: 4")
        wait_row(op, bo_label, "stuck", "nowhere")
        name_myself(cy, "Cy")
        op.wait_for_function(
            "() => [...document.querySelectorAll('#learn-class tbody tr')]"
            ".some((r) => r.dataset.label === 'Cy')"
        )
        assert int(op.evaluate("+document.getElementById('learn-class').dataset.polls")) > polls
        assert op.evaluate("() => window.sameDocument === true")
        assert [r["who"].split(" on step")[0] for r in rows(op).values()][0] == "Cy"

        # A learner who opens the class view: the token's form, no table; the server says 403.
        ada.goto(f"{url}/#learn/class")
        ada.locator("#learn-class-token").wait_for()
        assert ada.locator(ROWS).count() == 0 and ada.locator("#learn-class table").is_hidden()
        ada.fill("#learn-class-token", "a-guess")
        ada.press("#learn-class-token", "Enter")
        said = ada.locator("#learn-class [data-role=class-said]")
        said.filter(has_text="not this server's operator token").wait_for()
        assert ada.locator(ROWS).count() == 0 and ada.locator("#learn-class-token").is_visible()
        assert ada.evaluate("() => sessionStorage.getItem('attnviz.operator')") is None
        status = ada.evaluate("() => fetch('/api/learn/class').then((r) => r.status)")
        assert status == 403

        # The operator's tab now offers the class from the path.
        # The operator's own browser opens step 2 and its check is answered for its cookie
        # (before the link is followed: a check still on its way when the step closes may
        # never be sent), so it is a learner too, the fourth.
        open_step(op, url, 2, "dot-products")
        link = op.locator("#learn-guide [data-role=class-link]")
        link.wait_for()
        link.click()
        op.wait_for_function(f"() => document.querySelectorAll('{ROWS}').length === 4")
        assert op.url.endswith("#learn/class")
        assert rows(op)["Learner 4"]["who"] == "Learner 4 on step 2, Everyone looks at everyone"
        for errors in (bo_errors, cy_errors, op_errors):
            assert errors == []
        assert [e for e in ada_errors if "403" not in e] == []  # her fetch of the class


def test_opening_a_toy_step_is_seen_not_tried(browser, class_server):
    """Each toy step's first check, of the lab as the step opens it (the page sends the whole
    table: the identity where the step leaves W_O out), is of the untouched start: the server
    counts it as seen, never as a try, so a learner who only opened a step is not "stuck"."""
    from attnviz.learn import service
    from attnviz.learn.steps import STEPS
    from attnviz.schemas.learn import LearnCheckRequest

    with fresh_page(browser) as (page, errors):
        for n, step in enumerate(STEPS, start=1):
            if step.lab != "toy":
                continue
            with page.expect_request(
                lambda r, path=f"/api/learn/{step.id}/check": r.url.endswith(path)
            ) as req:
                page.goto(f"{class_server}/#learn/{n}")
            body = LearnCheckRequest.model_validate_json(req.value.post_data or "")
            assert not service.changed(step, body), step.id
        assert errors == []
