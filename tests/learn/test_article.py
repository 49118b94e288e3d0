"""The article's numbers beside the engine's: every one agrees to the article's rounding, and the
engine's are the closed form of raw self-attention on the article's table."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.presets import APPLE_X
from attnviz.settings import Settings

# Which steps restate the article, with how many tables.
RESTATED = {"dot-products": 1, "worked-example": 3, "collapse": 2}


@pytest.fixture(scope="module")
def steps() -> dict[str, dict]:
    client = TestClient(create_app(Settings(device="cpu", builtin_model=False)))
    return {s["id"]: s for s in client.get("/api/learn").json()["steps"]}


def attend(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Raw self-attention, by hand: scores X Xᵀ/√d, their row softmax, and weights @ X."""
    scores = x @ x.T / np.sqrt(x.shape[1])
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    return scores, weights, weights @ x


def test_only_the_steps_that_restate_the_article_carry_its_tables(steps):
    assert {k: len(s["article"]) for k, s in steps.items() if s["article"]} == RESTATED


def test_every_article_number_equals_the_engines_to_the_articles_rounding(steps):
    count = 0
    for step in RESTATED:
        for table in steps[step]["article"]:
            half = 0.5 * 10 ** -table["decimals"]
            for row in table["rows"]:
                assert len(row["article"]) == len(row["engine"]) == len(table["columns"])
                for a, e in zip(row["article"], row["engine"], strict=True):
                    assert abs(e - a) <= half + 1e-12, (table["caption"], row["label"], a, e)
                    count += 1
    assert count == 25 + 5 + 18 + 2 + 15 + 25


def test_the_engines_numbers_are_raw_self_attention_on_the_articles_table(steps):
    x = np.array(APPLE_X)
    scores, weights, after = attend(x)
    apple, banana = 1, 4

    (table,) = steps["dot-products"]["article"]
    assert np.allclose([r["engine"] for r in table["rows"]], scores, atol=1e-12)

    row_weights, before_after, gap = steps["worked-example"]["article"]
    assert np.allclose(row_weights["rows"][0]["engine"], weights[apple], atol=1e-12)
    want = [x[apple], after[apple], x[banana], after[banana], x[0], after[0]]
    assert np.allclose([r["engine"] for r in before_after["rows"]], want, atol=1e-12)
    assert np.allclose(
        gap["rows"][0]["engine"],
        [np.linalg.norm(x[apple] - x[banana]), np.linalg.norm(after[apple] - after[banana])],
        atol=1e-12,
    )

    # Five passes, each feeding the last one's output back in.
    collapsed, uniform = steps["collapse"]["article"]
    layer = x
    for _ in range(4):
        layer = attend(layer)[2]
    _, fifth, out = attend(layer)
    assert np.allclose([r["engine"] for r in collapsed["rows"]], out, atol=1e-12)
    assert np.allclose([r["engine"] for r in uniform["rows"]], fifth, atol=1e-12)


def test_the_tables_label_rows_and_columns_by_the_tables_own_names(steps):
    scores = steps["dot-products"]["article"][0]
    assert scores["columns"] == steps["dot-products"]["toy"]["tokens"]
    assert [r["label"] for r in scores["rows"]] == scores["columns"]
    assert steps["worked-example"]["article"][1]["columns"] == ["tech", "fruit", "grammar"]
    for step in RESTATED:
        for table in steps[step]["article"]:
            assert table["caption"] and table["decimals"] in (2, 3)


# ---- the tables follow the learner's table (issue 28, item 5.12) -----------------------------


def live(client: TestClient, steps: dict, step: str, edit) -> list[dict] | None:
    """The article tables a check of ``step`` answers for its starting table after ``edit``."""
    toy = copy.deepcopy(steps[step]["toy"])
    state = {k: toy[k] for k in ("tokens", "axes", "embeddings", "config")}
    edit(state)
    r = client.post(f"/api/learn/{step}/check", json={"toy": state})
    assert r.status_code == 200, r.text
    return r.json()["article"]


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(Settings(device="cpu", builtin_model=False)))


def test_an_edited_table_gets_its_own_numbers_in_the_articles_tables(client, steps):
    # As the step starts: the very numbers the step carries.
    assert (
        live(client, steps, "worked-example", lambda s: None) == steps["worked-example"]["article"]
    )
    # apple's row edited: every table is raw self-attention on the edited table, by hand.
    x = np.array(APPLE_X)
    x[1] = [0.1, 0.9, 0.2]

    def edit(s: dict) -> None:
        s["embeddings"][1] = [0.1, 0.9, 0.2]

    row_weights, before_after, gap = live(client, steps, "worked-example", edit)
    _, weights, after = attend(x)
    assert np.allclose(row_weights["rows"][0]["engine"], weights[1], atol=1e-12)
    want = [x[1], after[1], x[4], after[4], x[0], after[0]]
    assert np.allclose([r["engine"] for r in before_after["rows"]], want, atol=1e-12)
    assert np.allclose(
        gap["rows"][0]["engine"],
        [np.linalg.norm(x[1] - x[4]), np.linalg.norm(after[1] - after[4])],
        atol=1e-12,
    )
    # The article's own numbers stay as it prints them.
    assert [r["article"] for r in before_after["rows"]] == [
        r["article"] for r in steps["worked-example"]["article"][1]["rows"]
    ]
    (scores,) = live(client, steps, "dot-products", edit)
    assert np.allclose([r["engine"] for r in scores["rows"]], attend(x)[0], atol=1e-12)


def test_a_table_that_is_no_longer_the_articles_case_gets_none(client, steps):
    def rename(s: dict) -> None:
        s["tokens"][1] = "pear"

    def fewer_layers(s: dict) -> None:
        s["config"]["layers"] = 2

    def more_tokens(s: dict) -> None:
        s["tokens"].append("cherry")
        s["embeddings"].append([0.1, 0.2, 0.3])

    assert live(client, steps, "worked-example", rename) is None
    assert live(client, steps, "worked-example", more_tokens) is None
    assert live(client, steps, "collapse", fewer_layers) is None  # layer 5 is gone
    # A step without article tables answers none; a train step's check says nothing of them.
    assert live(client, steps, "scaling", lambda s: None) == []
