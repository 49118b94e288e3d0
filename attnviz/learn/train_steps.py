"""Step 1 (why not a recurrent network) and steps 11 to 17: the training lab, from the
encoder-decoder to a model trained by the learner, the circuit read from its scores, and the
ablations checked on their runs."""

from __future__ import annotations

from attnviz.learn import checks_train as c
from attnviz.learn.mathml import (
    call,
    frac,
    gap,
    math,
    mi,
    mn,
    mo,
    row,
    sqrt,
    sub,
    subsup,
    sup,
    words,
)
from attnviz.learn.path import Step, Task
from attnviz.training.ablations import PRESETS
from attnviz.training.measures import MEASURE_BATCH
from attnviz.training.tasks import Induction


def _softmax(*inner: str) -> str:
    return row(mi("softmax"), mo("("), *inner, mo(")"))


def _ln(*inner: str) -> str:
    return row(mi("LN"), mo("("), *inner, mo(")"))


_x = mi("x")

RNN = Step(
    id="rnn",
    title="Reading one word at a time",
    lab="train",
    text=(
        "A sentence is a sequence of tokens, and a word's meaning depends on its neighbours: "
        '"bank" next to "river" is not "bank" next to "investment". So each token needs '
        "a vector that knows about the others.",
        "A recurrent network (RNN) reads the tokens in order and carries one hidden vector from "
        "each step to the next. Whatever the first token said must survive every update on the "
        "way to the last, and step 50 cannot start before step 49 has finished. The LSTM and "
        "the GRU add gates that help the vector remember, but they still go one step at a time.",
        "The card below, Why not an RNN?, trains an LSTM, a GRU and a small transformer on "
        "the same task and data, then plots how well each remembers as the distance grows, and "
        "how long a training step takes as the sequence grows.",
        "When the project ran it (seeds 0 to 4, copying strings of 4 to 12 letters), the "
        "transformer still wrote 96 to 98% of the letters right at 12, the LSTM 51 to 64% and the "
        "GRU 43 to 48%. On one CPU thread, though, the LSTM's training step was the cheaper at "
        "every length: its time grew about in proportion to the length, the transformer's about "
        "with its square. Attention's comparisons do not wait for one another, and a GPU makes "
        "them all at once; one CPU thread makes them one after another. Times depend on the "
        "machine and how busy it is, so the page shows them and does not check them.",
    ),
    formula=math(
        sub(mi("h"), mi("t")),
        mo("="),
        call(
            "tanh",
            row(
                sub(mi("W"), mi("h")),
                sub(mi("h"), row(mi("t"), mo("−"), mn("1"))),
                mo("+"),
                sub(mi("W"), mi("x")),
                sub(_x, mi("t")),
                mo("+"),
                mi("b"),
            ),
        ),
    ),
    formula_text="hₜ = tanh(W_h hₜ₋₁ + W_x xₜ + b): each step needs the one before it",
    train={},
    focus=("recurrent-card",),
    only=("recurrent-card",),
    tasks=(
        Task(
            "run-comparison",
            "Run the comparison and let it finish: done when its claims about memory hold on "
            "the comparison in the card.",
            "Press Run comparison, here or in the card Why not an RNN? below. It trains the "
            "three models one after another, in about a minute, then measures what each "
            "remembers.",
            c.recurrent_claims,
            action="rc-start",
        ),
    ),
)

_dec, _enc = "dec", "enc"

