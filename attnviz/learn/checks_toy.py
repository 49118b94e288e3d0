"""The checks of the toy steps' tasks: each reads the engine's trace of the learner's table and
their view (``ToyReading``) and says what is true now, with the numbers, and why.

Layers and heads are 1-based in what a check says, as on the page.
"""

from __future__ import annotations

import math

import torch

from attnviz.learn.path import Result
from attnviz.learn.reading import ToyReading, quoted, vec
from attnviz.numbers import (
    readable_against,
    readable_prose,
    readable_share,
    readable_span,
    readable_weight,
)
from attnviz.presets import LARGE_D_DIMS

APPLE_ROW = (0.7, 0.8, 0.0)  # the article's apple, which step 4 keeps
FRUIT_GOAL = 0.5  # step 4: apple's fruit after attention
ONE_HOT = 0.9  # step 3: a weight this large is a nearly one-hot row
UNIFORM = 0.01  # step 5: every weight within this of 1/n
GRAMMAR_QUIET = 0.05  # step 6: apple's grammar after attention, with the values changed
FRUIT_KEPT = 0.5  # step 6: and its fruit kept
FINDS = 0.35  # step 6: An's weight on a
APART = 0.35  # step 9: apple-banana distance after the last layer (half the 0.700 they start at)
DEPTH = 5  # step 9: layers the distance is kept over
DIFFER = 0.01  # step 8: the two "the" outputs at least this far apart
# Step 8: a positional setting as a person says it (the others read as they are named).
POSITIONS_SAID = {"rope": "rotary (RoPE)"}


def _where(r: ToyReading) -> str:
    return f"layer {r.view.layer + 1}, head {r.view.head + 1}"


# -- step 2 ---------------------------------------------------------------------------------------


def apple_to_banana(r: ToyReading) -> Result:
    if (gone := r.missing("apple", "banana")) is not None:
        return gone
    i, j = r.index("apple"), r.index("banana")
    assert i is not None and j is not None
    w, s = r.weights(), r.scores()
    own, other = float(w[i, i]), float(w[i, j])
    s_own, s_other = float(s[i, i]), float(s[i, j])
    if other > own:
        return Result(
            True,
            f"In {_where(r)} apple now gives {readable_share(other)} of its attention to banana "
            f"and {readable_share(own)} to itself. Its score with banana "
            f"({readable_prose(s_other)}) beats its score with itself ({readable_prose(s_own)}), "
            "and the softmax turns the larger score into the larger weight: the dot product "
            "decides who listens to whom.",
        )
    return Result(
        False,
        f"In {_where(r)} apple gives {readable_share(own)} of its attention to itself and "
        f"{readable_share(other)} to banana: banana is {readable_prose(own - other)} behind. The "
        f"weights follow the scores, apple with itself {readable_prose(s_own)} and apple with "
        f"banana {readable_prose(s_other)}; banana needs the larger dot product with apple. Raise "
        "banana's fruit (apple has 0.8 of it), or give banana some tech.",
    )


# -- step 3 ---------------------------------------------------------------------------------------


def unscaled_one_hot(r: ToyReading) -> Result:
    w, s = r.weights(), r.scores()
    q, k = divmod(int(torch.argmax(w)), r.n)
    top, score = float(w[q, k]), float(s[q, k])
    d_head = r.d // r.heads
    who = f'"{r.tokens[q]}" gives {readable_share(top)} of its attention to "{r.tokens[k]}"'
    if r.config.scale:
        return Result(
            False,
            f"Scaling is on: every score is divided by √{d_head} = "
            f"{readable_prose(math.sqrt(d_head))} before the softmax, and the largest weight in "
            f"{_where(r)} is {readable_weight(top)} ({who}, score {readable_prose(score)}). "
            "Untick scale: the same dot products then go into the softmax "
            f"{readable_prose(math.sqrt(d_head))} times larger.",
        )
    if top > ONE_HOT:
        return Result(
            True,
            f"Unscaled, the largest score in {_where(r)} is {readable_prose(score)} (divided by "
            f"√{d_head} it would be {readable_prose(score / math.sqrt(d_head))}), and {who}: the "
            "row is nearly one-hot. The dot product of two vectors of d numbers grows with d, so "
            "at large d the softmax saturates: the other weights, and their gradients, are "
            "almost zero.",
        )
    return Result(
        False,
        f"Scaling is off, but the largest weight in {_where(r)} is only "
        f"{readable_against(top, ONE_HOT, readable_weight)} ({who}): the largest score is "
        f"{readable_prose(score)}, too small to saturate the softmax. With more dimensions, or "
        f"larger values, the dot products grow; the step's table ({LARGE_D_DIMS} dimensions) shows "
        "it.",
    )


