"""GET /api/learn and POST /api/learn/{id}/check over HTTP: the shape, and every way a check's
body can be wrong (a 4xx that names the field and the rule, never a 500)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.limits import LIMITS
from attnviz.presets import APPLE_AXES, APPLE_TOKENS, APPLE_X
from attnviz.settings import Settings

APPLE = {"tokens": APPLE_TOKENS, "axes": APPLE_AXES, "embeddings": APPLE_X}


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(Settings(device="cpu", builtin_model=False)))


def refused(client, step: str, body: object, status: int = 422) -> dict:
    r = client.post(f"/api/learn/{step}/check", json=body)
    assert r.status_code == status, r.text
    return r.json()


def test_the_steps_are_served_with_their_shape(client):
    r = client.get("/api/learn")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    steps = r.json()["steps"]
    assert set(steps[1]) == {
        "n", "id", "title", "lab", "text", "formula", "formula_text", "toy", "train",
        "continues", "focus", "only", "tasks", "article",
    }  # fmt: skip
    assert set(steps[1]["tasks"][0]) == {"id", "prompt", "hint", "finding", "action", "reads"}
    # Each toy task names the parts of the lab it reads (a change to one is a try at it).
    qkv = next(s for s in steps if s["id"] == "qkv")
    assert [t["reads"] for t in qkv["tasks"]] == [["W_V"], ["W_Q", "W_K"]]
    assert all(t["reads"] for s in steps if s["toy"] for t in s["tasks"])
    assert steps[1]["toy"]["view"] == {
        "layer": 0, "head": 0, "vlayer": 1, "a": 1, "b": 4, "trails": True,
    }  # fmt: skip
    table = steps[1]["article"][0]
    assert set(table) == {"caption", "columns", "decimals", "rows"}
    assert set(table["rows"][0]) == {"label", "article", "engine"}
    # The same answer twice (computed once).
    assert client.get("/api/learn").json() == r.json()


def test_a_train_steps_task_reads_true_to_whoever_opens_its_link(client):
    """A train step's task, read by a teacher who opened a learner's link as by the learner,
    names the run or the comparison in view, never "your" one (issue 41): only a check's answer
    knows whose it is ("on your run" to its owner, "on this run" to anyone else)."""
    steps = client.get("/api/learn").json()["steps"]
    prompts = {s["n"]: [t["prompt"] for t in s["tasks"]] for s in steps if s["lab"] == "train"}
    assert set(prompts) == {1, *range(11, 18)}
    for n, texts in prompts.items():
        for text in texts:
            assert not re.search(r"\byour (run|comparison)\b", text, re.I), (n, text)
    assert prompts[1] == [
        "Run the comparison and let it finish: done when its claims about memory hold on the "
        "comparison in the card."
    ]


def test_a_toy_check_answers_every_task_of_the_step(client):
    r = client.post("/api/learn/qkv/check", json={"toy": {**APPLE, "config": {}}})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["step"] == "qkv"
    assert [t["id"] for t in body["tasks"]] == ["quiet-values", "determiner-finds-a"]
    # Identity projections: the task's W_V is not there, and the answer says so.
    assert not body["tasks"][0]["done"] and "custom" in body["tasks"][0]["says"]


def test_an_unknown_step_is_404_naming_it(client):
    body = refused(client, "attention-is-all", {"toy": APPLE}, 404)
    assert body["message"].startswith("step_id: no step 'attention-is-all'")
    assert "dot-products" in body["message"]


@pytest.mark.parametrize(
    ("step", "body", "field", "rule"),
    [
        ("dot-products", {"run": "abc"}, "toy", "is a toy step"),
        ("induction", {"toy": APPLE}, "run", "is a train step"),
        ("rnn", {"run": "abc"}, "recurrent", "checks the recurrent comparison"),
        ("ablate-norm", {"recurrent": "abc"}, "run", "is a train step"),
        ("dot-products", {}, "body", "send toy"),
        ("dot-products", {"toy": APPLE, "run": "abc"}, "run", "send one of"),
        ("dot-products", {"toy": APPLE, "view": {"variant": 0}}, "view.variant", "train step"),
        ("induction", {"run": "abc", "view": {"vlayer": 0}}, "view.vlayer", "toy step"),
        ("dot-products", {"toy": APPLE, "view": {"query": 1, "key": 0}}, "view.query",
         "train step"),
        ("induction-circuit", {"run": "abc", "view": {"query": 1}}, "view.key", "with view.query"),
        ("induction-circuit", {"run": "abc", "view": {"query": -1, "key": 0}}, "view.query",
         "greater than"),
        ("rnn", {"recurrent": "abc", "view": {}}, "view", "reads no view"),
        ("dot-products", {"toy": APPLE, "view": {"layer": 1}}, "view.layer", "past this model"),
        ("dot-products", {"toy": APPLE, "view": {"head": 1}}, "view.head", "past this model"),
        ("dot-products", {"toy": APPLE, "view": {"a": 5}}, "view.a", "past the last token"),
        ("dot-products", {"toy": APPLE, "view": {"vlayer": 2}}, "view.vlayer", "last layer"),
        ("dot-products", {"toy": APPLE, "view": {"layer": -1}}, "view.layer", "greater than"),
        # Run ids are 128-bit now (issue 27): the cap on one is 64 characters.
        ("dot-products", {"run": "x" * 65}, "run", "at most 64"),
        ("dot-products", [1, 2], "body", "valid dictionary"),
    ],
)  # fmt: skip
def test_a_wrong_body_is_422_naming_the_field(client, step, body, field, rule):
    got = refused(client, step, body)
    message = got["message"]
    assert message.startswith(f"{field}: ") or f"{field}: " in message, message
    assert rule in message, message


@pytest.mark.parametrize(
    ("toy", "rule"),
    [
        ({**APPLE, "config": {"heads": 2}}, "config.heads: 2 does not divide d = 3"),
        (
            {**APPLE, "tokens": ["x"]},
            "embeddings: 1 row of 3 numbers (n x d: one row per token), got 5 rows",
        ),
        ({**APPLE, "embeddings": [[1e9, 0, 0]] * 5}, "less than or equal to 1000"),
        ({**APPLE, "colour": "red"}, "colour: Extra inputs are not permitted"),
        ({**APPLE, "config": {"layers": 13}}, "config.layers: Input should be less than or equal"),
        (
            {"tokens": ["t"] * (LIMITS.max_tokens + 1), "embeddings": [[1.0]] * 65},
            f"tokens: List should have at most {LIMITS.max_tokens} items",
        ),
    ],
)
def test_a_toy_body_is_refused_as_post_api_trace_refuses_it(client, toy, rule):
    """The same rules, caps and messages as a trace's (the table is a ToyTraceRequest)."""
    message = refused(client, "dot-products", {"toy": toy})["message"]
    assert rule in message, message
    trace = client.post("/api/trace", json=toy)
    assert trace.status_code == 422 and trace.json()["message"] == message


