"""The glossary in the page (issue 41, item 4): in sentence mode each term a newcomer met
unexplained (sink, probe, K-composition, rollout, logit lens, unembedding, PCA, L5 MLP, the
rest) is marked where it appears, each at most once per card; the keyboard alone opens its
explanation (Tab to it, or Enter on it), reads attnviz/glossary.py's words there, and Escape
closes it; a click elsewhere closes it too; opening it moves nothing on the page; the header's
Glossary lists every term in a dialog; axe-core finds nothing serious either way; and the
popover stays inside a 480 px window."""

from __future__ import annotations

import re
import string

import pytest

import attnviz
from attnviz.glossary import BY_ID
from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    act,
    axe_serious,
    learn_open,
    open_sentence,
    select_and_wait,
    snap,
    text_trace,
)
from tests.python.offline import opened, wait_drawn

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

TEXT = "I sat on the river bank"
CAUSAL = "tiny-gpt2"

POPOVER = """() => { const p = document.getElementById('term-pop'), a = document.activeElement;
  return {open: p.matches(':popover-open'), name: p.querySelector('.term-pop-name').textContent,
    text: p.querySelector('.term-pop-text').textContent, focused: a.dataset.term || null,
    expanded: a.getAttribute('aria-expanded'), controls: a.getAttribute('aria-controls'),
    described: document.getElementById(a.getAttribute('aria-describedby') || '')?.textContent || null}; }"""

# Focus the element the keyboard reaches just before `el` (document order, what Tab stops at:
# visible, enabled, not tabindex -1; of a radio group only its checked one), so that one Tab
# reaches `el` as a reader's would.
FOCUS_BEFORE = """(el) => {
  const all = [...document.querySelectorAll(
    'a[href], button, input, select, textarea, summary, [tabindex]')].filter((e) =>
    e.tabIndex >= 0 && !e.disabled && e.checkVisibility() &&
    !(e.type === 'radio' && !e.checked && document.querySelector(
      `input[type=radio][name="${e.name}"]:checked`)));
  const i = all.indexOf(el);
  if (i < 1) return false;
  all[i - 1].focus();
  return true;
}"""

BOXES = """() => [...document.querySelectorAll([
  '#sentence-mode > section.card:not([hidden])', '.app-header', '#sentence-mode p',
  '#sentence-mode button.term'].join(', '))].map((e) => {
  const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; })"""


def sink_head(trace: dict) -> tuple[int, int]:
    """The first head (layer, head; 0-based) whose rows give, on average, at least 60% of their
    weight to one token a head parks weight on whatever the text (the first, a special token,
    punctuation): the note the model view writes then calls it an attention sink."""
    tokens, special = trace["tokens"], trace["special"]
    for layer, heads in enumerate(trace["attentions"]):
        for head, rows in enumerate(heads):
            n = len(rows)
            for j in range(n):
                mean = sum(rows[i][j] for i in range(n) if i != j) / (n - 1)
                parks = j == 0 or special[j] or all(c in string.punctuation for c in tokens[j])
                if mean >= 0.6 and parks:
                    return layer, head
    raise AssertionError("no head of the model parks its weight on a sink token")


def open_card(page, card: str) -> None:
    """A card behind More views opened by its button (as a reader does), when it is closed."""
    if page.locator(f"#{card}").is_hidden():
        page.locator(f'#more-list button[aria-controls="{card}"]').click()
    page.locator(f"#{card}").wait_for(state="visible")


