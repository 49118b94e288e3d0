"""The page's pointers ("look at layer 4, head 2") are measured, not told: these tests trace
each example through the API, rank every head of the default model by how much the query's
weight on the key exceeds what the key gets from the other tokens (its column's mean), and
check each pointer's head, numbers and words against that ranking; and a sentence of the
test's own, where the rule's verdict is read from the same numbers."""

import numpy as np
import pytest

from attnviz import presets as p
from attnviz.numbers import readable_share, readable_weight
from attnviz.services import pointers as P
from attnviz.services.text_trace import EXAMPLES

MODEL = "all-MiniLM-L6-v2"


def attentions(client, text: str) -> tuple[list[str], np.ndarray]:
    r = client.post("/api/trace?fields=attentions", json={"model": MODEL, "text": text})
    assert r.status_code == 200, r.text
    trace = r.json()
    return trace["tokens"], np.array(trace["attentions"])  # (L, nh, T, T)


def ranked(tokens: list[str], a: np.ndarray, query: str, key: str) -> list[tuple]:
    """(margin, weight, column mean, layer, head) for every head, largest margin first."""
    assert tokens.count(query) == 1 and tokens.count(key) == 1, tokens
    i, j = tokens.index(query), tokens.index(key)
    others = [t for t in range(len(tokens)) if t != i]
    w, col = a[:, :, i, j], a[:, :, others, j].mean(axis=-1)  # (L, nh) each
    layers, heads = w.shape
    rows = [
        (w[la, h] - col[la, h], w[la, h], col[la, h], la, h)
        for la in range(layers)
        for h in range(heads)
    ]
    return sorted(rows, reverse=True)


def test_every_pointer_is_the_head_that_singles_its_key_out(client):
    models = client.get("/api/models").json()
    heads = [e for e in models["example_heads"] if e["model"] == MODEL]
    assert [(e["text"], e["query"], e["key"]) for e in heads] == list(P.POINTED)
    # The river bank's pointer is a previous-token head (checked below): at least one is.
    assert any("previous-token head" in e["note"] for e in heads)
    assert {e["text"] for e in heads} <= set(models["examples"]) and models["examples"] == EXAMPLES
    for e in heads:
        tokens, a = attentions(client, e["text"])
        rows = ranked(tokens, a, e["query"], e["key"])
        assert len(rows) == 72  # MiniLM: 6 layers x 12 heads, every one ranked
        margin, w, col, layer, head = rows[0]
        assert (e["layer"], e["head"]) == (layer, head)
        assert (e["weight"], e["column"]) == (round(w, 2), round(col, 2))
        assert e["singles_out"] == (margin >= P.SINGLES_OUT)
        q, k = f'"{e["query"]}"', f'"{e["key"]}"'
        if e["singles_out"]:
            assert e["note"].startswith(f"Look at layer {layer + 1}, head {head + 1}: ")
            assert f"{q} gives {readable_share(w)} of its attention to {k}" in e["note"]
            assert f"give {k} {readable_weight(col)} on average" in e["note"]
        else:
            assert e["note"].startswith(f"No head of {MODEL} singles out {k} for {q} here.")
        # What the head does: a key just before its query, in a head that reads one token back
        # everywhere, is linked by position, and the note says so.
        i, j = tokens.index(e["query"]), tokens.index(e["key"])
        back = np.diagonal(a[layer, head], offset=-1).mean()
        named = "It is a previous-token head: each token gives the one before it"
        assert (named in e["note"]) == (
            j == i - 1 and back >= P.PREVIOUS_TOKEN and e["singles_out"]
        )
        if named in e["note"]:
            assert f"the one before it {readable_share(back)} of its attention" in e["note"]


def test_it_animal_points_at_the_link_and_names_the_column(client):
    """The articles' sentence: the head where "it" gives "animal" the most weight is one in
    which every token looks at "animal" (a column); the page points at the head that links
    "it" to "animal", and names the column head for what it is."""
    (e,) = [e for e in P.example_heads(client.app.state.registry) if e.query == "it"]
    assert e.text == p.SHOWCASE and e.singles_out
    tokens, a = attentions(client, e.text)
    rows = ranked(tokens, a, "it", "animal")
    most = max(rows, key=lambda r: r[1])
    assert most[3:] != rows[0][3:] and most[2] > 0.3  # the heaviest head is a column
    assert (
        f'(Layer {most[3] + 1}, head {most[4] + 1} gives "animal" more, {readable_weight(most[1])}, but it '
        f'gives "animal" {readable_weight(most[2])} from every token on average: a column, not a link from '
        '"it".)' in e.note
    )


@pytest.mark.parametrize(
    ("text", "query", "key"),
    [
        ("The trophy did not fit in the suitcase because it was too big", "it", "trophy"),
        ("She poured water from the jug into the cup", "water", "jug"),
    ],
)
def test_a_sentence_of_the_tests_own_is_pointed_by_the_same_rule(client, text, query, key):
    e = P.point(client.app.state.registry, MODEL, text, query, key)
    rows = ranked(*attentions(client, text), query, key)
    margin, w, col, layer, head = rows[0]
    assert (e.layer, e.head, e.weight, e.column) == (layer, head, round(w, 2), round(col, 2))
    assert e.singles_out == (margin >= P.SINGLES_OUT)
    said = "Look at layer" if e.singles_out else "No head of"
    assert e.note.startswith(said), e.note


def test_a_word_that_is_not_one_token_is_refused_by_name(client):
    registry = client.app.state.registry
    with pytest.raises(P.NoSuchToken, match="^key: 'zebra' is not one of the text's tokens"):
        P.point(registry, MODEL, p.SHOWCASE, "it", "zebra")
    with pytest.raises(P.NoSuchToken, match="^query: 'the' is 2 of the text's tokens"):
        P.point(registry, MODEL, p.SHOWCASE, "the", "animal")


def test_every_preset_names_the_article_its_example_comes_from(client):
    for preset in client.get("/api/presets").json()["presets"]:
        assert p.ARTICLE in preset["source"], preset["id"]
