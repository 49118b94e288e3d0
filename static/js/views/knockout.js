// The Knock-out view: what knocking heads out changed, beside the clean run. A table of every
// position (its token, the token that comes next, the loss -ln p(next) clean and knocked out
// and the change, the top prediction clean and knocked out, changed ones marked) and a
// difference heatmap of one later head's attention (knocked out - clean) on a diverging colour
// scale, with its text alternative and keyboard path (access.js). Every number is the server's
// (the top_k part's target_probs and ids, the attentions part of each run); this only
// subtracts. render(container, data, selection, callbacks).

import { el, sizeCanvas } from "../core/dom.js";
import { exactChange, readablePercent, readableProse, readableSigned, readableWeight } from "../core/numbers.js";
import { FONT, GRID, SCORE_LUT, TEXT, TEXT_DIM } from "../core/theme.js";
import { quotedToken, shownToken, spokenToken } from "../core/tokens.js";
import { describe, keyCursor, matrixTable } from "./access.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */

const TABLE_MAX = 400; // heatmap cells with a numbers table; more get the summary line only
const MAX_SIDE = 520;
const BAR = 70;

/**
 * One run's predictions: the probability of the token that comes next at each position (0
 * where none does), and the top token's id and probability.
 * @typedef {{target: NDArray, ids: NDArray, probs: NDArray, k: number,
 *   vocab: Record<string, string>}} Predictions
 */

/**
 * What the view draws.
 * @typedef {object} KnockData
 * @property {string[]} tokens the text's tokens
 * @property {string} what the heads knocked out, in words ("layer 1 head 3 (zero)")
 * @property {{clean: Predictions, knocked: Predictions} | null} predictions null: the model
 *   predicts no next token
 * @property {string} [noPredictions] why there are none
 * @property {{layer: number, head: number, clean: NDArray, knocked: NDArray} | null} diff one
 *   later head's attention [n][n] in each run (0-based layer and head); null when no layer
 *   comes after the first one knocked out
 * @property {string | null} [noDiff] why there is no attention to compare (diff null)
 * @property {number[]} [moved] how far each token's output (last hidden state) moved, as a
 *   share of its clean length
 */

/** -ln p, the loss of a position whose next token has probability p. @param {number} p */
export const lossOf = (p) => -Math.log(p);

/**
 * The loss rows: each position that has a next token, its loss clean and knocked out, and the
 * top prediction of each run.
 * @param {KnockData} data
 */
export function lossRows(data) {
  const pr = data.predictions;
  if (!pr) return [];
  const n = data.tokens.length;
  const top = (/** @type {Predictions} */ r, /** @type {number} */ i) => ({
    id: r.ids.data[i * r.k],
    label: r.vocab[String(r.ids.data[i * r.k])] ?? "?",
    prob: r.probs.data[i * r.k],
    dtype: r.probs.dtype,
  });
  const rows = [];
  for (let i = 0; i + 1 < n; i++) {
    const clean = lossOf(pr.clean.target.data[i]);
    const knocked = lossOf(pr.knocked.target.data[i]);
    rows.push({
      i,
      token: data.tokens[i],
      next: data.tokens[i + 1],
      clean,
      knocked,
      change: knocked - clean,
      topClean: top(pr.clean, i),
      topKnocked: top(pr.knocked, i),
    });
  }
  return rows;
}

/**
 * The largest change of the difference (knocked out - clean): its cell and value.
 * @param {NDArray} clean @param {NDArray} knocked
 */
export function largestChange(clean, knocked) {
  let best = 0;
  let at = 0;
  for (let p = 0; p < clean.data.length; p++) {
    const d = knocked.data[p] - clean.data[p];
    if (Math.abs(d) > Math.abs(best)) [best, at] = [d, p];
  }
  const n = clean.shape[1];
  return { i: Math.floor(at / n), j: at % n, value: best };
}

/**
 * The size of a change of attention weight in the view's text (its summary, labels, live region
 * and tooltip), by numbers.js's rules: 3 significant digits, under 0.001 "about 0.00008", never
 * "1" short of it ("over 0.999"). @param {number} a
 */
const size = (a) => (a > 0.999 && a < 1 ? readableWeight(a) : readableProse(a));
/** A change of attention weight, signed: "+0.4", "about −0.00008". @param {number} v */
const change = (v) => readableSigned(v, size);

/**
 * A probability or weight in the view, never "1" short of it nor "0" above it (readableWeight);
 * a float32 ("F32") read as the API spells it. @param {number} p @param {string} [dtype]
 */
const prob = (p, dtype) => readableWeight(p, dtype);