ENCODER_DECODER = Step(
    id="encoder-decoder",
    title="Encoder, decoder, cross-attention",
    lab="train",
    text=(
        "The original transformer translated: an encoder reads the whole source, every token "
        "seeing every other, and a decoder writes the target one token at a time.",
        "The decoder attends in two ways. Its self-attention is causal: a mask sets the scores "
        "of later positions to −∞ before the softmax, so a token sees only what was written "
        "before it, as when it generates. Its cross-attention takes its queries from the "
        "decoder and its keys and values from the encoder's output: it looks up the part of the "
        "source it needs.",
        "Train the task Reverse: the encoder reads a string of letters, the decoder writes it "
        "backwards. Once it has learned, a cross-attention head walks the source from its end "
        "to its start: an anti-diagonal in the card Attention as it trains.",
    ),
    formula=math(
        mi("cross"),
        mo("="),
        _softmax(
            frac(row(sub(mi("Q"), mi(_dec)), sup(sub(mi("K"), mi(_enc)), mi("⊤"))), sqrt(mi("d")))
        ),
        sub(mi("V"), mi(_enc)),
        mo(","),
        gap(),
        sub(mi("s"), row(mi("i"), mi("j"))),
        mo("="),
        mo("−"),
        mi("∞"),
        words("when"),
        mi("j"),
        mo(">"),
        mi("i"),
    ),
    formula_text="cross = softmax(Q_dec K_encᵀ / √d) V_enc;  decoder self-attention: "
    "s_ij = −∞ when j > i (causal)",
    train={"task": "reverse"},
    focus=("t-run-card", "t-heads-card"),
    # The Model card too: its steps and learning rate are what the hint's shorter run changes.
    only=("t-arch-card", "t-run-card", "t-heads-card", "t-try-card"),
    tasks=(
        Task(
            "cross-aligned",
            f"Train it: done when a cross-attention head puts at least {c.ALIGNED} of its weight "
            "on one "
            "anti-diagonal.",
            "Press Start training, here or in the card Run below (600 steps, a few seconds), "
            "then choose cross-attention in the card Attention as it trains (its first view), "
            "scrub the checkpoints and choose the head whose pattern is an anti-diagonal.",
            c.cross_aligned,
            action="t-start",
        ),
    ),
)

# Step 12's run, the task Induction as the step starts it: the heads card's probe, and the
# fresh strings the check scores the heads on (its hint says both, as the check does).
_PROBE = c.probe_letters(Induction())
_FRESH = c.fresh_letters(Induction())

INDUCTION = Step(
    id="induction",
    title="Train it and watch: an induction head",
    lab="train",
    text=(
        "Now a decoder alone, the shape of GPT, on a task that takes two heads working "
        "together: a random string of letters, then the same string again. The first copy "
        "cannot be predicted; the second can, by finding where the current letter appeared "
        "before and copying the letter that followed it.",
        "Two layers learn it as a circuit. A head in layer 1 attends to the previous token, so "
        "each position also holds the letter before it. A head in layer 2, an induction head, "
        "then finds the position whose previous letter is the current one, and copies its "
        "letter.",
        "Watch the card Attention as it trains: the loss drops suddenly when the circuit forms. "
        "Then find the two heads.",
    ),
    formula=math(
        sub(mi("w"), row(mi("i"), mo("→"), mi("i"), mo("−"), mn("1"))),
        mo("≈"),
        mn("1"),
        mo(","),
        gap(),
        sub(mi("w"), row(mi("i"), mo("→"), mi("j"), mo("+"), mn("1"))),
        mo("≈"),
        mn("1"),
        words("where"),
        sub(_x, mi("j")),
        mo("="),
        sub(_x, mi("i")),
        mo(","),
        mi("j"),
        mo("<"),
        mi("i"),
    ),
    formula_text="previous-token head: w(i → i−1) ≈ 1;  induction head: w(i → j+1) ≈ 1 where "
    "x_j = x_i, j < i",
    train={"task": "induction"},
    focus=("t-run-card", "t-heads-card"),
    only=("t-arch-card", "t-run-card", "t-heads-card"),
    tasks=(
        Task(
            "previous-token-head",
            "Find a previous-token head (a mean weight of at least "
            f"{c.PREVIOUS} on the token before) and show it in the card Attention as it trains.",
            "Press Start training, here or in the card Run below, if no run is open; then look "
            "in layer 1 for a stripe just left of the diagonal.",
            c.previous_token_head,
            finding=True,
            action="t-start",
        ),
        Task(
            "induction-head",
            f"Find an induction head (an induction score of at least {c.INDUCTIVE}) and show it "
            "in the card Attention as it trains.",
            f"Look in layer 2: on the repeat of the card's probe ({_PROBE} letters, then the "
            f"same again), a stripe {_PROBE - 1} tokens left of the diagonal. The check scores "
            f"each head on {MEASURE_BATCH} fresh strings of {_FRESH} letters, repeated, not on "
            "the probe.",
            c.induction_head,
            finding=True,
        ),
    ),
)

_i, _j = mi("i"), mi("j")

