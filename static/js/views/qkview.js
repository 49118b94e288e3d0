// How one query's scores are built in one head: q, every key k_j, their elementwise products
// q ⊙ k_j as aligned heatmaps, and per key Σ(q ⊙ k_j), the score and the softmax weight, drawn
// on one <canvas> with the value (3 significant digits) of whatever is under the pointer. Past KEYS_MAX tokens it
// shows the TOP_KEYS keys with the largest weights (in text order) unless the reader asks for
// all. The canvas takes focus: the arrow keys move over the products (a row per key, a column
// per dimension, then the row's sum, score and weight), a live region reading what the tooltip
// shows; the keys' sums, scores and weights are also in a table. render(container, data, sel,
// callbacks).

import { sub } from "../core/compact.js";
import { el } from "../core/dom.js";
import { exact, readable, readableWeight } from "../core/numbers.js";
import { FONT, GRID, MASKED_GREY, SCORE_LUT, SELECTED, TEXT, TEXT_DIM, lutColor } from "../core/theme.js";
import { shownToken, spokenToken } from "../core/tokens.js";
import { describe, keyCursor } from "./access.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */
/**
 * @typedef {{scale: number, divide_by: number | null, scale_label: string,
 *   softcap: number | null}} ScoreRule how q · k becomes a score (× scale, or ÷ divide_by), and
 *   a score a weight (softmax, of c · tanh(score / c) with a soft-cap c): the trace's
 *   `attention`
 * @typedef {{tokens: string[], query: number, queries: NDArray, keys: NDArray, scores: NDArray,
 *   weights: NDArray, rule: ScoreRule, about?: string[], shown?: number[], causal?: boolean}} QueryKeyInput one
 *   head: queries and keys [n][hs], and the query's scores and weights [n] (masked scores
 *   -Infinity); about: what the numbers are, beyond the formula (headNotes); shown: the keys
 *   to show (original indices; default every one), e.g. without the hidden special tokens;
 *   causal: false for a bidirectional model (a masked key after the query is then outside the
 *   layer's window, not after it)
 */

/**
 * The rule of a trace: its `attention`, or (a toy trace) ÷ √head_dim unless unscaled.
 * @param {{attention?: ScoreRule | null, head_dim: number, config?: {scale?: boolean}}} meta
 * @returns {ScoreRule}
 */
export function scoreRule(meta) {
  if (meta.attention) return meta.attention;
  if (meta.config?.scale === false) return { scale: 1, divide_by: null, scale_label: "(unscaled)", softcap: null };
  const hd = meta.head_dim;
  return { scale: 1 / Math.sqrt(hd), divide_by: Math.sqrt(hd), scale_label: `÷ √${hd}`, softcap: null };
}

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
  const rule = data.rule;
  const scaled = (/** @type {number} */ sum) => (rule.divide_by ? sum / rule.divide_by : sum * rule.scale);
  const products = keys.map((k) => k.map((v, c) => q[c] * v));
  const sums = products.map((row) => row.reduce((a, b) => a + b, 0));
  const scoreRow = data.scores.data;
  const weightRow = data.weights.data;
  const scores = rows.map((j) => (scoreRow[j] === -Infinity ? null : scoreRow[j]));
  const weights = rows.map((j) => weightRow[j]);
  const masked = scores.map((s) => s === null);
  let mismatch = 0;
  scores.forEach((s, r) => {
    if (s !== null) mismatch = Math.max(mismatch, Math.abs(scaled(sums[r]) - s));
  });
  return { q, keys, hd, rule, scaled, products, sums, scores, weights, masked, mismatch, dtype };
}

/** The hover's and live region's weight: "weight = 0.997", "weight over 0.999". @param {string} said */
export const weightLine = (said) => (/^(over|under) /.test(said) ? `weight ${said}` : `weight = ${said}`);

