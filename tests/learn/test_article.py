"""The article's numbers beside the engine's: every one agrees to the article's rounding, and the
engine's are the closed form of raw self-attention on the article's table."""

from __future__ import annotations

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