/**
 * Which heads are knocked out and how, as a person says it (issue 41: never the setting's
 * identifier): "layer 1 head 2 by zeroing its output", "layer 1 head 2, layer 2 head 4 by
 * replacing their outputs with their means over the text".
 * @param {{layer: number, head: number}[]} heads @param {string} mode "zero", "mean" or "patch"
 * @param {string | null} [source] patch's other text
 */
export function knockedWords(heads, mode, source = "") {
  const one = heads.length === 1;
  const its = one ? "its" : "their";
  const outputs = one ? "output" : "outputs";
  const how =
    mode === "zero"
      ? `by zeroing ${its} ${outputs}`
      : mode === "mean"
        ? `by replacing ${its} ${outputs} with ${its} ${one ? "mean" : "means"} over the text`
        : mode === "patch"
          ? `by replacing ${its} ${outputs} with ${its} ${outputs} on “${source ?? ""}”`
          : `(${mode})`;
  return `${heads.map((a) => `layer ${a.layer + 1} head ${a.head + 1}`).join(", ")} ${how}`;
}

/**
 * The one-line summary: the mean loss clean -> knocked out, how many top predictions changed,
 * and the largest attention change in the compared head.
 * @param {KnockData} data
 */
export function summaryText(data) {
  const rows = lossRows(data);
  const parts = [`Knocked out ${data.what}.`];
  if (rows.length) {
    const mean = (/** @type {(r: typeof rows[0]) => number} */ f) => rows.reduce((s, r) => s + f(r), 0) / rows.length;
    const c = mean((r) => r.clean);
    const k = mean((r) => r.knocked);
    const changed = rows.filter((r) => r.topClean.id !== r.topKnocked.id).length;
    parts.push(
      `Mean loss ${readableProse(c)} → ${readableProse(k)} (${readableSigned(k - c, readableProse)}) over ${rows.length} positions; ` +
        `${changed} of ${rows.length} top predictions changed.`,
    );
  }
  if (data.diff) parts.push(changeText(data));
  if (data.moved?.length) parts.push(movedText(data));
  return parts.join(" ");
}

/**
 * Where the output moved most, in words, its share of the output's length as a whole
 * percentage (readablePercent: "under 1%", never "0%" for a move that is not none).
 * @param {KnockData} data
 */
export function movedText(data) {
  const m = /** @type {number[]} */ (data.moved);
  const at = m.indexOf(Math.max(...m));
  return m[at] === 0
    ? "No token's output changed."
    : `The output moved most at ${quotedToken(data.tokens[at])}: by ${readablePercent(m[at])} of its length.`;
}

/**
 * How far each token's output moved, a row per token, each share as the summary's sentence says
 * it (readablePercent: a whole percentage, "under 1%" for a move that is not none, "over 99%"
 * short of all of it): a list read as prose, its exact share kept as the row's `value`.
 * @param {KnockData} data
 * @returns {{token: string, said: string, value: number}[]}
 */
export function movedRows(data) {
  return (data.moved ?? []).map((v, i) => ({ token: shownToken(data.tokens[i]), said: readablePercent(v), value: v }));
}

/**
 * How far each token's output moved: movedRows in a table behind a <details>.
 * @param {KnockData} data
 */
function movedTable(data) {
  return el("details", { className: "ko-moved" }, [
    el("summary", {}, ["How far each token's output moved"]),
    el(
      "div",
      { className: "table-scroll", tabIndex: 0, role: "region", "aria-label": "How far each token's output moved" },
      [
        el("table", { className: "data-table" }, [
          el("caption", {
            className: "sr-only",
            textContent: "Each token's output (its last hidden state): |knocked out − clean| as a share of |clean|",
          }),
          el("thead", {}, [
            el("tr", {}, [
              el("th", { scope: "col", textContent: "#" }),
              el("th", { scope: "col", textContent: "token" }),
              el("th", { scope: "col", textContent: "moved (% of its length)" }),
            ]),
          ]),
          el(
            "tbody",
            {},
            movedRows(data).map((r, i) =>
              el("tr", {}, [
                el("th", { scope: "row", textContent: String(i + 1) }),
                el("td", { textContent: r.token }),
                el("td", { className: "num", textContent: r.said, dataset: { value: String(r.value) } }),
              ]),
            ),
          ),
        ]),
      ],
    ),
  ]);
}

/**
 * The largest attention change of the compared head, in words.
 * @param {KnockData} data
 */
export function changeText(data) {
  if (!data.diff) return "";
  const { layer, head, clean, knocked } = data.diff;
  const big = largestChange(clean, knocked);
  return big.value === 0
    ? `Layer ${layer + 1} head ${head + 1}'s attention did not change.`
    : `Largest change: layer ${layer + 1} head ${head + 1}, ${quotedToken(data.tokens[big.i])} → ${quotedToken(data.tokens[big.j])} ${change(big.value)}.`;
}