/**
 * Each shown key's sum, score and weight as the canvas writes them beside its products, by
 * numbers.js's rules, as the hover reads them: 3 significant digits (readable), a weight short
 * of 1 never "1" nor one above 0 "0" (readableWeight: "over 0.999", "under 0.001"); a masked
 * key's "–" and "masked". The numbers table keeps its own digits.
 * @param {{sums: number[], scores: (number | null)[], weights: number[], masked: boolean[], dtype?: string}} d
 * @returns {{sum: string, score: string, weight: string}[]}
 */
export function keyNumbers(d) {
  return d.sums.map((sum, r) =>
    d.masked[r]
      ? { sum: "–", score: "masked", weight: "masked" }
      : {
          sum: readable(sum),
          score: readable(d.scores[r], d.dtype),
          weight: readableWeight(d.weights[r], d.dtype),
        },
  );
}

/**
 * The key rows to show: every key, or past KEYS_MAX the TOP_KEYS with the largest weights for
 * the query (and the query itself), in text order.
 * @param {QueryKeyInput} data @param {boolean} all
 */
export function keyRows(data, all) {
  const i = data.query;
  const every = data.shown ? [...data.shown] : data.tokens.map((_, j) => j);
  const n = every.length;
  if (all || n <= KEYS_MAX) return every;
  const w = data.weights.data;
  const top = every.sort((a, b) => w[b] - w[a] || a - b).slice(0, TOP_KEYS);
  if (!top.includes(i)) top.push(i);
  return top.sort((a, b) => a - b);
}

const LABEL_MAX = 150; // px for token labels, left
const SUM_W = 70; // "Σ q⊙k" column
const SCORE_W = 96; // "score (÷ √d)" column
const BAR_W = 150; // weight bars and their values
const BAR_MIN = 100; // the weights' column in a narrow card, its value beside the bar
const CBAR = 46; // a colour bar and its ticks
const GAP = 26; // between the blocks
const CELL_MIN = 6; // px a dimension's cell needs beside the numbers' columns
const NARROW_CELL = 2; // px a dimension's cell may shrink to in a narrow card
const WIDTH_MIN = 280; // px the view is drawn for at least

/** Row height and font for n rows. @param {number} n */
const rowSize = (n) => (n <= 8 ? 24 : n <= 16 ? 20 : n <= 32 ? 16 : n <= 64 ? 12 : 9);

/**
 * Where everything goes, in CSS pixels, for a card `width` wide. Side by side where the
 * heatmaps keep CELL_MIN px a dimension: each key's sum, score and weight right of its products
 * (nTop, the numbers' first row, is pTop). In a narrower card (a phone's 480 px) stacked: the
 * heatmaps take the card's width (down to NARROW_CELL px a dimension) and the numbers are a
 * block of their own below them, each key's row labelled again, so the canvas is no wider than
 * the card. `dimY`: the baseline of the heatmaps' axis title.
 * @param {number} rows @param {number} hd @param {number} width @param {number} labelW
 */
export function geometry(rows, hd, width, labelW) {
  const row = rowSize(rows);
  const left = labelW + 12;
  const right = SUM_W + SCORE_W + BAR_W;
  const beside = width - left - CBAR - right - 12;
  const stacked = beside < hd * CELL_MIN;
  const heatW = stacked ? Math.max(hd * NARROW_CELL, width - left - CBAR - 12) : beside;
  const cell = heatW / hd;
  const qTop = 22;
  const kTop = qTop + row + GAP;
  const pTop = kTop + rows * row + GAP;
  const dimY = pTop + rows * row + 26;
  const nTop = stacked ? dimY + 8 + GAP : pTop;
  const height = stacked ? nTop + rows * row + 12 : pTop + rows * row + 34;
  const x0 = left; // heatmaps
  const xBar = x0 + heatW + 6; // colour bars
  const xSum = stacked ? left : xBar + CBAR;
  const xScore = xSum + SUM_W;
  const xW = xScore + SCORE_W;
  const barW = stacked ? Math.max(BAR_MIN, Math.min(BAR_W, width - xW)) : BAR_W;
  const wide = Math.max(xW + barW, xBar + CBAR);
  return {
    row,
    left,
    heatW,
    cell,
    qTop,
    kTop,
    pTop,
    nTop,
    dimY,
    height,
    x0,
    xBar,
    xSum,
    xScore,
    xW,
    barW,
    stacked,
    width: wide,
  };
}

