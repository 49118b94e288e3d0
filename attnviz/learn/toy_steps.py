"""Steps 2 to 10: the toy lab, from dot products to the whole block."""

from __future__ import annotations

from attnviz.learn import article
from attnviz.learn import checks_toy as c
from attnviz.learn.mathml import (
    T,
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
    sum_over,
    sup,
)
from attnviz.learn.path import Step, Task, ToyStart
from attnviz.numbers import readable
from attnviz.presets import LARGE_D_DIMS, LARGE_D_TOKENS

X, d = mi("X"), mi("d")
SQRT_D = sqrt(d)
_ROOT = readable(LARGE_D_DIMS**0.5)  # step 3's √d, of its preset's dimensions


def _softmax(*inner: str) -> str:
    return row(mi("softmax"), mo("("), *inner, mo(")"))


def _w(name: str) -> str:
    return sub(mi("W"), mi(name))


DOT_PRODUCTS = Step(
    id="dot-products",
    title="Everyone looks at everyone",
    lab="toy",
    text=(
        "Instead of passing a message down a line of tokens, let each token read all the "
        "others directly, in one go. Its new vector is a weighted average of all the token "
        "vectors, its own included, with more weight on the tokens that matter to it.",
        "Which tokens matter? The simplest measure is the dot product: two vectors pointing the "
        "same way give a large number, unrelated ones give zero. Every pair at once is one "
        "matrix product, X Xᵀ, one row per token: the score heatmap. A softmax turns each row "
        "into weights that are positive and add up to 1, and the weights average the rows of X.",
        "The table is the article's: five tokens on three axes named tech, fruit and grammar. "
        "apple and banana score only with each other and themselves, An, and, a only with each "
        "other: by similarity alone the sentence splits into nouns and function words. (The "
        "scores are divided by √3; the next step says why.)",
    ),
    formula=math(
        mi("S"),
        mo("="),
        frac(row(X, T(X)), SQRT_D),
        mo(","),
        gap(),
        mi("out"),
        mo("="),
        _softmax(mi("S")),
        X,
    ),
    formula_text="S = X Xᵀ / √d,  out = softmax(S) X  (the softmax along each row of S)",
    toy=ToyStart("apple-banana"),
    focus=("attention-card", "embeddings"),
    tasks=(
        Task(
            "apple-to-banana",
            "Make apple attend more to banana than to itself.",
            "apple's score with itself is 0.7 × 0.7 + 0.8 × 0.8 = 1.13 (before the √3); with "
            "banana it is 0.8 × banana's fruit. Raise banana's fruit above 1.42 (1.13 / 0.8), "
            "or give banana some tech.",
            c.apple_to_banana,
            reads=("table", "settings"),
        ),
    ),
    article=(article.SCORES,),
)

SCALING = Step(
    id="scaling",
    title="Why divide by √d",
    lab="toy",
    text=(
        "A dot product of two vectors of d numbers is a sum of d products. With random numbers "
        "it grows with d, about √d times the size of one product. Give the softmax scores that "
        "differ by tens and it puts nearly all the weight on the largest: a one-hot row.",
        "A one-hot row is bad for learning: the other weights are almost exactly zero, and so "
        "are their gradients, so the model learns nothing about whether another token would "
        "have served better. Dividing every score by √d undoes the growth: for random numbers "
        "of size about 1, the scaled scores stay about 1 in size whatever d is.",
        f"Here are {LARGE_D_TOKENS} related tokens in {LARGE_D_DIMS} dimensions, with the "
        "scaling on. Their vectors are not random: they share directions, so even scaled their "
        "scores are all large (the scores heatmap shows them). But they are close to one "
        "another, and the softmax reads only how far apart a row's scores are: each row of "
        f"weights is spread over several tokens. With the scaling off the same gaps are {_ROOT} "
        "times as large: what does the softmax make of them?",
    ),
    formula=math(
        mi("x"),
        mo("·"),
        mi("y"),
        mo("="),
        sum_over(row(mi("k"), mo("="), mn("1")), d),
        sub(mi("x"), mi("k")),
        sub(mi("y"), mi("k")),
        mo(","),
        gap(),
        mi("weights"),
        mo("="),
        _softmax(frac(row(X, T(X)), SQRT_D)),
    ),
    formula_text="x · y = Σₖ₌₁ᵈ xₖ yₖ (it grows with d),  weights = softmax(X Xᵀ / √d)",
    toy=ToyStart("large-d", {"scale": True}),
    focus=("attention-card", "config"),
    tasks=(
        Task(
            "unscaled-one-hot",
            f"Turn the scaling off and make one weight exceed {c.ONE_HOT}.",
            f"Untick scale in the Model card: the scores become √{LARGE_D_DIMS} = {_ROOT} times "
            "larger.",
            c.unscaled_one_hot,
            reads=("settings", "table"),
        ),
    ),
)