# -- step 4 ---------------------------------------------------------------------------------------


def apple_fruit(r: ToyReading) -> Result:
    if (gone := r.missing("apple", "banana")) is not None:
        return gone
    i, j = r.index("apple"), r.index("banana")
    assert i is not None and j is not None
    row = r.inputs()[i]
    if len(row) != 3 or any(abs(float(a) - b) > 1e-9 for a, b in zip(row, APPLE_ROW, strict=False)):
        return Result(
            False,
            f"apple's own row is {vec(row)} now: put it back to {vec(list(APPLE_ROW))}. The "
            "task is to move apple only through what it attends to, by editing banana.",
        )
    fruit = r.axis("fruit", 1)
    after = r.last[i]
    f, w = float(after[fruit]), float(r.weights(r.layers - 1, 0)[i, j])
    carried = float(r.state(r.layers - 1)[j, fruit])
    where = f"after layer {r.layers}" if r.layers > 1 else "after attention"
    if f >= FRUIT_GOAL:
        return Result(
            True,
            f"apple now ends with fruit {readable_prose(f)} {where} (the article's table: 0.42), "
            f"at {vec(after)}. apple gives banana {readable_share(w)} of its attention (0.23 "
            f"before) and banana brings fruit {readable_prose(carried)}: a larger weight on a "
            "fruitier vector pulls the weighted average toward fruit.",
        )
    return Result(
        False,
        f"apple ends at {vec(after)} {where}: fruit {readable_against(f, FRUIT_GOAL)}, "
        f"{readable_prose(FRUIT_GOAL - f)} short of {FRUIT_GOAL}. It gives banana "
        f"{readable_share(w)} of its attention, and banana carries fruit "
        f"{readable_prose(carried)}. Raise banana's fruit: banana then gets more of apple's "
        "attention and brings more fruit with it.",
    )


# -- step 5 ---------------------------------------------------------------------------------------


def first_uniform_layer(r: ToyReading) -> Result:
    even = 1.0 / r.n
    devs = [float((r.layer_weights(layer) - even).abs().max()) for layer in range(r.layers)]
    first = next((layer for layer, dev in enumerate(devs) if dev <= UNIFORM), None)
    shown = r.view.layer
    w = r.layer_weights(shown)
    spread = readable_span(float(w.min()), float(w.max()), readable_weight)
    if first is None:
        best = min(range(r.layers), key=lambda layer: devs[layer])
        return Result(
            False,
            f"No layer is uniform yet: the closest, layer {best + 1}, still has a weight "
            f"{readable_against(devs[best], UNIFORM)} from {readable_prose(even)}. Each layer "
            "averages the tokens again: add layers (the step starts with 5) and the rows flatten.",
        )
    if shown == first:
        a, b = r.index("apple"), r.index("banana")
        gap = ""
        if a is not None and b is not None:
            d = float((r.state(first)[a] - r.state(first)[b]).norm())
            gap = f" The distance between apple and banana going into it is {readable_prose(d)}."
        return Result(
            True,
            f"In layer {first + 1} every weight is within {readable_prose(devs[first])} of "
            f"{readable_prose(even)} ({spread}): each token spreads its attention evenly over all "
            f"{r.n}, and an even spread singles out nothing. Each layer replaced every token by "
            "an average of all of them, so the tokens became alike and their dot products "
            f"equal.{gap}",
        )
    if shown > first:
        return Result(
            False,
            f"Layer {shown + 1} is uniform (its weights are {spread}), but an earlier layer "
            "already is: go back a layer or more.",
        )
    return Result(
        False,
        f"In layer {shown + 1} the weights ({spread}) are still up to "
        f"{readable_against(devs[shown], UNIFORM)} from {readable_prose(even)}: not uniform yet. "
        "Step through the later layers.",
    )


