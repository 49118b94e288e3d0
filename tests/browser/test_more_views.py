"""Sentence mode's first screen: the cards a newcomer starts with, the rest behind "More views".

A newcomer (a browser that never opened the page: no init script) sees a third or less of the
179 controls the page had before the bar (issue 41 counted them at 1280 px: every button, input,
select, link and summary a Tab can reach); each card behind the bar opens with its button,
stays open in this browser, and travels with a copied link.
"""

from __future__ import annotations

import base64
import json
import re

import pytest
from playwright.sync_api import Browser, Page

from tests.browser.helpers import (
    AXE,
    MORE_VIEWS,
    TIMEOUT_MS,
    axe_serious,
    shoot,
    traces_drawn,
    view_change,
    wait_for_trace,
)

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

BEFORE = 179  # the controls a Tab reached on sentence mode's page before "More views"

# Every control a Tab reaches (a radio group is one stop: its checked radio) that is shown; a
# glossary term's button explains a word and is counted apart (tests/browser/test_glossary.py).
TAB_STOPS = """(onScreen) => {
  const sel = 'button, input:not([type=hidden]), select, textarea, a[href], summary, [tabindex]';
  return [...document.querySelectorAll(sel)].filter((e) => {
    const r = e.getBoundingClientRect();
    if (!r.width || !r.height || e.closest('[hidden]') || getComputedStyle(e).visibility === 'hidden') return false;
    if (e.tabIndex < 0 || e.disabled || (e.type === 'radio' && !e.checked)) return false;
    if (e.classList.contains('term')) return false;  // a word's explanation, not a control
    if (e.closest('details:not([open])') && e.tagName !== 'SUMMARY') return false;
    return !onScreen || (r.top < innerHeight && r.bottom > 0);
  }).length;
}"""