/**
 * The positions' table: loss and top prediction, clean and knocked out.
 * @param {KnockData} data
 */
function lossTable(data) {
  const rows = lossRows(data);
  const head = ["#", "token", "next", "clean", "knocked out", "change", "clean", "knocked out"];
  return el(
    "div",
    {
      className: "table-scroll ko-scroll",
      tabIndex: 0,
      role: "region",
      "aria-label": "Each position's loss and top prediction, clean and knocked out",
    },
    [
      el("table", { className: "data-table ko-table" }, [
        el("caption", {
          className: "sr-only",
          textContent:
            "Loss (−ln p of the next token) and top prediction at each position, clean and with the heads knocked out",
        }),
        el("thead", {}, [
          el("tr", {}, [
            el("td", { colSpan: 3 }),
            el("th", { scope: "colgroup", colSpan: 3, textContent: "loss (−ln p of next)" }),
            el("th", { scope: "colgroup", colSpan: 2, textContent: "top prediction" }),
          ]),
          el(
            "tr",
            {},
            head.map((h) => el("th", { scope: "col", textContent: h })),
          ),
        ]),
        el(
          "tbody",
          {},
          rows.map((r) => {
            const changed = r.topClean.id !== r.topKnocked.id;
            return el("tr", { dataset: { pos: String(r.i) } }, [
              el("th", { scope: "row", textContent: String(r.i + 1) }),
              el("td", { textContent: shownToken(r.token) }),
              el("td", { textContent: shownToken(r.next) }),
              el("td", { className: "num ko-loss-clean", textContent: readableProse(r.clean) }),
              el("td", { className: "num ko-loss-knocked", textContent: readableProse(r.knocked) }),
              el("td", {
                className: `num ko-change ${r.change > 0 ? "worse" : r.change < 0 ? "better" : ""}`,
                textContent: readableSigned(r.change, readableProse),
              }),
              el("td", { textContent: `${shownToken(r.topClean.label)} ${prob(r.topClean.prob, r.topClean.dtype)}` }),
              el(
                "td",
                { className: changed ? "ko-changed" : "" },
                changed
                  ? [
                      el("span", { "aria-hidden": "true", textContent: "▲ " }),
                      `${shownToken(r.topKnocked.label)} ${prob(r.topKnocked.prob, r.topKnocked.dtype)}`,
                      el("span", { className: "sr-only", textContent: " (changed)" }),
                    ]
                  : [`${shownToken(r.topKnocked.label)} ${prob(r.topKnocked.prob, r.topKnocked.dtype)}`],
              ),
            ]);
          }),
        ),
      ]),
    ],
  );
}

/**
 * Draw the difference heatmap (knocked out - clean) into `fig`.
 * @param {HTMLElement} fig @param {KnockData} data
 */