WORKED_EXAMPLE = Step(
    id="worked-example",
    title="An apple and a banana, by hand",
    lab="toy",
    text=(
        "Follow apple through one pass. Its scores are [0, 0.65, 0, 0, 0.37]; the softmax makes "
        "them the weights [0.16, 0.30, 0.16, 0.16, 0.23]: most on itself, then banana, and an "
        "even floor on the three grammar tokens, whose score with apple is zero.",
        "apple's new vector is those weights times the five rows: 0.16 An + 0.30 apple + "
        "0.16 and + 0.16 a + 0.23 banana. It keeps fruit ahead of tech and picks up grammar from "
        "the determiners: attention only moves around what the sentence already holds.",
        "apple and banana end much closer than they started (the distance card follows the "
        "pair). One pass nudges apple toward fruit; it does not settle it.",
    ),
    formula=math(
        sub(mi("x"), mi("apple")),
        mo("←"),
        sub(mo("∑"), mi("j")),
        sub(mi("w"), row(mi("apple"), mo("→"), mi("j"))),
        sub(mi("x"), mi("j")),
        mo(","),
        gap(),
        sub(mi("w"), row(mi("apple"), mo("→"), mo("·"))),
        mo("="),
        _softmax(frac(row(sub(mi("x"), mi("apple")), T(X)), sqrt(mn("3")))),
    ),
    formula_text="x_apple ← Σⱼ w(apple→j) xⱼ,  w(apple→·) = softmax(x_apple Xᵀ / √3)",
    toy=ToyStart("apple-banana"),
    focus=("before-after-card", "vectors-card", "distances-card"),
    tasks=(
        Task(
            "apple-fruit",
            f"Edit only banana's row so that apple ends with at least {c.FRUIT_GOAL} fruit after "
            "attention.",
            "apple's new vector is a weighted average. Raise banana's fruit: banana then gets "
            "more of apple's weight and brings more fruit. apple's own row stays [0.7, 0.8, 0].",
            c.apple_fruit,
            reads=("table",),
        ),
    ),
    article=(article.APPLE_WEIGHTS, article.BEFORE_AFTER, article.GAP),
)

_l = mi("ℓ")
_Xl = sup(X, row(mo("("), _l, mo(")")))

COLLAPSE = Step(
    id="collapse",
    title="Too much averaging",
    lab="toy",
    text=(
        "One pass of attention moved apple and banana closer. Feed the output back in as the "
        "next layer's input and repeat: every pass averages again.",
        "Averages of averages become alike. After a few layers every token is the same vector, "
        "a blend of all five, and identical vectors have identical dot products, so every "
        "weight is 1/5 = 0.2: each token spreads its attention evenly, which singles out "
        "nothing. This is representation collapse.",
        "Averaging with nothing to push back erases every difference. The next steps add what "
        "pushes back.",
    ),
    formula=math(
        sup(X, row(mo("("), _l, mo("+"), mn("1"), mo(")"))),
        mo("="),
        _softmax(frac(row(_Xl, sup(X, row(mo("("), _l, mo(")"), mi("⊤")))), SQRT_D)),
        _Xl,
    ),
    formula_text="X⁽ˡ⁺¹⁾ = softmax(X⁽ˡ⁾ X⁽ˡ⁾ᵀ / √d) X⁽ˡ⁾, layer after layer",
    toy=ToyStart("collapse"),
    focus=("attention-card", "distances-card"),
    tasks=(
        Task(
            "first-uniform-layer",
            f"Find the first layer in which every weight is within {c.UNIFORM} of 0.2, and "
            "show it in the attention card.",
            "Step the attention card's layer through the five layers. It comes sooner than you "
            "might expect.",
            c.first_uniform_layer,
            reads=("layer", "table", "settings"),
        ),
    ),
    article=(article.COLLAPSED, article.UNIFORM),
)