def read_by_keyboard(page, term, glossary: dict) -> str:
    """Reach ``term`` (a locator) with Tab, its "How to read" opened with Enter first where it is
    in one; its popover opens with the glossary's words, Escape closes it. Returns its id."""
    howto = term.locator("xpath=ancestor::details[contains(@class, 'howto')]")
    if howto.count() and not howto.evaluate("d => d.open"):
        howto.locator("summary").focus()
        page.keyboard.press("Enter")
        assert howto.evaluate("d => d.open")
    term.scroll_into_view_if_needed()
    assert term.evaluate(FOCUS_BEFORE)
    page.keyboard.press("Tab")
    got = page.evaluate(POPOVER)
    tid = term.get_attribute("data-term")
    want = glossary[tid]
    assert got["focused"] == tid and got["open"], got
    assert (got["name"], got["text"]) == (want["name"], want["text"])
    assert got["expanded"] == "true" and got["controls"] == "term-pop"
    assert got["described"] == f"{want['name']}: {want['text']}"  # what a screen reader reads
    page.keyboard.press("Escape")
    got = page.evaluate(POPOVER)
    assert not got["open"] and got["focused"] == tid and got["expanded"] == "false", got
    if howto.count():  # closed again, as the reader found it
        howto.locator("summary").focus()
        page.keyboard.press("Enter")
    return tid


def the_term(page, scope: str, tid: str):
    """The one term ``tid`` marked in the card (or view) ``scope``."""
    found = page.locator(f"{scope} button.term[data-term='{tid}']")
    assert found.count() == 1, (scope, tid, found.count())
    return found


def test_sentence_modes_terms_are_marked_and_read_by_keyboard(page, live_server, api, presets):
    glossary = {t["id"]: t for t in presets["glossary"]}
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/", TEXT)
    # Every mark is live (a button), defined, and marked at most once in its card.
    marks = page.evaluate(
        """() => [...document.querySelectorAll('#sentence-mode [data-term]')].map((e) =>
          [e.tagName, e.dataset.term, e.closest('section')?.id ?? ''])"""
    )
    assert marks and all(tag == "BUTTON" and tid in glossary for tag, tid, _ in marks), marks
    assert len(marks) == len({(tid, card) for _, tid, card in marks})

    # The sink: a head that parks its weight on a sink token, found in the API's weights.
    layer, head = sink_head(text_trace(api, TEXT))
    act(
        page,
        lambda: page.click(f'#mv-grid button.mv-cell[data-layer="{layer}"][data-head="{head}"]'),
    )
    read = [read_by_keyboard(page, the_term(page, "#mv-sink", "sink"), glossary)]
    assert page.locator("#mv-sink").text_content().startswith("An attention sink: ")

    # In the cards' own words: the model view's and the predictions' "How to read", the cards
    # behind More views.
    for card in ("atlas-card", "comp-card", "traj-card"):
        open_card(page, card)
    for scope, tid in [
        ("#model-view-card", "rollout"),
        ("#lens-card", "logit-lens"),
        ("#lens-card .howto", "unembedding"),  # What pushed this marks its own
        ("#atlas-card", "probe"),
        ("#comp-card", "k-composition"),
        ("#traj-card", "pca"),
    ]:
        read.append(read_by_keyboard(page, the_term(page, scope, tid), glossary))

    # Written by the views of a causal model: What pushed this names L1 MLP, Why this score
    # "the rest".
    select_and_wait(page, "#s-model", CAUSAL)
    page.locator("#pushed-view button.term[data-term='mlp']").wait_for()  # once attributed
    mlp = the_term(page, "#pushed-view", "mlp")
    assert re.fullmatch(r"L\d+ MLP", mlp.text_content())
    read.append(read_by_keyboard(page, mlp, glossary))
    page.locator("#why-card").scroll_into_view_if_needed()  # drawn once in view
    page.locator("#why-view .why-labels button.term[data-term='rest']").wait_for()
    rest = the_term(page, "#why-view .why-labels", "rest")
    assert rest.text_content() == "the rest"
    read.append(read_by_keyboard(page, rest, glossary))
    assert read == ["sink", "rollout", "logit-lens", "unembedding", "probe", "k-composition",
                    "pca", "mlp", "rest"]  # fmt: skip
    assert axe_serious(page) == []


