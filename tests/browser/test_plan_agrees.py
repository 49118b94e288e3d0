"""The page's parts and the one-file export's plan agree. Sentence mode's cards, opened on a
selection in the live page, ask for parts of the trace (the POSTs to /api/trace, recorded);
attnviz/python/html.py's plan says which parts a file of the same selection holds: those the
views draw first (``need``) and those worth adding (``more``). Each part the page asks for is
in the plan, as it is or cut from one there (static/js/offline/source.js ``locate``, which a
file's page answers with), and each part the plan says the views draw first is one the page
asked for, once its reader has scrolled past every card, tried What pushed this's choices and
downloaded the model card's CSVs. A card that asks for a new part, or a plan that forgets one, fails here."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

import attnviz
from attnviz.python.html import collect
from tests.browser.helpers import MODEL, share_hash, wait_for_trace
from tests.conftest import TINY_GPT2

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

WORDS = "the cat sat on a mat and looked at the dog which was asleep in the sun".split()


def text_of(words: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(words))


# (model, text, the selection): special tokens hidden in an encoder; a causal model (its
# Predictions, What pushed this, Why this score) with words merged; a text past 256 tokens,
# whose head view reads the query's rows first and whose thumbnails are pooled.
CASES = {
    "encoder, special tokens hidden": (
        MODEL, "The animal didn't cross the street because it was too tired",
        {"layer": 2, "head": 5, "query": 3, "hide_special": True, "merge_words": False},
    ),
    "causal, words merged": (
        TINY_GPT2, text_of(16),
        {"layer": 1, "head": 0, "query": 6, "hide_special": False, "merge_words": True},
    ),
    "long": (
        MODEL, text_of(298),
        {"layer": 4, "head": 1, "query": 7, "hide_special": False, "merge_words": False},
    ),
}  # fmt: skip

LOCATE = """async ([asks, held]) => {
  const m = await import("/static/js/offline/source.js");
  const normal = held.map(m.normal);
  return asks.map((a) => m.locate(m.normal(a), normal));
}"""


@pytest.mark.parametrize("case", list(CASES))
def test_every_part_the_cards_ask_for_is_in_the_files_plan(page, live_server, tiny_gpt2_dir, case):
    model, text, sel = CASES[case]
    asks: list[dict[str, str]] = []

    def record(request) -> None:
        if request.method == "POST" and urlsplit(request.url).path == "/api/trace":
            asks.append(dict(parse_qsl(urlsplit(request.url).query)))

    page.on("request", record)
    state = {"model": model, "text": text, "layer": sel["layer"], "head": sel["head"],
             "query": sel["query"], "hideSpecial": sel["hide_special"],
             "mergeWords": sel["merge_words"]}  # fmt: skip
    page.goto(live_server + "/" + share_hash({"mode": "sentence", "sentence": state}))
    wait_for_trace(page, 0)
    # A reader who scrolls down the page: the cards drawn when near (Why this score, the
    # vision tower's) ask too; then the cards' later parts (a layer after its rows).
    for card in page.locator("#sentence-mode section.card:visible").all():
        card.scroll_into_view_if_needed()
    page.wait_for_load_state("networkidle")
    # What pushed this's choices (the next token, the top prediction, their difference): a
    # file holds each, so that its radios answer.
    for value in ("next", "diff", "top"):
        radio = page.locator(f'#pushed-view input[value="{value}"]')
        if radio.count():
            radio.check()
            page.wait_for_load_state("networkidle")
    # The model card's CSV downloads: the file holds their parts while they fit.
    page.locator("#mv-downloads").evaluate("d => { d.open = true; }")
    for button in ("#mv-csv-head", "#mv-csv-mean", "#mv-csv-states"):
        with page.expect_download():
            page.click(button)

    trace = attnviz.trace(model=str(tiny_gpt2_dir) if model == TINY_GPT2 else model, text=text,
                          fields="entropy_mean")  # fmt: skip
    selection, need_parts, more = collect(trace, **sel)
    assert selection["query"] == sel["query"]
    need = [p.params for p in need_parts]
    found = page.evaluate(LOCATE, [asks, need + more])
    assert len(asks) >= 4 and len(found) == len(asks)
    unknown = [a for a, at in zip(asks, found, strict=True) if at is None]
    assert unknown == [], "the page asked for parts the file's plan does not name"
    used = {at["at"] for at in found}
    unasked = [p for i, p in enumerate(need) if i not in used]
    assert unasked == [], "the plan puts parts first that no card asked for"
