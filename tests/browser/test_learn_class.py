"""The operator's class view in the page (issue 41, "for a teacher"): three learners, each in a
browser context of their own (their own cookie), work on different steps of the Learn path
while the operator, in a fourth, opens `#learn/class` with the operator's token (typed, by the
keyboard alone) and sees all three, each by nickname or as a numbered learner, with the steps
done and where each is stuck (the server's rule, said in the caption: tries over minutes, the
server's clock moved by the test); as the learners go on, the table follows without a reload.
The operator's own tab, browsing a step, is no learner. A learner sees no class: the form asks
for the token (never naming a developer's variable), and the server answers 403. A classmate's
Learn link opens her lab, answered: its verdict shown, not done, and credited to no one (the
path, the server and the class view agree) until its opener changes it. The view passes axe at 1280 and 480 px, with nothing scrolling sideways; screenshots of
both."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from attnviz.app import create_app
from attnviz.learn.classroom import STUCK_S, STUCK_TRIES
from attnviz.settings import Settings
from tests.browser.helpers import AXE, answered, axe_serious, cell, fresh_page, shoot
from tests.browser.test_learn import READY, task_states
from tests.support.servers import served

OPERATOR = "a-teachers-token-for-the-browser-test"
ROWS = "#learn-class tbody tr"
STORAGE = "attnviz.learn"  # where the page keeps a browser's progress (progress.js)
# STUCK_S in words, as the page says a span under an hour: whole minutes.
STUCK_WORDS = f"{int(STUCK_S // 60)} minute{'' if STUCK_S // 60 == 1 else 's'}"
assert 60 <= STUCK_S < 3600


class Clock:
    """The server's clock for the learners' progress (``Classroom.clock``), moved by the test:
    tries minutes apart without waiting minutes."""

    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


def operator_server(tmp_path_factory, name: str) -> Iterator[tuple[str, Clock]]:
    """A server with an operator, a data directory of its own, and its class's clock."""
    settings = Settings(device="cpu", builtin_model=False, admin_token=OPERATOR,
                        data_dir=tmp_path_factory.mktemp(name))  # fmt: skip
    app = create_app(settings)
    clock = app.state.classroom.clock = Clock()
    with served(app) as url:
        yield url, clock


@pytest.fixture(scope="module")
def class_server(tmp_path_factory) -> Iterator[tuple[str, Clock]]:
    yield from operator_server(tmp_path_factory, "class-data")


@pytest.fixture
def own_server(tmp_path_factory) -> Iterator[tuple[str, Clock]]:
    """A server of the test's own: its learners are the test's alone."""
    yield from operator_server(tmp_path_factory, "own-data")


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
    url, clock = class_server
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
        # Bo opens step 2 and leaves it untouched (no try), then tries step 4 again and again,
        # over minutes, and is stuck.
        open_step(bo, url, 2, "dot-products")
        open_step(bo, url, 4, "worked-example")
        for k in range(STUCK_TRIES):
            if k == STUCK_TRIES - 1:
                clock.t += STUCK_S  # the last try, STUCK_S after the first
            answered(bo, lambda k=k: cell(bo, 4, 0).fill(f"{0.5 - 0.1 * k:.1f}"))
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
        op.keyboard.press("Enter")  # nothing typed yet: what to type, in a learner's words
        said = op.locator("#learn-class [data-role=class-said]")
        said.filter(has_text="Enter the token this server's operator set").wait_for()
        assert "ATTNVIZ" not in op.locator("#learn-class").inner_text()
        shoot(op, "learn-class-token", "#learn-class")
        op.locator("#learn-class-token").focus()
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
        assert seen[bo_label]["stuck"].endswith(f"({STUCK_TRIES} tries over {STUCK_WORDS})")
        assert "2." not in seen[bo_label]["stuck"]  # opened, not tried
        assert seen["Learner 3"]["done"] == "1 of 17: 3" and seen["Learner 3"]["stuck"] == "nowhere"
        for row in seen.values():
            assert re.fullmatch(r"just now|\d+ (second|minute|hour)s? ago", row["seen"]), row
        summary = op.locator("#learn-class [data-role=class-summary]").inner_text()
        assert summary == "3 learners; 1 stuck on a task."
        caption = op.locator("#learn-class caption").inner_text()
        assert caption == (
            "Learners on this server, the one seen most recently first. Stuck: at least "
            f"{STUCK_TRIES} tries at a task (each a different state of the lab) over at least "
            f"{STUCK_WORDS}, and not done. Tried nothing yet: opened steps or someone's link and "
            "changed nothing, as a browser of yours without the token does."
        )
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

        # The operator's tab now offers the class from the path, and no nickname: it is no
        # learner. Its own check of step 2 is answered (before the link is followed: a check
        # still on its way when the step closes may never be sent) and kept for no one: the
        # class asked for after it still has its three learners.
        with op.expect_response(lambda r: r.url.endswith("/api/learn/progress")):
            open_step(op, url, 2, "dot-products")
        link = op.locator("#learn-guide [data-role=class-link]")
        link.wait_for()
        assert op.locator("#learn-nickname").is_hidden()
        polls = int(op.evaluate("+document.getElementById('learn-class').dataset.polls"))
        link.click()
        op.wait_for_function(
            "n => +document.getElementById('learn-class').dataset.polls > n", arg=polls
        )
        assert op.url.endswith("#learn/class")
        assert set(rows(op)) == {"Ada", bo_label, "Cy"}
        for errors in (bo_errors, cy_errors, op_errors):
            assert errors == []
        assert [e for e in ada_errors if "403" not in e] == []  # her fetch of the class


