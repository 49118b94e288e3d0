// Multimodal rotary (M-RoPE, Qwen2-VL and later) in words, for one query and one key: each
// position has three indices (temporal, height, width: meta.mrope.positions, the model's own
// get_rope_index), and the head's rotary pairs are cut into three sections (meta.mrope.sections),
// each section's pairs turned by its own index. A score then depends on the three differences,
// query's index less key's. Pure: every number is meta.mrope's.

import { quotedToken } from "../core/tokens.js";

/** @typedef {{sections: number[], positions: number[][], interleaved?: boolean}} Mrope */

const AXES = ["temporal", "height", "width"];

/** @param {number} d */
const delta = (d) => `Δ${d}`;

/**
 * The (temporal, height, width) index of position `i`. @param {Mrope} mrope @param {number} i
 * @returns {number[]}
 */
export const indicesOf = (mrope, i) => AXES.map((_, a) => mrope.positions[a][i]);

/**
 * How each section turns for query `q` and key `k`: "temporal: 16 pairs turn by Δ0; height:
 * 24 pairs by Δ2; width: 24 pairs by Δ-3" (the differences query less key).
 * @param {Mrope} mrope @param {number} q @param {number} k
 */
export function sectionTurns(mrope, q, k) {
  const [qi, ki] = [indicesOf(mrope, q), indicesOf(mrope, k)];
  return mrope.sections
    .map((pairs, a) => {
      const d = delta(qi[a] - ki[a]);
      return a === 0 ? `${AXES[a]}: ${pairs} pairs turn by ${d}` : `${AXES[a]}: ${pairs} pairs by ${d}`;
    })
    .join("; ");
}

/**
 * The sentence the query-key view shows for query `q` and key `k` (token labels `tokens`).
 * @param {Mrope} mrope @param {number} q @param {number} k @param {string[]} tokens
 * @param {string} [which] how the key was chosen, in words
 */
export function mropeSentence(mrope, q, k, tokens, which = "") {
  /** @param {number} i */
  const at = (i) => {
    const [t, h, w] = indicesOf(mrope, i);
    return `(temporal ${t}, height ${h}, width ${w})`;
  };
  const how = mrope.interleaved
    ? "its rotary pairs are dealt in turn to three sections"
    : "its rotary pairs are cut into three sections";
  return (
    `M-RoPE: each position has three indices, and ${how}, each turned by its own index. ` +
    `The query ${quotedToken(tokens[q])} (token ${q + 1}) is at ${at(q)}; the key ` +
    `${quotedToken(tokens[k])} (token ${k + 1}${which ? `, ${which}` : ""}) at ${at(k)}. ` +
    `Query less key — ${sectionTurns(mrope, q, k)}.`
  );
}

/**
 * The key the sentence is about: `picked` when the query sees it, else the key of the largest
 * weight in the query's row (`weights`, NaN or -Infinity where not shown). @param {ArrayLike<number>} weights
 * @param {number | null} picked @param {boolean} causal @param {number} q
 * @returns {{key: number, which: string}}
 */
export function chosenKey(weights, picked, causal, q) {
  if (picked !== null && picked >= 0 && picked < weights.length && !(causal && picked > q)) {
    return { key: picked, which: "the key chosen" };
  }
  let key = 0;
  let best = -Infinity;
  for (let j = 0; j < weights.length; j++) {
    if (Number.isFinite(weights[j]) && weights[j] > best) [key, best] = [j, weights[j]];
  }
  return { key, which: "the query's largest weight" };
}
