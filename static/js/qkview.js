// How one query's scores are built in one head: q, every key k_j, their elementwise products
// q ⊙ k_j as aligned heatmaps, and per key Σ(q ⊙ k_j), the score and the softmax weight. Past
// KEYS_MAX tokens it shows the TOP_KEYS keys with the largest weights (in text order) unless
// the reader asks for all. render(container, data, sel, callbacks).

import { sub } from "./compact.js";
import { el } from "./dom.js";
import { exact, fmt } from "./numbers.js";
import { MASKED_GREY, SCORE_SCALE, SELECTED, TEXT_DIM, baseLayout, draw, plotText, tokenAxis } from "./theme.js";

/** @typedef {import("./types.js").NDArray} NDArray */
/**
 * @typedef {{tokens: string[], query: number, queries: NDArray, keys: NDArray, scores: NDArray,
 *   weights: NDArray, scaled: boolean}} QueryKeyInput one head: queries and keys [n][hs], and
 *   the query's scores and weights [n] (masked scores -Infinity)
 */

export const KEYS_MAX = 64;
export const TOP_KEYS = 48;

const maxAbs = (/** @type {number[][]} */ rows) => {
  let m = 1e-9;
  for (const row of rows) for (const v of row) if (v !== null && Math.abs(v) > m) m = Math.abs(v);
  return m;
};

/**
 * Everything the view shows for the query, over the key rows `rows` (original indices).
 * @param {QueryKeyInput} data @param {number[]} rows
 */
export function queryKeyData(data, rows) {
  const i = data.query;
  const dtype = data.queries.dtype;
  const q = Array.from(sub(data.queries, i).data);
  const keys = rows.map((j) => Array.from(sub(data.keys, j).data));
  const hd = q.length;
  // Toy traces may be unscaled (config.scale false); model traces always divide by √head_dim.
  const scaled = data.scaled;
  const divisor = scaled ? Math.sqrt(hd) : 1;
  const products = keys.map((k) => k.map((v, c) => q[c] * v));
  const sums = products.map((row) => row.reduce((a, b) => a + b, 0));
  const scoreRow = data.scores.data;
  const weightRow = data.weights.data;
  const scores = rows.map((j) => (scoreRow[j] === -Infinity ? null : scoreRow[j]));
  const weights = rows.map((j) => weightRow[j]);
  const masked = scores.map((s) => s === null);
  let mismatch = 0;
  scores.forEach((s, r) => {
    if (s !== null) mismatch = Math.max(mismatch, Math.abs(sums[r] / divisor - s));
  });
  return { q, keys, hd, scaled, divisor, products, sums, scores, weights, masked, mismatch, dtype };
}

/**
 * The key rows to show: every key, or past KEYS_MAX the TOP_KEYS with the largest weights for
 * the query (and the query itself), in text order.
 * @param {QueryKeyInput} data @param {boolean} all
 */
export function keyRows(data, all) {
  const i = data.query;
  const n = data.tokens.length;
  const every = Array.from({ length: n }, (_, j) => j);
  if (all || n <= KEYS_MAX) return every;
  const w = data.weights.data;
  const top = every.sort((a, b) => w[b] - w[a] || a - b).slice(0, TOP_KEYS);
  if (!top.includes(i)) top.push(i);
  return top.sort((a, b) => a - b);
}

/**
 * @param {any[][]} z @param {string} yaxis @param {string} coloraxis @param {any[][]} customdata
 * @param {string} hovertemplate @param {string} uid
 */
function heat(z, yaxis, coloraxis, customdata, hovertemplate, uid) {
  return {
    type: "heatmap", uid, z, x: z[0].map((_, c) => c), y: z.map((_, r) => r), xaxis: "x", yaxis,
    coloraxis, customdata, hovertemplate, xgap: 1, ygap: 1, hoverongaps: false,
  };
}

/** Columns from the right in pixels (bars, score, Σ, colour bar), the heatmaps take the rest. */
/** @param {number} width */
function columns(width) {
  const f = (px) => px / Math.max(320, width - 116);
  const bars = [1 - f(140), 1];
  const score = [bars[0] - f(104), bars[0] - f(8)];
  const sums = [score[0] - f(76), score[0] - f(4)];
  const bar = sums[0] - f(62);
  return { heat: [0, bar - f(10)], bar, sums, score, bars };
}