def test_opening_a_toy_step_is_seen_not_tried(browser, own_server):
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
                page.goto(f"{own_server[0]}/#learn/{n}")
            body = LearnCheckRequest.model_validate_json(req.value.post_data or "")
            assert not service.changed(step, body), step.id
        assert errors == []


def test_a_shared_links_verdict_is_shown_not_done_until_the_opener_changes_it(browser, own_server):
    """Issue 41: Ada does step 2 and copies its link; Bo opens it in a browser of his own. The
    one state tells one story: his task shows the link's verdict as *Shown* (neutral, never the
    green Done), with the sentence that it is the shared link's lab and what makes it his; his
    path says 0 done; the server keeps nothing done or tried for him, and the operator's class
    view says he has tried nothing (only opened someone's link). The check was sent from_link,
    and his browser keeps nothing of it. Then his own change that still passes: his try, Done,
    and the path, the server and the class view say done. Screenshots at 1280 and 480 px of
    both, axe clean."""
    from attnviz.learn.service import SEEN_LAB
    from tests.browser.test_learn_links import copy_link
    from tests.browser.test_walk_guide import VERDICT

    url, _ = own_server
    count = "#learn-guide [data-role=count]"
    seen = "#learn-guide [data-role=seen]"
    badge = "#learn-guide .learn-task[data-task='apple-to-banana'] [data-role=badge]"

    def kept(page: Page) -> str | None:
        """The progress his browser keeps (localStorage), as stored."""
        return page.evaluate(f"() => localStorage.getItem({json.dumps(STORAGE)})")

    def progress(page: Page) -> dict:
        return page.evaluate("() => fetch('/api/learn/progress').then((r) => r.json())")

    with (
        fresh_page(browser) as (ada, ada_errors),
        fresh_page(browser) as (bo, bo_errors),
        fresh_page(browser) as (op, op_errors),
    ):
        open_step(ada, url, 2, "dot-products")
        answered(ada, lambda: cell(ada, 4, 1).fill("2"))
        assert set(task_states(ada).values()) == {"done"}
        assert ada.locator(badge).inner_text() == "Done" and ada.locator(seen).is_hidden()
        shared = copy_link(ada)
        assert "?toy=" in shared

        # Bo opens Ada's link: her lab, answered at once, shown, not done.
        bo.add_init_script(path=str(AXE))
        before = ["dot-products", 0, 0, True]
        with bo.expect_request(lambda r: r.url.endswith("/api/learn/dot-products/check")) as req:
            bo.goto(shared)
        bo.wait_for_function(READY, arg=before)
        assert json.loads(req.value.post_data or "{}").get("from_link") is True
        assert task_states(bo) == {"apple-to-banana": "shown"}
        assert bo.locator(badge).inner_text() == "Shown"
        assert bo.locator(seen).is_visible() and bo.locator(seen).inner_text() == SEEN_LAB
        assert bo.locator(count).inner_text() == "(0 of 17 done)"
        assert (
            bo.locator("#learn-guide [data-role=steps] a[data-n='2']").get_attribute("data-done")
            == "false"
        )
        # The server and his browser agree: nothing done, nothing tried, nothing kept.
        assert progress(bo)["steps"] == {"dot-products": {"done": [], "tried": []}}
        assert "apple-to-banana" not in (kept(bo) or "")
        # The operator's class view: Bo (Learner 2) has tried nothing; Ada has done step 2.
        op.add_init_script(f"sessionStorage.setItem('attnviz.operator', {json.dumps(OPERATOR)})")
        op.goto(f"{url}/#learn/class")
        op.wait_for_function(f"() => document.querySelectorAll('{ROWS}').length === 2")
        seen_by_op = rows(op)
        assert seen_by_op["Learner 1"]["done"] == "1 of 17: 2"
        assert seen_by_op["Learner 2"]["done"] == "nothing tried yet (only opened someone's link)"
        # The note kept at the bottom of the window says it too, once the task is out of view.
        bo.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
        bo.wait_for_function(f"() => !document.querySelector('{VERDICT}').hidden")
        note = bo.locator(VERDICT)
        assert note.get_attribute("data-state") == "shown"
        assert note.locator("[data-role=verdict-badge]").inner_text() == "Shown"
        assert note.locator("[data-role=verdict-says]").inner_text().endswith(SEEN_LAB)
        assert "on to the next step" not in note.inner_text()
        bo.evaluate("() => window.scrollTo(0, 0)")
        assert axe_serious(bo) == []
        shoot(bo, "learn-link-shown", "#learn-guide .learn-tasks")
        shoot(bo, "learn-link-shown-top", "top")

        # His own change that still passes (banana's fruit up to 3): his try, done.
        with bo.expect_request(lambda r: r.url.endswith("/api/learn/dot-products/check")) as req:
            answered(bo, lambda: cell(bo, 4, 1).fill("3"))
        assert "from_link" not in json.loads(req.value.post_data or "{}")
        assert task_states(bo) == {"apple-to-banana": "done"}
        assert bo.locator(badge).inner_text() == "Done" and bo.locator(seen).is_hidden()
        assert bo.locator(count).inner_text() == "(1 of 17 done)"
        assert progress(bo)["steps"]["dot-products"] == {
            "done": ["apple-to-banana"], "tried": ["apple-to-banana"],
        }  # fmt: skip
        assert "apple-to-banana" in (kept(bo) or "")
        wait_row(op, "Learner 2", "done", "1 of 17: 2")
        assert axe_serious(bo) == []
        shoot(bo, "learn-link-own-done", "#learn-guide .learn-tasks")
        for errors in (ada_errors, bo_errors, op_errors):
            assert errors == []


