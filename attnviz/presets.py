"""Named toy tables, each with a suggested configuration and what it teaches.

The first one is the article's "an apple and a banana" table; the page opens on it.
"""

from __future__ import annotations

import math
from functools import lru_cache

from attnviz.numbers import readable, readable_span, readable_weight
from attnviz.schemas.common import CustomWeights, ToyConfig
from attnviz.schemas.presets import Preset

# The articles attnviz grew out of (the project's seeds), by their titles: the original post (its
# text states no title; "Deriving the Transformer from Scratch", which retells it, names it so) and
# Alex Wang's rewrite of it.
ARTICLE = '"You could have invented transformers from memory"'
REWRITE = 'Alex Wang\'s rewrite of it, "You Could Have Invented Transformers from Memory"'
# The original's sentence for heads; also one of sentence mode's examples.
SHOWCASE = "The animal didn't cross the street because it was too tired"

APPLE_TOKENS = ["An", "apple", "and", "a", "banana"]
APPLE_AXES = ["tech", "fruit", "grammar"]
APPLE_X = [
    [0.0, 0.0, 1.0],
    [0.7, 0.8, 0.0],
    [0.0, 0.0, 0.5],
    [0.0, 0.0, 1.0],
    [0.0, 0.8, 0.0],
]


# The collapse preset's depth; the large-d preset's tokens and dimensions (step 3 reads its √d).
COLLAPSE_LAYERS = 5
LARGE_D_TOKENS, LARGE_D_DIMS = 6, 64


def _gaussians(seed: int, n: int) -> list[float]:
    """n standard normal numbers from a fixed linear congruential generator and Box-Muller.

    Pure Python, so the large-d preset is the same table on every machine and torch version.
    """
    state, out = seed, list[float]()
    while len(out) < n:
        state = (1103515245 * state + 12345) % 2**31
        u1 = max(state / 2**31, 1e-12)
        state = (1103515245 * state + 12345) % 2**31
        u2 = state / 2**31
        out.append(math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2))
    return out


def _raw_self_attention(
    x: list[list[float]], layers: int = 1
) -> tuple[list[list[list[float]]], list[list[list[float]]]]:
    """The states (the input first, then after each layer) and each layer's weights of raw
    self-attention, softmax(X Xᵀ / √d) X layer after layer, as the toy engine computes it with
    W_Q = W_K = W_V = I: in pure Python, so that a preset's words are computed from its own
    table rather than written by hand."""
    d = len(x[0])
    states, weights = [x], list[list[list[float]]]()
    for _ in range(layers):
        rows, w = states[-1], []
        for q in rows:
            scores = [sum(a * b for a, b in zip(q, k, strict=True)) / math.sqrt(d) for k in rows]
            top = max(scores)
            e = [math.exp(s - top) for s in scores]
            w.append([v / sum(e) for v in e])
        weights.append(w)
        states.append(
            [[sum(wi * r[j] for wi, r in zip(wr, rows, strict=True)) for j in range(d)] for wr in w]
        )
    return states, weights


def _apple_banana_distances() -> tuple[float, float]:
    """apple's and banana's distance before and after one pass of raw self-attention over the
    worked example (softmax(X Xᵀ / √3) X), computed here rather than written by hand."""
    states, _ = _raw_self_attention(APPLE_X)
    apple, banana = APPLE_TOKENS.index("apple"), APPLE_TOKENS.index("banana")
    return math.dist(APPLE_X[apple], APPLE_X[banana]), math.dist(
        states[1][apple], states[1][banana]
    )


def _collapse_words(layers: int) -> str:
    """What ``layers`` passes of raw self-attention do to the worked example, in words, computed:
    the vector every token ends as (the last layer's mean over the tokens, each token reading the
    same) and its weights. That vector is a blend of the five, not their plain mean."""
    states, weights = _raw_self_attention(APPLE_X, layers)
    last = states[-1]
    mean = [sum(r[j] for r in last) / len(last) for j in range(len(APPLE_AXES))]
    flat = [w for r in weights[-1] for w in r]
    return (
        f"every token ends as one vector, [{', '.join(readable(v) for v in mean)}], and the "
        f"attention weights are {readable_span(min(flat), max(flat), readable_weight)}"
    )