# -- step 6 ---------------------------------------------------------------------------------------


def quiet_values(r: ToyReading) -> Result:
    if (gone := r.missing("apple")) is not None:
        return gone
    i = r.index("apple")
    assert i is not None
    if r.d != 3:
        return Result(
            False,
            f"The table has {r.d} dimensions now; this task is about the step's three, tech, "
            "fruit and grammar. Open the step again to start from its table.",
        )
    fruit, grammar = r.axis("fruit", 1), r.axis("grammar", 2)
    after = r.last[i]
    f, g = float(after[fruit]), float(after[grammar])
    grammar_tokens = [k for k in range(r.n) if float(r.inputs()[k][grammar]) > 0 and k != i]
    to_grammar = float(r.weights(r.layers - 1, 0)[i, grammar_tokens].sum())
    names = quoted([r.tokens[k] for k in grammar_tokens])
    if r.config.projections != "custom":
        return Result(
            False,
            f"Projections are {r.config.projections}: this task is about your own W_V. Set "
            "projections to custom (the step's matrices) and edit W_V.",
        )
    if g < GRAMMAR_QUIET and f >= FRUIT_KEPT:
        return Result(
            True,
            f"apple now ends with grammar {readable_prose(g)} and fruit {readable_prose(f)}, at "
            f"{vec(after)}. It still gives {readable_share(to_grammar)} of its attention to "
            f"{names} (W_Q and W_K set that, not W_V), but their values no longer carry "
            "grammar into it: what a token is looked up by (its key) and what it hands over (its "
            "value) are now separate.",
        )
    if f < FRUIT_KEPT:
        return Result(
            False,
            f"apple ends with fruit {readable_against(f, FRUIT_KEPT)} and grammar "
            f"{readable_prose(g)}: the fruit went too. Keep W_V's fruit entry and remove only "
            "what carries grammar.",
        )
    return Result(
        False,
        f"apple ends at {vec(after)}: grammar {readable_against(g, GRAMMAR_QUIET)}, fruit "
        f"{readable_prose(f)}. {names} get {readable_share(to_grammar)} of apple's attention "
        "together (W_Q and W_K set that), and W_V passes their grammar on. Zero W_V's grammar "
        "row (the last): values then carry no grammar, while who attends to whom stays the "
        "same.",
    )


def _reads_axes(r: ToyReading, m: list[list[float]]) -> str:
    """What a projection reads, in words: the input axes whose rows are not zero."""
    axes = [r.axes[i] for i, row in enumerate(m) if i < len(r.axes) and any(x != 0 for x in row)]
    return f"reads {quoted(axes)}" if axes else "reads nothing"