def test_a_run_or_comparison_that_is_gone_is_404(client):
    body = refused(client, "induction", {"run": "0123456789"}, 404)
    assert body["message"].startswith("run: no run '0123456789' on this server")
    body = refused(client, "rnn", {"recurrent": "0123456789"}, 404)
    assert body["message"].startswith("recurrent: no comparison '0123456789'"), body


def test_a_body_not_json_and_a_step_id_over_its_cap_are_422(client):
    r = client.post("/api/learn/dot-products/check", content=b"{", headers={
        "content-type": "application/json"})  # fmt: skip
    assert r.status_code == 422 and r.json()["message"].startswith("body: not valid JSON")
    long = "x" * 41
    r = client.post(f"/api/learn/{long}/check", json={"toy": APPLE})
    assert r.status_code == 422 and r.json()["message"].startswith("path.step_id: ")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_generated_bodies_get_a_documented_answer_never_a_5xx(mode):
    """schemathesis's bodies from the schema (valid ones, and ones that break it), sent to real
    step ids, toy and train: a documented status with a one-line message, or an answer."""
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from schemathesis import checks
    from schemathesis.generation import GenerationMode

    from attnviz.learn.steps import BY_ID

    app = create_app(Settings(device="cpu", builtin_model=False, max_wait_s=30))
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    op = schema["/api/learn/{step_id}/check"]["POST"]
    generation = GenerationMode.POSITIVE if mode == "positive" else GenerationMode.NEGATIVE
    seen: set[int] = set()

    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(case=op.as_strategy(generation_mode=generation), step=st.sampled_from(sorted(BY_ID)))
    def run(case, step) -> None:
        case.path_parameters = {"step_id": step}
        response = case.call()
        case.validate_response(response, checks=[checks.not_a_server_error,
                               checks.status_code_conformance, checks.content_type_conformance,
                               checks.response_schema_conformance])  # fmt: skip
        seen.add(response.status_code)
        if response.status_code >= 400:
            assert response.json()["message"], response.text

    run()
    assert seen <= {200, 400, 404, 422} and 422 in seen
