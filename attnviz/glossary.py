"""The glossary: every term of the field the page shows a learner, explained in a sentence or two
for someone who has read an introductory article on attention (queries, keys and values, softmax
and the sqrt(d) scaling, heads, positional encodings, residuals and LayerNorm, on "an apple and a
banana"). Defined once here: sent to the page with ``/api/presets`` (``glossary``), where a term
marked in a card (``data-term="<id>"``, static/js/core/glossary.js) opens its explanation, carried
by every one-file export, and written as docs/glossary.md (``python -m attnviz.glossary``; a test
checks that the page is current and that every term the page marks is defined here)."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, Field

# The caps a term is held to (tests/test_glossary.py checks every entry against them).
MAX_TEXT = 300  # characters of an explanation: a sentence or two
MAX_NAME = 40
ID = re.compile(r"^[a-z][a-z0-9-]{0,39}$")


class Term(BaseModel):
    """One term: what the page marks it by, how it is written, and what it means."""

    id: str = Field(description='What a page marks the term by: data-term="<id>"')
    name: str = Field(description="The term as the glossary lists it")
    words: list[str] = Field(description="The ways the page writes it, longest first")
    text: str = Field(description="The explanation, in one or two plain sentences")
    see: str = Field(
        default="", description="Where the docs say more: a page of docs/ and its heading"
    )


def _t(id: str, name: str, words: str, text: str, see: str = "") -> Term:
    return Term(id=id, name=name, words=[w.strip() for w in words.split("|")], text=text, see=see)


# In the order a learner meets them: the text, the model's parts, then each view's own words.
GLOSSARY: tuple[Term, ...] = (
    _t(
        "token",
        "Token",
        "tokens|token",
        "A piece of text the model reads as one unit: a word, a part of a word or a punctuation "
        "mark. “An apple and a banana” is five tokens; a rare word is split into pieces.",
    ),
    _t(
        "special-token",
        "Special token",
        "special tokens|special token",
        "A token the tokenizer adds that is not in your text, such as BERT’s [CLS] at the start "
        "and [SEP] at the end. Heads often park attention on them.",
    ),
    _t(
        "word-piece",
        "Word piece",
        "word pieces|word piece",
        "A token that is only part of a word: “didn't” may be read as “didn”, “'” and “t”. "
        "Merging them shows one row and one column per word instead.",
    ),
    _t(
        "embedding",
        "Embedding",
        "embeddings|embedding",
        "The vector a token starts as, looked up in a learned table: the article’s X, one row per "
        "token (apple = [0.7, 0.8, 0.0] on tech, fruit, grammar).",
    ),
    _t(
        "positional",
        "Positional encoding (RoPE)",
        "position embeddings|position embedding|positional encodings|positional encoding|"
        "positional|RoPE",
        "Attention alone cannot tell word order, so each token is given its position: a vector "
        "added to its embedding (sinusoidal or learned), or with RoPE a rotation of its query and "
        "key by an angle that grows with the position.",
    ),
    _t(
        "token-type",
        "Token type embedding",
        "token type embeddings|token type embedding|token type",
        "A learned vector that BERT-style models add to each token’s embedding to say which "
        "segment it is in (the first or the second sentence of a pair). With one sentence every "
        "token gets the same one.",
    ),
    _t(
        "d-model",
        "d_model",
        "d_model",
        "The length of the vector every token carries through the model: the article’s d, 3 "
        "there (tech, fruit, grammar), 384 in MiniLM, 768 in GPT-2.",
    ),
    _t(
        "layer",
        "Layer",
        "layers|layer",
        "One transformer block: attention by several heads side by side, then an MLP, each adding "
        "its result to the token’s vector. Models stack them; the page numbers them from 1, so L5 "
        "is layer 5.",
    ),
    _t(
        "head",
        "Head",
        "heads|head",
        "One attention of a layer, with its own query, key and value projections: one kind of "
        "question the tokens ask each other. L5 H3 is layer 5’s head 3.",
    ),
    _t(
        "query",
        "Query",
        "queries|query",
        "What a token is looking for: its vector times W_Q. In a heatmap a query is a row, the "
        "token doing the looking.",
    ),
    _t(
        "key",
        "Key",
        "keys|key",
        "What a token offers to be found by: its vector times W_K. In a heatmap a key is a "
        "column; a query’s score for a key is their dot product over √d.",
    ),
    _t(
        "value",
        "Value",
        "values|value",
        "What a token hands over once it is picked: its vector times W_V. A head’s output for a "
        "query is the weighted average of the values.",
    ),
    _t(
        "score",
        "Score",
        "scores|score",
        "A query’s dot product with a key divided by √d: the article’s QKᵀ/√d, before the "
        "softmax. The higher it is, the better the key fits what the query looks for.",
    ),
    _t(
        "softmax",
        "Softmax",
        "softmax",
        "Turns a row of scores into weights that are positive and sum to 1: e to each score, "
        "divided by the row’s sum of them. The largest score gets the most weight.",
    ),
    _t(
        "weight",
        "Attention weight",
        "attention weight|weight",
        "How much of a key’s value a query takes in: one entry of a softmax row, so a query’s "
        "weights sum to 1. Darker cells are larger weights.",
    ),
    _t(
        "value-weighted",
        "Value-weighted attention",
        "value-weighted",
        "A weight times the size of what the key really hands over, ‖weight × value × W_O‖: a "
        "key with much weight but a tiny value adds little, so this shows what actually moves.",
    ),
    _t(
        "entropy",
        "Entropy",
        "entropy",
        "How spread out a row of weights is, in nats: 0 when one key takes all the weight, "
        "largest when every key gets the same.",
    ),
    _t(
        "residual-stream",
        "Residual stream",
        "residual stream",
        "The vector each token carries from layer to layer. Every head and MLP reads it and adds "
        "its output back (out = x + layer(x)), so it is the sum of everything written into it.",
    ),
    _t(
        "hidden-state",
        "Hidden state",
        "hidden states|hidden state",
        "A token’s vector after a given layer: the residual stream at that point. Layer 0 is the "
        "embedding.",
    ),
    _t(
        "mlp",
        "MLP (as in L5 MLP)",
        "L5 MLP|MLP|feed-forward",
        "A layer’s feed-forward block: a small two-layer network applied to each token on its "
        "own after attention, adding its output to the residual stream. L5 MLP is layer 5’s.",
        "sentence.md#what-pushed-this",
    ),
    _t(
        "layernorm",
        "Layer norm",
        "final norm|LayerNorm|layer norm|norm",
        "Rescales a token’s vector to mean 0 and variance 1 over its dimensions, then applies a "
        "learned scale and shift, keeping the numbers steady through the stack. The final norm "
        "follows the last layer.",
    ),
    _t(
        "causal",
        "Causal model",
        "causal model|causal attention|causal mask|causal",
        "A model in which each token sees only itself and the tokens before it (a mask hides the "
        "later ones), so it can predict the next token and write text, as GPT-2 does.",
    ),
    _t(
        "encoder",
        "Encoder (bidirectional)",
        "encoder|bidirectional",
        "A model in which every token sees every other, before and after it, as BERT and MiniLM "
        "do: it reads a whole text at once, but does not predict a next token, so it cannot write.",
    ),
    _t(
        "bert",
        "BERT",
        "BERT",
        "A well-known encoder from Google (2018), trained by hiding some words of a text and "
        "guessing them from the words on both sides. MiniLM, the default model here, has BERT’s "
        "design at a smaller size.",
    ),
    _t(
        "mlm-head",
        "Masked-language-model head",
        "masked-language-model head|masked-language-model|masked-LM head|masked language model",
        "The part on top of an encoder such as BERT that guesses hidden words: training replaces "
        "some tokens by [MASK], and this head turns each final vector into a score for every "
        "token of the vocabulary. A checkpoint saved without it still shows its attention, but "
        "predicts nothing.",
    ),
    _t(
        "unembedding",
        "Unembedding",
        "unembedding",
        "A language model’s last matrix: it turns a final vector into one score per token of the "
        "vocabulary (the logits). Often it is the embedding table used backwards.",
    ),
    _t(
        "logit",
        "Logit",
        "logits|logit",
        "A token’s raw score from the unembedding, before a softmax turns the scores into "
        "probabilities: the higher the logit, the more probable that next token.",
        "sentence.md#what-pushed-this",
    ),
    _t(
        "logit-lens",
        "Logit lens",
        "logit lens",
        "Every layer’s hidden state read through the final norm and the unembedding, as if the "
        "model stopped there: it shows from which layer on the model already has its prediction.",
    ),
    _t(
        "attribution",
        "Attribution",
        "direct contribution|attribution",
        "A number (a score, a logit) split exactly into the parts that made it: the residual "
        "stream is a sum, so each head’s and MLP’s share can be read off, and the shares add up.",
        "sentence.md#what-pushed-this",
    ),
    _t(
        "rest",
        "The rest",
        "the rest",
        "The components too small to list one by one, summed into one, so that every part shown "
        "still adds up to the whole score.",
    ),
    _t(
        "sink",
        "Attention sink",
        "attention sink|sink",
        "A token (the first, [CLS], punctuation) that most rows give most of their weight to, "
        "whatever the text: softmax must put the weight somewhere, and a head with nothing to do "
        "parks it there. Much weight on it does not mean it matters.",
    ),
    _t(
        "rollout",
        "Attention rollout",
        "rollout",
        "Attention followed through the layers: each layer’s mean over heads, with the residual’s "
        "own path added, multiplied layer by layer, to estimate how much each input token reaches "
        "a token by that layer.",
    ),
    _t(
        "knock-out",
        "Knock-out (ablation)",
        "knock-out|knock out|knocked out|ablation",
        "Running the model again with a head’s output removed (replaced by zeros, its mean or its "
        "output on another text) to see what changes: if the prediction falls apart, the head "
        "mattered.",
    ),
    _t(
        "clean-run",
        "Clean run",
        "clean run",
        "The model run as it is, nothing knocked out: what a knock-out is compared with.",
    ),
    _t(
        "loss",
        "Loss",
        "loss",
        "How surprised the model is by the true next token: −ln p, p the probability it gave it. "
        "0 is certain and right; training lowers it.",
    ),
    _t(
        "probe",
        "Probe",
        "probe",
        "A fixed test input run through the model to measure what each head does: here strings "
        "of random tokens, each repeated, so that looking back and copying stand out.",
    ),
    _t(
        "previous-token-head",
        "Previous-token head",
        "previous-token head|previous token",
        "A head in which each token gives most of its weight to the token just before it: it "
        "links neighbours by position, whatever the words.",
    ),
    _t(
        "induction-head",
        "Induction head",
        "induction heads|induction head",
        "A head that finds where the current token appeared before and looks at the token that "
        "followed it, so the model can continue a repeat (“Harry Potter … Harry” → “Potter”).",
    ),
    _t(
        "q-composition",
        "Q-composition",
        "Q-composition",
        "A later head’s queries read what an earlier head wrote into the residual stream, so "
        "what a token looks for depends on that earlier head.",
    ),
    _t(
        "k-composition",
        "K-composition",
        "K-composition",
        "A later head’s keys read what an earlier head wrote, so what a token offers depends on "
        "it: an induction head finds its key through a previous-token head this way.",
    ),
    _t(
        "v-composition",
        "V-composition",
        "V-composition",
        "A later head’s values read what an earlier head wrote, so the later head carries the "
        "earlier head’s output on to another token.",
    ),
    _t(
        "pca",
        "PCA (principal components)",
        "principal components|principal component|PCA",
        "Principal component analysis: the few directions (principal components) along which the "
        "vectors differ most, so that many dimensions can be drawn flat. PC1 is the direction of "
        "most spread; “PC1 (33% var)” means it holds 33% of the vectors’ variance.",
    ),
    _t(
        "umap",
        "UMAP",
        "UMAP",
        "A projection to two dimensions that keeps each point near its nearest neighbours, good "
        "at showing clusters; unlike PCA, its axes and the gaps between clusters mean little.",
    ),
    _t(
        "vision-tower",
        "Vision tower",
        "vision tower",
        "The picture part of a vision-language model: a transformer over small squares of the "
        "image (patches) whose output vectors the language model reads as tokens.",
    ),
    _t(
        "checkpoint",
        "Checkpoint",
        "checkpoints|checkpoint",
        "The model’s weights saved at a step of training, so that you can look back at how its "
        "attention looked then.",
    ),
    _t(
        "gradient-norm",
        "Gradient norm",
        "gradient norm|gradients",
        "How large a step training wants to take on a layer’s weights: the length of their "
        "gradient. A layer whose norm stays tiny is barely learning.",
    ),
    _t(
        "adamw",
        "AdamW",
        "AdamW",
        "The rule that turns gradients into steps on the weights: Adam gives every weight a step "
        "size of its own, from how large and how steady its recent gradients were. Its W stands "
        "for weight decay applied to the weights directly, not through the gradients.",
    ),
    _t(
        "weight-decay",
        "Weight decay",
        "weight decay",
        "Shrinking every weight a little towards 0 at each training step, so that only the "
        "weights the data keep asking for stay large. attnviz’s runs use none: the loss alone "
        "shapes the weights.",
    ),
    # The Learn path's own words (its steps' texts mark them where they first appear).
    _t(
        "rnn",
        "Recurrent network (RNN)",
        "recurrent network|RNN",
        "A network that reads tokens one at a time, carrying one hidden vector from each step to "
        "the next, so step 50 waits for step 49 and early tokens must survive every update.",
    ),
    _t(
        "lstm",
        "LSTM",
        "LSTM",
        "A recurrent network with gates (long short-term memory): learned switches that decide "
        "what its hidden vector keeps and what it forgets at each step. It remembers longer than "
        "a plain RNN, still one step at a time.",
    ),
    _t(
        "gru",
        "GRU",
        "GRU",
        "A gated recurrent unit: a lighter LSTM, with two gates instead of three, that decides at "
        "each step how much of its hidden vector to keep and how much to overwrite. It too reads "
        "one token at a time.",
    ),
    _t(
        "one-hot",
        "One-hot",
        "one-hot",
        "A vector of zeros with a single 1, at the position of its token in the vocabulary: "
        "every token equally far from every other until the model learns embeddings.",
    ),
    _t(
        "sublayer",
        "Sublayer",
        "sublayers|sublayer",
        "One of the two parts of a transformer block: its attention, or its feed-forward MLP. "
        "Each reads the token’s vector and adds its output back to it, x + F(x).",
    ),
    _t(
        "pre-norm",
        "Pre-norm",
        "pre-norm|Pre-norm",
        "A block that normalises what goes into each sublayer, x + F(LN(x)), so the residual path "
        "itself is never rescaled. It trains deep stacks more steadily, and most current models "
        "use it.",
    ),
    _t(
        "post-norm",
        "Post-norm",
        "post-norm|Post-norm",
        "A block that normalises after adding a sublayer’s output back, LN(x + F(x)), as the "
        "original transformer did. Deep post-norm stacks often train only with a small learning "
        "rate or a warm-up.",
    ),
    _t(
        "decoder",
        "Decoder",
        "decoders|decoder",
        "The part of a transformer that writes: each token sees only the tokens before it, so it "
        "can predict the next one. In translation it also reads the encoder’s output through "
        "cross-attention; GPT is a decoder alone.",
    ),
    _t(
        "cross-attention",
        "Cross-attention",
        "cross-attention",
        "Attention whose queries come from one sequence and whose keys and values from another, "
        "as a decoder reads its encoder’s text: rows are the output’s tokens, columns the input’s.",
    ),
    _t(
        "anti-diagonal",
        "Anti-diagonal",
        "anti-diagonal",
        "The line of cells from a square heatmap’s top-right corner to its bottom-left: the first "
        "query’s weight on the last key, the last query’s on the first. A head that reverses a "
        "string attends along it.",
    ),
    _t(
        "gpt",
        "GPT",
        "GPT-2|GPT",
        "OpenAI’s causal language models (GPT-2 in 2019, then those behind ChatGPT): a stack of "
        "decoder blocks, each token seeing only those before it, trained to predict the next "
        "token.",
    ),
    _t(
        "circuit",
        "Circuit",
        "circuits|circuit",
        "A few heads (or MLPs) in different layers that do one job together, a later one reading "
        "what an earlier one wrote into the residual stream: a previous-token head and an "
        "induction head form one.",
    ),
    _t(
        "held-out",
        "Held-out data",
        "held-out",
        "Examples kept apart and never trained on. The loss on them says whether the model "
        "learned the rule or only memorised its training examples.",
    ),
    _t(
        "nats",
        "Nats",
        "nats|nat",
        "The unit of a loss measured with the natural logarithm: −ln p of the right answer. A "
        "loss of 0.69 nats means the right answer got probability one half.",
    ),
    _t(
        "seed",
        "Seed",
        "seeds|seed",
        "The number that fixes a run’s random choices (its first weights, its batches). The "
        "same seed gives the same run; another seed shows whether a result is luck.",
    ),
    _t(
        "gelu",
        "GELU",
        "GELU",
        "The bend a feed-forward sublayer puts between its two matrices: it passes large positive "
        "numbers almost unchanged, squeezes negative ones towards 0 and curves smoothly between. "
        "Without a bend, the two matrices would multiply into one, and the sublayer could do no "
        "more than a single matrix.",
    ),
    _t(
        "learning-rate",
        "Learning rate",
        "learning rates|learning rate",
        "How large a step training takes on the weights at each update, as a multiple of what the "
        "gradients ask for. Too large and the loss jumps about or never falls; too small and the "
        "model learns slowly.",
    ),
    _t(
        "l2-norm",
        "L2 norm",
        "L2 norm",
        "A vector’s length: the square root of the sum of its squared numbers, as a ruler would "
        "measure it. The L2 norm of [3, 4] is 5.",
    ),
    _t(
        "warm-up",
        "Warm-up",
        "warm-up|warmup|warm up",
        "Starting training with a small learning rate (the size of each step on the weights) and "
        "raising it over the first steps, so that a fresh model’s large early gradients do not "
        "throw it off. A deep post-norm stack often trains only with one; attnviz’s runs use none.",
    ),
    _t(
        "d-k",
        "d_k",
        "d_k",
        "The length of one head’s query and key vectors: d_model divided by the number of heads "
        "(768 / 12 = 64 in GPT-2). The scores are divided by √d_k.",
    ),
    _t(
        "variance",
        "Variance, Var(q · k)",
        "Var(q · k)|Var(q·k)|variance",
        "How widely a number spreads around its average: the mean of its squared distance from "
        "it. A query-key dot product sums d_k products (d_k: the head’s size), so for random "
        "entries of variance 1, Var(q · k) = d_k: a spread of √d_k, which dividing by √d_k undoes.",
    ),
)

BY_ID: dict[str, Term] = {t.id: t for t in GLOSSARY}

_INTRO = (
    "# Glossary\n\n"
    "Every term of the field the page shows, explained in a sentence or two for a reader of an\n"
    "introductory article on attention. In the page a term is marked with a dotted underline\n"
    "where a learner meets it: a click, or Tab reaching it, opens its explanation beside it\n"
    "(Enter or Space opens and closes it, Escape or a click elsewhere closes it; see\n"
    "[Accessibility](accessibility.md)), and the header's *Glossary* lists them all. The terms\n"
    "are defined once, in `attnviz/glossary.py`, which the page reads through `/api/presets`:\n"
    "this page is written from it (`.venv/bin/python -m attnviz.glossary`) and a test checks\n"
    "that it is current.\n"
)


def markdown() -> str:
    """docs/glossary.md: every term, a heading each, in the glossary's order."""
    parts = [_INTRO]
    for t in GLOSSARY:
        more = f" More in [{_page_title(t.see)}]({t.see})." if t.see else ""
        parts.append(f"\n## {t.name}\n\n{t.text}{more}\n")
    return "".join(parts)


def _page_title(see: str) -> str:
    page, _, heading = see.partition("#")
    words = heading.replace("-", " ")
    name = {"sentence.md": "Sentence mode", "train.md": "Train mode", "toy.md": "Toy lab"}.get(
        page, page
    )
    return f"{name}: {words}" if words else name


def docs_path() -> Path:
    """Where the page lives in a checkout: docs/glossary.md beside the package."""
    return Path(__file__).resolve().parents[1] / "docs" / "glossary.md"


if __name__ == "__main__":
    docs_path().write_text(markdown(), encoding="utf-8")
