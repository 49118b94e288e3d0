// The look of every view in one place: colours, colour scales and their lookup table, fonts,
// and the shared Plotly layout and config.

import { withPlotly } from "./plotly.js";
import { shownToken } from "./tokens.js";

export const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
export const TEXT = "#1d2330";
export const TEXT_DIM = "#5b6475";
export const GRID = "#e3e6eb";
export const AXIS = "#8a93a3";

// Tableau 10: distinct, readable on white; one colour per token.
const PALETTE = [
  "#4e79a7",
  "#e15759",
  "#59a14f",
  "#f28e2b",
  "#b07aa1",
  "#76b7b2",
  "#edc948",
  "#ff9da7",
  "#9c755f",
  "#bab0ac",
];
export const PALETTE_SIZE = PALETTE.length;
/** @param {number} i */
export const tokenColor = (i) => PALETTE[i % PALETTE.length];

/** WCAG's contrast of a "#rrggbb" colour with white. @param {string} hex */
export function contrastOnWhite(hex) {
  const lin = (/** @type {number} */ v) => (v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
  const [r, g, b] = [1, 3, 5].map((o) => lin(parseInt(hex.slice(o, o + 2), 16) / 255));
  return 1.05 / (0.2126 * r + 0.7152 * g + 0.0722 * b + 0.05);
}

/**
 * A label's text in its point's colour, darkened (its channels scaled down together, the hue
 * kept) until it reads on white at WCAG AA, 4.5:1: the yellow, pink and grey of the palette
 * are too light for text. Not a "#rrggbb" colour: as it is.
 * @param {string} hex @returns {string}
 */
export function readableOnWhite(hex) {
  if (!/^#[0-9a-f]{6}$/i.test(hex)) return hex;
  let [r, g, b] = [1, 3, 5].map((o) => parseInt(hex.slice(o, o + 2), 16));
  let out = hex;
  while (contrastOnWhite(out) < 4.5) {
    [r, g, b] = [r, g, b].map((v) => Math.floor(v * 0.92));
    out = "#" + [r, g, b].map((v) => v.toString(16).padStart(2, "0")).join("");
  }
  return out;
}

// 12 distinct colours, one per head (Tableau 10 and two more); more heads wrap around.
const HEAD_COLORS = [
  "#4e79a7",
  "#f28e2b",
  "#e15759",
  "#76b7b2",
  "#59a14f",
  "#edc948",
  "#b07aa1",
  "#ff9da7",
  "#9c755f",
  "#7f7f7f",
  "#17becf",
  "#6b3fa0",
];
/** @param {number} h */
export const headColor = (h) => HEAD_COLORS[h % HEAD_COLORS.length];

/** @type {[number, string][]} */
export const WEIGHT_SCALE = [
  [0, "#f7fbff"],
  [0.2, "#c6dbef"],
  [0.45, "#6baed6"],
  [0.7, "#2171b5"],
  [1, "#08306b"],
];
/** @type {[number, string][]} */
export const SCORE_SCALE = [
  [0, "#2166ac"],
  [0.25, "#92c5de"],
  [0.5, "#f7f7f7"],
  [0.75, "#f4a582"],
  [1, "#b2182b"],
];
export const MASKED_GREY = "#c9ccd1";
export const SELECTED = "#1f5fbf";

/** @param {string} s "#rrggbb" */
const hex = (s) => [1, 3, 5].map((k) => parseInt(s.slice(k, k + 2), 16));

/**
 * 256 RGB colours along a colour scale: entry i is the colour of i / 255.
 * @param {[number, string][]} scale
 */
function lookupTable(scale) {
  const out = new Uint8ClampedArray(256 * 3);
  for (let i = 0; i < 256; i++) {
    const t = i / 255;
    let k = 1;
    while (k < scale.length - 1 && scale[k][0] < t) k++;
    const [t0, c0] = scale[k - 1];
    const [t1, c1] = scale[k];
    const f = t1 > t0 ? (t - t0) / (t1 - t0) : 0;
    const a = hex(c0);
    const b = hex(c1);
    for (let c = 0; c < 3; c++) out[i * 3 + c] = Math.round(a[c] + (b[c] - a[c]) * f);
  }
  return out;
}

/** The weight scale as a lookup table: weight w in [0, 1] is entry Math.round(w * 255). */
export const WEIGHT_LUT = lookupTable(WEIGHT_SCALE);
/** The diverging scale as a lookup table: v in [-m, m] is entry Math.round((v / m + 1) * 127.5). */
export const SCORE_LUT = lookupTable(SCORE_SCALE);

/**
 * The CSS colour of entry i of a lookup table.
 * @param {Uint8ClampedArray} lut @param {number} i
 */
export const lutColor = (lut, i) => `rgb(${lut[i * 3]},${lut[i * 3 + 1]},${lut[i * 3 + 2]})`;

/** The CSS gradient of the weight colour scale, for legends. */
export const WEIGHT_GRADIENT = `linear-gradient(to right, ${WEIGHT_SCALE.map(([t, c]) => `${c} ${t * 100}%`).join(", ")})`;

/** @param {Record<string, any>} [extra] */
export function baseLayout(extra = {}) {
  return {
    font: { family: FONT, size: 13, color: TEXT },
    paper_bgcolor: "#ffffff",
    plot_bgcolor: "#ffffff",
    margin: { l: 60, r: 20, t: 36, b: 50 },
    hoverlabel: { font: { family: FONT, size: 13 } },
    ...extra,
  };
}

/**
 * What every plot's config says so that nothing offers to send a chart off this machine, in the
 * page and in each exported file: no "Share chart..." button (plotly.js 4 draws it unless
 * showSendToCloud is false, and uploads the chart to Plotly Cloud), no server to send one to
 * even if a button came back, no logo linking to plotly.com; showEditInChartStudio and showLink
 * are the names earlier plotly.js releases gave such controls (4 ignores them, silently).
 * tests/browser/test_no_cloud.py reads every modebar as drawn.
 */
export const ON_MACHINE = Object.freeze({
  showSendToCloud: false,
  plotlyServerURL: "",
  showEditInChartStudio: false,
  showLink: false,
  displaylogo: false,
});

/**
 * The config of every plot (draw() is the only place that makes one): the switches above, the
 * modebar's PNG download named `filename`, no select or lasso (no view reads a selection).
 * @param {string} filename
 */
export function plotConfig(filename) {
  return {
    responsive: true,
    ...ON_MACHINE,
    modeBarButtonsToRemove: ["lasso2d", "select2d"],
    toImageButtonOptions: { format: "png", filename, scale: 2 },
  };
}

/**
 * User text for a Plotly label: Plotly reads a little HTML there, so escape it to show it as is.
 * @param {unknown} s
 */
export function plotText(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/**
 * A token's label for a Plotly label: drawn as every view draws it (core/tokens.js), escaped.
 * @param {unknown} t
 */
export const plotToken = (t) => plotText(shownToken(t));

/**
 * Tick labels for token indices, smaller when there are many.
 * @param {string[]} tokens
 * @param {Record<string, any>} [extra]
 */
export function tokenAxis(tokens, extra = {}) {
  const n = tokens.length;
  const size = n <= 12 ? 13 : n <= 24 ? 11 : n <= 40 ? 9 : 7;
  return {
    tickmode: "array",
    tickvals: tokens.map((_, i) => i),
    ticktext: tokens.map(plotToken),
    tickfont: { size },
    showgrid: false,
    zeroline: false,
    ...extra,
  };
}

/**
 * Draw or update a Plotly plot in place (Plotly.react reuses the existing one), with the
 * library its traces need (core/plotly.js: a 3-D trace waits for the gl3d bundle).
 * @param {HTMLElement} el
 * @param {object[]} data
 * @param {object} layout
 * @param {string} filename
 */
export function draw(el, data, layout, filename) {
  return withPlotly(el, data, async (Plotly) => {
    await Plotly.react(el, data, layout, plotConfig(filename));
    // react keeps the old size when only the element (not the window) was resized.
    const full = /** @type {any} */ (el)._fullLayout;
    if (full && (Math.abs(full.width - el.clientWidth) > 1 || Math.abs(full.height - el.clientHeight) > 1)) {
      await Plotly.Plots.resize(el);
    }
  });
}
