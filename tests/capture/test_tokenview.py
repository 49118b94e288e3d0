"""The token options (hide the special tokens, merge word pieces) against a plain-Python version
of their rules, on real MiniLM weights and on closed forms."""

from __future__ import annotations

import pytest
import torch

from attnviz.capture.tokenview import HIDE_NOTE, MERGE_NOTE, token_view
from tests.support.oracles import token_groups, token_view_oracle

TEXT = "Unbelievably, tokenization works on the riverbank"


@pytest.fixture(scope="module")
def trace(client) -> dict:
    t = client.post("/api/trace", json={"model": "all-MiniLM-L6-v2", "text": TEXT}).json()
    assert t["special"][0] and t["special"][-1]  # [CLS] ... [SEP]
    assert any(tok.startswith("##") for tok in t["tokens"])  # some words are split
    return t


def view_of(trace: dict, hide: bool, merge: bool):
    return token_view(
        trace["tokens"],
        special=trace["special"],
        words=trace["words"],
        offsets=trace["offsets"],
        text=trace["text"],
        hide_special=hide,
        merge_words=merge,
    )


@pytest.mark.parametrize(
    ("hide", "merge"), [(False, False), (True, False), (False, True), (True, True)]
)
def test_token_view_follows_the_rules(trace, hide, merge):
    tv = view_of(trace, hide, merge)
    assert tv.groups == token_groups(trace, hide, merge)
    for layer, head in [(0, 0), (2, 4), (5, 11)]:
        a = torch.tensor(trace["attentions"][layer][head], dtype=torch.float32)
        got = tv.apply(a)
        expected, _ = token_view_oracle(trace, layer, head, hide, merge)
        want = torch.tensor(expected, dtype=torch.float64)
        assert torch.allclose(got.double(), want, rtol=0, atol=1e-15)
        assert torch.allclose(
            got.double().sum(-1), torch.ones(len(tv.groups), dtype=torch.float64), atol=1e-5
        )
        if tv.identity:
            assert got is a  # the very numbers, not a copy in another dtype
        else:
            assert got.dtype == torch.float64
    if not hide and not merge:
        assert tv.labels == trace["tokens"] and tv.note == ""
    if hide:
        assert "[CLS]" not in tv.labels and "[SEP]" not in tv.labels
        assert HIDE_NOTE in tv.note
    if merge:
        assert "Unbelievably" in tv.labels and "tokenization" in tv.labels
        assert not any(label.startswith("##") for label in tv.labels)
        assert MERGE_NOTE in tv.note


def test_closed_forms():
    # [CLS] a b [SEP]; "a" and "b" are pieces of one word.
    tokens = ["[CLS]", "a", "##b", "[SEP]"]
    special = [True, False, False, True]
    words = [None, 0, 0, None]
    a = torch.tensor(
        [[0.4, 0.2, 0.2, 0.2], [0.5, 0.1, 0.3, 0.1], [0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1]]
    )
    hide = token_view(tokens, special=special, words=words, hide_special=True)
    assert hide.groups == [[1], [2]]
    assert torch.allclose(
        hide.apply(a), torch.tensor([[0.25, 0.75], [0.5, 0.5]], dtype=torch.float64)
    )
    merge = token_view(tokens, special=special, words=words, merge_words=True)
    assert merge.groups == [[0], [1, 2], [3]] and merge.labels == ["[CLS]", "ab", "[SEP]"]
    want = [[0.4, 0.4, 0.2], [0.375, 0.45, 0.175], [0.7, 0.2, 0.1]]
    assert torch.allclose(merge.apply(a), torch.tensor(want, dtype=torch.float64))
    both = token_view(tokens, special=special, words=words, hide_special=True, merge_words=True)
    assert both.groups == [[1, 2]] and torch.allclose(
        both.apply(a), torch.ones(1, 1, dtype=torch.float64)
    )
    # Batched: (L, H, T, T) in, (L, H, m, m) out.
    assert both.apply(a.expand(2, 3, 4, 4)).shape == (2, 3, 1, 1)


def test_a_toy_trace_has_one_group_per_token():
    tv = token_view(["An", "apple"], hide_special=True, merge_words=True)
    assert tv.groups == [[0], [1]] and tv.labels == ["An", "apple"]


@pytest.mark.parametrize("model", ["all-MiniLM-L6-v2", "tiny-gpt2"])
def test_words_come_from_the_text_not_the_pre_tokenizer(client, model):
    """ "didn't" is one word (WordPiece splits it in three, byte-level BPE in two); a comma or a
    point at a word's end is a word of its own."""
    text = "The animal didn't cross the well-known street, it was too tired."
    t = client.post("/api/trace", json={"model": model, "text": text}).json()
    tv = view_of(t, hide=True, merge=True)
    assert [label.strip() for label in tv.labels] == [
        "The" if model == "tiny-gpt2" else "the",
        "animal", "didn't", "cross", "the", "well-known", "street", ",", "it", "was", "too",
        "tired", ".",
    ]  # fmt: skip


def test_view_of_one_query_and_projection_follow_the_options(client):
    """view with query: the row that shows the query (a hidden one refused by name); projection's
    coords: a row per word, the mean of its pieces' points, no special tokens."""
    body = {"model": "all-MiniLM-L6-v2", "text": TEXT}
    t = client.post("/api/trace", json=body).json()
    tv = view_of(t, hide=True, merge=False)
    q = t["tokens"].index("works")
    r = client.post(
        "/api/trace",
        json=body,
        params={"fields": "view", "layer": 2, "head": 4, "query": q, "hide_special": True},
    ).json()
    expected, _ = token_view_oracle(t, 2, 4, True, False)
    got = torch.tensor(r["view"][0][0], dtype=torch.float64)
    assert got.shape == (1, len(tv.groups))
    assert torch.allclose(
        got[0], torch.tensor(expected[tv.row(q)], dtype=torch.float64), atol=1e-15
    )
    refused = client.post(
        "/api/trace",
        json=body,
        params={"fields": "view", "layer": 2, "head": 4, "query": 0, "hide_special": True},
    )
    assert refused.status_code == 422 and "token 1 is hidden" in refused.json()["message"]
    whole = client.post("/api/trace", json=body, params={"fields": "projection"}).json()
    merged = client.post(
        "/api/trace",
        json=body,
        params={"fields": "projection", "hide_special": True, "merge_words": True},
    ).json()
    groups = merged["token_view"]["groups"]
    assert groups == token_groups(t, True, True)
    coords = torch.tensor(whole["projection"]["coords"], dtype=torch.float64)  # (L+1, T, 3)
    want = torch.stack([coords[:, g].mean(1) for g in groups], 1)
    got = torch.tensor(merged["projection"]["coords"], dtype=torch.float64)
    assert got.shape == want.shape and torch.allclose(got, want, atol=1e-6)