def newcomer(browser: Browser, width: int = 1280) -> Page:
    """A page in a context that never saw attnviz (nothing remembered), at `width`."""
    context = browser.new_context(viewport={"width": width, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(path=str(AXE))
    return context.new_page()


def sentence(page: Page, url: str) -> None:
    page.goto(url)
    wait_for_trace(page, 0)
    before = traces_drawn(page)
    page.click("#mode-sentence")
    wait_for_trace(page, before)


def shown(page: Page) -> list[str]:
    """The cards behind the bar that are open, by their button's view name."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#more-list button')]
          .filter((b) => !document.getElementById(b.getAttribute('aria-controls')).hidden)
          .map((b) => b.dataset.view)"""
    )


def link_more(url: str) -> list[str] | None:
    """The `more` a share link's hash carries."""
    raw = json.loads(base64.urlsafe_b64decode(url.split("#s=")[1] + "=="))
    return raw["sentence"].get("more")


@pytest.mark.parametrize("width", [1280, 480])
def test_a_newcomer_sees_a_third_of_the_controls_and_every_card_is_one_click_away(
    browser, live_server, width
):
    page = newcomer(browser, width)
    sentence(page, live_server + "/")
    buttons = page.locator("#more-list button")
    assert buttons.evaluate_all("bs => bs.map((b) => b.dataset.view)") == MORE_VIEWS
    assert shown(page) == []
    # Each button is named as its card is titled.
    for b in buttons.all():
        card = page.locator("#" + b.get_attribute("aria-controls"))
        assert b.text_content() == card.locator("h2").text_content().strip()
        assert card.is_hidden() and b.get_attribute("aria-pressed") == "false"
    page.evaluate("() => window.scrollTo(0, 0)")
    on_page, first_screen = page.evaluate(TAB_STOPS, False), page.evaluate(TAB_STOPS, True)
    assert on_page <= BEFORE / 3, on_page
    assert 0 < first_screen <= on_page
    # The knock-out switch is the Knock-out card's: not there while the card is closed.
    assert page.locator("#mv-knock-label").is_hidden()
    assert axe_serious(page) == []
    if width == 1280:  # (shoot takes both widths)
        shoot(page, "more-views-first", "#more-card")
    page.context.close()


def test_a_card_opens_by_keyboard_stays_open_here_and_travels_with_the_link(browser, live_server):
    page = newcomer(browser)
    sentence(page, live_server + "/")
    traj = page.locator('#more-list button[data-view="traj"]')
    traj.focus()
    view_change(page, lambda: page.keyboard.press("Enter"))  # the card's view is drawn as it opens
    assert traj.get_attribute("aria-pressed") == "true"
    assert page.evaluate("() => document.activeElement.dataset.view") == "traj"  # focus stays
    assert shown(page) == ["traj"]
    assert page.locator("#traj-card .js-plotly-plot").count() == 1
    page.wait_for_function("() => location.hash.startsWith('#s=')")
    assert link_more(page.url) == ["traj"]
    shoot(page, "more-views-trajectories", "#traj-card")
    # Remembered by this browser: a new visit without a link opens it again.
    again = page.context.new_page()
    sentence(again, live_server + "/")
    assert shown(again) == ["traj"]
    # Carried by the link: another person's browser opens what the link says.
    other = newcomer(browser)
    other.goto(page.url)
    wait_for_trace(other, 0)
    assert shown(other) == ["traj"]
    assert other.locator("#traj-card .js-plotly-plot").count() == 1
    other.context.close()
    # Closed by its button again: hidden, and remembered so.
    page.click('#more-list button[data-view="traj"]')
    assert shown(page) == [] and traj.get_attribute("aria-pressed") == "false"
    assert link_more(page.url) == []
    assert page.evaluate("() => localStorage.getItem('attnviz.sentence.more')") == "[]"
    page.context.close()


def test_heads_knocked_out_open_the_knock_out_card_and_closing_it_puts_them_back(
    browser, live_server
):
    page = newcomer(browser)
    sentence(page, live_server + "/")
    page.click('#more-list button[data-view="knock"]')
    assert page.locator("#mv-knock-label").is_visible()
    page.check("#mv-knock")
    before = traces_drawn(page)
    page.click('#mv-grid button.mv-cell[data-layer="0"][data-head="1"]')
    wait_for_trace(page, before)
    page.wait_for_function("() => location.hash.startsWith('#s=')")
    link = page.url
    # A link with a head knocked out opens the card that says what changed, in a browser that
    # remembered nothing, even if the link's `more` had left it out.
    raw = json.loads(base64.urlsafe_b64decode(link.split("#s=")[1] + "=="))
    assert raw["sentence"]["ablate"] == [{"layer": 0, "head": 1}]
    raw["sentence"]["more"] = []
    bare = "#s=" + base64.urlsafe_b64encode(json.dumps(raw).encode()).decode().rstrip("=")
    other = newcomer(browser)
    other.goto(live_server + "/" + bare)
    wait_for_trace(other, 0)
    assert shown(other) == ["knock"]
    assert re.search(r"knocked out", other.locator("#ko-note").text_content())
    other.context.close()
    # Closing the card puts every head back (nothing stays knocked out unseen).
    before = traces_drawn(page)
    page.click('#more-list button[data-view="knock"]')
    wait_for_trace(page, before)
    assert page.locator("#mv-grid button.mv-cell.knocked").count() == 0
    assert not page.is_checked("#mv-knock")
    page.context.close()


def test_a_modes_plain_address_opens_it(browser, live_server):
    """`/#sentence` opens sentence mode (and `/#toy` the toy lab), as `/#learn` and `/#train` do."""
    page = newcomer(browser)
    page.goto(live_server + "/#sentence")
    wait_for_trace(page, 0)
    assert page.locator("#sentence-mode").is_visible() and page.locator("#toy-mode").is_hidden()
    assert page.locator("#mode-sentence").get_attribute("aria-selected") == "true"
    page.goto(live_server + "/#toy")
    page.wait_for_function("() => document.documentElement.dataset.mode === 'toy'")
    assert page.locator("#toy-mode").is_visible()
    page.context.close()
