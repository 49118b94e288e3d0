"""The OpenAPI schema against the server, by schemathesis: requests generated from the schema
(valid ones and ones that break it), each answered without a 5xx, with a status, content type
and body the schema documents, and every 4xx with a one-line message; a valid one is never
refused (400, 413, 422: ``positive_data_acceptance``) but where a rule the OpenAPI cannot state
refuses it (``REJECTS_VALID``, each with why). Bounded to fit CI: a few
hundred cases per operation (``ATTNVIZ_FUZZ_EXAMPLES`` raises it; 1,000+ was run by hand)."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks
from schemathesis.generation import GenerationMode

from attnviz.app import create_app
from attnviz.settings import Settings

EXAMPLES = int(os.environ.get("ATTNVIZ_FUZZ_EXAMPLES", "150"))


@pytest.fixture(scope="module")
def fuzz_schema(minilm_dir):
    # Runs the fuzzer starts are tiny and short: a few steps at most. Bodies up to 4 MiB: an
    # upload over its cap in characters is the schema's 422, not the body cap's 413.
    settings = Settings(
        device="cpu", max_wait_s=30, train_max_steps=3, train_max_params=20_000,
        max_body_bytes=4 * 2**20,
    )  # fmt: skip
    app = create_app(settings)
    return schemathesis.openapi.from_asgi("/openapi.json", app)


CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.response_headers_conformance,
    checks.negative_data_rejection,
]


# Operations whose valid input (by the schema) may still be refused with a 422, and why: a rule
# between fields, or against the server's own state or settings, that JSON Schema cannot say.
# Where it can say one, the schema does, and the operation is held to it: the corpus's upload
# with its source (if/then/else), a run's name and a nickname (patterns made from the rule
# itself, checked against it over every character in test_train_rename.py and
# test_learn_progress.py).
REJECTS_VALID = {
    "POST /api/trace": "a toy table's rows count its tokens, its rows are one length d, heads "
    "divide d, custom weights are d x d; a text's tokens against its model's cap",
    "POST /api/export": "its trace is POST /api/trace's (the same rules), its selection within "
    "that trace's layers, heads and tokens",
    "POST /api/train": "the host's caps on steps and parameters (ATTNVIZ_TRAIN_MAX_*) are under "
    "the schema's ceilings, and the parameters are the architecture's product",
    "POST /api/recurrent": "a task's steps against the host's cap (ATTNVIZ_TRAIN_MAX_STEPS)",
    "POST /api/learn/{step_id}/check": "one of toy, run and recurrent, each view with its own "
    "kind, found only with a run (each a task of the step, its head in the run's model), and a "
    "toy table's own rules (POST /api/trace's)",
}


def conforms(case, operation: str = "") -> None:
    response = case.call()
    positive = case.meta is not None and case.meta.generation.mode.is_positive
    accepts = (
        [checks.positive_data_acceptance] if positive and operation not in REJECTS_VALID else []
    )
    case.validate_response(response, checks=CHECKS + accepts)
    if 400 <= response.status_code < 500:
        body = response.json()
        assert isinstance(body.get("message"), str) and body["message"], body
        assert "Traceback" not in response.text


OPERATIONS = [
    "GET /healthz",
    "GET /api/presets",
    "GET /api/fields",
    "GET /api/models",
    "GET /api/models/{name}/atlas",
    "GET /api/models/{name}/composition",
    "POST /api/models/{name}/corpus",
    "POST /api/trace",
    "GET /api/trace/jobs/{job_id}",
    "DELETE /api/trace/jobs/{job_id}",
    "GET /api/trace/jobs/{job_id}/result",
    "GET /api/trace/jobs/{job_id}/events",
    "POST /api/export",
    "GET /api/train/options",
    "GET /api/train",
    "POST /api/train",
    "GET /api/train/{run_id}",
    "GET /api/train/{run_id}/events",
    "GET /api/train/{run_id}/model.zip",
    "GET /api/train/{run_id}/export",
    "POST /api/train/{run_id}/decode",
    "PATCH /api/train/{run_id}",
    "DELETE /api/train/{run_id}",
    "POST /api/train/{run_id}/share",
    "GET /api/learn",
    "POST /api/learn/{step_id}/check",
    "POST /api/learn/{step_id}/open",
    "GET /api/learn/progress",
    "PUT /api/learn/progress/nickname",
    "GET /api/learn/class",
    "GET /api/recurrent/options",
    "GET /api/recurrent",
    "POST /api/recurrent",
    "GET /api/recurrent/{run_id}",
    "GET /api/recurrent/{run_id}/events",
    "DELETE /api/recurrent/{run_id}",
]
POSITIVE, NEGATIVE = GenerationMode.POSITIVE, GenerationMode.NEGATIVE
# Bodies and parameters that break the schema, where there are any.
TAKES_INPUT = [
    "POST /api/models/{name}/corpus",
    "POST /api/trace",
    "POST /api/export",
    "POST /api/train",
    "GET /api/train/{run_id}/model.zip",
    "POST /api/train/{run_id}/decode",
    "PATCH /api/train/{run_id}",
    "POST /api/learn/{step_id}/check",
    "PUT /api/learn/progress/nickname",
    "POST /api/recurrent",
]
# Drawing and exporting a trace take a second or more per run of examples: `make test` only.
SLOW = {"POST /api/trace", "POST /api/export"}
RUNS = [
    pytest.param(op, mode, marks=[pytest.mark.slow] if op in SLOW else [])
    for op, mode in [(op, POSITIVE) for op in OPERATIONS] + [(op, NEGATIVE) for op in TAKES_INPUT]
]


@pytest.mark.parametrize(("operation", "mode"), RUNS)
def test_the_server_keeps_to_its_schema(fuzz_schema, operation, mode):
    method, path = operation.split()
    op = fuzz_schema[path][method]
    examples = EXAMPLES if method == "POST" else 10

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(op.as_strategy(generation_mode=mode))
    def run(case) -> None:
        conforms(case, operation)

    run()


def test_every_operation_is_fuzzed(fuzz_schema):
    operations = (r.ok() for r in fuzz_schema.get_all_operations())
    found = {f"{op.method.upper()} {op.path}" for op in operations}
    assert found == set(OPERATIONS)
    assert set(REJECTS_VALID) <= set(TAKES_INPUT)
