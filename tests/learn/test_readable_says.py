"""Issue 41: a number in text the server writes for a learner reads as the page's numbers.js
readable() says it, to 3 significant digits (attnviz.numbers.readable): every toy step's check
over its starting state and the edits its tasks ask for, and every training claim's sentence
(an ablation preset's, the recurrent comparison's) over measured values of many digits. The
train steps' answers (11 to 13) are read by tests/learn/test_train_checks.py and
tests/learn/test_circuit.py, whose expected sentences use attnviz.numbers.readable and signed."""

from __future__ import annotations

import copy

import pytest
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.settings import Settings
from attnviz.training.ablations import PRESETS
from attnviz.training.recurrent import CLAIMS
from tests.browser.test_readable_numbers import DECIMAL, significant

MOST = 3  # significant digits of a number in a sentence


def too_precise(s: str) -> list[str]:
    return [m.group(0) for m in DECIMAL.finditer(s) if significant(m[1], m[2]) > MOST]


def test_the_rule_counts_what_it_should():
    assert too_precise("Of the score 18.18 of layer 2, head 1 ... gives +10.64, 1.000 of its") == [
        "18.18",
        "10.64",
        "1.000",
    ]
    assert too_precise("score 18.2, gives +10.6, −0.0523, 1 of its, 0.000123, 1.23e-7, 12%") == []


# Each toy step's task edits, as the page makes them: the step's own state, then its wiring
# changed the ways its tasks ask for (and a few more), each answered with numbers.
EDITS: list[dict] = [
    {},
    {"scale": False},
    {"layers": 6},
    {"positional": "sinusoidal"},
    {"positional": "rope"},
    {"residual": True, "norm": "pre", "layers": 5},
    {"residual": True, "norm": "none", "layers": 5},
    {"residual": True, "norm": "post", "ffn": True},
    {"projections": "random", "seed": 3, "weights": None},
]


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(Settings(device="cpu", builtin_model=False)))


def answers(client: TestClient, step: str, state: dict, **view) -> list[str]:
    v = {k: state["view"][k] for k in ("layer", "head", "vlayer", "a", "b", "trails")}
    body = {
        "toy": {k: state[k] for k in ("tokens", "axes", "embeddings", "config")},
        "view": {**v, **view},
    }
    r = client.post(f"/api/learn/{step}/check", json=body)
    assert r.status_code == 200, (step, body["toy"]["config"], r.text)
    return [t["says"] for t in r.json()["tasks"]]


@pytest.mark.slow
def test_every_toy_check_says_its_numbers_to_three_significant_digits(client):
    starts = {s["id"]: s["toy"] for s in client.get("/api/learn").json()["steps"] if s["toy"]}
    assert len(starts) >= 9
    said: list[tuple[str, dict, str]] = []
    for step, start in starts.items():
        for edit in EDITS:
            state = copy.deepcopy(start)
            state["config"].update(edit)
            layers = state["config"]["layers"]
            for layer in sorted({0, layers - 1}):
                for says in answers(client, step, state, layer=layer):
                    said.append((step, edit, says))
    # The answers carry numbers, many of them more than 3 digits long before rounding.
    assert sum(bool(DECIMAL.search(s)) for _, _, s in said) > len(said) // 2
    bad = [(step, edit, n, s) for step, edit, s in said for n in too_precise(s)]
    assert not bad, "\n".join(f"{st} {e}: {n!r} in {s!r}" for st, e, n, s in bad[:10])


# Measured values of many digits, each side of the claims' bounds, as shares, losses, ratios.
VALUES = [0.97123456, 0.4687, 3.26984, 2.72500001, 1.3271, 0.0012345, 12.3456, 1234.567, 0.0]


@pytest.mark.parametrize(
    "claims",
    [pytest.param(p.claims, id=f"preset {name}") for name, p in PRESETS.items()]
    + [pytest.param(c, id=f"recurrent {name}") for name, c in CLAIMS.items()],
)
def test_every_claims_sentence_says_its_numbers_to_three_significant_digits(claims):
    for claim in claims:
        for value in VALUES:
            sentence = claim.sentence(value)
            assert not too_precise(sentence), sentence