def determiner_finds_a(r: ToyReading) -> Result:
    if (gone := r.missing("An", "a")) is not None:
        return gone
    i, j = r.index("An"), r.index("a")
    assert i is not None and j is not None
    got, even = float(r.weights()[i, j]), 1.0 / r.n
    s = float(r.scores()[i, j])
    w = r.config.weights
    if r.config.projections != "custom" or w is None:
        return Result(
            False,
            f"Projections are {r.config.projections}: this task is about your own W_Q and W_K. "
            "Set projections to custom (the step's matrices) and edit them.",
        )
    x = r.inputs()
    q = x[i] @ torch.tensor(w.q, dtype=x.dtype)
    k = x[j] @ torch.tensor(w.k, dtype=x.dtype)
    said = (
        f"W_Q {_reads_axes(r, w.q)}, so An's query is {vec(q)}; W_K {_reads_axes(r, w.k)}, so "
        f"a's key is {vec(k)}"
    )
    if got >= FINDS:
        return Result(
            True,
            f"In {_where(r)} An now gives {readable_share(got)} of its attention to a (score "
            f"{readable_prose(s)}): {said}. The query of An and the key of a line up, so a "
            "determiner is easy to find, whatever it carries.",
        )
    if not bool(q.abs().gt(0).any()):
        why = "An's query is zero: it looks for nothing, and its row of weights is even."
    elif not bool(k.abs().gt(0).any()):
        why = "a's key is zero: nothing can find it, however An's query looks."
    else:
        why = (
            "An's query and a's key do not meet strongly enough: their dot product is the score, "
            "and a larger one gives a more weight."
        )
    return Result(
        False,
        f"In {_where(r)} An gives {readable_against(got, FINDS, readable_share)} of its attention "
        f"to a (score {readable_prose(s)}; an even share is {readable_prose(even)}). {said}: "
        f"{why}",
    )


# -- step 7 ---------------------------------------------------------------------------------------


def street_head(r: ToyReading) -> Result:
    if (gone := r.missing("it", "street")) is not None:
        return gone
    i, s = r.index("it"), r.index("street")
    assert i is not None and s is not None
    row = r.weights()[i]
    top = int(torch.argmax(row))
    dh = r.d // r.heads
    seen = quoted(r.axes[r.view.head * dh : (r.view.head + 1) * dh])
    animal = r.index("animal")
    also = f' ("animal" gets {readable_weight(float(row[animal]))})' if animal is not None else ""
    if top == s:
        return Result(
            True,
            f'In {_where(r)} "it" gives its largest weight, {readable_weight(float(row[s]))}, to '
            '"street"'
            f"{also}. This head compares tokens only on {seen}: it asks where, not who. "
            "Another head, on other axes, asks another question of the same sentence.",
        )
    return Result(
        False,
        f'In {_where(r)} "it" attends most to "{r.tokens[top]}" '
        f'({readable_weight(float(row[top]))}); "street" gets {readable_weight(float(row[s]))}. '
        f"This head compares tokens on {seen}. Pick the head that reads the place axis.",
    )


# -- step 8 ---------------------------------------------------------------------------------------


def the_rows_differ(r: ToyReading) -> Result:
    both = r.indices("the")
    if len(both) < 2:
        return Result(
            False,
            f'The table needs two tokens named "the" for this task; it has {len(both)}. Open '
            "the step again to start from its table.",
        )
    i, j = both[:2]
    x = r.inputs()
    if not torch.equal(x[i], x[j]):
        return Result(
            False,
            f'The two "the" rows differ in the table now ({vec(x[i])} and {vec(x[j])}): make '
            "them the same again. The question is whether one word in two places can come out "
            "different.",
        )
    out = r.last
    d = float((out[i] - out[j]).norm())
    pos = r.config.positional
    said = POSITIONS_SAID.get(pos, pos)  # the setting as a person says it
    if pos == "none":
        return Result(
            False,
            f'With no positions the two "the" (tokens {i + 1} and {j + 1}) come out at '
            f"{vec(out[i])} and {vec(out[j])}, {readable_prose(d)} apart: attention sees the "
            "tokens as a set, so the same row gets the same output wherever it stands. Choose a "
            "positional encoding.",
        )
    if d <= DIFFER:
        why = (
            " RoPE rotates only the queries and keys: it changes who attends to whom, and adds "
            "nothing to what a token carries, so here the outputs barely move. Try sinusoidal."
            if pos == "rope"
            else ""
        )
        return Result(
            False,
            f'With {said} positions the two "the" come out only {readable_against(d, DIFFER)} '
            f"apart (at least {DIFFER} is the task).{why}",
        )
    added = " (each got its position's vector added first)" if pos != "rope" else ""
    return Result(
        True,
        f'With {said} positions the two "the", the same row going in, come out {readable_prose(d)} '
        f"apart: {vec(out[i])} at token {i + 1} and {vec(out[j])} at token {j + 1}{added}. Only "
        "a position encoding lets attention tell the places apart.",
    )


