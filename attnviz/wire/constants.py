"""The wire format's constants: the compact form's media type, the names of a trace's arrays
(what ``fields`` may ask for) and the rule each derived array is sent with (``meta.rule``)."""

from __future__ import annotations

from typing import Literal, get_args

# The compact form: a safetensors file (8-byte header length, JSON header, raw arrays) whose
# header's ``__metadata__["attnviz"]`` holds the trace's other fields as JSON.
COMPACT_MEDIA_TYPE = "application/vnd.attnviz.trace+safetensors"

# Arrays with a layer and a head axis ([layers][heads][...]); ``layer`` and ``head`` pick one.
PER_HEAD_FIELDS = ("attentions", "scores", "queries", "keys", "values", "view",
                   "value_weighted")  # fmt: skip
# The arrays of the full JSON trace, in its order (also the default of ``fields``).
TRACE_FIELDS = (
    "embeddings",
    "positional",
    "attentions",
    "scores",
    "queries",
    "keys",
    "values",
    "hidden_states",
    "distances",
    "entropy",
    "entropy_mean",
    "projection",
)
# Beyond the full trace: ``view`` (attentions under the token options, exact), ``thumbs`` (every
# head's pattern under the token options, pooled and quantised to 8 bits) and ``score_range``
# ([layers][heads] the largest finite |score|, for one colour range over all heads).
# Head aggregates, [layers][m][m] under the token options (``layer`` picks one): the mean and
# the largest weight over a layer's heads, and attention rollout through the layers up to it.
# Each rule, as the page states it, is sent with the part (``meta.rule``).
AGGREGATE_RULES = {
    "head_mean": "The mean of the layer's heads (as each is shown): rows still sum to 1.",
    "head_max": "Each cell's largest weight over the layer's heads: rows no longer sum to 1; it "
    "shows where any head looks.",
    "rollout": "Attention rollout (Abnar and Zuidema, 2020): each layer's mean over heads, "
    "A = mean_h(A_h), with the residual stream added, Â = (A + I) / 2 (just A in a model "
    "without a residual), multiplied through the layers, R_l = Â_l ⋯ Â_1: how much of each "
    "token's input reaches each row by this layer, if attention alone moved it.",
}
# Value-weighted attention (Kobayashi et al., 2020, "Attention is not only a weight"): what
# each key adds to each query's output, not only how much weight it gets.
VALUE_WEIGHTED_RULES = {
    "value_weighted": "||a_ij v_j W_O^h||: the norm of what key j adds to query i's output "
    "through head h, its weight times its value through the head's slice of the output "
    "projection (Kobayashi et al., 2020).",
    "value_weighted_sum": "||Σ_h a^h_ij v^h_j W_O^h||: the norm of what key j adds to query i's "
    "output through the whole layer's attention, every head's contribution summed before the "
    "norm (heads that cancel count for less).",
}
# ``measure``: what view, thumbs and the head aggregates show. Under value_weighted they are
# computed from value_weighted instead of the weights; the rules then read as these say.
Measure = Literal["weights", "value_weighted"]
MEASURES: tuple[str, ...] = get_args(Measure)
VALUE_WEIGHTED_AGGREGATES = {
    "head_mean": "The mean of the layer's heads' value-weighted norms ||a_ij v_j W_O^h||.",
    "head_max": "Each cell's largest value-weighted norm over the layer's heads: where any head "
    "moves the most.",
    "rollout": "Rollout over value-weighted attention: each layer's ||Σ_h a^h_ij v^h_j W_O^h||, "
    "each row scaled to sum to 1, N, with the residual stream added, (N + I) / 2 (just N "
    "without a residual), multiplied through the layers.",
}
# What a causal model predicts (capture/lens.py), beyond the full trace: ``top_k``, the next
# tokens the model's output gives most probability at each position, and ``lens`` (the logit
# lens), every hidden state through the final norm and the unembedding.
PREDICTION_FIELDS = {
    "top_k": "{k, start, ids: [m][k], probs: [m][k], target_probs: [m], vocab: {id: label}}: "
    "the k most probable next tokens at each position (m of them from start: pos_start, "
    "pos_count), from the model's output (softmax of its logits), most probable first; "
    "target_probs: the probability of the token that comes next (0 at the last position; an "
    "encoder's head: of the text's own token, 0 at a mask), whose -log is the position's loss.",
    "lens": "{rows, start, ids: [layers+1][m], probs, targets: [m], target_ranks, target_probs, "
    "vocab}: "
    "the logit lens (nostalgebraist, 2020): hidden state l (0: the embeddings; the last: the "
    "output) through the final norm and the unembedding; each cell's most probable token and "
    "its probability, and the rank (1: the top) and probability of the token that comes next "
    "(targets[i], -1 and rank 0 at the last position). An encoder with a masked-language-model "
    "head (predicts: masked) predicts the token at each position instead: targets[i] is the "
    "text's own token, -1 at a mask ([MASK], <mask>).",
}
# Exact attributions of the clean run (capture/attribution.py), every norm's scale frozen.
ATTRIBUTION_FIELDS = {
    "qk_attribution": "{layer, head, query, key, components: [{name, kind, layer, head}], "
    "matrix: [q][k], score, keys: [K], key_scores: [K], by_key: [K][components], by_query: "
    "[K][components]}: head's score of key at query split by the query side's components "
    "(rows) and the key side's (columns): the token vectors (embed), the position table (pos), "
    "the token type (type), each earlier head (L{l}.H{h}), b_O (L{l}.attn_bias) and MLP "
    "(L{l}.mlp), and the norms' and projections' biases (bias); the matrix sums to the "
    "trace's score before any soft-cap. keys: the keys the query sees, each score split by "
    "the key's components (by_key) and by the query's (by_query). top keeps that many "
    "components, the rest summed as rest.",
    "logit_attribution": "{position, token, versus, components, values: [components], logit}: "
    "each component's direct contribution to token's logit at position (default: the top "
    "prediction), minus versus's when given, through the final norm (its scale frozen) and "
    "the unembedding; values sum to logit, before any final soft-cap.",
}
# A vision-language model's vision tower (capture/vision.py): ``image`` and ``tile`` pick the
# tile, ``layer`` and ``head`` the tower's layer and head (its own, not the language model's).
VISION_FIELDS = {
    "vision": "[layers][heads][P][P]: the vision tower's attention weights over one tile's "
    "patches (image, tile), P = rows x cols of its patch grid, row-major; the class token, if "
    "any, dropped (meta.vision says so); 0 between the windows of a windowed layer.",
}
FIELDS = (*TRACE_FIELDS, "view", "thumbs", "score_range", *AGGREGATE_RULES,
          *VALUE_WEIGHTED_RULES, *PREDICTION_FIELDS, *ATTRIBUTION_FIELDS,
          *VISION_FIELDS)  # fmt: skip