function diffMap(fig, data) {
  const { layer, head, clean, knocked } = /** @type {NonNullable<KnockData["diff"]>} */ (data.diff);
  const n = clean.shape[0];
  const d = new Float64Array(n * n);
  let m = 0;
  for (let p = 0; p < n * n; p++) {
    d[p] = knocked.data[p] - clean.data[p];
    m = Math.max(m, Math.abs(d[p]));
  }
  const top = m > 0 ? m : 1;
  const title = `Layer ${layer + 1} head ${head + 1}: knocked out − clean attention`;
  const canvas = /** @type {HTMLCanvasElement} */ (el("canvas", { className: "ko-canvas" }));
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  // The colour bar's ticks, +top, 0 and -top as the text says a change; the bar's column as
  // wide as they need ("+0.00925").
  const ticks = [change(top), "0", change(-top)];
  ctx.font = `11px ${FONT}`;
  const bar = Math.max(BAR, 34 + Math.ceil(Math.max(...ticks.map((t) => ctx.measureText(t).width))));
  const width = Math.max(220, Math.min(MAX_SIDE + 140 + bar, fig.clientWidth || 600));
  const labelW = n <= 40 ? 90 : 24;
  const cell = Math.max(1, Math.min(28, (width - labelW - bar - 10) / n));
  const side = cell * n;
  const below = n <= 40 ? 70 : 16;
  const body = el("div", { className: "ko-body" }, [canvas]);
  fig.replaceChildren(el("p", { className: "hc-title", textContent: title }), body);
  const wide = labelW + side + bar;
  const tall = side + below + 8;
  sizeCanvas(canvas, ctx, wide, tall);
  const img = new ImageData(n, n);
  for (let p = 0; p < n * n; p++) {
    const c = Math.round((Math.max(-1, Math.min(1, d[p] / top)) + 1) * 127.5) * 3;
    img.data.set([SCORE_LUT[c], SCORE_LUT[c + 1], SCORE_LUT[c + 2], 255], p * 4);
  }
  const src = document.createElement("canvas");
  src.width = src.height = n;
  /** @type {CanvasRenderingContext2D} */ (src.getContext("2d")).putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(src, labelW, 4, side, side);
  ctx.strokeStyle = GRID;
  ctx.strokeRect(labelW - 0.5, 3.5, side + 1, side + 1);
  ctx.fillStyle = TEXT;
  ctx.font = `11px ${FONT}`;
  if (n <= 40) {
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    data.tokens.forEach((t, i) => ctx.fillText(shownToken(t), labelW - 4, 4 + (i + 0.5) * cell, labelW - 8));
    data.tokens.forEach((t, j) => {
      ctx.save();
      ctx.translate(labelW + (j + 0.5) * cell, side + 10);
      ctx.rotate((-50 * Math.PI) / 180);
      ctx.fillText(shownToken(t), 0, 0, below);
      ctx.restore();
    });
  }
  const bx = labelW + side + 12; // the colour bar: -m at the bottom, +m at the top
  for (let y = 0; y < side; y++) {
    const c = Math.round((1 - y / Math.max(1, side - 1)) * 255) * 3;
    ctx.fillStyle = `rgb(${SCORE_LUT[c]},${SCORE_LUT[c + 1]},${SCORE_LUT[c + 2]})`;
    ctx.fillRect(bx, 4 + y, 12, 1);
  }
  ctx.fillStyle = TEXT_DIM;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  [1, 0, -1].forEach((t, k) => ctx.fillText(ticks[k], bx + 16, 4 + ((1 - t) / 2) * side));

  const labels = data.tokens.map(shownToken);
  const spoken = data.tokens.map(spokenToken);
  /** @param {number} i @param {number} j */
  const cellText = (i, j) =>
    `${spoken[i]} → ${spoken[j]}: ${change(d[i * n + j])} (clean ${prob(clean.data[i * n + j], clean.dtype)}, ` +
    `knocked out ${prob(knocked.data[i * n + j], knocked.dtype)}; query ${i + 1}, key ${j + 1})`;
  const text = describe(body, {
    summary: `${n} × ${n} changes of attention weight (knocked out − clean), at most ${size(m)} either way. ${changeText(data)}`,
    table:
      n * n <= TABLE_MAX
        ? matrixTable(`${title}, query rows by key columns`, "query", labels, labels, (i, j) =>
            // exactly: knocked out − clean, of the two weights as the API spelled them
            exactChange(knocked.data[i * n + j], clean.data[i * n + j], clean.dtype),
          )
        : null,
  });
  keyCursor(canvas, text.live, {
    rows: n,
    cols: n,
    describedBy: text.summary.id,
    label: `${title}: heatmap of ${n} × ${n} changes, query rows by key columns. Arrow keys move between cells.`,
    text: cellText,
  });
  const tip = el("div", { className: "hc-tip", hidden: true, role: "tooltip" });
  body.append(tip);
  canvas.onmousemove = (e) => {
    const r = canvas.getBoundingClientRect();
    const i = Math.floor((e.clientY - r.top - 4) / cell);
    const j = Math.floor((e.clientX - r.left - labelW) / cell);
    if (i < 0 || j < 0 || i >= n || j >= n) {
      tip.hidden = true;
      return;
    }
    tip.hidden = false;
    tip.textContent = cellText(i, j);
    tip.style.left = `${Math.min(labelW + (j + 1) * cell + 8, Math.max(0, wide - 220))}px`;
    tip.style.top = `${4 + (i + 1) * cell + 6}px`;
  };
  canvas.onmouseleave = () => {
    tip.hidden = true;
  };
  return d;
}

/**
 * Draw the knock-out's comparison into `container`.
 * @param {HTMLElement} container
 * @param {KnockData} data
 * @param {object} [_selection] (none: the card's pickers choose the head compared)
 * @param {object} [_callbacks]
 */
export function render(container, data, _selection = {}, _callbacks = {}) {
  const fig = el("figure", { className: "figure ko-diff" });
  const summary = el("p", { className: "ko-summary", textContent: summaryText(data) });
  const table = data.predictions
    ? lossTable(data)
    : el("p", {
        className: "hint ko-no-losses",
        textContent: `No losses here: ${data.noPredictions ?? "the model predicts no next token"}.`,
      });
  const side = data.moved?.length ? el("div", {}, [table, movedTable(data)]) : table;
  container.replaceChildren(summary, el("div", { className: "ko-cols" }, [side, fig]));
  const diff = data.diff ? diffMap(fig, data) : null;
  if (!data.diff) fig.append(el("p", { className: "hint ko-no-diff", textContent: data.noDiff ?? "" }));
  // What is drawn, for tests: the rows and the very differences.
  /** @type {any} */ (container).__ko = { rows: lossRows(data), diff, summary: summary.textContent };
}
