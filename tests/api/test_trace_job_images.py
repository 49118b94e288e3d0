"""A text with a picture asked as a job, a plain trace or an export: a query or key among the
picture's tokens is checked against the tokens the trace will have, the image tokens its
processor makes included, never against the text's alone. Before the trace, with the images
still to be read, the bound is the token cap (a query past it refused at once, nothing
computed); once the model's processor has made the image tokens, the trace's own count (a
query past it refused naming it, as any).

The model is tiny LLaVA (tests/support/checkpoints_vlm.py): a 16 x 16 picture is 64 image
tokens where its processor puts them, the last of them past the text's own tokens."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.pretrained.bridge.multimodal import load_processor
from attnviz.settings import Settings
from tests.api.test_trace_jobs import follow
from tests.python.offline import parts_of
from tests.support.checkpoints_vlm import make_tiny_llava
from tests.support.images import data_url, encoded, noise

TEXT = "what is in <image> this picture, and what is the colour of its corner"
CAP = 200  # the server's token cap: past the trace's tokens, under the model's positions
PICTURE = noise(16, 16)
ROW = {"fields": "attentions", "layer": 1, "head": 2}
ASYNC = {"Prefer": "respond-async"}  # a job, its answer JSON


@pytest.fixture(scope="module")
def llava(tmp_path_factory) -> Path:
    return make_tiny_llava(tmp_path_factory.mktemp("vlm-jobs") / "tiny-llava")


@pytest.fixture
def client(llava):
    """Every trace asked as a job is one (after 0 s); texts capped at ``CAP`` tokens."""
    s = Settings(device="cpu", builtin_model=False, models=str(llava), trace_job_after_s=0,
                 max_text_tokens=CAP)  # fmt: skip
    with TestClient(create_app(s)) as c:
        yield c


def body(text: str = TEXT) -> dict:
    return {"model": "tiny-llava", "text": text, "images": [data_url(encoded(PICTURE))]}


def image_tokens(llava: Path, text: str = TEXT) -> tuple[list[int], int]:
    """Where the model's own processor puts the picture's tokens in ``text``, and how many
    tokens the text and the picture make."""
    processor = load_processor(llava)
    ids = processor(text=[text], images=[[PICTURE]], return_tensors="pt")["input_ids"][0].tolist()
    return [i for i, t in enumerate(ids) if t == processor.image_token_id], len(ids)


def text_tokens(c: TestClient, text: str = TEXT) -> int:
    return len(c.app.state.registry.get("tiny-llava").tokenizer(text).ids)


def test_a_query_among_the_image_tokens_is_traced_as_a_job_and_plainly(client, llava, forwards):
    at, n = image_tokens(llava)
    assert len(at) == 64 and at[-1] >= text_tokens(client)  # past the text's own tokens
    plain = client.post("/api/trace", params={**ROW, "query": at[-1]}, json=body())
    assert plain.status_code == 200, plain.text
    row = plain.json()["attentions"]
    # A job on another text (the same picture, where the processor puts it) ends done.
    other = TEXT + " at the top"
    at_other, n_other = image_tokens(llava, other)
    assert at_other == at and at[-1] >= text_tokens(client, other)
    r = client.post("/api/trace", params={**ROW, "query": at[-1]}, json=body(other), headers=ASYNC)
    assert r.status_code == 202, r.text
    job = follow(client, r.json())
    assert job["state"] == "done", job
    answer = client.get(job["result"])
    assert answer.status_code == 200, answer.text
    assert forwards == [TEXT, other]
    # Each is the query's row of its whole trace (kept: not computed again).
    for text, part, count in ((TEXT, row, n), (other, answer.json()["attentions"], n_other)):
        whole = client.post("/api/trace", params=ROW, json=body(text)).json()
        assert whole["n"] == count and len(part[0][0][0]) == count
        assert part == [[[whole["attentions"][0][0][at[-1]]]]]
    assert forwards == [TEXT, other]


def test_with_images_a_query_past_the_cap_is_refused_at_once_one_past_the_trace_after(
    client, llava, forwards
):
    _, n = image_tokens(llava)
    assert n < CAP
    for headers in (ASYNC, {}):
        r = client.post("/api/trace", params={**ROW, "query": CAP}, json=body(), headers=headers)
        assert r.status_code == 422, r.text
        assert r.json()["message"] == (
            f"query: {CAP} is out of range ({CAP} tokens at most with its images: 0 to {CAP - 1})"
        )
    assert forwards == []  # refused before any work
    # Within the cap, past the tokens the trace has: the trace refuses it, naming them.
    r = client.post("/api/trace", params={**ROW, "query": n}, json=body(), headers=ASYNC)
    assert r.status_code == 202, r.text
    assert follow(client, r.json())["state"] == "failed"
    result = client.get(r.json()["result"])
    assert result.status_code == 422
    assert result.json()["message"] == f"query: {n} is out of range ({n} tokens: 0 to {n - 1})"


def test_an_export_opens_on_a_query_among_the_image_tokens(client, llava, forwards):
    at, n = image_tokens(llava)
    selection = {"layer": 1, "head": 2, "query": at[-1], "key": at[0], "views": ["model", "why"]}
    r = client.post("/api/export", json={"trace": body(), "selection": selection})
    assert r.status_code == 200, r.text
    asked = [p for p in parts_of(r.text) if p.get("query") == at[-1]]
    assert any(p["fields"] == "attentions" and p.get("head") == 2 for p in asked), asked
    assert any(p["fields"] == "qk_attribution" and p["key"] == at[0] for p in asked), asked
    assert forwards == [TEXT]
    # Past the cap: refused before any trace; past the trace's own tokens: once it has them.
    for query, bound in ((CAP, CAP), (n, n)):
        picked = {**selection, "query": query, "key": None}
        r = client.post("/api/export", json={"trace": body(), "selection": picked})
        assert r.status_code == 422, r.text
        message = f"selection.query: {query} is out of range (0 to {bound - 1})"
        assert r.json()["message"] == message
    assert forwards == [TEXT]  # the second is the kept trace's
