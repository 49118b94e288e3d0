"""Long texts: a forward that never forms a (T, T) matrix, keeping each layer's queries, keys and
row log-sum-exps, so that any window of weights is recomputed exactly; summaries made during
the forward (entropy, sinks, local mass, a block map)."""

from attnviz.long.attend import LayerRecord, LongAttend, Plan, exact_weights, fixed_blocks
from attnviz.long.run import attending, run_long
from attnviz.long.trace import HeadScores, LongTrace

__all__ = [
    "HeadScores",
    "LayerRecord",
    "LongAttend",
    "LongTrace",
    "Plan",
    "attending",
    "exact_weights",
    "fixed_blocks",
    "run_long",
]
