"""The page's notes in red read well clear of WCAG AA (issue 41, 3): the error line (red text on
pale red) and a knocked-out head's chip were 5.7:1, near AA's 4.5:1; their text is now the
darker --bad-ink, 7:1 or more (AAA). Computed from the page's own styles, as drawn: each visible
text's colour against the background under it (the backgrounds of its ancestors composed, and
their opacity), by WCAG's relative luminance; and every other visible text of the page in those
states at AA. The page has one theme (no dark one: no prefers-color-scheme rule), the light one
checked here. axe-core finds nothing serious either."""

from __future__ import annotations

import pytest

from tests.browser.helpers import AXE, axe_serious, open_sentence, shoot, wait_for_trace

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

AA = 4.5
AAA = 7.0

# Each visible text under `root` (a selector; the page's body by default) outside a plot's SVG:
# its text, its colour, the background it is drawn on and their contrast ratio (WCAG 2.x).
CONTRAST = """(root) => {
  const parse = (s) => { const m = /rgba?\\(([^)]+)\\)/.exec(s); if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
  const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const lum = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    return layers.reverse().reduce((under, c) => over(c, under), [255, 255, 255, 1]);
  };
  const out = [];
  const seen = new Set();
  const top = root ? document.querySelector(root) : document.body;
  const walker = document.createTreeWalker(top, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement, text = n.textContent.trim();
    if (!text || !el || seen.has(el) || el.closest('script, style, svg, canvas')) continue;
    if (!el.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
    seen.add(el);
    let opacity = 1;
    for (let e = el; e; e = e.parentElement) opacity *= Number(getComputedStyle(e).opacity);
    const bg = background(el);
    const c = parse(getComputedStyle(el).color);
    const fg = over([c[0], c[1], c[2], c[3] * opacity], bg);
    const [a, b] = [lum(fg), lum(bg)];
    out.push({text: text.slice(0, 80), color: getComputedStyle(el).color,
      background: `rgb(${bg.slice(0, 3).map(Math.round).join(', ')})`,
      ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)});
  }
  return out;
}"""


def contrasts(page, root: str | None = None) -> list[dict]:
    """Every visible text under `root` with its contrast ratio, as CONTRAST computes it."""
    return page.evaluate(CONTRAST, root)


def below(page, least: float, root: str | None = None) -> list[dict]:
    return [t for t in contrasts(page, root) if t["ratio"] < least]


def test_the_notes_in_red_read_at_7_to_1_and_the_page_at_aa(page, live_server):
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/")

    # The error line: a text the server would refuse (empty), said above the views.
    page.fill("#s-text", "")
    error = page.locator("#error")
    error.wait_for()
    assert error.text_content() == "text: must not be empty"
    said = contrasts(page, "#error")
    assert [t["text"] for t in said] == ["text: must not be empty"]
    assert said[0]["ratio"] >= AAA, said
    assert below(page, AA) == []
    assert axe_serious(page) == []
    shoot(page, "contrast-error-line", "#error")

    # A knocked-out head's chip: red on pale red too.
    before = int(page.evaluate("document.documentElement.dataset.traces || '0'"))
    page.fill("#s-text", "I sat on the river bank")
    wait_for_trace(page, before)
    assert error.is_hidden()
    page.check("#mv-knock")
    before = int(page.evaluate("document.documentElement.dataset.traces || '0'"))
    page.locator('#mv-grid button.mv-cell[data-layer="0"][data-head="1"]').click()
    wait_for_trace(page, before)
    chip = page.locator("#ko-heads button.ko-chip")
    chip.wait_for()
    said = contrasts(page, "#ko-heads button.ko-chip")
    assert said and all(t["ratio"] >= AAA for t in said), said
    assert below(page, AA) == []
    assert axe_serious(page) == []