/** Row blocks stacked top to bottom (q, keys, products): [lo, hi] domains and the height. */
/** @param {number} n @param {number} width */
function geometry(n, width) {
  const row = n <= 8 ? 26 : n <= 16 ? 20 : n <= 32 ? 14 : n <= 64 ? 10 : 8;
  const gap = 34;
  const top = 34;
  const bottom = 40;
  const body = (1 + 2 * n) * row + 2 * gap;
  const height = top + body + bottom;
  const frac = (px) => px / body;
  const q = [1 - frac(row), 1];
  const k = [q[0] - frac(gap + n * row), q[0] - frac(gap)];
  const p = [0, frac(n * row)];
  return { height, q, k, p, margin: { t: top, b: bottom }, cols: columns(width) };
}

const TOKEN = "<b>%{customdata[0]}</b>";

/** @param {string[]} tokens @param {number} i @param {number[]} rows @param {any} d */
function traces(tokens, i, rows, d) {
  const n = rows.length;
  const toks = tokens.map(plotText);
  const who = (/** @type {number} */ j) => `${toks[j]} (${j})`;
  const ex = (/** @type {number | null} */ v) => exact(v, d.dtype);
  const qRow = heat([d.q], "y", "coloraxis", [d.q.map((/** @type {number} */ v) => [who(i), ex(v)])],
    `query ${TOKEN} · dim %{x}<br>q = %{customdata[1]}<extra></extra>`, "q");
  const kRows = heat(d.keys, "y2", "coloraxis",
    d.keys.map((/** @type {number[]} */ row, /** @type {number} */ r) => row.map((v) => [who(rows[r]), ex(v)])),
    `key ${TOKEN} · dim %{x}<br>k = %{customdata[1]}<extra></extra>`, "k");
  const pRows = heat(d.products.map((/** @type {number[]} */ row, /** @type {number} */ r) => (d.masked[r] ? row.map(() => null) : row)),
    "y3", "coloraxis2",
    d.products.map((/** @type {number[]} */ row, /** @type {number} */ r) => row.map((v, c) => [who(rows[r]),
      `${ex(d.q[c])} × ${ex(d.keys[r][c])}`, exact(v)])),
    `key ${TOKEN} · dim %{x}<br>q·k = %{customdata[1]}<br>= %{customdata[2]}<extra></extra>`, "qk");
  /** @type {object[]} */
  const out = [qRow, kRows, pRows];
  if (d.masked.some(Boolean)) {
    out.push({
      type: "heatmap", uid: "masked", z: d.masked.map((/** @type {boolean} */ m) => d.q.map(() => (m ? 1 : null))),
      x: d.q.map((/** @type {number} */ _, /** @type {number} */ c) => c), y: rows.map((_, r) => r),
      xaxis: "x", yaxis: "y3",
      colorscale: [[0, MASKED_GREY], [1, MASKED_GREY]], showscale: false, xgap: 1, ygap: 1,
      hoverongaps: false, customdata: rows.map((j) => d.q.map(() => [who(j)])),
      hovertemplate: `key ${TOKEN}: masked (after the query)<extra></extra>`,
    });
  }
  const ys = rows.map((_, r) => r);
  const info = rows.map((j, r) => [who(j), exact(d.sums[r]), exact(d.masked[r] ? null : d.sums[r] / d.divisor),
    ex(d.scores[r]), d.masked[r] ? "masked" : ex(d.weights[r])]);
  const div = d.scaled ? `÷ √${d.hd}` : "(unscaled)";
  const hover = `key ${TOKEN}<br>Σ q⊙k = %{customdata[1]}<br>${div} = %{customdata[2]}` +
    "<br>score (model) = %{customdata[3]}<br>weight = %{customdata[4]}<extra></extra>";
  const size = n <= 32 ? 12 : n <= 64 ? 9 : 7;
  const column = (/** @type {string} */ uid, /** @type {string} */ xaxis, /** @type {string[]} */ text) => ({
    type: "scatter", mode: "text", uid, x: ys.map(() => 0), y: ys, xaxis, yaxis: "y3", text,
    customdata: info, hovertemplate: hover, textfont: { size }, cliponaxis: false,
  });
  out.push(
    column("sums", "x2", ys.map((r) => (d.masked[r] ? "–" : fmt(d.sums[r], 2)))),
    column("scores", "x3", ys.map((r) => (d.masked[r] ? "masked" : fmt(d.scores[r], 3)))),
    {
      type: "bar", uid: "weights", orientation: "h", xaxis: "x4", yaxis: "y3", y: ys,
      x: ys.map((r) => (d.masked[r] ? 0 : d.weights[r])),
      text: ys.map((r) => (d.masked[r] ? "masked" : fmt(d.weights[r], 3))),
      textposition: "outside", cliponaxis: false, textfont: { size },
      marker: { color: rows.map((j) => (j === i ? SELECTED : "#6baed6")) },
      customdata: info, hovertemplate: hover,
    },
  );
  return out;
}

