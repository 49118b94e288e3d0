"""tokenview.js, the token options of sentence mode, against a plain-Python version of its rules
on real MiniLM traces: hide the special tokens (rows renormalised), merge word pieces (columns
summed, rows averaged), or both."""

from __future__ import annotations

import pytest

from tests.browser.helpers import assert_close, open_app, text_trace

TEXT = "Unbelievably, tokenization works on the riverbank"


def groups_of(trace: dict, hide_special: bool, merge_words: bool) -> list[list[int]]:
    groups: list[list[int]] = []
    for i, word in enumerate(trace["words"]):
        if hide_special and trace["special"][i]:
            continue
        last = groups[-1] if groups else None
        joins = last and last[-1] == i - 1 and trace["words"][i - 1] == word
        if merge_words and word is not None and joins:
            last.append(i)
            continue
        groups.append([i])
    return groups


def oracle(trace: dict, layer: int, head: int, hide_special: bool, merge_words: bool):
    a = trace["attentions"][layer][head]
    kept = [i for i in range(trace["n"]) if not (hide_special and trace["special"][i])]
    # Rows over the kept columns, each renormalised to sum to 1 when specials are hidden.
    rows = {}
    for i in kept:
        row = {j: a[i][j] for j in kept}
        total = sum(row.values()) if hide_special else 1.0
        rows[i] = {j: v / total for j, v in row.items()}
    groups = groups_of(trace, hide_special, merge_words)
    return [
        [sum(rows[i][j] for i in g for j in h) / len(g) for h in groups] for g in groups
    ], groups


@pytest.fixture(scope="module")
def trace(api) -> dict:
    t = text_trace(api, TEXT)
    assert t["special"][0] and t["special"][-1]  # [CLS] ... [SEP]
    assert any(tok.startswith("##") for tok in t["tokens"])  # some words are split
    return t


VIEW = """async ({trace, options, cells}) => {
  const { tokenView } = await import('/static/js/tokenview.js');
  window.__trace = trace;
  const tv = tokenView(trace, options);
  return {labels: tv.labels, groups: tv.groups, note: tv.note,
    matrices: cells.map(([l, h]) => tv.attention(l, h)),
    indexOf: trace.tokens.map((_, i) => tv.indexOf(i))};
}"""

CELLS = [(0, 0), (2, 4), (5, 11)]


@pytest.mark.parametrize(
    ("hide_special", "merge_words"), [(False, False), (True, False), (False, True), (True, True)]
)
def test_token_view_follows_the_rules(page, live_server, trace, hide_special, merge_words):
    open_app(page, live_server + "/")
    options = {"hideSpecial": hide_special, "mergeWords": merge_words}
    got = page.evaluate(VIEW, {"trace": trace, "options": options, "cells": CELLS})
    for (layer, head), matrix in zip(CELLS, got["matrices"], strict=True):
        expected, groups = oracle(trace, layer, head, hide_special, merge_words)
        assert got["groups"] == groups
        assert_close(matrix, expected, tol=1e-12)
        for row in matrix:  # every option keeps rows summing to 1
            assert sum(row) == pytest.approx(1.0, abs=1e-5)
    n = trace["n"]
    if not hide_special and not merge_words:
        assert got["labels"] == trace["tokens"] and got["note"] == ""
        assert got["matrices"][1] == trace["attentions"][2][4]  # the very numbers sent
    if hide_special:
        assert "[CLS]" not in got["labels"] and "[SEP]" not in got["labels"]
        assert "Special tokens hidden; each row renormalised to sum to 1." in got["note"]
        assert got["indexOf"][0] == -1 and got["indexOf"][n - 1] == -1
    if merge_words:
        assert "Unbelievably" in got["labels"] and "tokenization" in got["labels"]
        assert not any(label.startswith("##") for label in got["labels"])
        assert "Word pieces merged" in got["note"]
        # All pieces of one word share its row.
        word = got["labels"].index("tokenization")
        pieces = [i for i, g in enumerate(got["groups"]) if g == got["groups"][word]]
        assert pieces == [word] and len(got["groups"][word]) >= 2
    if merge_words and not hide_special:
        # Attention TO a word is the sum of its pieces' columns (rows unmerged for a 1-piece
        # query): check one entry against the raw trace directly.
        a = trace["attentions"][0][0]
        g = got["groups"][got["labels"].index("tokenization")]
        q = got["groups"][0][0]  # [CLS]
        assert got["matrices"][0][0][got["labels"].index("tokenization")] == pytest.approx(
            sum(a[q][j] for j in g), abs=1e-12
        )