def test_a_term_opens_on_enter_and_click_moves_nothing_and_fits_480(page, live_server, presets):
    glossary = {t["id"]: t for t in presets["glossary"]}
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/", TEXT)
    open_card(page, "atlas-card")
    probe = the_term(page, "#atlas-card", "probe")
    probe.scroll_into_view_if_needed()
    boxes = page.evaluate(BOXES)
    # Enter and Space on the focused term open and close it (a button's own keys).
    probe.focus()
    state = page.evaluate(POPOVER)
    if state["open"]:  # focused as the keyboard would: already open
        page.keyboard.press("Escape")
    for key in ("Enter", " "):
        page.keyboard.press(key)
        assert page.evaluate(POPOVER)["open"] and probe.get_attribute("aria-expanded") == "true"
        assert page.evaluate(POPOVER)["text"] == glossary["probe"]["text"]
        assert page.evaluate(BOXES) == boxes  # the popover covers, it does not push
        assert axe_serious(page) == []
        if key == "Enter":
            page.keyboard.press(key)
            assert not page.evaluate(POPOVER)["open"]
    # Reached by Tab it opens; the reader's Enter then keeps it open (as the docs say Enter
    # opens it), the next Enter closes it.
    assert probe.evaluate(FOCUS_BEFORE)
    page.keyboard.press("Tab")
    assert page.evaluate(POPOVER)["open"]
    page.keyboard.press("Enter")
    assert page.evaluate(POPOVER)["open"] and probe.get_attribute("aria-expanded") == "true"
    page.keyboard.press("Enter")
    assert not page.evaluate(POPOVER)["open"]
    page.keyboard.press("Enter")
    ARTIFACTS.mkdir(exist_ok=True)
    snap(page, path=str(ARTIFACTS / "glossary-term-1280.png"))
    # A click elsewhere closes it; a click on the term opens it again.
    page.locator("#atlas-h").click()
    assert not page.evaluate(POPOVER)["open"] and probe.get_attribute("aria-expanded") == "false"
    probe.click()
    assert page.evaluate(POPOVER)["open"]
    # At 480 px the popover stays inside the window, and nothing scrolls sideways.
    page.set_viewport_size({"width": 480, "height": 900})
    probe.scroll_into_view_if_needed()
    page.keyboard.press("Escape")
    probe.click()
    box = page.locator("#term-pop").bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 480, box
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 480
    snap(page, path=str(ARTIFACTS / "glossary-term-480.png"))
    assert axe_serious(page) == []


def test_the_header_lists_every_term_in_a_dialog(page, live_server, presets):
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/", TEXT)
    opener = page.locator("#glossary-open")
    opener.focus()
    page.keyboard.press("Enter")
    dialog = page.locator("#glossary-dialog")
    assert dialog.evaluate("d => d.open && d.matches(':modal')")
    assert page.evaluate("() => document.activeElement.closest('dialog')?.id") == "glossary-dialog"
    names = dialog.locator("dt").all_text_contents()
    texts = dialog.locator("dd").all_text_contents()
    assert names == [t["name"] for t in presets["glossary"]]
    assert texts == [t["text"] for t in presets["glossary"]]
    assert axe_serious(page) == []
    snap(page, path=str(ARTIFACTS / "glossary-dialog-1280.png"))
    page.set_viewport_size({"width": 480, "height": 900})
    assert dialog.bounding_box()["width"] <= 480
    snap(page, path=str(ARTIFACTS / "glossary-dialog-480.png"))
    page.keyboard.press("Escape")
    assert not dialog.evaluate("d => d.open")
    assert page.evaluate("() => document.activeElement.id") == "glossary-open"


def test_a_toy_lab_term_reads_by_keyboard(page, live_server, presets):
    """The toy lab marks its own: the Model card's switches, the attention's How to read."""
    glossary = {t["id"]: t for t in presets["glossary"]}
    page.goto(live_server + "/")
    page.wait_for_function("() => +(document.documentElement.dataset.traces || 0) > 0")
    for tid in ("layernorm", "softmax"):
        read_by_keyboard(page, the_term(page, "#toy-mode", tid), glossary)