INDUCTION_CIRCUIT = Step(
    id="induction-circuit",
    title="Why the induction head looks there",
    lab="train",
    text=(
        "Step 12 found the two heads by where they look. Now ask why the induction head looks "
        "there. Its score for a key is q · k / √d, and the query and the key are both read from "
        "the residual stream, a sum of parts: the token embedding, what each head of layer 1 "
        "wrote, the norms' biases. With each norm's scale frozen at its value on this text, "
        "every part has its own query and key, and the score splits exactly into a table: the "
        "query side's parts by the key side's.",
        "From a letter of the repeat, say d, the induction head attends to the letter after "
        "d's first occurrence. The largest part of that key's side of the score is what the "
        'previous-token head wrote there: "the letter before me was d". The query side '
        "carries the current letter, d itself (through its embedding, or a layer 1 head that "
        "looks at the letter itself). The two match, and the score is high: that is the "
        "circuit.",
        "Open Why this score on the induction head at such a cell: the panel under the heatmap "
        "lists the largest pairs of parts, and the check names, with its number, the key "
        "side's largest part on your own run.",
    ),
    formula=math(
        sub(mi("s"), row(_i, _j)),
        mo("="),
        frac(row(sub(mi("q"), _i), mo("·"), sub(mi("k"), _j)), sqrt(mi("d"))),
        mo("="),
        sub(mo("∑"), mi("a")),
        sub(mo("∑"), mi("b")),
        frac(
            row(subsup(mi("q"), _i, mi("a")), mo("·"), subsup(mi("k"), _j, mi("b"))), sqrt(mi("d"))
        ),  # fmt: skip
        mo(","),
        gap(),
        sub(_x, mi("t")),
        mo("="),
        sub(mo("∑"), mi("a")),
        subsup(_x, mi("t"), mi("a")),
    ),
    formula_text="s_ij = q_i · k_j / √d = Σ_a Σ_b q_iᵃ · k_jᵇ / √d, where the stream "
    "x_t = Σ_a x_tᵃ is a sum of parts a (the embedding, each earlier head, the biases), each "
    "with its own query and key",
    train={"task": "induction"},
    continues="induction",
    focus=("t-run-card", "t-heads-card"),
    only=("t-run-card", "t-heads-card"),
    tasks=(
        Task(
            "key-side",
            "Open Why this score on an induction head, from a letter of the repeat to the key it "
            "attends to: done when the check has read that score's parts on the run in view.",
            "Choose step 12's induction head in the card Attention as it trains, then click (or "
            "press Enter on) a cell of its stripe in the lower half, 11 tokens left of the "
            "diagonal.",
            c.induction_circuit,
        ),
    ),
)


def _ablation(step_id: str, preset: str, title: str, text: tuple[str, ...], formula: str,
              formula_text: str, focus: tuple[str, ...]) -> Step:  # fmt: skip
    p = PRESETS[preset]
    return Step(
        id=step_id,
        title=title,
        lab="train",
        text=text,
        formula=formula,
        formula_text=formula_text,
        train={"task": p.task.name, "preset": preset},
        focus=focus,
        # The run, the cards the step reads, the loss the variants are compared on, and the
        # trained models with the claims the task is checked on.
        only=(*focus, "t-loss-card", "t-models-card"),
        tasks=(
            Task(
                "claims-hold",
                f"Train the preset \u201c{p.title}\u201d and let every variant finish: done when "
                "its claims hold on the run in view.",
                f"Press Start training, here or in the card Run below, with the preset chosen: "
                f"{len(p.variants)} variants of {p.opt.steps} steps each. The claims are "
                "measured at the end.",
                c.claims_hold(preset, p.title),
                action="t-start",
            ),
        ),
    )