/**
 * The colour of v on the diverging scale over [-m, m].
 * @param {number} v @param {number} m
 */
const diverging = (v, m) => lutColor(SCORE_LUT, Math.round((Math.max(-1, Math.min(1, v / m)) + 1) * 127.5));

/**
 * Draw the query-key view of one head and query into container.
 * @param {HTMLElement} container
 * @param {QueryKeyInput} data
 * @param {{layer: number, head: number, allKeys?: boolean}} sel
 * @param {{onPick?: (j: number) => void, onAllKeys?: (all: boolean) => void}} [callbacks]
 */
export function render(container, data, sel, callbacks = {}) {
  // Tokens as drawn (spaces, newlines and bytes visible) and as the live region reads them.
  const spoken = data.tokens.map(spokenToken);
  data = { ...data, tokens: data.tokens.map(shownToken) };
  const n = data.shown ? data.shown.length : data.tokens.length;
  const i = data.query;
  const rows = keyRows(data, Boolean(sel.allKeys));
  const d = queryKeyData(data, rows);

  let root = /** @type {HTMLElement & {__qk?: any}} */ (container.firstElementChild);
  if (!root || !root.classList.contains("qk") || container.childElementCount !== 1) {
    root = el("div", { className: "qk" }, [
      el("div", { className: "qk-head" }),
      el("p", { className: "qk-keys" }),
      el("div", { className: "qk-scroll" }, [
        el("div", { className: "qk-plot" }, [
          el("canvas", { className: "qk-canvas" }),
          el("div", { className: "qk-tip", hidden: true, role: "tooltip" }),
        ]),
      ]),
      el("p", { className: "qk-note" }),
    ]);
    container.replaceChildren(root);
  }
  /** @type {HTMLElement} */ (root.querySelector(".qk-head")).replaceWith(
    header(data.tokens, sel.layer, sel.head, i, d, data.about ?? []),
  );
  const keysLine = /** @type {HTMLElement} */ (root.querySelector(".qk-keys"));
  if (n > KEYS_MAX) {
    const all = rows.length === n;
    const toggle = el("button", {
      type: "button",
      className: "qk-all",
      textContent: all ? `show the ${TOP_KEYS} strongest` : `show all ${n} keys`,
    });
    toggle.onclick = () => callbacks.onAllKeys?.(!all);
    keysLine.replaceChildren(
      all
        ? `All ${n} keys. `
        : `The ${rows.length} keys with the largest weights ` + `for this query, of ${n}, in text order. `,
      toggle,
    );
    keysLine.hidden = false;
  } else {
    keysLine.replaceChildren();
    keysLine.hidden = true;
  }
  const picks = callbacks.onPick ? "Click a key row to make that token the query. " : "";
  const off =
    d.mismatch > 1e-3 * Math.max(1, ...d.sums.map(Math.abs))
      ? ` Note: the model's scores differ from Σ ${d.rule.scale_label} by up to ${readable(d.mismatch)}.`
      : "";
  /** @type {HTMLElement} */ (root.querySelector(".qk-note")).textContent =
    `${picks}Hover any cell or number for its value. Colours: blue negative, red positive.${off}`;

  const plot = /** @type {HTMLElement} */ (root.querySelector(".qk-plot"));
  const canvas = /** @type {HTMLCanvasElement} */ (plot.querySelector("canvas"));
  const tip = /** @type {HTMLElement} */ (plot.querySelector(".qk-tip"));
  plot.dataset.query = String(i);
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  const font = Math.min(12, rowSize(rows.length) - 1);
  ctx.font = `${font}px ${FONT}`;
  const labels = rows.map((j) => data.tokens[j]);
  let labelW = 40;
  for (const s of labels) labelW = Math.max(labelW, ctx.measureText(s).width + 8);
  labelW = Math.min(LABEL_MAX, Math.ceil(labelW));
  const g = geometry(rows.length, d.hd, Math.max(WIDTH_MIN, plot.clientWidth || container.clientWidth || 800), labelW);
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(g.width * dpr);
  canvas.height = Math.round(g.height * dpr);
  canvas.style.width = `${g.width}px`;
  canvas.style.height = `${g.height}px`;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, g.width, g.height);

  const qk = maxAbs([d.q, ...d.keys]);
  const visible = d.products.filter((/** @type {number[]} */ _, /** @type {number} */ r) => !d.masked[r]);
  const pm = maxAbs(visible.length ? visible : [[0]]);
  // Cells: q, the keys, the products (masked keys grey).
  /** @param {number[]} values @param {number} y @param {number} m @param {boolean} grey */
  const cells = (values, y, m, grey) => {
    values.forEach((v, c) => {
      ctx.fillStyle = grey ? MASKED_GREY : diverging(v, m);
      ctx.fillRect(g.x0 + c * g.cell, y, Math.max(1, g.cell - 1), Math.max(1, g.row - 1));
    });
  };
  cells(d.q, g.qTop, qk, false);
  d.keys.forEach((/** @type {number[]} */ k, /** @type {number} */ r) => cells(k, g.kTop + r * g.row, qk, false));
  d.products.forEach((/** @type {number[]} */ p, /** @type {number} */ r) =>
    cells(p, g.pTop + r * g.row, pm, d.masked[r]),
  );

  // Titles of the blocks and columns.
  ctx.fillStyle = TEXT_DIM;
  ctx.font = `12px ${FONT}`;
  ctx.textBaseline = "alphabetic";
  ctx.textAlign = "left";
  /** The longest of the texts that fits the heatmaps' width. @param {string[]} texts */
  const fit = (texts) => texts.find((t) => ctx.measureText(t).width <= g.heatW) ?? texts[texts.length - 1];
  ctx.fillText(fit([`q · query ${data.tokens[i]} (token ${i + 1})`, "q"]), g.x0, g.qTop - 6);
  ctx.fillText(
    fit(
      rows.length === n
        ? ["k · every key", "k"]
        : [`k · the ${rows.length} keys with the largest weights`, `k · ${rows.length} strongest`, "k"],
    ),
    g.x0,
    g.kTop - 6,
  );
  ctx.fillText(fit(["q ⊙ k · elementwise products, one row per key", "q ⊙ k · products", "q ⊙ k"]), g.x0, g.pTop - 6);
  ctx.textAlign = "center";
  ctx.fillText("Σ q⊙k", g.xSum + SUM_W / 2, g.nTop - 6);
  ctx.fillText(d.rule.scale === 1 ? "score" : `score (${d.rule.scale_label})`, g.xScore + SCORE_W / 2, g.nTop - 6);
  ctx.textAlign = "left";
  ctx.fillText(fit(["softmax weight", "weight"]), g.xW, g.nTop - 6);
  ctx.textAlign = "center";
  const dims = fit([`dimension (0–${d.hd - 1}) of the head`, `dimension (0–${d.hd - 1})`, "dimension"]);
  ctx.fillText(dims, g.x0 + g.heatW / 2, g.dimY);

  // Row labels (the query's own in bold), the numbers, the weight bars.
  ctx.textBaseline = "middle";
  const wmax = Math.max(
    1e-9,
    ...d.weights.map((/** @type {number} */ w, /** @type {number} */ r) => (d.masked[r] ? 0 : w)),
  );
  ctx.textAlign = "right";
  ctx.fillStyle = TEXT;
  ctx.font = `${font}px ${FONT}`;
  ctx.fillText("q", g.x0 - 6, g.qTop + g.row / 2);
  rows.forEach((j, r) => {
    ctx.font = `${j === i ? "bold " : ""}${font}px ${FONT}`;
    for (const top of g.stacked ? [g.kTop, g.pTop, g.nTop] : [g.kTop, g.pTop])
      ctx.fillText(labels[r], g.x0 - 6, top + (r + 0.5) * g.row, labelW);
  });
  ctx.font = `${font}px ${FONT}`;
  // The numbers as the hover reads them (3 significant digits; a weight short of 1 never "1":
  // "over 0.999"); the bars leave room for the widest weight's words.
  const said = keyNumbers(d);
  const room = g.barW - Math.max(52, ...said.map((s) => Math.ceil(ctx.measureText(s.weight).width) + 8));
  rows.forEach((j, r) => {
    const y = g.nTop + (r + 0.5) * g.row;
    ctx.fillStyle = TEXT;
    ctx.textAlign = "right";
    ctx.fillText(said[r].sum, g.xSum + SUM_W - 8, y);
    ctx.fillText(said[r].score, g.xScore + SCORE_W - 8, y);
    const w = d.masked[r] ? 0 : d.weights[r];
    const len = (w / wmax) * room;
    ctx.fillStyle = j === i ? SELECTED : "#6baed6";
    ctx.fillRect(g.xW, y - g.row * 0.35, len, g.row * 0.7);
    ctx.fillStyle = TEXT;
    ctx.textAlign = "left";
    ctx.fillText(said[r].weight, g.xW + len + 4, y);
  });

  // Colour bars: q and k share one range, the products another.
  /** @param {number} top @param {number} h @param {number} m */
  const colourBar = (top, h, m) => {
    for (let y = 0; y < h; y++) {
      ctx.fillStyle = diverging(m * (1 - (2 * y) / Math.max(1, h - 1)), m);
      ctx.fillRect(g.xBar, top + y, 10, 1);
    }
    ctx.fillStyle = TEXT_DIM;
    ctx.font = `10px ${FONT}`;
    ctx.textAlign = "left";
    for (const [t, y] of [
      [m, top],
      [0, top + h / 2],
      [-m, top + h],
    ])
      ctx.fillText(readable(t), g.xBar + 13, y);
  };
  colourBar(g.qTop, g.kTop - g.qTop + rows.length * g.row, qk);
  colourBar(g.pTop, rows.length * g.row, pm);
  ctx.strokeStyle = GRID;
  ctx.strokeRect(g.x0 - 0.5, g.kTop - 0.5, g.heatW, rows.length * g.row);

  // What is under the pointer: [block, row, column].
  /** @param {MouseEvent} e @returns {null | {block: string, r: number, c: number}} */
  const at = (e) => {
    const b = canvas.getBoundingClientRect();
    const x = e.clientX - b.left;
    const y = e.clientY - b.top;
    const inHeat = x >= g.x0 && x < g.x0 + g.heatW;
    const c = Math.floor((x - g.x0) / g.cell);
    if (inHeat && y >= g.qTop && y < g.qTop + g.row) return { block: "q", r: 0, c };
    for (const [block, top] of /** @type {const} */ ([
      ["k", g.kTop],
      ["p", g.pTop],
    ])) {
      const r = Math.floor((y - top) / g.row);
      if (y >= top && r < rows.length && inHeat) return { block, r, c };
    }
    // A key's numbers: right of its products, or in their own block below (stacked).
    const r = Math.floor((y - g.nTop) / g.row);
    if (y >= g.nTop && r < rows.length && x >= g.xSum) return { block: "row", r, c: -1 };
    return null;
  };
  /** The tooltip's lines for what is under the pointer (`said`: the tokens as read aloud).
   * @param {{block: string, r: number, c: number}} h @param {string[]} [said] */
  const lines = (h, said = data.tokens) => {
    const who = (/** @type {number} */ j) => `${said[j]} (token ${j + 1})`;
    const ex = (/** @type {number | null} */ v) => readable(v, d.dtype);
    if (h.block === "q") return [`query ${who(i)} · dim ${h.c}`, `q = ${ex(d.q[h.c])}`];
    const j = rows[h.r];
    if (h.block === "k") return [`key ${who(j)} · dim ${h.c}`, `k = ${ex(d.keys[h.r][h.c])}`];
    if (h.block === "p" && d.masked[h.r]) {
      // A key after the query is masked by the causal rule; in a bidirectional model with a
      // window (ModernBERT's local layers), only by the window, as every key before it.
      const window = /** @type {{windows?: (number | null)[]}} */ (d.rule).windows?.[sel.layer] ?? null;
      const after = j > i && data.causal !== false;
      const why = after || window === null ? "after the query" : "outside this layer's window";
      return [`key ${who(j)}: masked (${why})`];
    }
    if (h.block === "p") {
      return [
        `key ${who(j)} · dim ${h.c}`,
        `q·k = ${ex(d.q[h.c])} × ${ex(d.keys[h.r][h.c])}`,
        `= ${readable(d.products[h.r][h.c])}`,
      ];
    }
    const cap = d.rule.softcap;
    const capped =
      cap && !d.masked[h.r]
        ? [
            `capped: ${cap} · tanh(score / ${cap}) = ${readable(cap * Math.tanh(/** @type {number} */ (d.scores[h.r]) / cap))}`,
          ]
        : [];
    return [
      `key ${who(j)}`,
      `Σ q⊙k = ${readable(d.sums[h.r])}`,
      `${d.rule.scale_label} = ${readable(d.masked[h.r] ? null : d.scaled(d.sums[h.r]))}`,
      `score (model) = ${ex(d.scores[h.r])}`,
      ...capped,
      weightLine(d.masked[h.r] ? "masked" : readableWeight(d.weights[h.r], d.dtype)),
    ];
  };
  canvas.onmousemove = (e) => {
    const h = at(e);
    tip.hidden = !h;
    canvas.style.cursor = h && h.block !== "q" && callbacks.onPick ? "pointer" : "";
    if (!h) return;
    tip.textContent = lines(h).join("\n");
    const b = canvas.getBoundingClientRect();
    tip.style.left = `${Math.max(0, Math.min(e.clientX - b.left + 14, g.width - 220))}px`;
    tip.style.top = `${e.clientY - b.top + 14}px`;
  };
  canvas.onmouseleave = () => {
    tip.hidden = true;
  };
  canvas.onclick = (e) => {
    const h = at(e);
    if (h && h.block !== "q" && callbacks.onPick) callbacks.onPick(rows[h.r]);
  };
  // The keyboard's path: a row per key; a column per dimension (the products), then the row's
  // sum, score and weight. The summary and the table: the keys' numbers.
  const top = d.masked.reduce(
    (/** @type {number} */ b, /** @type {boolean} */ m, /** @type {number} */ r) =>
      !m && (b < 0 || d.weights[r] > d.weights[b]) ? r : b,
    -1,
  );
  const text = describe(/** @type {HTMLElement} */ (root.querySelector(".qk-scroll")), {
    summary:
      top < 0
        ? `Query ${data.tokens[i]}: every key is masked.`
        : `Query ${data.tokens[i]} (token ${i + 1}): the largest weight goes to ${data.tokens[rows[top]]} ` +
          `(token ${rows[top] + 1}), ${readableWeight(d.weights[top])}, score ${readable(d.scores[top])}.`,
    table: {
      caption: `Query ${data.tokens[i]}: each key's sum, score and weight`,
      head: ["key", "Σ q⊙k", d.rule.scale === 1 ? "score" : `score (${d.rule.scale_label})`, "weight"],
      rows: rows.map((j, r) => [
        `${data.tokens[j]} (${j + 1})`,
        d.masked[r] ? "–" : exact(d.sums[r], d.dtype), // (the sum as its dtype holds it)
        d.masked[r] ? "masked" : exact(d.scores[r], d.dtype),
        d.masked[r] ? "masked" : exact(d.weights[r], d.dtype),
      ]),
    },
  });
  keyCursor(canvas, text.live, {
    rows: rows.length,
    cols: d.hd + 1,
    describedBy: text.summary.id,
    label:
      `Query ${spoken[i]}: q, every key, q ⊙ k, the scores and the weights. Arrow keys move ` +
      "over the keys (up, down) and the dimensions of their products (left, right), End to a key's " +
      `score and weight${callbacks.onPick ? "; Enter makes the key the query" : ""}.`,
    text: (r, c) => lines(c < d.hd ? { block: "p", r, c } : { block: "row", r, c: -1 }, spoken).join(", "),
    show: (r, c) => {
      tip.hidden = false;
      tip.textContent = lines(c < d.hd ? { block: "p", r, c } : { block: "row", r, c: -1 }).join("\n");
      const x = c < d.hd ? g.x0 + (c + 1) * g.cell + 8 : g.xSum;
      tip.style.left = `${Math.max(0, Math.min(x, g.width - 220))}px`;
      tip.style.top = `${(c < d.hd ? g.pTop : g.nTop) + (r + 1) * g.row + 6}px`;
    },
    hide: () => {
      tip.hidden = true;
    },
    pick: callbacks.onPick ? (r) => callbacks.onPick?.(rows[r]) : undefined,
  });
  // What is drawn, for tests: the rows, the numbers, the geometry, the tooltip of any place.
  root.__qk = {
    rows,
    ...d,
    geometry: g,
    tipAt: (/** @type {string} */ block, /** @type {number} */ r, /** @type {number} */ c) => lines({ block, r, c }),
  };
}

