// Shared look of every plot, colours, and number formatting.

export const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';

// Tableau 10: distinct, readable on white.
const PALETTE = ["#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1",
  "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac"];
export const tokenColor = (i) => PALETTE[i % PALETTE.length];

export const WEIGHT_SCALE = [[0, "#f7fbff"], [0.2, "#c6dbef"], [0.45, "#6baed6"],
  [0.7, "#2171b5"], [1, "#08306b"]];
export const SCORE_SCALE = [[0, "#2166ac"], [0.25, "#92c5de"], [0.5, "#f7f7f7"],
  [0.75, "#f4a582"], [1, "#b2182b"]];
export const MASKED_GREY = "#c9ccd1";

export function baseLayout(extra = {}) {
  return {
    font: { family: FONT, size: 13, color: "#1d2330" },
    paper_bgcolor: "#ffffff",
    plot_bgcolor: "#ffffff",
    margin: { l: 60, r: 20, t: 36, b: 50 },
    hoverlabel: { font: { family: FONT, size: 13 } },
    ...extra,
  };
}

export function plotConfig(filename) {
  return {
    responsive: true,
    displaylogo: false,
    modeBarButtonsToRemove: ["sendDataToCloud", "lasso2d", "select2d"],
    toImageButtonOptions: { format: "png", filename, scale: 2 },
  };
}

/** A short display of a number (2 decimals by default), never "-0.00". */
export function fmt(v, digits = 2) {
  if (v === null || v === undefined) return "–";
  const s = Number(v).toFixed(digits);
  return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
}

/** The full value, as the API sent it (JSON numbers round-trip exactly in JS). */
export const exact = (v) => (v === null || v === undefined ? "masked" : String(v));

/** User text for a Plotly label: Plotly reads a little HTML there, so escape it to show it as is. */
export function plotText(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Tick labels for token indices, smaller when there are many. */
export function tokenAxis(tokens, extra = {}) {
  const n = tokens.length;
  const size = n <= 12 ? 13 : n <= 24 ? 11 : n <= 40 ? 9 : 7;
  return {
    tickmode: "array",
    tickvals: tokens.map((_, i) => i),
    ticktext: tokens.map(plotText),
    tickfont: { size },
    showgrid: false,
    zeroline: false,
    ...extra,
  };
}

/** Draw or update a plot in place (Plotly.react reuses the existing one). */
export async function draw(el, data, layout, filename) {
  await window.Plotly.react(el, data, layout, plotConfig(filename));
  // react keeps the old size when only the element (not the window) was resized.
  const full = el._fullLayout;
  if (full && (Math.abs(full.width - el.clientWidth) > 1 || Math.abs(full.height - el.clientHeight) > 1)) {
    await window.Plotly.Plots.resize(el);
  }
}
