"""The glossary (attnviz/glossary.py): every term explained in a sentence or two under the caps,
every term the page marks (a template's data-term, a view's term() / termText() /
setTermText() / labelKey()) defined there, each explanation written once (never again in the
page's files), and docs/glossary.md written from it and current."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnviz.glossary import BY_ID, GLOSSARY, ID, MAX_NAME, MAX_TEXT, docs_path, markdown

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = sorted((ROOT / "templates").rglob("*.html"))
SCRIPTS = sorted((ROOT / "static" / "js").rglob("*.js"))
COMPONENT = ROOT / "static" / "js" / "core" / "glossary.js"  # defines the marking, marks nothing
MARKING = [p for p in SCRIPTS if p != COMPONENT]

DATA_TERM = re.compile(r"""data-term=["']([^"']*)["']""")
TERM_CALL = re.compile(r"""\bterm\(\s*["']([^"']*)["']""")
MARKING_CALL = re.compile(r"\b(?:setTermText|termText)\(")
ID_LIST = re.compile(r"""\[\s*["'][^"']*["'](?:\s*,\s*["'][^"']*["'])*\s*,?\s*\]""")
LABEL_PAIR = re.compile(r"""\[shortName\([^()]*\),\s*["']([^"']*)["']\]""")


def call_args(source: str, start: int) -> str:
    """The argument text of the call whose "(" ends at ``start``, to its closing parenthesis
    (parentheses inside string literals and template literals' text skipped)."""
    depth, i, quote = 1, start, ""
    while i < len(source) and depth:
        c = source[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'`":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        i += 1
    return source[start : i - 1]


def marked_in_template(path: Path) -> list[tuple[str, str]]:
    """(id, the words marked) of every marked span of a template."""
    text = path.read_text(encoding="utf-8")
    return re.findall(r"""<span class="term" data-term="([^"]*)">([^<]*)</span>""", text)


def marked_in_script(path: Path) -> list[str]:
    """The term ids a module marks: term("id", ...), the id list of termText / setTermText
    (its last array literal of strings), the ids of labelKey's pairs, and data-term="id"."""
    source = path.read_text(encoding="utf-8")
    ids = TERM_CALL.findall(source) + LABEL_PAIR.findall(source) + DATA_TERM.findall(source)
    for call in MARKING_CALL.finditer(source):
        lists = ID_LIST.findall(call_args(source, call.end()))
        assert lists, f"{path.name}: {call.group(0)} without its list of term ids"
        ids += re.findall(r"""["']([^"']*)["']""", lists[-1])
    return ids


def test_every_term_is_explained_in_a_sentence_or_two_under_the_caps():
    assert len(BY_ID) == len(GLOSSARY), "a term id defined twice"
    for t in GLOSSARY:
        assert ID.match(t.id), t.id
        assert 0 < len(t.name) <= MAX_NAME, t.id
        assert t.text.strip() == t.text and 40 <= len(t.text) <= MAX_TEXT, (t.id, len(t.text))
        assert t.text.endswith("."), t.id
        # One or two sentences: a full stop followed by a capital starts the next one.
        assert len(re.findall(r"\.\s+[A-Z0-9“]", t.text)) <= 1, t.id
        assert t.words and all(w.strip() == w and w for w in t.words), t.id
        assert not t.see or re.match(r"^[a-z]+\.md(#[a-z0-9-]+)?$", t.see), t.id


def test_every_term_a_template_marks_is_defined_and_is_its_words():
    found = [(path.name, i, words) for path in TEMPLATES for i, words in marked_in_template(path)]
    assert len(found) >= 30  # sentence mode's, the toy lab's, the Train tab's
    for name, i, words in found:
        assert i in BY_ID, f"{name}: data-term={i!r} is not in attnviz/glossary.py"
        said = words.lower().replace("&rsquo;", "’")
        assert any(w.lower() in said or said in w.lower() for w in BY_ID[i].words), (name, i, words)
    # Every data-term of a template is such a span (the component upgrades only those).
    for path in TEMPLATES:
        text = path.read_text(encoding="utf-8")
        assert len(DATA_TERM.findall(text)) == len(marked_in_template(path)), path.name


def test_the_issue_s_terms_are_marked_in_sentence_mode():
    sentence = {i for i, _ in marked_in_template(ROOT / "templates" / "modes" / "sentence.html")}
    scripts = {i for path in MARKING for i in marked_in_script(path)}
    for i in ("sink", "mlp", "rest"):
        assert i in scripts, i  # written by the views (the sink note, the components' labels)
    for i in ("probe", "k-composition", "rollout", "logit-lens", "unembedding", "pca"):
        assert i in sentence, i


def test_every_term_a_view_marks_is_defined():
    found = {(path.name, i) for path in MARKING for i in marked_in_script(path)}
    assert {i for _, i in found} >= {"sink", "mlp", "rest", "head", "causal", "logit"}
    for name, i in sorted(found):
        assert i in BY_ID, f"{name}: the term {i!r} is not in attnviz/glossary.py"


def test_a_term_marked_but_not_defined_is_found(tmp_path):
    """The scan above finds an undefined id wherever a module marks one."""
    source = (
        'setTermText(byId("x"), cond ? "(a) b" : `c ${d("e")}`, ["sink", "nope"]);\n'
        'el("p", {}, termText("text", ["also-nope"]));\n'
        'const b = term("made-up", "words");\n'
        'said.push([[shortName(mlp), "not-here"], ["", ""]]);\n'
    )
    path = tmp_path / "marks.js"
    path.write_text(source, encoding="utf-8")
    ids = marked_in_script(path)
    assert sorted(ids) == ["also-nope", "made-up", "nope", "not-here", "sink"]
    assert {i for i in ids if i not in BY_ID} == {"also-nope", "made-up", "nope", "not-here"}


@pytest.mark.parametrize("path", TEMPLATES + SCRIPTS, ids=lambda p: p.name)
def test_no_explanation_is_written_twice(path):
    """An explanation lives in attnviz/glossary.py alone: no template or module repeats one."""
    text = path.read_text(encoding="utf-8")
    for t in GLOSSARY:
        assert t.text[:48] not in text, (path.name, t.id)


def test_the_docs_page_is_written_from_the_glossary():
    assert docs_path().read_text(encoding="utf-8") == markdown(), (
        "docs/glossary.md is out of date: run `.venv/bin/python -m attnviz.glossary`"
    )
    for t in GLOSSARY:
        assert f"\n## {t.name}\n\n{t.text}" in markdown()
