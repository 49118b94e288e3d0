"""Every number a person reads is rounded to what a person reads (issue 41, item 5): in the toy
lab and in sentence mode with the default model, after keyboard moves on a heatmap, on the
distance and vector plots, on Why this score and the query-key view, and in the Train tab with
a trained run (its run card, the runs list, the trained models), no visible text, `title`,
aria-label, alt text or live region holds a number of more than 6 significant digits
("score 14.620398596252752" reads "score 14.6") nor a count of 10,000 or more to more than 3
("54,976 parameters" reads "55,000 parameters"), and no visible text holds a hex id of 8 or
more hex digits. The exact values stay in the numbers tables (closed, not read here), the CSV
and the exports."""

from __future__ import annotations

import re

import pytest

from attnviz.numbers import readable_prose
from tests.browser.helpers import MODEL, open_app, open_sentence, shoot, view_change
from tests.browser.test_train import open_train, small_form, train_and_wait
from tests.support.oracles import readable, readable_count

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

# Everything the page gives a reader now: each visible text node (a closed "Show the numbers"
# is not visible), every title, aria-label and alt, and every live region's text.
READ = """() => {
  const out = {text: [], title: [], label: [], alt: [], live: []};
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement, s = n.textContent.trim();
    if (!s || !p || p.closest('script, style, noscript, template')) continue;
    if (p.checkVisibility({visibilityProperty: true})) out.text.push(s);
  }
  for (const e of document.querySelectorAll('[title]')) out.title.push(e.getAttribute('title'));
  for (const e of document.querySelectorAll('[aria-label]')) out.label.push(e.getAttribute('aria-label'));
  for (const e of document.querySelectorAll('img[alt]')) out.alt.push(e.getAttribute('alt'));
  for (const e of document.querySelectorAll('[aria-live], [role=status], [role=alert], [role=log]'))
    out.live.push(e.textContent.trim());
  return out;
}"""

# A decimal number (its sign, its digits either side of the point, an exponent): "0.652",
# "-14.6", "1.23e-7". Whole numbers are counts, positions, ids and sizes, written whole.
DECIMAL = re.compile(r"(?<![\w.])[-−]?(\d+)\.(\d+)(?:[eE][-+]?\d+)?(?![\w.])")
# A hex id: 8 or more hex digits with at least one digit and one letter a-f, on its own.
HEX = re.compile(
    r"(?<![0-9A-Za-z])(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}(?![0-9A-Za-z])"
)
MOST = 6  # significant digits
# A count as toLocaleString writes it, its thousands grouped: "54,976", "1,234,567".
COUNT = re.compile(r"(?<![\w.,])[-−]?(\d{1,3}(?:,\d{3})+)(?![\w]|[.,]\d)")
COUNT_MOST = 3  # significant digits of a count of 10,000 or more


def significant(whole: str, fraction: str) -> int:
    """The significant digits of whole.fraction: every digit after the leading zeros."""
    return len((whole + fraction).lstrip("0"))


def too_precise(s: str) -> list[str]:
    return [m.group(0) for m in DECIMAL.finditer(s) if significant(m[1], m[2]) > MOST]


def too_long_counts(s: str) -> list[str]:
    """The counts of 10,000 or more in `s` written to more than COUNT_MOST significant digits."""
    out = []
    for m in COUNT.finditer(s):
        digits = m[1].replace(",", "")
        if int(digits) >= 10_000 and len(digits.rstrip("0")) > COUNT_MOST:
            out.append(m.group(0))
    return out


def test_the_rules_count_what_they_should():
    assert too_long_counts("54,976 parameters · 36,480 and 38,464.") == [
        "54,976",
        "36,480",
        "38,464",
    ]
    assert too_long_counts("55,000 parameters; 9,999 tokens; 1,234 steps; 1.23 million") == []
    assert too_long_counts("of 1,234,567 bytes, 12,300 and 100,000 (200,000 / 512)") == [
        "1,234,567"
    ]
    assert too_precise("apple → apple: score 0.6524058041842772") == ["0.6524058041842772"]
    assert too_precise("score 14.620398596252752, the sum") == ["14.620398596252752"]
    assert too_precise("1.234567e-7 and 0.0000001234 and 3.14159") == ["1.234567e-7"]
    assert too_precise("weight 0.652; 1235 tokens; v4.14.1; 1,234,567 bytes; 12.5%") == []
    assert HEX.findall("run 3f2a9c1b0d, a 12345678 count, the deadbeef word") == ["3f2a9c1b0d"]