/**
 * What a head's queries and keys are, in words, from the trace's meta: after which norm and
 * rotation, which key/value head it shares, and which keys its layer's window hides.
 * @param {{heads: number, kv_heads?: number, rope?: {base: number, style: string,
 *   scaling?: string | null, rotary_dim?: number | null, local_base?: number | null,
 *   sections?: number[] | null} | null,
 *   attention?: {windows: (number | null)[], window_notes?: (string | null)[],
 *   windows_unread?: string | null, qk_norm: string} | null}} meta
 * @param {number} head
 * @param {number} [layer]
 * @returns {string[]}
 */
export function headNotes(meta, head, layer = 0) {
  const notes = [];
  const window = meta.attention?.windows?.[layer] ?? null;
  const norm = meta.attention?.qk_norm;
  if (norm === "head" || norm === "proj") {
    notes.push(
      `q and k are shown after the model's RMSNorm of ${norm === "head" ? "each head's vector" : "the whole projection"}` +
        `${meta.rope ? ", before the rotation" : ""}: their lengths are set by the norm's weights, not by the token.`,
    );
  }
  if (meta.rope) {
    const pairs =
      meta.rope.style === "halves"
        ? "coordinates i and i + d/2, as Hugging Face's Llama-style models"
        : "coordinates 2i and 2i + 1";
    const local = meta.rope.local_base != null && window !== null;
    const base = local ? /** @type {number} */ (meta.rope.local_base) : meta.rope.base;
    const part = meta.rope.rotary_dim
      ? ` Only the first ${meta.rope.rotary_dim} coordinates of each head turn; the rest pass as they are.`
      : "";
    const scaling =
      meta.rope.scaling && !local
        ? ` The frequencies are stretched by the checkpoint's "${meta.rope.scaling}" RoPE scaling.`
        : "";
    const sections = meta.rope.sections;
    notes.push(
      sections?.length
        ? `q and k are shown after the multimodal RoPE rotation (M-RoPE): pair i (${pairs}) turned by ` +
            `one of the token's ${sections.length} position indices × ${base.toLocaleString("en")}^(−2i/d), ` +
            `the pairs cut into sections of ${sections.join(", ")} (temporal, height, width): a picture's patches ` +
            `carry their row and column, so the score of a query and a key depends on how far apart they are ` +
            `in each.${part}${scaling}`
        : `q and k are shown after the RoPE rotation: pair i (${pairs}) turned by ` +
            `position × ${base.toLocaleString("en")}^(−2i/d)${local ? " (this sliding layer's own base)" : ""}. The score of a query and a key ` +
            `then depends on how far apart the two tokens are.${part}${scaling}`,
    );
  }
  if (window !== null) {
    // What the mask does, as the server says it (causal: the last tokens; bidirectional: those
    // on each side); a trace saved before it said so, in words true of both.
    const said = meta.attention?.window_notes?.[layer];
    notes.push(
      `This layer slides a window: ${said ?? `a query sees only the keys fewer than ${window.toLocaleString("en")} positions away, itself included`}.`,
    );
  }
  const unread = meta.attention?.windows_unread;
  if (unread) {
    // A model on NDIF whose masks could not be read here: its windows are unknown, not none.
    notes.push(`This layer's sliding window, if it has one, was ${unread}.`);
  }
  const kv = meta.kv_heads ?? meta.heads;
  if (kv < meta.heads) {
    const group = meta.heads / kv;
    const g = Math.floor(head / group);
    const first = g * group + 1;
    notes.push(
      `Grouped-query attention: this head reads key/value head ${g + 1} of ${kv}, shared ` +
        `by query heads ${first}–${first + group - 1}: their keys and values are the same numbers.`,
    );
  }
  if (/** @type {{backend?: string}} */ (meta).backend === "transformers") {
    notes.push(
      "Served through transformers: q and k are what the model's own code handed its attention " +
        "(after any rotary embedding and q/k norm it applies), recorded through transformers' AttentionInterface.",
    );
  }
  if (/** @type {{backend?: string}} */ (meta).backend === "ndif") {
    notes.push(
      "Run on an NDIF deployment: q and k are what the model's own code handed its attention function " +
        "there (after any rotary embedding and q/k norm it applies), read through nnsight; the weights " +
        "are recomputed here from them by the rule checked against the model's own output.",
    );
  }
  return notes;
}