ABLATE_NORM = _ablation(
    "ablate-norm",
    "norm-at-depth",
    "Ablation: where the norm goes",
    (
        "The article ends on experiments it did not run: change one piece of the model, train "
        "both versions alike, compare. attnviz's ablation presets run them on the induction "
        "task, and "
        "state what happens as claims: a measure of the trained models and a bound, each of "
        "which held on five seeds when the preset was made.",
        "Post-norm, the original transformer's, normalises after the residual addition; "
        "pre-norm normalises before each sublayer. Here both stacks are 8 layers deep, trained "
        "with a large learning rate and no warm-up.",
        "Expect pre-norm to train and post-norm to stay near chance, its gradient fading on "
        "the way down the stack. With a smaller step post-norm trains too: what pre-norm buys "
        "is tolerance of a large one.",
    ),
    math(
        words("post-norm:"),
        _x,
        mo("←"),
        _ln(_x, mo("+"), call("F", _x)),
        mo(","),
        gap(),
        words("pre-norm:"),
        _x,
        mo("←"),
        _x,
        mo("+"),
        call("F", _ln(_x)),
    ),
    "post-norm: x ← LN(x + F(x)),  pre-norm: x ← x + F(LN(x))",
    ("t-run-card", "t-grads-card"),
)

ABLATE_RESIDUAL = _ablation(
    "ablate-residual",
    "residual-at-depth",
    "Ablation: no residual",
    (
        "Take the residual away from the same 8-layer pre-norm stack. Each layer then sees only "
        "what the layer below made of its input, and the gradient has no short path down.",
        "Expect the model without the residual to learn nothing: its loss stays at chance, "
        "3.26 nats, a uniform guess over 26 letters, while the model with it learns.",
    ),
    math(
        words("with:"),
        _x,
        mo("←"),
        _x,
        mo("+"),
        call("F", _x),
        mo(","),
        gap(),
        words("without:"),
        _x,
        mo("←"),
        call("F", _x),
    ),
    "with the residual: x ← x + F(x),  without: x ← F(x)",
    ("t-run-card", "t-grads-card"),
)

ABLATE_SCALE = _ablation(
    "ablate-scale",
    "scale-large-heads",
    "Ablation: no √d",
    (
        "Step 3 again, trained: one head of 64 dimensions, with and without the 1/√d scaling. "
        "Unscaled, a query-key product spreads about 8 times wider, and the softmax is nearly "
        "one-hot before training starts.",
        "Expect the unscaled model's largest weight per query near 0.8 at step 0 (about 0.2 "
        "scaled) and its loss to stay near chance, while the scaled model learns.",
    ),
    math(
        words("scaled:"),
        _softmax(frac(row(mi("q"), mo("·"), mi("k")), sqrt(sub(mi("d"), mi("k"))))),
        mo(","),
        gap(),
        words("unscaled:"),
        _softmax(mi("q"), mo("·"), mi("k")),
        mo(","),
        gap(),
        call("Var", row(mi("q"), mo("·"), mi("k"))),
        mo("="),
        sub(mi("d"), mi("k")),
    ),
    "scaled: softmax(q · k / √d_k),  unscaled: softmax(q · k),  Var(q · k) = d_k",
    ("t-run-card", "t-heads-card"),
)

_m, _n = mi("m"), mi("n")

ABLATE_POSITIONS = _ablation(
    "ablate-positions",
    "positions",
    "Ablation: position encodings",
    (
        "The circuit of step 12 needs order: which letter came before which. Train it with "
        "four position encodings: RoPE, learned, sinusoidal and none.",
        "Expect only RoPE, whose rotation makes a query-key product depend on the offset "
        "between the two positions, to form the previous-token and induction heads. Learned "
        "and sinusoidal positions get part of the way by another route, and do much worse on "
        "long repeats than on short ones; with none the model cannot order the letters.",
        "That is the whole path: from a weighted average to a model you trained yourself. Open "
        "a trained model in sentence mode, or go back to the toy lab and explore freely.",
    ),
    math(
        row(sub(mi("R"), _m), mi("q")),
        mo("·"),
        row(sub(mi("R"), _n), mi("k")),
        mo("="),
        mi("q"),
        mo("·"),
        row(sub(mi("R"), row(_n, mo("−"), _m)), mi("k")),
    ),
    "RoPE: (R_m q) · (R_n k) = q · (R_(n−m) k): the product depends on the offset n − m",
    ("t-run-card", "t-heads-card"),
)

TRAIN_STEPS = (ENCODER_DECODER, INDUCTION, INDUCTION_CIRCUIT, ABLATE_NORM, ABLATE_RESIDUAL,
               ABLATE_SCALE, ABLATE_POSITIONS)  # fmt: skip