def test_a_saved_files_terms_open_offline(browser, tmp_path):
    """A one-file export carries the glossary: its marks open with the same words, with no
    server, and its header lists every term."""
    path = attnviz.trace(model="all-MiniLM-L6-v2", text=TEXT).save_html(tmp_path / "t.html")
    glossary = {i: t.model_dump() for i, t in BY_ID.items()}
    with opened(browser, path, scripts=[AXE]) as (page, errors):
        wait_drawn(page)
        marks = page.evaluate(
            "() => [...document.querySelectorAll('[data-term]')].map((e) => e.tagName)"
        )
        assert marks and set(marks) == {"BUTTON"}
        for scope, tid in [("#model-view-card", "layer"), ("#model-view-card", "rollout")]:
            read_by_keyboard(page, the_term(page, scope, tid), glossary)
        page.locator("#glossary-open").click()
        assert page.locator("#glossary-dialog dt").count() == len(glossary)
        assert axe_serious(page) == []
        page.keyboard.press("Escape")
        assert errors == []


def test_a_learn_steps_text_marks_its_terms_once_but_the_articles_own(page, live_server, presets):
    """The Learn path's step texts mark each glossary term where the step first writes it (step
    1: the recurrent network, the LSTM and GRU), once per step, and leave the article's own
    words (query, key, softmax...) plain; a term reads by keyboard there too."""
    glossary = {t["id"]: t for t in presets["glossary"]}
    learn_open(page, "rnn", lambda: page.goto(f"{live_server}/#learn/1"))
    text = page.locator("#learn-guide [data-role=text]")
    marked = text.locator("button.term").evaluate_all("bs => bs.map((b) => b.dataset.term)")
    assert {"rnn", "lstm"} <= set(marked), marked
    assert len(marked) == len(set(marked))  # each once in the step
    assert not {"query", "key", "value", "softmax", "token", "weight", "head"} & set(marked)
    read_by_keyboard(page, the_term(page, "#learn-guide [data-role=text]", "rnn"), glossary)


def open_by_keyboard(page, term) -> None:
    """Reach ``term`` with Tab (its popover opens), as read_by_keyboard does, and leave it open."""
    term.scroll_into_view_if_needed()
    assert term.evaluate(FOCUS_BEFORE)
    page.keyboard.press("Tab")
    got = page.evaluate(POPOVER)
    assert got["open"] and got["focused"] == term.get_attribute("data-term"), got


def popover_fits(page, width: int) -> None:
    """The open popover lies inside the window, and nothing scrolls sideways."""
    box = page.locator("#term-pop").bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, box
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width