/**
 * @param {string[]} tokens @param {number} l @param {number} h @param {number} i @param {any} d
 * @param {string[]} about
 */
function header(tokens, l, h, i, d, about) {
  const title = el("p", { className: "qk-title" }, [
    "Query ",
    el("span", { className: "qk-token", textContent: tokens[i] }),
    el("span", { className: "qk-dim", textContent: ` token ${i + 1} · layer ${l + 1}, head ${h + 1}` }),
  ]);
  const cap = d.rule.softcap;
  const weighs = cap
    ? ` · weight = softmax over the keys of the soft-capped scores, ${cap} · tanh(score / ${cap})`
    : " · weight = softmax of the scores over the keys";
  const formula = el("p", { className: "qk-formula", textContent: `score = Σ qₖ·kₖ ${d.rule.scale_label}` }, [
    el("span", { className: "qk-dim", textContent: weighs }),
  ]);
  return el("div", { className: "qk-head" }, [
    title,
    formula,
    ...about.map((text) => el("p", { className: "qk-about", textContent: text })),
  ]);
}

/**
 * The view's input from a part of a trace holding one layer and one head: queries and keys
 * [1][1][n][hs], scores and attentions [1][1][n][n], or only the query's row [1][1][1][n].
 * @param {string[]} tokens
 * @param {Record<string, NDArray>} arrays
 * @param {number} query the original index of the query token
 * @param {ScoreRule} rule
 * @returns {QueryKeyInput}
 */