class Reader:
    """What the page has given a reader so far, gathered after each step."""

    def __init__(self, page) -> None:
        self.page = page
        self.seen: dict[str, list[tuple[str, str]]] = {}

    def read(self, step: str) -> None:
        for kind, items in self.page.evaluate(READ).items():
            self.seen.setdefault(kind, []).extend((step, s) for s in items if s)

    def keys(self, selector: str, *keys: str) -> None:
        self.page.focus(selector)
        self.read(f"{selector} focused")
        for key in keys:
            self.page.keyboard.press(key)
            self.read(f"{selector} {key}")

    def check(self) -> None:
        numbers = sorted(
            {
                (kind, step, s, n)
                for kind, items in self.seen.items()
                for step, s in items
                for n in too_precise(s)
            }  # fmt: skip
        )
        counts = sorted(
            {
                (kind, step, s, n)
                for kind, items in self.seen.items()
                for step, s in items
                for n in too_long_counts(s)
            }  # fmt: skip
        )
        ids = sorted({(step, s) for step, s in self.seen["text"] if HEX.search(s)})
        said = "\n".join(
            f"{kind} after {step}: {n!r} in {s[:160]!r}" for kind, step, s, n in numbers
        )
        assert not numbers, f"numbers of more than {MOST} significant digits:\n{said}"
        long = "\n".join(
            f"{kind} after {step}: {n!r} in {s[:160]!r}" for kind, step, s, n in counts
        )
        assert not counts, f"counts of more than {COUNT_MOST} significant digits:\n{long}"
        assert not ids, "hex ids in visible text:\n" + "\n".join(f"{st}: {s!r}" for st, s in ids)
        assert self.seen["live"], "no live region was read"


def test_the_toy_lab_reads_rounded_numbers(page, live_server):
    open_app(page, live_server + "/")
    reader = Reader(page)
    reader.read("opened")
    reader.keys("#weights-plot", "ArrowDown", "End", "ArrowLeft", "Control+End")
    reader.keys("#scores-plot", "ArrowDown", "ArrowRight", "End")
    reader.keys("#distances-plot", "End", "ArrowLeft")
    reader.keys("#vectors-plot", "ArrowRight", "ArrowDown")
    live = page.evaluate(
        "() => document.querySelector('#weights-plot + .plot-text .plot-live').textContent"
    )
    assert live.startswith("banana → banana: weight "), live  # the keys moved the cursor
    reader.check()


def test_sentence_mode_reads_rounded_numbers(page, live_server, api):
    open_sentence(page, live_server + "/")
    assert page.locator("#s-model").input_value() == MODEL  # the default model
    reader = Reader(page)
    reader.read("opened")
    canvas = "#mv-large .hc-canvas"
    n = page.evaluate("() => document.querySelector('#mv-large .hc').__heat.labels.length")
    reader.keys(canvas, "ArrowDown", "ArrowDown", "ArrowRight", "End")
    # Enter: the cursor's row the query, its column the key that Why this score explains.
    view_change(page, lambda: page.keyboard.press("Enter"))
    page.wait_for_function(
        "k => { const w = document.querySelector('#why-view').__why;"
        " return w && w.attribution.query === 2 && w.attribution.key === k; }",
        arg=n - 1,
    )
    reader.read("Why this score drawn")
    reader.keys("#why-view .why-matrix", "ArrowRight", "ArrowDown", "End")
    reader.keys("#why-view .why-keys", "ArrowDown", "ArrowRight")
    live = page.locator("#why-view .why-keys + .plot-text .plot-live").text_content()
    assert live.startswith("key ") and ": score " in live, live
    reader.keys("#qk-view .qk-canvas", "ArrowRight", "End")
    reader.keys("#traj-view .traj-plot", "ArrowRight", "End")
    # The pointer over the large heatmap: its tooltip.
    page.hover(canvas)
    reader.read("hover on the large heatmap")
    reader.check()


def test_train_mode_reads_rounded_counts(page, live_server, api):
    """A run whose model has 5 significant digits of parameters: the trained models card says
    them to 3, as readableCount rounds the API's count; nothing on the tab (the form, the run
    card, the runs list) says a longer count or number."""
    open_train(page, live_server)
    reader = Reader(page)
    reader.read("opened")
    small_form(page, 12, **{"#t-layers": "2", "#t-d-model": "32"})
    run = train_and_wait(page, api)
    assert run["state"] == "done"
    params = run["variants"][0]["params"]
    # The model's count has more digits than a sentence should say: the test reads a rounding.
    assert params >= 10_000 and len(str(params).rstrip("0")) > COUNT_MOST, params
    page.wait_for_function(
        "id => [...document.querySelectorAll('#t-runs .t-run-item')]"
        ".some((li) => li.dataset.run === id)",
        arg=run["id"],
    )
    figures = page.locator("#t-models .t-model .dim").first.text_content()
    assert f" · {readable_count(params)} parameters" in figures, figures
    assert f"{params:,}" not in figures
    reader.read("trained")
    reader.check()
    # Issue 41: the gradient norms' caption ("layer 1 1.06 → 1.02") and the trained models'
    # card ("held-out 2.73", the best head's score) say their numbers to 3 significant digits,
    # as readable() rounds the API's numbers.
    grads = page.locator("#t-grads-card .plot-summary").text_content()
    assert "→" in grads, grads
    models = page.locator("#t-models-card").text_content()
    v = run["variants"][0]
    first, last = v["history"]["grad_norms"][0], v["history"]["grad_norms"][-1]
    assert f"layer 1 {readable_prose(first[0])} → {readable_prose(last[0])}" in grads, grads
    assert f"held-out {readable(v['checkpoints'][-1]['heldout'])}" in models, models
    for text in (grads, models):
        assert not [n for n in DECIMAL.findall(text) if significant(*n) > 3], text
    shoot(page, "train-counts", "#t-models-card")
    page.locator("#t-grads-card").scroll_into_view_if_needed()
    shoot(page, "train-grads", "#t-grads-card")
