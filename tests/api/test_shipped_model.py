"""The character model that ships with attnviz, served beside the default model: listed by
its title as a causal model, offered where the default predicts nothing, and its predictions,
logit lens and logit attribution over real HTTP equal to its engine's own forward; a text with
characters it lacks is refused in a sentence that names them."""

from __future__ import annotations

import pytest
import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.pretrained.registry import BUILTIN_NAME
from attnviz.settings import Settings
from attnviz.training.shipped import SHIPPED_NAME, SHIPPED_TITLE, read_recipe
from attnviz.training.tasks import CharLM
from tests.conftest import TINY_GPT2

TEXT = "The animal didn't cross the street because it was too tired."
BODY = {"model": SHIPPED_NAME, "text": TEXT}


def post(client, **params) -> dict:
    r = client.post("/api/trace", json=BODY, params=params)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def logits(app) -> torch.Tensor:
    """(T, V) the shipped model's next-character logits on TEXT, from its engine directly."""
    model = app.state.registry.get(SHIPPED_NAME)
    ids = torch.tensor([model.tokenizer(TEXT).ids])
    with torch.no_grad():
        return model.model.logits(model.model(ids))[0].double()


def test_it_is_listed_by_its_title_after_the_default_and_offered_for_predictions(client):
    body = client.get("/api/models").json()
    assert [m["name"] for m in body["models"]] == [BUILTIN_NAME, SHIPPED_NAME, TINY_GPT2]
    assert body["default"] == BUILTIN_NAME  # the flagship example is MiniLM's
    assert body["predicting"] == SHIPPED_NAME  # before the tiny GPT-2, also causal
    info = body["models"][1]
    recipe = read_recipe()["recipe"]
    assert (info["title"], info["run"], info["created"]) == (SHIPPED_TITLE, None, None)
    assert (info["family"], info["causal"], info["backend"]) == ("attnviz", True, "native")
    assert (info["layers"], info["heads"], info["d_model"]) == (
        recipe["arch"]["layers"],
        recipe["arch"]["heads"],
        recipe["arch"]["d_model"],
    )
    assert info["max_tokens"] == recipe["context"] == 128
    assert info["source"] == "package attnviz"  # never a path
    assert info["characters"] == CharLM(context=128).vocab.chars
    assert info["ablate_refused"] is None
    assert body["models"][0]["characters"] is None  # a word-piece tokenizer


def test_its_predictions_and_lens_are_its_forwards(client, logits):
    t = post(client, fields="top_k,lens", k=3)
    assert t["tokens"] == list(TEXT) and t["causal"]
    probs = logits.softmax(-1)
    top = probs.topk(3, dim=-1)
    assert t["top_k"]["ids"] == top.indices.tolist()
    assert torch.allclose(torch.tensor(t["top_k"]["probs"]).double(), top.values, atol=1e-5)
    lens = t["lens"]
    assert lens["rows"] == 4  # the embeddings and three layers
    # The last row reads the output: its top character is the prediction's.
    last, start = lens["ids"][-1], lens["start"]
    assert last == [ids[0] for ids in t["top_k"]["ids"][start : start + len(last)]]
    assert torch.allclose(
        torch.tensor(lens["probs"][-1]).double(),
        top.values[start : start + len(last), 0],
        atol=1e-5,
    )
    # Each id is named by its character.
    chars = CharLM(context=128).vocab.chars
    named = {int(i): label for i, label in t["top_k"]["vocab"].items()}
    assert all(label in (chars[i], repr(chars[i])[1:-1]) for i, label in named.items()), named


def test_what_pushed_a_prediction_sums_to_its_logit(client, logits):
    n = len(TEXT)
    got = post(client, fields="logit_attribution", position=n - 2)["logit_attribution"]
    token = int(logits[n - 2].argmax())
    assert got["position"] == n - 2 and got["token"] == token
    assert got["logit"] == pytest.approx(float(logits[n - 2, token]), abs=1e-4)
    assert sum(got["values"]) == pytest.approx(got["logit"], abs=1e-6)
    # The embedding, every head and MLP of the three layers, the biases.
    heads = [[f"L{layer}.H{h}" for h in range(4)] + [f"L{layer}.mlp"] for layer in range(3)]
    assert [c["name"] for c in got["components"]] == ["embed", *sum(heads, []), "bias"]


def test_a_text_with_characters_it_lacks_is_refused_in_a_sentence(client):
    r = client.post("/api/trace", json={"model": SHIPPED_NAME, "text": "It\u2019s a caf\u00e9."})
    assert r.status_code == 422
    message = r.json()["message"]
    assert message == (
        f"text: the model {SHIPPED_TITLE} has no token for 'é' (latin small letter e with acute), "
        "'\u2019' (right single quotation mark); it reads only plain ASCII (English letters, "
        "digits, punctuation, the space and the line break), except '$', '`'"
    )


def test_without_the_builtin_models_neither_is_loaded(tiny_gpt2_dir):
    app = create_app(Settings(device="cpu", builtin_model=False, models=str(tiny_gpt2_dir)))
    with TestClient(app) as c:
        body = c.get("/api/models").json()
    assert [m["name"] for m in body["models"]] == [TINY_GPT2]
    assert body["predicting"] == TINY_GPT2  # the first causal model there is