def test_sentence_first_screen_marks_the_walk_s_words(page, live_server, presets):
    """Issue 41's newcomer walk, sentence mode's first screen (MiniLM, an encoder): the input
    card's model line (BERT, d_model) and token options (special tokens, word pieces), the
    Predictions' reason (masked-language-model head) and What pushed this's (unembedding) mark
    their terms, each read by keyboard; the boxes keep their names and their labels' clicks,
    and a click on a term opens it without ticking its box."""
    glossary = {t["id"]: t for t in presets["glossary"]}
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/", TEXT)
    card = ".sentence-input"
    info = page.locator("#s-model-info")
    assert info.text_content().startswith("BERT · 6 layers × 12 heads · d_model 384 · ")
    marked = {
        (scope, tid): the_term(page, scope, tid)
        for scope, tid in [
            (card, "bert"),
            (card, "d-model"),
            (card, "special-token"),
            (card, "word-piece"),
            ("#lens-view", "mlm-head"),
            ("#pushed-view", "unembedding"),
        ]
    }
    words = {tid: term.text_content() for (_, tid), term in marked.items()}
    assert words == {
        "bert": "BERT",
        "d-model": "d_model",
        "special-token": "special tokens",
        "word-piece": "word pieces",
        "mlm-head": "masked-language-model head",
        "unembedding": "unembedding",
    }
    assert the_term(page, card, "bert").locator("xpath=..").get_attribute("id") == "s-model-info"
    read = [read_by_keyboard(page, term, glossary) for term in marked.values()]
    assert read == list(words)

    # The token options: each box named by its words, the term's button among them; a click
    # on the words ticks the box, a click on the term opens its explanation and ticks nothing.
    hide = page.get_by_role(
        "checkbox", name=re.compile(r"^hide special tokens \(\[CLS\], \[SEP\]\)$")
    )
    merge = page.get_by_role("checkbox", name="merge word pieces into words", exact=True)
    assert hide.count() == 1 and merge.count() == 1
    assert not hide.is_checked() and not merge.is_checked()
    special = marked[(card, "special-token")]
    special.click()
    assert (
        page.evaluate(POPOVER)["open"]
        and page.evaluate(POPOVER)["text"] == (glossary["special-token"]["text"])
    )
    assert not hide.is_checked()
    page.keyboard.press("Escape")
    act(page, lambda: page.locator("label[for=s-merge-words]").first.click())
    assert merge.is_checked()
    act(page, lambda: page.locator("label[for=s-merge-words]").first.click())
    assert not merge.is_checked()
    assert axe_serious(page) == []

    # A popover at 1280 and 480 px (d_model), inside the window.
    d_model = marked[(card, "d-model")]
    open_by_keyboard(page, d_model)
    popover_fits(page, 1280)
    ARTIFACTS.mkdir(exist_ok=True)
    snap(page, path=str(ARTIFACTS / "glossary-walk-d-model-1280.png"))
    page.keyboard.press("Escape")
    page.set_viewport_size({"width": 480, "height": 900})
    open_by_keyboard(page, d_model)
    popover_fits(page, 480)
    snap(page, path=str(ARTIFACTS / "glossary-walk-d-model-480.png"))
    assert axe_serious(page) == []


def test_the_learn_path_marks_the_walk_s_words(page, live_server, presets):
    """Issue 41's newcomer walk on the Learn path: GELU in step 10's text, the Train form's
    AdamW and weight decay beneath steps 11 to 17 (step 11, the first), warm-up in step 14's
    text and Var(q · k) in step 16's formula (its plain text: MathML holds no button), each
    read by keyboard; a popover at 1280 and 480 px."""
    glossary = {t["id"]: t for t in presets["glossary"]}
    page.add_init_script(path=str(AXE))
    text = "#learn-guide [data-role=text]"

    def step(n: int, step_id: str) -> None:
        learn_open(page, step_id, lambda: page.goto(f"{live_server}/#learn/{n}"))

    step(10, "ffn-block")
    gelu = the_term(page, text, "gelu")
    assert gelu.text_content() == "GELU"
    read_by_keyboard(page, gelu, glossary)

    step(11, "encoder-decoder")
    assert page.locator("#train-mode").is_visible()
    form = "#train-mode section[aria-labelledby=t-arch-h]"
    for tid, words in (("adamw", "AdamW"), ("weight-decay", "weight decay")):
        term = the_term(page, form, tid)
        assert term.is_visible() and term.text_content() == words
        read_by_keyboard(page, term, glossary)

    step(14, "ablate-norm")
    warm = the_term(page, text, "warm-up")
    assert warm.text_content() == "warm-up"
    read_by_keyboard(page, warm, glossary)

    step(16, "ablate-scale")
    caption = page.locator("#learn-guide [data-role=formula-text]")
    assert caption.text_content().endswith("Var(q · k) = d_k")
    var = the_term(page, "#learn-guide [data-role=formula-text]", "variance")
    assert var.text_content() == "Var(q · k)"
    assert page.locator("#learn-guide button.term[data-term=variance]").count() == 1  # once
    read_by_keyboard(page, var, glossary)
    open_by_keyboard(page, var)
    popover_fits(page, 1280)
    ARTIFACTS.mkdir(exist_ok=True)
    snap(page, path=str(ARTIFACTS / "glossary-walk-variance-1280.png"))
    assert axe_serious(page) == []
    page.keyboard.press("Escape")
    page.set_viewport_size({"width": 480, "height": 900})
    open_by_keyboard(page, var)
    popover_fits(page, 480)
    snap(page, path=str(ARTIFACTS / "glossary-walk-variance-480.png"))
    assert axe_serious(page) == []