export function headInput(tokens, arrays, query, rule) {
  const row = (/** @type {NDArray} */ a) => sub(a, 0, 0, a.shape[2] === 1 ? 0 : query);
  return {
    tokens,
    query,
    rule,
    queries: sub(arrays.queries, 0, 0),
    keys: sub(arrays.keys, 0, 0),
    scores: row(arrays.scores),
    weights: row(arrays.attentions),
  };
}

/**
 * In place of the view, for a model whose traces have no queries or keys (served through
 * transformers, its attention outside transformers' AttentionInterface: BLOOM's ALiBi): which
 * views are unavailable and why, and what the other views still show.
 * @param {HTMLElement} container
 * @param {{model?: string, unavailable?: Record<string, string>}} meta
 */
export function renderUnavailable(container, meta) {
  const reason = (meta.unavailable?.queries ?? "").replace(/^queries: /, "");
  container.replaceChildren(
    el("div", { className: "qk qk-unavailable", role: "note" }, [
      el("p", { className: "qk-title", textContent: "The query-key view is not available for this model." }),
      el("p", { textContent: `Why: ${reason || `model ${meta.model} records no queries or keys`}.` }),
      el("p", {
        className: "qk-dim",
        textContent:
          "Unavailable: this view (q, k, their products, the scores) " +
          "and the arrays queries, keys, values and scores. The model view, the head view and generation show the " +
          "model's own attention weights, and the trajectories its hidden states, as transformers computed them.",
      }),
    ]),
  );
}
