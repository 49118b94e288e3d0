"""The path as GET /api/learn serves it: ids and order, each step's words, formula (well-formed
presentation MathML), starting state (a valid toy table, or the Train tab's settings) and tasks."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.learn.mathml import ELEMENTS
from attnviz.limits import LIMITS
from attnviz.numbers import readable
from attnviz.schemas.trace import ToyTraceRequest
from attnviz.settings import Settings
from attnviz.training.ablations import PRESETS
from attnviz.training.catalog import TASKS

IDS = [
    "rnn",
    "dot-products",
    "scaling",
    "worked-example",
    "collapse",
    "qkv",
    "heads",
    "positions",
    "residual-norm",
    "ffn-block",
    "encoder-decoder",
    "induction",
    "induction-circuit",
    "ablate-norm",
    "ablate-residual",
    "ablate-scale",
    "ablate-positions",
]
TRAIN = {"rnn", "encoder-decoder", "induction", "induction-circuit"} | {
    i for i in IDS if i.startswith("ablate-")
}

# MathML Core's presentation elements (no <semantics>, <annotation>, <maction>: nothing that
# carries another markup or an action).
PRESENTATION = {
    "math", "mrow", "mi", "mn", "mo", "mtext", "ms", "mspace", "mfrac", "msqrt", "mroot",
    "msup", "msub", "msubsup", "munder", "mover", "munderover", "mmultiscripts", "mprescripts",
    "mtable", "mtr", "mtd", "mstyle", "mpadded", "mphantom", "merror",
}  # fmt: skip
ATTRIBUTES = {"math": {"display"}, "mspace": {"width"}}

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


@pytest.fixture(scope="module")
def steps() -> list[dict]:
    client = TestClient(create_app(Settings(device="cpu", builtin_model=False)))
    r = client.get("/api/learn")
    assert r.status_code == 200, r.text
    return r.json()["steps"]


def test_seventeen_steps_in_the_order_of_the_path(steps):
    # Issue 29 added step 13, induction-circuit, after step 12 (the path had 16 steps).
    assert len(steps) == 17
    assert [s["id"] for s in steps] == IDS
    assert [s["n"] for s in steps] == list(range(1, len(IDS) + 1))
    assert {s["id"] for s in steps if s["lab"] == "train"} == TRAIN
    assert all(s["lab"] == "toy" for s in steps if s["id"] not in TRAIN)


def test_every_formula_is_well_formed_presentation_mathml(steps):
    assert set(ELEMENTS) <= PRESENTATION
    for s in steps:
        root = ET.fromstring(s["formula"])  # raises on anything not well-formed
        assert root.tag == "math" and root.get("display") == "block", s["id"]
        for el in root.iter():
            assert el.tag in ELEMENTS, f"{s['id']}: <{el.tag}>"
            assert set(el.attrib) <= ATTRIBUTES.get(el.tag, set()), f"{s['id']}: {el.attrib}"
        # The text alternative says the same in plain text: each identifier of the formula
        # (but the bound ones, ⊤, and the Σ's index) appears in it.
        text = s["formula_text"]
        assert text and not re.search(r"</?[a-z]", text), s["id"]  # no markup
        names = {el.text for el in root.iter("mi") if el.text and len(el.text) > 1}
        for name in names - {"apple"}:
            assert name in text, f"{s['id']}: {name!r} is not in {text!r}"


def test_words_are_plain_short_paragraphs(steps):
    for s in steps:
        assert 2 <= len(s["text"]) <= 4, s["id"]
        for p in s["text"]:
            assert 60 <= len(p) <= 600 and not re.search(r"[<>]", p), (s["id"], p)
        assert 8 <= len(s["title"]) <= 60


def test_each_step_has_one_or_two_tasks_with_a_prompt_and_a_hint(steps):
    for s in steps:
        assert 1 <= len(s["tasks"]) <= 2, s["id"]
        assert len({t["id"] for t in s["tasks"]}) == len(s["tasks"])
        for t in s["tasks"]:
            assert re.fullmatch(r"[a-z0-9-]+", t["id"])
            assert len(t["prompt"]) >= 20 and len(t["hint"]) >= 20


def test_only_a_head_found_in_the_run_stays_done_when_another_head_is_shown(steps):
    """Step 12's two heads are never in view at once: each is a finding; every other task
    depends on the state shown (done before, not now, when the state changed)."""
    findings = {(s["n"], t["id"]) for s in steps for t in s["tasks"] if t["finding"]}
    assert findings == {(12, "previous-token-head"), (12, "induction-head")}


def test_step_9_says_what_its_tools_compute_and_leaves_what_they_do_to_find(steps):
    """Issue 41: a newcomer's walk found step 9's words saying what its task has the learner find
    (the residual keeps what a token was, so the two stay apart; without a norm the sums keep
    growing: the check's answers once tried). The words say what each addition computes and
    where to look; what each does to apple and banana is the learner's to find."""
    step = next(s for s in steps if s["id"] == "residual-norm")
    text = " ".join(step["text"])
    for tool in ("x + attention(x)", "mean 0 and variance 1", "x + F(LN(x))", "LN(x + F(x))"):
        assert tool in text, tool
    assert "?" in text and "Distance card" in text
    for finding in ("surviv", "grow", "apart", "let layers stack", "instead of replacing"):
        assert finding not in text, finding


def test_step_3_says_the_root_of_its_own_tables_dimensions(steps):
    """Issue 41: step 3's √d is its table's, computed: its words and its hint say the preset's
    dimensions and their square root as a sentence says a number (never typed by hand)."""
    step = next(s for s in steps if s["id"] == "scaling")
    n, d = len(step["toy"]["tokens"]), len(step["toy"]["axes"])
    root = readable(math.sqrt(d))
    text = " ".join(step["text"])
    assert f"{n} related tokens in {d} dimensions" in text and f"are {root} times as large" in text
    assert f"√{d} = {root} times larger" in step["tasks"][0]["hint"]


def test_a_toy_step_starts_from_a_whole_valid_toy_state(steps):
    for s in (s for s in steps if s["lab"] == "toy"):
        toy = s["toy"]
        assert s["train"] is None and toy is not None
        req = ToyTraceRequest(**{k: toy[k] for k in ("tokens", "axes", "embeddings", "config")})
        n, layers = len(req.tokens), req.config.layers
        assert toy["config"] == req.config.model_dump()  # every field, defaults included
        v = toy["view"]
        assert 0 <= v["layer"] < layers and 0 <= v["head"] < req.config.heads
        assert v["vlayer"] == layers and 0 <= v["a"] < n and 0 <= v["b"] < n
        assert n <= LIMITS.max_tokens


def test_a_train_step_names_the_train_tabs_settings(steps):
    for s in (s for s in steps if s["lab"] == "train"):
        assert s["toy"] is None and s["article"] == []
        settings = s["train"]["settings"]
        if s["id"] == "rnn":
            assert settings == {} and s["focus"] == ["recurrent-card"]
            continue
        assert settings["task"] in TASKS
        if s["id"].startswith("ablate-"):
            preset = PRESETS[settings["preset"]]
            assert preset.task.name == settings["task"]
        # Step 13 goes on with step 12's run: the same settings, its run kept in view.
        if s["id"] == "induction-circuit":
            assert s["continues"] == "induction" and settings == {"task": "induction"}
        else:
            assert s["continues"] is None
    presets = [s["train"]["settings"]["preset"] for s in steps if s["id"].startswith("ablate-")]
    assert presets == ["norm-at-depth", "residual-at-depth", "scale-large-heads", "positions"]


def test_every_focus_names_an_element_of_the_page(steps):
    markup = "".join(p.read_text() for p in TEMPLATES.rglob("*.html"))
    for s in steps:
        assert s["focus"], s["id"]
        for id_ in s["focus"]:
            assert f'id="{id_}"' in markup, f"{s['id']}: no element with id {id_!r}"


def test_every_card_a_step_names_is_named_as_the_page_titles_it(steps):
    """A step says "the card Attention as it trains", with the card's own heading (issue 41: a
    newcomer looked for a "heads card" the page never titles so); its action names the button
    it presses as the page does; its only-cards are cards of its lab."""
    markup = "".join(p.read_text() for p in TEMPLATES.rglob("*.html"))
    titles = set(re.findall(r'<section class="card[^"]*"[^>]*>\s*<div class="card-head">\s*'
                            r"<h2[^>]*>([^<]+?)\s*(?:<|$)", markup))  # fmt: skip
    assert {"Attention as it trains", "Why not an RNN?", "Trained models"} <= titles, titles
    said = [(s["id"], t) for s in steps for t in [*s["text"]]]
    said += [(s["id"], x) for s in steps for t in s["tasks"] for x in (t["prompt"], t["hint"])]
    for step, text in said:
        assert "heads card" not in text, (step, text)
        for name in re.findall(r"\bcard ([A-Z][\w ,?']*)", text):
            assert any(name.startswith(t) for t in titles), (step, name)
    for s in steps:
        for t in s["tasks"]:
            if t["action"]:
                button = re.search(rf'<button[^>]*id="{t["action"]}"[^>]*>([^<]+)<', markup)
                assert button, (s["id"], t["action"])
                assert button.group(1) in t["hint"], (s["id"], t["hint"])
        for id_ in s["only"]:
            assert re.search(rf'<section class="card[^"]*" id="{id_}"', markup), (s["id"], id_)