def test_the_class_sees_the_step_open_and_who_has_tried_nothing(browser, own_server):
    """Issue 41: the class view's "on step N" is the step the learner has open, also a train
    step with no run yet, which the page has nothing to check on (the page tells the server as
    it opens a step); a browser that only opened a learner's link (the teacher's, without the
    token) is listed as having tried nothing yet, its row marked, never stuck, and counted apart
    in the sentence above the table. Screenshots at 1280 and 480 px, axe clean."""
    url, _ = own_server
    with (
        fresh_page(browser) as (ada, ada_errors),
        fresh_page(browser) as (looker, looker_errors),
        fresh_page(browser) as (op, op_errors),
    ):
        open_step(ada, url, 2, "dot-products")
        answered(ada, lambda: cell(ada, 4, 1).fill("2"))
        ada.wait_for_function("() => location.hash.includes('?toy=')")
        shared = ada.url
        # Step 11: nothing trained, so nothing checked; the step open is told all the same.
        sent = []
        ada.on("request", lambda r: sent.append(r.url) if "/api/learn/" in r.url else None)
        with ada.expect_response(lambda r: r.url.endswith("/api/learn/encoder-decoder/open")):
            ada.goto(f"{url}/#learn/11")
        ada.wait_for_function(
            "() => document.getElementById('learn-guide').dataset.step === 'encoder-decoder'"
        )
        assert not any(u.endswith("/encoder-decoder/check") for u in sent)
        # The teacher's other browser, without the token, opens Ada's link.
        open_step(looker, url, 2, "dot-products")
        before = ["dot-products", traces(looker), checks(looker), True]
        with looker.expect_response(lambda r: r.url.endswith("/api/learn/dot-products/check")):
            looker.goto(shared)  # answered, and recorded, before the class is asked for
        looker.wait_for_function(READY, arg=before)

        op.add_init_script(path=str(AXE))
        op.add_init_script(f"sessionStorage.setItem('attnviz.operator', {json.dumps(OPERATOR)})")
        op.goto(f"{url}/#learn/class")
        op.wait_for_function(f"() => document.querySelectorAll('{ROWS}').length === 2")
        seen = rows(op)
        assert seen["Learner 1"]["who"] == (
            "Learner 1 on step 11, Encoder, decoder, cross-attention"
        )
        assert seen["Learner 1"]["done"] == "1 of 17: 2"
        assert seen["Learner 2"]["done"] == "nothing tried yet (only opened someone's link)"
        assert seen["Learner 2"]["stuck"] == "nowhere"
        marked = op.evaluate(
            "() => [...document.querySelectorAll('#learn-class tbody tr.class-idle')]"
            ".map((r) => r.dataset.label)"
        )
        assert marked == ["Learner 2"]
        summary = op.locator("#learn-class [data-role=class-summary]").inner_text()
        assert summary == "2 learners; none stuck on a task; 1 has tried nothing yet."
        assert (
            "a browser of yours without the token"
            in op.locator("#learn-class caption").inner_text()
        )
        # Ada goes back to step 2: the class follows the step she has open.
        ada.goto(f"{url}/#learn/2")
        wait_row_who(op, "Learner 1", "on step 2,")
        assert axe_serious(op) == []
        shoot(op, "learn-class-idle", "#learn-class")
        op.set_viewport_size({"width": 480, "height": 900})
        assert op.evaluate("() => document.documentElement.scrollWidth <= 480")
        assert axe_serious(op) == []
        for errors in (ada_errors, looker_errors, op_errors):
            assert errors == []


def wait_row_who(page: Page, label: str, text: str) -> None:
    """Until the operator's table shows `text` beside a learner's name."""
    page.wait_for_function(
        """([label, text]) => [...document.querySelectorAll('#learn-class tbody tr')]
          .some((r) => r.dataset.label === label && r.querySelector('th').innerText.includes(text))""",
        arg=[label, text],
    )