def test_the_learn_path_marks_the_d_walk_s_words(page, live_server, presets):
    """Issue 41's walk (test-artifacts/walk-41d): the words a learner met unexplained are marked
    where met, each read by keyboard: GRU beside LSTM (step 1), post-norm and sublayer (9),
    decoder and anti-diagonal (11), GPT and circuit (12), learning rate (14), d_k in step 16's
    formula; PCA where the toy lab's vectors name their axes "PC1 (..% var)" (step 7, d = 4);
    held-out and L2 norm in the Train tab's cards. Screenshots at 1280 and 480 px."""
    glossary = {t["id"]: t for t in presets["glossary"]}
    page.add_init_script(path=str(AXE))
    text = "#learn-guide [data-role=text]"
    formula = "#learn-guide [data-role=formula-text]"
    walk = [
        (1, "rnn", [(text, "lstm", "LSTM"), (text, "gru", "GRU")]),
        (7, "heads", []),
        (9, "residual-norm", [(text, "post-norm", "post-norm"), (text, "sublayer", "sublayer")]),
        (11, "encoder-decoder", [(text, "decoder", "decoder"), (text, "anti-diagonal", "anti-diagonal")]),
        (12, "induction", [(text, "gpt", "GPT"), (text, "circuit", "circuit")]),
        (14, "ablate-norm", [(text, "learning-rate", "learning rate")]),
        (16, "ablate-scale", [(formula, "d-k", "d_k")]),
    ]  # fmt: skip
    for n, step_id, terms in walk:
        learn_open(page, step_id, lambda n=n: page.goto(f"{live_server}/#learn/{n}"))
        for scope, tid, words in terms:
            term = the_term(page, scope, tid)
            assert term.text_content() == words, (n, tid)
            assert read_by_keyboard(page, term, glossary) == tid
        if n == 7:  # the toy lab, d = 4: the vectors drawn by PCA, its axes named in the caption
            caption = page.locator("#vectors-caption")
            assert re.search(r"PC1 \(\d+% var\)", caption.text_content()), caption.text_content()
            pca = the_term(page, "#vectors-caption", "pca")
            assert "PC1 (33% var)" in glossary["pca"]["text"]
            read_by_keyboard(page, pca, glossary)
            open_by_keyboard(page, pca)
            popover_fits(page, 1280)
            snap(pca, path=str(ARTIFACTS / "glossary-41d-pca-1280.png"))
            page.keyboard.press("Escape")
        if n == 14:  # the Train tab beneath, its loss, gradients and models shown: their own words
            for tid in ("held-out", "l2-norm"):
                marks = page.locator(f"#train-mode button.term[data-term='{tid}']:visible")
                assert marks.count() >= 1, tid
                read_by_keyboard(page, marks.first, glossary)
            assert the_term(page, "#t-models-card", "held-out").count() == 1
            assert the_term(page, "#t-grads-card", "l2-norm").text_content() == "L2 norm"
            caption = page.locator("#t-large-caption").text_content()
            assert "8-bit" not in caption and "thumbnails" not in caption
    learn = page.locator(formula)
    open_by_keyboard(page, the_term(page, formula, "d-k"))
    popover_fits(page, 1280)
    ARTIFACTS.mkdir(exist_ok=True)
    snap(page, path=str(ARTIFACTS / "glossary-41d-d-k-1280.png"))
    page.keyboard.press("Escape")
    page.set_viewport_size({"width": 480, "height": 900})
    learn.scroll_into_view_if_needed()
    open_by_keyboard(page, the_term(page, formula, "d-k"))
    popover_fits(page, 480)
    snap(page, path=str(ARTIFACTS / "glossary-41d-d-k-480.png"))
    assert axe_serious(page) == []