QKV = Step(
    id="qkv",
    title="Queries, keys and values",
    lab="toy",
    text=(
        "In raw self-attention a token's vector does two jobs: it is what the others compare "
        "against to set the weights, and it is the content that gets averaged in. The two "
        "should often differ: An signals that a noun follows, so it should be easy to find, "
        "yet what it carries is only grammar.",
        "So each job gets its own linear map: a query, X W_Q (what I look for), a key, X W_K "
        "(what I can be found by), a value, X W_V (what I hand over when picked). Raw "
        "self-attention is the case where all three are the identity.",
        "Here W_Q and W_K read only fruit (times 2) and W_V passes everything. apple now looks "
        "only for fruit; the grammar tokens get an even, small share of its attention, but they "
        "still hand over their grammar. The lab also shows W_O, the output matrix that joins "
        "several heads' outputs: with one head it is left as the identity, and step 7 uses it.",
    ),
    formula=math(
        mi("Q"),
        mo("="),
        X,
        _w("Q"),
        mo(","),
        mi("K"),
        mo("="),
        X,
        _w("K"),
        mo(","),
        mi("V"),
        mo("="),
        X,
        _w("V"),
        mo(","),
        gap(),
        call("Attention", mi("Q"), mi("K"), mi("V")),
        mo("="),
        _softmax(frac(row(mi("Q"), T(mi("K"))), SQRT_D)),
        mi("V"),
    ),
    formula_text="Q = X W_Q, K = X W_K, V = X W_V,  Attention(Q, K, V) = softmax(Q Kᵀ / √d) V",
    toy=ToyStart("query-key-value"),
    focus=("custom-weights", "attention-card", "before-after-card"),
    tasks=(
        Task(
            "quiet-values",
            f"Change W_V so that apple ends with less than {c.GRAMMAR_QUIET} grammar and still at "
            f"least {c.FRUIT_KEPT} "
            "fruit.",
            "A row of W_V is an input axis. Zero its grammar row (the last): values then carry "
            "no grammar, and the weights stay as they are.",
            c.quiet_values,
            reads=("W_V",),
        ),
        Task(
            "determiner-finds-a",
            f"Change W_Q and W_K so that An gives at least {c.FINDS} of its attention to a.",
            "An has no fruit, so its query is zero and its row is even. Put a 2 in the "
            "bottom-right (grammar) cell of both W_Q and W_K.",
            c.determiner_finds_a,
            reads=("W_Q", "W_K"),
        ),
    ),
)

_h = mi("h")

HEADS = Step(
    id="heads",
    title="Several heads, several questions",
    lab="toy",
    text=(
        "One set of queries and keys asks the sentence one question. In \"The animal didn't "
        'cross the street because it was too tired", "it" can ask who (the animal) and '
        "where (the street), and a single head has to blend the two.",
        "Multi-head attention runs several attentions side by side, each on its own slice of "
        "the dimensions (d / h each), and joins their outputs with W_O. Each head can "
        "specialise in one relation.",
        "The axes here are animate, state, place and grammar. With two heads of two dimensions "
        "each, head 1 compares tokens on animate and state, head 2 on place and grammar.",
    ),
    formula=math(
        sub(mi("head"), mi("i")),
        mo("="),
        _softmax(
            frac(
                row(sub(mi("Q"), mi("i")), subsup(mi("K"), mi("i"), mi("⊤"))),
                sqrt(row(d, mo("/"), _h)),
            )
        ),
        sub(mi("V"), mi("i")),
        mo(","),
        gap(),
        mi("out"),
        mo("="),
        row(mo("["), sub(mi("head"), mn("1")), mo("⋯"), sub(mi("head"), _h), mo("]")),
        _w("O"),
    ),
    formula_text="headᵢ = softmax(Qᵢ Kᵢᵀ / √(d/h)) Vᵢ,  out = [head₁ ⋯ head_h] W_O",
    toy=ToyStart("two-heads"),
    focus=("attention-card",),
    tasks=(
        Task(
            "street-head",
            'Find the head in which "it" attends most to "street", and show it in the attention '
            "card.",
            'Switch the attention card\'s head and read the row of "it".',
            c.street_head,
            reads=("head", "layer", "table"),
        ),
    ),
)

_pos = mi("pos")


def _pe(fn: str, index: str) -> str:
    angle = frac(_pos, sup(mn("10000"), row(mn("2"), mi("i"), mo("/"), d)))
    return row(sub(mi("PE"), row(_pos, mo(","), index)), mo("="), call(fn, angle))


POSITIONS = Step(
    id="positions",
    title="Word order",
    lab="toy",
    text=(
        "Shuffle the tokens and attention shuffles its output the same way: it looks at what a "
        'token is, never at where it stands. "the cat sat on the mat" and "mat the on sat '
        'cat the" give every word the same output.',
        'Here the two "the" rows are the same vector, and they come out the same wherever '
        "they stand. Language needs order, so it is put in by hand: a vector that depends on "
        "the position is added to each token before attention.",
        "The sinusoidal encoding is made of sines and cosines of many frequencies: fast ones "
        "tell neighbours apart, slow ones distant positions. A learned encoding is a table the "
        "model trains; RoPE instead turns each query and key by an angle set by its position.",
    ),
    formula=math(
        _pe("sin", row(mn("2"), mi("i"))),
        mo(","),
        gap(),
        _pe("cos", row(mn("2"), mi("i"), mo("+"), mn("1"))),
        mo(","),
        gap(),
        sub(mi("x"), _pos),
        mo("←"),
        sub(mi("x"), _pos),
        mo("+"),
        sub(mi("PE"), _pos),
    ),
    formula_text="PE(pos, 2i) = sin(pos / 10000^(2i/d)),  PE(pos, 2i+1) = cos(pos / "
    "10000^(2i/d)),  x_pos ← x_pos + PE_pos",
    toy=ToyStart("shuffled"),
    focus=("config", "before-after-card", "distances-card"),
    tasks=(
        Task(
            "the-rows-differ",
            'Turn on a position encoding so that the two "the" rows no longer get the same output.',
            "Choose positional: sinusoidal (or learned) in the Model card, and leave the table "
            "as it is.",
            c.the_rows_differ,
            reads=("settings", "table"),
        ),
    ),
)


