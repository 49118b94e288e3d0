"""The page's pointer for the articles' sentence ("it" -> "animal") is measured, not told: these
tests trace the sentence through the API, rank every head of the default model by the weight
from "it" to "animal", and check the pointer's head, weights and bound against that ranking."""

from attnviz import presets as p
from attnviz.services.text_trace import EXAMPLES

MODEL = "all-MiniLM-L6-v2"


def ranked_heads(client, text: str, query: str, key: str) -> list[tuple[float, int, int]]:
    """(weight from `query` to `key`, layer, head) for every head, largest first."""
    r = client.post("/api/trace?fields=attentions", json={"model": MODEL, "text": text})
    assert r.status_code == 200, r.text
    trace = r.json()
    tokens = trace["tokens"]
    assert tokens.count(query) == 1 and tokens.count(key) == 1, tokens
    i, j = tokens.index(query), tokens.index(key)
    a = trace["attentions"]
    return sorted(
        (
            (a[layer][head][i][j], layer, head)
            for layer in range(len(a))
            for head in range(len(a[0]))
        ),
        reverse=True,
    )


def test_the_it_animal_pointer_is_the_models_own_ranking(client):
    models = client.get("/api/models").json()
    (pointer,) = [e for e in models["example_heads"] if e["model"] == MODEL]
    assert pointer["text"] == p.SHOWCASE and p.SHOWCASE in models["examples"] == EXAMPLES
    assert (pointer["query"], pointer["key"]) == ("it", "animal")

    ranking = ranked_heads(client, pointer["text"], "it", "animal")
    assert len(ranking) == 72  # MiniLM: 6 layers x 12 heads, every one ranked
    (w1, l1, h1), (w2, l2, h2) = ranking[:2]
    assert (pointer["layer"], pointer["head"]) == (l1, h1)
    assert round(w1, 2) == pointer["weight"]
    nxt = p._IT_ANIMAL_NEXT
    assert (nxt["layer"], nxt["head"], nxt["weight"]) == (l2, h2, round(w2, 2))
    assert all(w < p.IT_ANIMAL_OTHERS_BELOW for w, _, _ in ranking[2:])
    assert ranking[2][0] > p.IT_ANIMAL_OTHERS_BELOW - 0.05  # the bound is tight, not loose

    # The page's words carry exactly these numbers (1-based, as the page counts).
    note = pointer["note"]
    assert f"layer {l1 + 1}, head {h1 + 1}" in note and f"{w1:.2f}" in note
    assert f"layer {l2 + 1}, head {h2 + 1} gives {w2:.2f}" in note
    assert "72 heads" in note


def test_every_preset_names_the_article_its_example_comes_from(client):
    for preset in client.get("/api/presets").json()["presets"]:
        assert p.ARTICLE in preset["source"], preset["id"]