# -- steps 9 and 10 -------------------------------------------------------------------------------


def _gap(r: ToyReading, states: torch.Tensor, a: int, b: int) -> list[float]:
    return [float((states[k][a] - states[k][b]).norm()) for k in range(states.shape[0])]


def apart_after_depth(r: ToyReading) -> Result:
    if (gone := r.missing("apple", "banana")) is not None:
        return gone
    a, b = r.index("apple"), r.index("banana")
    assert a is not None and b is not None
    gaps = _gap(r, r.tensors.states.double().cpu(), a, b)
    by_layer = ", ".join(readable_prose(g) for g in gaps)
    cfg, end = r.config, gaps[-1]
    lengths = r.last.norm(dim=-1)
    low, high = float(lengths.min()), float(lengths.max())
    sizes = readable_span(low, high)
    story = f"apple to banana, from the input through layer {r.layers}: {by_layer}."
    if r.layers < DEPTH:
        return Result(False, f"{story} Keep at least {DEPTH} layers: the task is to stay apart "
                      "through depth.")  # fmt: skip
    if cfg.residual and cfg.norm != "none" and end >= APART:
        return Result(
            True,
            f"{story} With the residual and {cfg.norm}-norm they stay {readable_prose(end)} "
            "apart: each layer adds its average to the token instead of replacing it, so what "
            "made apple apple survives, and the norm keeps every layer's input at one scale (the "
            f"last layer's vectors' lengths are {sizes}).",
        )
    if cfg.residual and cfg.norm == "none":
        return Result(
            False,
            f"{story} The residual alone keeps them apart, but every layer adds to every "
            f"vector and nothing rescales them: after layer {r.layers} their lengths are "
            f"{sizes}, and the next layer's softmax sees ever larger scores. Add a norm.",
        )
    if not cfg.residual and cfg.norm != "none":
        return Result(
            False,
            f"{story} A norm alone rescales the vectors but each layer still replaces every "
            "token by an average, so they still merge. Turn on the residual too.",
        )
    if cfg.residual:
        return Result(
            False,
            f"{story} They end {readable_against(end, APART)} apart, under {APART}: try the other "
            "norm placement.",
        )
    return Result(
        False,
        f"{story} Each layer replaces every token by an average of all of them, so they merge. "
        "Turn on the residual (x + attention(x)) and a norm.",
    )


def ffn_on(r: ToyReading) -> Result:
    cfg = r.config
    if not cfg.ffn:
        return Result(
            False,
            f"The block is attention only ({r.layers} layers, residual "
            f"{'on' if cfg.residual else 'off'}, norm {cfg.norm}): tokens mix, but nothing "
            "processes what each one holds. Turn on the feed-forward sublayer.",
        )
    without = r.with_config(ffn=False).states[-1].double().cpu()
    moved = (r.last - without).norm(dim=-1)
    parts = [f"{r.tokens[k]} {readable_prose(float(moved[k]))}" for k in range(r.n)]
    x = r.inputs()
    twins = [(i, j) for i in range(r.n) for j in range(i + 1, r.n) if torch.equal(x[i], x[j])]
    same = ""
    if twins and r.config.positional == "none":
        i, j = twins[0]
        d = float((r.last[i] - r.last[j]).norm())
        same = (
            f' "{r.tokens[i]}" and "{r.tokens[j]}", the same row going in, still come out '
            f"{readable_prose(d)} apart: the feed-forward works on each position alone."
        )
    return Result(
        True,
        f"The feed-forward sublayer is on: after {r.layers} layers it has moved each token "
        f"(its output with the sublayer, minus without): {', '.join(parts)}.{same} Attention "
        "moves information between positions; the feed-forward transforms what each one "
        "holds. A block is one of each.",
    )