def _ln(*inner: str) -> str:
    return row(mi("LN"), mo("("), *inner, mo(")"))


RESIDUAL_NORM = Step(
    id="residual-norm",
    title="Residuals and LayerNorm",
    lab="toy",
    text=(
        "Back to the collapse: five layers of averaging, and apple and banana end as one "
        "vector. Every transformer block has two additions, both older than the transformer. "
        "What does each do to the collapse?",
        "The residual connection adds each layer's input back to its output: the layer hands on "
        "x + attention(x), where raw attention hands on attention(x) alone. In training it also "
        "gives the gradient a direct path down the stack.",
        "LayerNorm rescales each token vector to mean 0 and variance 1 across its dimensions. "
        "Pre-norm normalises what goes into each sublayer, x + F(LN(x)), as most current models "
        "do; post-norm, the original transformer's, normalises after the addition, "
        "LN(x + F(x)). Try each on its own and the two together: the Distance card follows "
        "apple and banana through the layers, the Token vectors card draws each vector.",
    ),
    formula=math(
        mi("x"),
        mo("←"),
        mi("x"),
        mo("+"),
        call("Attention", _ln(mi("x"))),
        mo(","),
        gap(),
        _ln(mi("x")),
        mo("="),
        frac(row(mi("x"), mo("−"), mi("μ")), mi("σ")),
    ),
    formula_text="x ← x + Attention(LN(x)),  LN(x) = (x − μ) / σ  (μ, σ: the mean and spread "
    "of x's own numbers)",
    toy=ToyStart("collapse"),
    focus=("config", "distances-card", "vectors-card"),
    tasks=(
        Task(
            "apart-after-depth",
            f"Turn on the residual and a norm, and keep apple and banana at least {c.APART} "
            f"apart after all {c.DEPTH} layers.",
            "In the Model card tick residual and choose a norm, pre or post. The distance card "
            "shows the gap after every layer.",
            c.apart_after_depth,
            reads=("settings",),
        ),
    ),
)

FFN_BLOCK = Step(
    id="ffn-block",
    title="The feed-forward sublayer: a whole block",
    lab="toy",
    text=(
        "Attention moves information between tokens, but it only ever averages. The "
        "feed-forward sublayer processes: a small two-layer network, the same for every token, "
        "applied to each token on its own, its hidden layer 4 times as wide (here 12) with a "
        "GELU between.",
        "A transformer block is the two in turn, each with its residual and norm: attention "
        "moves information between positions, the feed-forward transforms what each position "
        "holds. Stack blocks, put "
        "positions at the bottom and a prediction on top, and you have a transformer.",
        "This state is the collapse table with the residual and pre-norm on: five blocks "
        "without their feed-forward. Its weights here are random (seeded), not trained: what "
        "they compute means nothing, but where they act is the point.",
    ),
    formula=math(
        mi("x"),
        mo("←"),
        mi("x"),
        mo("+"),
        call("FFN", _ln(mi("x"))),
        mo(","),
        gap(),
        call("FFN", mi("x")),
        mo("="),
        call("GELU", row(mi("x"), sub(mi("W"), mn("1")))),
        sub(mi("W"), mn("2")),
    ),
    formula_text="x ← x + FFN(LN(x)),  FFN(x) = GELU(x W₁) W₂  (W₁: d × 4d, W₂: 4d × d)",
    toy=ToyStart("collapse", {"residual": True, "norm": "pre"}),
    focus=("config", "vectors-card", "before-after-card"),
    tasks=(
        Task(
            "ffn-on",
            "Turn on the feed-forward sublayer, and compare An and a: the same row going in.",
            "Tick feed-forward in the Model card.",
            c.ffn_on,
            reads=("settings",),
        ),
    ),
)

TOY_STEPS = (
    DOT_PRODUCTS,
    SCALING,
    WORKED_EXAMPLE,
    COLLAPSE,
    QKV,
    HEADS,
    POSITIONS,
    RESIDUAL_NORM,
    FFN_BLOCK,
)
