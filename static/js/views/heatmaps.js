// Heatmaps of the scores and the attention weights of one layer and head (toy lab).
// render(card, data, sel, callbacks): the card holds [data-role=layer|head] pickers and the
// [data-role=scores|weights] plots.

import { fillIndexSelect } from "../core/dom.js";
import { exact, fmt } from "../core/numbers.js";
import { nested } from "../core/compact.js";
import {
  MASKED_GREY, SCORE_SCALE, WEIGHT_SCALE, baseLayout, draw, plotText, tokenAxis,
} from "../core/theme.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */
/** @typedef {import("../core/types.js").TraceMeta} TraceMeta */

const ANNOTATE_MAX = 12; // write the values in the cells up to this many tokens
const SIDE_BY_SIDE_MAX = 7; // more tokens: scores above weights, each the full width

/**
 * Cell text with about three significant digits: "%{z:.2f}" up to 10, then fewer decimals.
 * @param {(number | null)[][]} z
 */
function cellFormat(z) {
  let m = 0;
  for (const row of z) for (const v of row) if (v !== null) m = Math.max(m, Math.abs(v));
  return m >= 100 ? "%{z:.0f}" : m >= 10 ? "%{z:.1f}" : "%{z:.2f}";
}

/**
 * @param {string[]} tokens @param {(number | null)[][]} z @param {string} kind
 * @param {string} dtype @param {string} colorbar @param {object} extra
 */
function heatmap(tokens, z, kind, dtype, colorbar, extra) {
  const n = tokens.length;
  const customdata = z.map((row, i) => row.map((v, j) => [
    plotText(tokens[i]), plotText(tokens[j]),
    v === null ? "masked (−∞ before the softmax)" : `${kind} ${exact(v, dtype)}`,
  ]));
  return {
    type: "heatmap",
    z,
    x: tokens.map((_, j) => j),
    y: tokens.map((_, i) => i),
    customdata,
    hovertemplate: "query <b>%{customdata[0]}</b><br>key <b>%{customdata[1]}</b><br>" +
      "%{customdata[2]}<extra></extra>",
    hoverongaps: true,
    texttemplate: n <= ANNOTATE_MAX ? cellFormat(z) : "",
    textfont: { size: n <= 6 ? 13 : 11 },
    colorbar: { thickness: 12, len: 1, title: { text: colorbar, side: "right", font: { size: 12 } } },
    ...extra,
  };
}

/** @param {string[]} tokens @param {string} title */
function layoutFor(tokens, title) {
  return baseLayout({
    title: { text: title, font: { size: 14 }, x: 0.02, xanchor: "left" },
    plot_bgcolor: MASKED_GREY, // masked cells are gaps: they show this grey
    margin: { l: 80, r: 10, t: 40, b: 70 },
    xaxis: tokenAxis(tokens, { title: { text: "key" }, automargin: true,
      tickangle: tokens.length > 12 ? -60 : 0 }),
    yaxis: tokenAxis(tokens, { title: { text: "query" }, autorange: "reversed", automargin: true }),
  });
}

/**
 * Draw both heatmaps of sel.layer / sel.head and sync the pickers.
 * @param {HTMLElement} card
 * @param {{meta: TraceMeta, scores: NDArray, weights: NDArray, scoreMax: number,
 *   entropy: number}} data one head's [n][n] scores (-Infinity masked) and weights
 * @param {{layer: number, head: number}} sel
 * @param {{onSelect: (change: {layer?: number, head?: number}) => void}} callbacks
 */
export function render(card, data, sel, callbacks) {
  const { meta } = data;
  const layerPicker = /** @type {HTMLSelectElement} */ (card.querySelector("[data-role=layer]"));
  const headPicker = /** @type {HTMLSelectElement} */ (card.querySelector("[data-role=head]"));
  fillIndexSelect(layerPicker, meta.layers, "layer", sel.layer);
  fillIndexSelect(headPicker, meta.heads, "head", sel.head);
  headPicker.disabled = meta.heads === 1;
  layerPicker.disabled = meta.layers === 1;
  layerPicker.onchange = () => callbacks.onSelect({ layer: Number(layerPicker.value) });
  headPicker.onchange = () => callbacks.onSelect({ head: Number(headPicker.value) });

  const tokens = meta.tokens;
  const n = tokens.length;
  const height = `${Math.max(380, Math.min(760, 160 + n * 10))}px`;
  /** @type {HTMLElement} */ (card.querySelector("[data-role=grid]")).classList.toggle("stacked", n > SIDE_BY_SIDE_MAX);
  const where = `layer ${sel.layer + 1}, head ${sel.head + 1}`;
  const m = data.scoreMax > 0 ? data.scoreMax : 1;
  const scoreTitle = meta.config?.scale === false
    ? "score = q·k (unscaled)"
    : meta.attention && !meta.attention.divide_by
      ? `score = q·k ${meta.attention.scale_label}${meta.attention.softcap ? `, soft-capped at ${meta.attention.softcap} before the softmax` : ""}`
      : `score = q·k / √d<sub>h</sub> (d<sub>h</sub> = ${meta.head_dim})${meta.attention?.softcap ? `, soft-capped at ${meta.attention.softcap} before the softmax` : ""}`;
  const scoresEl = /** @type {HTMLElement} */ (card.querySelector("[data-role=scores]"));
  const weightsEl = /** @type {HTMLElement} */ (card.querySelector("[data-role=weights]"));
  scoresEl.style.height = height;
  weightsEl.style.height = height;
  const masked = meta.config?.mask === "causal" ? " · grey = masked" : "";
  const scores = nested(data.scores).map((row) => row.map((/** @type {number} */ v) => (v === -Infinity ? null : v)));
  return Promise.all([
    draw(scoresEl,
      [heatmap(tokens, scores, "score", data.scores.dtype, scoreTitle,
        { colorscale: SCORE_SCALE, zmin: -m, zmax: m, uid: "scores" })],
      layoutFor(tokens, `Scores · ${where}${masked}`),
      "attnviz-scores"),
    draw(weightsEl,
      [heatmap(tokens, nested(data.weights), "weight", data.weights.dtype,
        "attention weight (softmax), rows sum to 1",
        { colorscale: WEIGHT_SCALE, zmin: 0, zmax: 1, uid: "weights" })],
      layoutFor(tokens, `Weights · ${where} · mean entropy ${fmt(data.entropy, 2)} nats`),
      "attnviz-weights"),
  ]);
}