def _large_d_table(
    n: int = LARGE_D_TOKENS, d: int = LARGE_D_DIMS, spread: float = 0.4
) -> list[list[float]]:
    """n tokens that share a common direction plus a little of their own, in d dimensions."""
    common = _gaussians(1, d)
    return [
        [round(c + spread * e, 2) for c, e in zip(common, _gaussians(100 + t, d), strict=True)]
        for t in range(n)
    ]


def _large_d_words(table: list[list[float]]) -> str:
    """What the large-d preset holds, its numbers computed from its own table: the span of its
    dot products and the √d it divides them by; what the softmax makes of them is asked, not
    said (step 3's task is to find it)."""
    d = len(table[0])
    dots = [sum(a * b for a, b in zip(p, q, strict=True)) for p in table for q in table]
    return (
        f"A table of {len(table)} related tokens in {d} dimensions: their dot products run "
        f"{readable_span(min(dots), max(dots))}. With the scaling on, each score is divided by "
        f"√{d} = {readable(math.sqrt(d))}. With the scaling off, what does the softmax "
        "make of the scores?"
    )


def _qkv_weights() -> CustomWeights:
    """Queries and keys read only the fruit axis (x2); values carry the whole vector."""
    fruit_only = [[0.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]
    eye = [[1.0 if i == j else 0.0 for j in range(3)] for i in range(3)]
    return CustomWeights(q=fruit_only, k=fruit_only, v=eye)


def bank_sentence(context: list[float]) -> list[list[float]]:
    """'I <verb> <prep> the <context> bank' on the axes water, money, place, grammar: the same
    'bank' row, halfway between water and money, after a context word that decides."""
    return [
        [0.0, 0.0, 0.0, 1.0],  # I
        [0.0, 0.0, 0.5, 0.3],  # sat / went
        [0.0, 0.0, 0.3, 1.0],  # on / to
        [0.0, 0.0, 0.0, 1.0],  # the
        context,  # river / investment
        [1.0, 1.0, 1.0, 0.0],  # bank
    ]


@lru_cache
def presets() -> list[Preset]:
    bank_axes = ["water", "money", "place", "grammar"]
    cat_axes = ["animal", "object", "action", "grammar"]
    cat = {
        "the": [0.0, 0.0, 0.0, 1.0],
        "cat": [1.0, 0.2, 0.0, 0.0],
        "sat": [0.3, 0.0, 1.0, 0.0],
        "on": [0.0, 0.3, 0.2, 0.8],
        "mat": [0.0, 1.0, 0.0, 0.0],
    }
    shuffled = ["sat", "the", "mat", "on", "cat", "the"]
    before, after = _apple_banana_distances()
    large_d = _large_d_table()
    return [
        Preset(
            id="apple-banana",
            name="An apple and a banana",
            about="The article's worked example: raw self-attention (W_Q = W_K = W_V = I) pulls "
            f"apple toward fruit and toward banana; their distance drops from {readable(before)} "
            f"to {readable(after)}.",
            source=f"The worked example of {ARTICLE}: its five tokens on the axes tech, fruit, "
            "grammar.",
            tokens=APPLE_TOKENS,
            axes=APPLE_AXES,
            embeddings=APPLE_X,
            config=ToyConfig(),
        ),
        Preset(
            id="collapse",
            name="Collapse under iteration",
            about=f"Raw self-attention, layer after layer: after {COLLAPSE_LAYERS} layers "
            f"{_collapse_words(COLLAPSE_LAYERS)}. What could keep the tokens apart?",
            source=f'The worked example of {ARTICLE}, iterated as it iterates it ("It collapses").',
            tokens=APPLE_TOKENS,
            axes=APPLE_AXES,
            embeddings=APPLE_X,
            config=ToyConfig(layers=COLLAPSE_LAYERS),
        ),
        Preset(
            id="query-key-value",
            name="Query, key, value",
            about="Custom projections: queries and keys read only the fruit axis, values carry "
            "everything. Now apple looks specifically for fruit and ignores the determiners' "
            "grammar when choosing whom to attend to.",
            source=f"The query, key, value section of {ARTICLE} (apple querying for fruit); "
            "the matrices are attnviz's own.",
            tokens=APPLE_TOKENS,
            axes=APPLE_AXES,
            embeddings=APPLE_X,
            config=ToyConfig(projections="custom", weights=_qkv_weights()),
        ),
        Preset(
            id="two-heads",
            name="Two heads, two questions",
            about="Head 1 sees the animate and state axes, head 2 the place and grammar axes. "
            "Which does 'it' attend to in each head, 'animal' or 'street'? Switch the head "
            "and read its row.",
            source=f'The sentence from the section on heads ("One head is one kind of question") '
            f"of {ARTICLE}; the table is attnviz's own.",
            tokens=SHOWCASE.split(),
            axes=["animate", "state", "place", "grammar"],
            embeddings=[
                [0.0, 0.0, 0.0, 1.0],
                [2.0, 0.6, 0.0, 0.0],
                [0.0, 0.0, 0.0, 1.0],
                [0.4, 0.0, 0.8, 0.0],
                [0.0, 0.0, 0.0, 1.0],
                [0.0, 0.0, 2.0, 0.0],
                [0.0, 0.0, 0.0, 1.0],
                [1.6, 0.6, 1.6, 0.0],
                [0.0, 0.4, 0.0, 1.0],
                [0.0, 0.8, 0.0, 0.6],
                [0.6, 2.0, 0.0, 0.0],
            ],
            config=ToyConfig(heads=2),
        ),
        Preset(
            id="river-bank",
            name="Bank by the river",
            about="'bank' starts halfway between water and money. Next to 'river' attention "
            "moves it toward water; load 'Bank for money' to see the same row move the other way.",
            source=f'"bank" next to "river" or "investment", from {ARTICLE} (and {REWRITE}); '
            "the sentence and table are attnviz's own.",
            tokens=["I", "sat", "on", "the", "river", "bank"],
            axes=bank_axes,
            embeddings=bank_sentence(context=[2.0, 0.0, 1.0, 0.0]),
            config=ToyConfig(),
        ),
        Preset(
            id="investment-bank",
            name="Bank for money",
            about="The same 'bank' row as in 'Bank by the river', next to 'investment' this time: "
            "attention pulls it toward money. Context, not the word, decides.",
            source=f'"bank" next to "river" or "investment", from {ARTICLE} (and {REWRITE}); '
            "the sentence and table are attnviz's own.",
            tokens=["I", "went", "to", "the", "investment", "bank"],
            axes=bank_axes,
            embeddings=bank_sentence(context=[0.0, 2.0, 0.0, 0.0]),
            config=ToyConfig(),
        ),
        Preset(
            id="shuffled",
            name="Word order is invisible",
            about="'the cat sat on the mat' scrambled. Without positions attention is permutation "
            "equivariant: each word's output is the same in any order, and the two 'the' rows "
            "come out identical. What would have to change for order to matter?",
            source=f'"The cat sat on the mat" and "mat the on sat cat the", from {ARTICLE}; '
            "the table is attnviz's own.",
            tokens=shuffled,
            axes=cat_axes,
            embeddings=[cat[t] for t in shuffled],
            config=ToyConfig(),
        ),
        Preset(
            id="large-d",
            name="Why divide by √d",
            about=_large_d_words(large_d),
            source=f"The softmax and sqrt(d) section of {ARTICLE}; the table is attnviz's own.",
            tokens=[f"t{t + 1}" for t in range(len(large_d))],
            axes=[f"x{i + 1}" for i in range(len(large_d[0]))],
            embeddings=large_d,
            config=ToyConfig(scale=False),
        ),
        Preset(
            id="causal",
            name="Causal mask",
            about="A decoder may not look ahead: keys after the query are hidden before the "
            "softmax. The first token can only attend to itself, and editing a later token never "
            "changes an earlier token's output.",
            source=f"The causal mask from the encoder-decoder paragraph of {ARTICLE}; the sentence "
            "and table are attnviz's own.",
            tokens=["I", "like", "green", "apples"],
            axes=["person", "action", "colour", "fruit"],
            embeddings=[
                [1.0, 0.0, 0.0, 0.0],
                [0.2, 1.0, 0.0, 0.0],
                [0.0, 0.0, 1.0, 0.3],
                [0.0, 0.0, 0.4, 1.0],
            ],
            config=ToyConfig(mask="causal"),
        ),
    ]
