// Made by attnviz/jsgen.py from attnviz/capture/fields (`make bundle` writes it); do not edit:
// tests/test_web.py fails while it differs from what the Python declares.

/**
 * @typedef {{params: string[], per_head: boolean, drawn: boolean, measured: boolean,
 *   needs: string | null, tower: boolean, over_heads: boolean, words: string}} FieldInfo
 */

/** The trace's fields by name, in the order of the wire. @type {Record<string, FieldInfo>} */
export const FIELDS = {
  "embeddings": {"params": [], "per_head": false, "drawn": false, "measured": false, "needs": null, "tower": false, "over_heads": false, "words": "embeddings"},
  "positional": {"params": [], "per_head": false, "drawn": false, "measured": false, "needs": null, "tower": false, "over_heads": false, "words": "positional"},
  "attentions": {"params": ["layer", "head", "query"], "per_head": true, "drawn": false, "measured": false, "needs": null, "tower": false, "over_heads": false, "words": "per-query weights"},
  "scores": {"params": ["layer", "head", "query"], "per_head": true, "drawn": false, "measured": false, "needs": null, "tower": false, "over_heads": false, "words": "per-query scores"},
  "queries": {"params": ["layer", "head"], "per_head": true, "drawn": false, "measured": false, "needs": null, "tower": false, "over_heads": false, "words": "queries and keys"},
  "keys": {"params": ["layer", "head"], "per_head": true, "drawn": false, "measured": false, "needs": null, "tower": false, "over_heads": false, "words": "queries and keys"},
  "values": {"params": ["layer", "head"], "per_head": true, "drawn": false, "measured": false, "needs": null, "tower": false, "over_heads": false, "words": "values"},
  "hidden_states": {"params": [], "per_head": false, "drawn": false, "measured": false, "needs": null, "tower": false, "over_heads": false, "words": "hidden states"},
  "distances": {"params": [], "per_head": false, "drawn": false, "measured": false, "needs": null, "tower": false, "over_heads": false, "words": "distances"},
  "entropy": {"params": [], "per_head": false, "drawn": false, "measured": false, "needs": null, "tower": false, "over_heads": false, "words": "entropy"},
  "entropy_mean": {"params": [], "per_head": false, "drawn": false, "measured": false, "needs": null, "tower": false, "over_heads": false, "words": "head entropies"},
  "projection": {"params": ["hide_special", "merge_words"], "per_head": false, "drawn": false, "measured": false, "needs": null, "tower": false, "over_heads": false, "words": "trajectories"},
  "view": {"params": ["layer", "head", "query", "hide_special", "merge_words", "measure"], "per_head": true, "drawn": true, "measured": true, "needs": null, "tower": false, "over_heads": false, "words": "exact weights"},
  "thumbs": {"params": ["thumb", "thumb_layer", "hide_special", "merge_words", "measure"], "per_head": false, "drawn": true, "measured": true, "needs": null, "tower": false, "over_heads": false, "words": "thumbnails"},
  "score_range": {"params": [], "per_head": false, "drawn": false, "measured": false, "needs": null, "tower": false, "over_heads": false, "words": "score range"},
  "head_mean": {"params": ["layer", "hide_special", "merge_words", "measure"], "per_head": false, "drawn": true, "measured": true, "needs": null, "tower": false, "over_heads": true, "words": "head mean"},
  "head_max": {"params": ["layer", "hide_special", "merge_words", "measure"], "per_head": false, "drawn": true, "measured": true, "needs": null, "tower": false, "over_heads": true, "words": "head max"},
  "rollout": {"params": ["layer", "hide_special", "merge_words", "measure"], "per_head": false, "drawn": true, "measured": true, "needs": null, "tower": false, "over_heads": true, "words": "rollout"},
  "value_weighted": {"params": ["layer", "head", "query"], "per_head": true, "drawn": false, "measured": false, "needs": "output projection", "tower": false, "over_heads": false, "words": "per-query value-weighted norms"},
  "value_weighted_sum": {"params": ["layer", "hide_special", "merge_words"], "per_head": false, "drawn": true, "measured": false, "needs": "output projection", "tower": false, "over_heads": true, "words": "value-weighted sum"},
  "top_k": {"params": ["k", "pos_start", "pos_count"], "per_head": false, "drawn": false, "measured": false, "needs": "readout", "tower": false, "over_heads": false, "words": "predictions"},
  "lens": {"params": ["pos_start", "pos_count"], "per_head": false, "drawn": false, "measured": false, "needs": "readout", "tower": false, "over_heads": false, "words": "predictions"},
  "qk_attribution": {"params": ["layer", "head", "query", "key", "top"], "per_head": false, "drawn": false, "measured": false, "needs": "clean run", "tower": false, "over_heads": false, "words": "score breakdown"},
  "logit_attribution": {"params": ["position", "token", "versus"], "per_head": false, "drawn": false, "measured": false, "needs": "clean run", "tower": false, "over_heads": false, "words": "logit split"},
  "vision": {"params": ["image", "tile", "layer", "head"], "per_head": false, "drawn": false, "measured": false, "needs": null, "tower": true, "over_heads": false, "words": "vision tower's weights"},
};

/** The fields of one matrix a layer, all its heads together (``over_heads``).
 * @typedef {"head_mean" | "head_max" | "rollout" | "value_weighted_sum"} OverHeads */