/** @param {string[]} tokens @param {number} i @param {number[]} rows @param {any} d @param {any} g */
function layoutFor(tokens, i, rows, d, g) {
  const n = rows.length;
  const labels = rows.map((j) => tokens[j]);
  const ticks = rows.map((j) => (j === i ? `<b>${plotText(tokens[j])}</b>` : plotText(tokens[j])));
  const rowsAxis = (/** @type {number[]} */ domain) => ({
    ...tokenAxis(labels, { ticktext: ticks }), domain, anchor: "x", autorange: "reversed",
    ticks: "", automargin: true,
  });
  const hidden = (/** @type {number[]} */ domain) => ({ domain, anchor: "y3", visible: false, fixedrange: true, range: [-1, 1] });
  const wmax = Math.max(1e-9, ...d.weights.map((/** @type {number} */ w, /** @type {number} */ r) => (d.masked[r] ? 0 : w)));
  const head = (/** @type {string} */ x, /** @type {string} */ text, at = 0.5) => ({ xref: x, yref: "y3 domain", x: at, xanchor: at ? "center" : "left",
    y: 1, yanchor: "bottom", yshift: 4, text, showarrow: false, font: { size: 12, color: TEXT_DIM } });
  const label = (/** @type {string} */ yref, /** @type {string} */ text) => ({ xref: "x domain", yref, x: 0, y: 1, xanchor: "left",
    yanchor: "bottom", yshift: 3, text, showarrow: false, font: { size: 12, color: TEXT_DIM } });
  const bar = (/** @type {number} */ y, /** @type {number} */ len) => ({ thickness: 10, len, lenmode: "fraction", y, yanchor: "top",
    x: g.cols.bar, xanchor: "left", outlinewidth: 0, tickfont: { size: 10 } });
  const qk = maxAbs([d.q, ...d.keys]);
  const pm = maxAbs(d.products.filter((/** @type {number[]} */ _, /** @type {number} */ r) => !d.masked[r]));
  return baseLayout({
    height: g.height,
    margin: { l: 70, r: 46, t: g.margin.t, b: g.margin.b },
    showlegend: false,
    hovermode: "closest",
    xaxis: { domain: g.cols.heat, anchor: "y3", automargin: true, showgrid: false, zeroline: false,
      ticks: "", tickfont: { size: 10 },
      title: { text: `dimension (0–${d.hd - 1}) of the head`, font: { size: 12 }, standoff: 4 } },
    yaxis: { domain: g.q, anchor: "x", tickmode: "array", tickvals: [0], ticktext: ["q"],
      fixedrange: true, showgrid: false, zeroline: false },
    yaxis2: rowsAxis(g.k),
    yaxis3: rowsAxis(g.p),
    xaxis2: hidden(g.cols.sums),
    xaxis3: hidden(g.cols.score),
    xaxis4: { domain: g.cols.bars, anchor: "y3", range: [0, wmax * 1.25], visible: false, fixedrange: true },
    bargap: n <= 32 ? 0.25 : 0.1,
    coloraxis: { colorscale: SCORE_SCALE, cmin: -qk, cmax: qk,
      colorbar: bar(g.q[1], g.q[1] - g.k[0]) },
    coloraxis2: { colorscale: SCORE_SCALE, cmin: -pm, cmax: pm,
      colorbar: bar(g.p[1], g.p[1] - g.p[0]) },
    annotations: [
      label("y domain", `<b>q</b> · query ${plotText(tokens[i])} (${i})`),
      label("y2 domain", rows.length === tokens.length ? "<b>k</b> · every key"
        : `<b>k</b> · the ${rows.length} keys with the largest weights`),
      label("y3 domain", "<b>q ⊙ k</b> · elementwise products, one row per key"),
      head("x2 domain", "Σ q⊙k"),
      head("x3 domain", d.scaled ? `score (÷ √${d.hd})` : "score"),
      head("x4 domain", "softmax weight", 0),
    ],
  });
}

/** @param {string[]} tokens @param {number} l @param {number} h @param {number} i @param {any} d */
function header(tokens, l, h, i, d) {
  const title = el("p", { className: "qk-title" }, ["Query ", el("span", { className: "qk-token", textContent: tokens[i] }),
    el("span", { className: "qk-dim", textContent: ` token ${i} · layer ${l + 1}, head ${h + 1}` })]);
  const formula = el("p", { className: "qk-formula",
    textContent: d.scaled ? `score = Σ qₖ·kₖ / √${d.hd}` : "score = Σ qₖ·kₖ (unscaled)" },
  [el("span", { className: "qk-dim", textContent: " · weight = softmax of the scores over the keys" })]);
  return el("div", { className: "qk-head" }, [title, formula]);
}

