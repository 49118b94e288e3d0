"""Each preset runs, and shows what its description says it shows; the page's bootstrap carries
the glossary as attnviz/glossary.py defines it."""

import math
import re

import pytest

from attnviz.glossary import GLOSSARY
from attnviz.numbers import readable
from attnviz.presets import presets


@pytest.fixture(scope="module")
def by_id(client) -> dict:
    r = client.get("/api/presets")
    assert r.status_code == 200
    body = r.json()
    assert body["limits"]["max_tokens"] == 64 and body["limits"]["max_layers"] == 12
    return {p["id"]: p for p in body["presets"]}


def run(client, preset: dict, **config) -> dict:
    body = {k: preset[k] for k in ("tokens", "axes", "embeddings")}
    body["config"] = {**preset["config"], **config}
    if body["config"].get("weights") is None:
        body["config"].pop("weights", None)
    r = client.post("/api/trace", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_the_glossary_comes_with_the_presets_as_defined(client):
    glossary = client.get("/api/presets").json()["glossary"]
    assert glossary == [t.model_dump() for t in GLOSSARY]
    assert {"sink", "probe", "k-composition", "rollout", "logit-lens", "pca"} <= {
        t["id"] for t in glossary
    }


def test_apple_banana_comes_first_with_the_articles_axes(client):
    first = client.get("/api/presets").json()["presets"][0]
    assert first["id"] == "apple-banana"
    assert first["tokens"] == ["An", "apple", "and", "a", "banana"]
    assert first["axes"] == ["tech", "fruit", "grammar"]
    assert first["embeddings"][1] == [0.7, 0.8, 0.0]


def test_every_preset_is_served_and_runs(client, by_id):
    assert len(by_id) >= 5
    for preset in by_id.values():
        assert preset["about"] and preset["name"]
        assert len(preset["tokens"]) == len(preset["embeddings"])
        assert all(len(row) == len(preset["axes"]) for row in preset["embeddings"])
        run(client, preset)


def test_collapse(client, by_id):
    t = run(client, by_id["collapse"])
    last = t["attentions"][-1][0]
    assert all(abs(w - 0.2) < 1e-9 for row in last for w in row)
    assert [round(v, 2) for v in t["hidden_states"][-1][2]] == [0.14, 0.31, 0.52]


def vector(values: list[float]) -> str:
    return f"[{', '.join(readable(v) for v in values)}]"


def test_the_collapse_words_are_its_runs_numbers(client, by_id):
    """Issue 41: the numbers the collapse preset's words say are computed, not typed: the vector
    every token ends as, the mean of the last layer's rows (each token reads as it), and every
    weight 1/n. That vector is not the mean of the input's rows (the article's "batch mean" is
    the collapsed batch's): the words never call it the input's mean."""
    preset = by_id["collapse"]
    about = preset["about"]
    t = run(client, preset)
    last, n, d = t["hidden_states"][-1], len(preset["tokens"]), len(preset["axes"])
    assert f"after {preset['config']['layers']} layers" in about
    said = vector([math.fsum(row[j] for row in last) / n for j in range(d)])
    assert f"every token ends as one vector, {said}," in about, about
    assert all(vector(row) == said for row in last)
    weight = readable(1 / n)
    assert re.search(rf"the attention weights are all (about )?{re.escape(weight)}\.", about)
    assert {readable(w) for row in t["attentions"][-1][0] for w in row} == {weight}
    inputs = vector([math.fsum(row[j] for row in preset["embeddings"]) / n for j in range(d)])
    assert inputs != said and inputs not in about and "mean" not in about


def test_the_large_d_words_are_its_tables_numbers(by_id):
    """Issue 41: the large-d preset's words say its own table's size, the span of its dot
    products and √d, computed from the table as served, and ask what the softmax does."""
    preset = by_id["large-d"]
    about, x = preset["about"], preset["embeddings"]
    d = len(preset["axes"])
    dots = [math.fsum(a * b for a, b in zip(p, q, strict=True)) for p in x for q in x]
    assert f"{len(x)} related tokens in {d} dimensions" in about, about
    assert f"dot products run from {readable(min(dots))} to {readable(max(dots))}." in about
    assert f"divided by √{d} = {readable(math.sqrt(d))}." in about
    # Step 3 opens on it, its task to make a weight pass 0.9 with the scaling off: the words ask
    # what the softmax does then, and never say it (issue 41).
    assert about.endswith("?") and "one-hot" not in about


def test_query_key_value_makes_apple_look_for_fruit(client, by_id):
    raw = run(client, by_id["apple-banana"])
    qkv = run(client, by_id["query-key-value"])
    apple, banana, determiners = 1, 4, (0, 2, 3)
    assert qkv["attentions"][0][0][apple][banana] > raw["attentions"][0][0][apple][banana]
    for j in determiners:
        assert qkv["attentions"][0][0][apple][j] < raw["attentions"][0][0][apple][j]
    tech, fruit = 0, 1
    assert qkv["hidden_states"][1][apple][fruit] > raw["hidden_states"][1][apple][fruit]
    assert qkv["hidden_states"][1][apple][tech] > 0  # values still carry apple's own tech


def test_two_heads_ask_two_questions(client, by_id):
    t = run(client, by_id["two-heads"])
    tokens = t["tokens"]
    it, animal, street = tokens.index("it"), tokens.index("animal"), tokens.index("street")
    head1, head2 = t["attentions"][0][0][it], t["attentions"][0][1][it]
    assert max(range(len(tokens)), key=lambda j: head1[j] if j != it else -1) == animal
    assert max(range(len(tokens)), key=lambda j: head2[j] if j != it else -1) == street


def test_bank_moves_toward_its_context(client, by_id):
    water, money = 0, 1
    river = run(client, by_id["river-bank"])
    invest = run(client, by_id["investment-bank"])
    assert by_id["river-bank"]["embeddings"][-1] == by_id["investment-bank"]["embeddings"][-1]
    r_bank, i_bank = river["hidden_states"][1][-1], invest["hidden_states"][1][-1]
    assert r_bank[water] > r_bank[money]
    assert i_bank[money] > i_bank[water]


def test_shuffled_sentence_is_permutation_equivariant_until_positions_arrive(client, by_id):
    preset = by_id["shuffled"]
    order = {"the": [], "cat": [], "sat": [], "on": [], "mat": []}
    for i, tok in enumerate(preset["tokens"]):
        order[tok].append(i)
    sentence = ["the", "cat", "sat", "on", "the", "mat"]
    seen: dict = {}
    perm = []
    for tok in sentence:
        perm.append(order[tok][seen.get(tok, 0)])
        seen[tok] = seen.get(tok, 0) + 1
    ordered = {
        "tokens": sentence,
        "axes": preset["axes"],
        "embeddings": [preset["embeddings"][i] for i in perm],
    }
    shuffled = run(client, preset)
    straight = client.post("/api/trace", json=ordered).json()
    for k, i in enumerate(perm):
        assert shuffled["hidden_states"][1][i] == pytest.approx(
            straight["hidden_states"][1][k], abs=1e-14
        )
    the1, the2 = order["the"]
    assert shuffled["hidden_states"][1][the1] == shuffled["hidden_states"][1][the2]
    with_pos = run(client, preset, positional="sinusoidal")
    assert math.dist(with_pos["hidden_states"][1][the1], with_pos["hidden_states"][1][the2]) > 0.1


def test_large_d_saturates_without_the_scaling(client, by_id):
    preset = by_id["large-d"]
    assert len(preset["axes"]) == 64
    raw = run(client, preset)
    scaled = run(client, preset, scale=True)
    n = len(preset["tokens"])
    assert min(max(row) for row in raw["attentions"][0][0]) > 0.75  # nearly one-hot
    assert max(max(row) for row in scaled["attentions"][0][0]) < 0.5
    assert max(raw["entropy"][0][0]) < 0.7 < math.log(n) * 0.8 < min(scaled["entropy"][0][0])
    assert raw["projection"]["components"] == 3


def test_causal_preset(client, by_id):
    preset = by_id["causal"]
    t = run(client, preset)
    assert t["attentions"][0][0][0] == [1.0, 0.0, 0.0, 0.0]
    assert t["scores"][0][0][0][1:] == [None, None, None]
    edited = {k: preset[k] for k in ("tokens", "axes", "config")}
    edited["embeddings"] = [row[:] for row in preset["embeddings"]]
    edited["embeddings"][-1] = [9.0, 9.0, 9.0, 9.0]
    t2 = client.post("/api/trace", json=edited).json()
    assert t2["hidden_states"][1][:3] == t["hidden_states"][1][:3]


def test_presets_validate_as_requests():
    # The suggested configs fit their own tables (e.g. heads divide d).
    from attnviz.schemas.trace import ToyTraceRequest

    for p in presets():
        ToyTraceRequest(tokens=p.tokens, embeddings=p.embeddings, axes=p.axes, config=p.config)
