"""Generation through the trace API: a causal model writes after the text, and the trace covers
what it wrote. Greedy equals Hugging Face's greedy continuation (the oracle) on a tiny GPT-2 and
a tiny Llama; sampling is fixed by its seed; every row of the trace is the row a trace of the
shorter text would give (causal attention), so stepping through is exact."""

from __future__ import annotations

import pytest
import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.limits import LIMITS
from attnviz.settings import Settings
from tests.support.checkpoints import make_tiny_llama

TEXT = "I sat on the river bank"


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    return make_tiny_llama(tmp_path_factory.mktemp("g") / "tiny-llama", "llama-gqa")


@pytest.fixture(scope="module")
def gen_client(tiny_gpt2_dir, llama_dir):
    models = f"{tiny_gpt2_dir}:{llama_dir}"
    return TestClient(create_app(Settings(device="cpu", models=models)))


def _hf_greedy(folder, ids: list[int], steps: int) -> list[int]:
    from transformers import AutoModelForCausalLM

    lm = AutoModelForCausalLM.from_pretrained(folder).eval()
    with torch.no_grad():
        out = lm.generate(torch.tensor([ids]), max_new_tokens=steps, do_sample=False,
                          pad_token_id=0)  # fmt: skip
    return out[0, len(ids) :].tolist()


@pytest.mark.parametrize("which", ["tiny-gpt2", "tiny-llama"])
def test_greedy_generation_equals_the_oracle_and_the_trace_covers_it(
    gen_client, tiny_gpt2_dir, llama_dir, which
):
    folder = tiny_gpt2_dir if which == "tiny-gpt2" else llama_dir
    plain = gen_client.post("/api/trace", json={"model": which, "text": TEXT}).json()
    r = gen_client.post("/api/trace", json={"model": which, "text": TEXT, "generate": {"steps": 8}})
    assert r.status_code == 200, r.text
    t = r.json()
    start, g = plain["n"], t["generated"]
    want = _hf_greedy(folder, plain["token_ids"], 8)  # it stops at the end-of-text token too
    assert t["token_ids"][:start] == plain["token_ids"]
    assert t["token_ids"][start:] == want
    assert g["start"] == start and g["steps"] == len(want) and g["asked"] == 8
    assert t["n"] == start + len(want) and t["words"][start:] == [None] * len(want)
    # Causal: the rows of the text are those of the text's own trace; each written token's row
    # is the model's attention as it read it.
    for layer in range(t["layers"]):
        for head in range(t["heads"]):
            a, b = (
                torch.tensor(t["attentions"][layer][head]),
                torch.tensor(plain["attentions"][layer][head]),
            )
            assert torch.allclose(a[:start, :start], b, atol=1e-6)
            assert torch.all(a[:start, start:] == 0)


def test_sampling_is_fixed_by_its_seed(gen_client):
    body = {"model": "tiny-gpt2", "text": TEXT}

    def written(**g) -> list[int]:
        t = gen_client.post("/api/trace", json={**body, "generate": {"steps": 12, **g}}).json()
        return t["token_ids"][t["generated"]["start"] :]

    a = written(temperature=1.5, seed=1)
    assert a == written(temperature=1.5, seed=1)
    assert a != written(temperature=1.5, seed=2)  # 12 draws at a high temperature
    assert written(temperature=0, seed=1) == written(temperature=0, seed=2)  # greedy


@pytest.mark.parametrize(
    ("generate", "message"),
    [
        ({"steps": 0}, "generate.steps: Input should be greater than or equal to 1"),
        ({"steps": LIMITS.max_generate + 1}, f"less than or equal to {LIMITS.max_generate}"),
        ({"steps": 2, "temperature": -1}, "generate.temperature"),
        ({"steps": 2, "top_k": 5}, "generate.top_k: Extra inputs are not permitted"),
    ],
)
def test_bad_generation_requests_are_refused_by_field(gen_client, generate, message):
    r = gen_client.post(
        "/api/trace", json={"model": "tiny-gpt2", "text": TEXT, "generate": generate}
    )
    assert r.status_code == 422 and message in r.json()["message"], r.text


def test_an_encoder_does_not_write_and_the_cap_holds(gen_client):
    r = gen_client.post("/api/trace", json={"model": "all-MiniLM-L6-v2", "text": TEXT,
                                            "generate": {"steps": 2}})  # fmt: skip
    assert r.status_code == 422
    assert r.json()["message"].startswith("generate: model all-MiniLM-L6-v2 does not write")
    capped = TestClient(create_app(Settings(device="cpu", builtin_model=False,
                                            models=str(gen_client.app.state.registry.models["tiny-gpt2"].source),
                                            max_text_tokens=10)))  # fmt: skip
    r = capped.post(
        "/api/trace", json={"model": "tiny-gpt2", "text": TEXT, "generate": {"steps": 8}}
    )
    assert r.status_code == 422 and r.json()["message"].startswith("generate.steps: ")


def test_generation_stops_after_an_end_of_text_token(gen_client):
    """With the token it writes third declared the end of text, it writes three and stops."""
    from attnviz.engine.generate import continue_ids

    m = gen_client.app.state.registry.models["tiny-gpt2"]
    ids = m.tokenizer(TEXT).ids
    free = continue_ids(m.model, ids, 6)
    k = free.index(free[2])  # its first occurrence
    assert continue_ids(m.model, ids, 6, stop={free[2]}) == free[: k + 1]
    before, m.eos_ids = m.eos_ids, (free[2],)
    try:
        t = gen_client.post("/api/trace", json={"model": "tiny-gpt2", "text": TEXT,
                                                "generate": {"steps": 6}}).json()  # fmt: skip
    finally:
        m.eos_ids = before
    assert t["generated"]["steps"] == k + 1 and t["generated"]["stopped"] is True
