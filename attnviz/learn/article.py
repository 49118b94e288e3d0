"""The numbers of the article's worked example (seed 004, "You could have invented transformers
from memory"), as it states them, beside the engine's from a step's starting state.

Each table is the article's values (copied as printed, at its rounding) and, per row, how to read
the engine's from the trace of the step's starting table; the tests check that the engine's round
to the article's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attnviz.capture import TraceTensors
from attnviz.presets import APPLE_AXES, APPLE_TOKENS
from attnviz.schemas.learn import ArticleRow, ArticleTable

Engine = Callable[[TraceTensors], list[float]]


@dataclass(frozen=True)
class Row:
    label: str
    article: tuple[float, ...]
    engine: Engine


@dataclass(frozen=True)
class Table:
    caption: str
    columns: tuple[str, ...]
    decimals: int
    rows: tuple[Row, ...]

    def computed(self, tensors: TraceTensors) -> ArticleTable:
        return ArticleTable(
            caption=self.caption,
            columns=list(self.columns),
            decimals=self.decimals,
            rows=[
                ArticleRow(label=r.label, article=list(r.article), engine=r.engine(tensors))
                for r in self.rows
            ],
        )


def _floats(t) -> list[float]:
    return [float(x) for x in t]


def _score_row(i: int) -> Engine:
    return lambda t: _floats(t.scores(0, [0])[0, i])


def _weight_row(layer: int, i: int) -> Engine:
    return lambda t: _floats(t.pattern(layer, [0])[0, i])


def _state(layer: int | None, i: int) -> Engine:
    """Token ``i``'s vector after ``layer`` (None: the last layer; 0: the input)."""
    return lambda t: _floats(t.states[t.layers if layer is None else layer][i])


def _distance(i: int, j: int) -> Engine:
    return lambda t: [float((t.states[k][i] - t.states[k][j]).norm()) for k in (0, t.layers)]


AN, APPLE, AND, A, BANANA = range(5)

# "The score matrix X X^T / sqrt(d) becomes:" (the article's first table after the embeddings)
SCORES = Table(
    caption="Scaled dot products X Xᵀ / √3: the article's, the engine's",
    columns=tuple(APPLE_TOKENS),
    decimals=2,
    rows=(
        Row("An", (0.58, 0, 0.29, 0.58, 0), _score_row(AN)),
        Row("apple", (0, 0.65, 0, 0, 0.37), _score_row(APPLE)),
        Row("and", (0.29, 0, 0.14, 0.29, 0), _score_row(AND)),
        Row("a", (0.58, 0, 0.29, 0.58, 0), _score_row(A)),
        Row("banana", (0, 0.37, 0, 0, 0.37), _score_row(BANANA)),
    ),
)

# "Softmax turns that into weights over [An, apple, and, a, banana]"
APPLE_WEIGHTS = Table(
    caption="apple's attention weights after the softmax: the article's, the engine's",
    columns=tuple(APPLE_TOKENS),
    decimals=2,
    rows=(Row("apple", (0.16, 0.30, 0.16, 0.16, 0.23), _weight_row(0, APPLE)),),
)

# "Crunch the numbers and:" (token, before, after)
BEFORE_AFTER = Table(
    caption="Three tokens before and after one pass of attention: the article's, the engine's",
    columns=tuple(APPLE_AXES),
    decimals=2,
    rows=(
        Row("apple, before", (0.70, 0.80, 0.00), _state(0, APPLE)),
        Row("apple, after", (0.21, 0.42, 0.39), _state(None, APPLE)),
        Row("banana, before", (0.00, 0.80, 0.00), _state(0, BANANA)),
        Row("banana, after", (0.17, 0.39, 0.42), _state(None, BANANA)),
        Row("An, before", (0.00, 0.00, 1.00), _state(0, AN)),
        Row("An, after", (0.10, 0.23, 0.61), _state(None, AN)),
    ),
)

# "the gap dropping from 0.700 to 0.059"
GAP = Table(
    caption="The distance between apple and banana: the article's, the engine's",
    columns=("before", "after"),
    decimals=3,
    rows=(Row("apple to banana", (0.700, 0.059), _distance(APPLE, BANANA)),),
)

# "every token embedding has converged to the same vector, the batch mean [0.14, 0.31, 0.52]"
COLLAPSED = Table(
    caption="Every token after five layers (the article: all converge to [0.14, 0.31, 0.52]), "
    "the engine's",
    columns=tuple(APPLE_AXES),
    decimals=2,
    rows=tuple(Row(t, (0.14, 0.31, 0.52), _state(None, i)) for i, t in enumerate(APPLE_TOKENS)),
)

# "and the attention matrix is a uniform 0.2 in every row"
UNIFORM = Table(
    caption="Attention weights in layer 5 (the article: a uniform 0.2), the engine's",
    columns=tuple(APPLE_TOKENS),
    decimals=2,
    rows=tuple(Row(t, (0.2,) * 5, _weight_row(4, i)) for i, t in enumerate(APPLE_TOKENS)),
)