/**
 * Draw the query-key view of one head and query into container.
 * @param {HTMLElement} container
 * @param {QueryKeyInput} data
 * @param {{layer: number, head: number, allKeys?: boolean}} sel
 * @param {{onPick?: (j: number) => void, onAllKeys?: (all: boolean) => void}} [callbacks]
 */
export function render(container, data, sel, callbacks = {}) {
  const n = data.tokens.length;
  const i = data.query;
  const rows = keyRows(data, Boolean(sel.allKeys));
  const d = queryKeyData(data, rows);

  let root = /** @type {HTMLElement & {_rows?: number[]}} */ (container.firstElementChild);
  if (!root || !root.classList.contains("qk") || container.childElementCount !== 1) {
    const plot = el("div", { className: "qk-plot", role: "img" });
    root = el("div", { className: "qk" }, [el("div", { className: "qk-head" }),
      el("p", { className: "qk-keys" }), el("div", { className: "qk-scroll" }, [plot]), el("p", { className: "qk-note" })]);
    container.replaceChildren(root);
  }
  const plot = /** @type {HTMLElement & {_qkPick?: any, _qkBound?: boolean, _rows?: number[], on?: any}} */ (root.querySelector(".qk-plot"));
  const g = geometry(rows.length, plot.clientWidth || container.clientWidth || 800);
  /** @type {HTMLElement} */ (root.querySelector(".qk-head")).replaceWith(header(data.tokens, sel.layer, sel.head, i, d));
  const keysLine = /** @type {HTMLElement} */ (root.querySelector(".qk-keys"));
  if (n > KEYS_MAX) {
    const all = rows.length === n;
    const toggle = el("button", { type: "button", className: "qk-all",
      textContent: all ? `show the ${TOP_KEYS} strongest` : `show all ${n} keys` });
    toggle.onclick = () => callbacks.onAllKeys?.(!all);
    keysLine.replaceChildren(all ? `All ${n} keys. ` : `The ${rows.length} keys with the largest weights ` +
      `for this query, of ${n}, in text order. `, toggle);
    keysLine.hidden = false;
  } else {
    keysLine.replaceChildren();
    keysLine.hidden = true;
  }
  plot.setAttribute("aria-label", `Query ${data.tokens[i]}: q, keys, q ⊙ k, scores and weights`);
  plot.style.height = `${g.height}px`;
  plot.dataset.query = String(i);
  const picks = callbacks.onPick ? "Click a key row to make that token the query. " : "";
  const off = d.mismatch > 1e-3 * Math.max(1, ...d.sums.map(Math.abs))
    ? ` Note: the model's scores differ from Σ/√d by up to ${fmt(d.mismatch, 4)}.` : "";
  /** @type {HTMLElement} */ (root.querySelector(".qk-note")).textContent =
    `${picks}Hover any cell or number for its exact value. Colours: blue negative, red positive.${off}`;

  plot._qkPick = callbacks.onPick || null;
  plot._rows = rows;
  return draw(plot, traces(data.tokens, i, rows, d), layoutFor(data.tokens, i, rows, d, g), "attnviz-query-key").then(() => {
    if (plot._qkBound) return;
    plot._qkBound = true;
    plot.on("plotly_click", (/** @type {any} */ ev) => {
      const pt = ev && ev.points && ev.points[0];
      if (!pt || !plot._qkPick || pt.data.uid === "q") return;
      const r = Number(pt.y);
      if (Number.isInteger(r) && plot._rows) plot._qkPick(plot._rows[r]);
    });
  });
}

/**
 * The view's input from a part of a trace holding one layer and one head: queries and keys
 * [1][1][n][hs], scores and attentions [1][1][n][n], or only the query's row [1][1][1][n].
 * @param {string[]} tokens
 * @param {Record<string, NDArray>} arrays
 * @param {number} query the original index of the query token
 * @param {boolean} scaled
 * @returns {QueryKeyInput}
 */
export function headInput(tokens, arrays, query, scaled) {
  const row = (/** @type {NDArray} */ a) => sub(a, 0, 0, a.shape[2] === 1 ? 0 : query);
  return {
    tokens, query, scaled,
    queries: sub(arrays.queries, 0, 0), keys: sub(arrays.keys, 0, 0),
    scores: row(arrays.scores), weights: row(arrays.attentions),
  };
}
