// What a plot says in words, for a reader who cannot see it: the strongest cell of a matrix, a
// curve from its first value to its last, the ink that a cell's number needs to be read on its
// colour (WCAG AA), and where the arrow keys move a cell cursor. Pure: no DOM, no Plotly.

import { readable, readablePercent, readableProse, readableWeight } from "../core/numbers.js";

/** @typedef {{shape: number[], data: ArrayLike<number>, dtype?: string}} Matrix rows x columns, row-major ("F32": float32 values) */

/**
 * The largest finite value of a matrix and where it is (the first, in reading order, of equal
 * ones); null when no value is finite (every cell masked). `skip`: rows before `fromRow` and
 * the column `col` are left out.
 * @param {Matrix} matrix
 * @param {{fromRow?: number, col?: number}} [skip]
 * @returns {{i: number, j: number, v: number} | null}
 */
export function strongest(matrix, skip = {}) {
  const C = matrix.shape[1] ?? matrix.shape[0];
  const from = (skip.fromRow ?? 0) * C;
  let best = null;
  for (let p = from; p < matrix.data.length; p++) {
    const v = matrix.data[p];
    if (v === null || !Number.isFinite(v) || p % C === skip.col) continue;
    if (best === null || v > best.v) best = { i: Math.floor(p / C), j: p % C, v };
  }
  return best;
}

export const SINK_SHARE = 0.5; // the first key named a sink when it takes this much of each later row

/**
 * A causal self-attention's first token as a sink: the mean weight each later row gives it,
 * when the rows are weights (each in [0, 1], summing to 1 within 8-bit rounding) and that mean is at least
 * SINK_SHARE; else null.
 * @param {Matrix} matrix a square matrix, rows are queries
 * @returns {number | null}
 */
export function firstTokenSink(matrix) {
  const n = matrix.shape[0];
  if (n < 2 || (matrix.shape[1] ?? n) !== n) return null;
  let share = 0;
  for (let i = 1; i < n; i++) {
    let sum = 0;
    for (let j = 0; j < n; j++) {
      const v = Number(matrix.data[i * n + j]) || 0;
      if (v < 0 || v > 1.05) return null; // not weights (scores)
      sum += v;
    }
    if (Math.abs(sum - 1) > 0.05) return null; // not weights (a max over heads, a norm)
    share += Number(matrix.data[i * n]) || 0;
  }
  share /= n - 1;
  return share >= SINK_SHARE ? share : null;
}

/**
 * A cell's value in a summary, by numbers.js's rules for a sentence: as the cursor reads it
 * (readable(), 3 significant digits, a float32 as the API spells it), but a weight (or a
 * cosine) that is not 1 never reads "1" nor one that is not 0 "0" (readableWeight: "over
 * 0.999", "under 0.001"; "under -0.999" short of -1), and a small negative score reads "about
 * -0.0005" (readableProse), never an exponent.
 * @param {number} v @param {string} [dtype]
 */
export function cellValue(v, dtype) {
  if (v > 0 && v < 1) {
    const hedged = readableWeight(v);
    if (!/^[-\d]/.test(hedged)) return hedged;
  }
  if (v > -1 && v < -0.999) return `under ${readable(-0.999)}`;
  return v < 0 && v > -0.001 ? readableProse(v) : readable(v, dtype);
}

/**
 * A cell of an 8-bit snapshot, whose value is rounded: cellValue with "≈" before a number
 * ("≈ 0.42"); one that cellValue already says as a bound or an estimate ("over 0.999", "under
 * 0.001", "about 0.00008", "practically zero") or "masked" reads as it is, never "≈ over 0.999".
 * @param {number} v @param {string} [dtype]
 */
export function approxValue(v, dtype) {
  const said = cellValue(v, dtype);
  return /^[-\d]/.test(said) ? `≈ ${said}` : said;
}

/** @param {Matrix} matrix @param {{causal?: boolean}} opts */
const isCausal = (matrix, opts) =>
  Boolean(opts.causal) && matrix.shape[0] > 1 && (matrix.shape[1] ?? matrix.shape[0]) === matrix.shape[0];

/**
 * The cell strongestText names (its query row i and key column j, which a plot that labels
 * only some tokens labels all the same), and the first-token sink it names apart (null: none).
 * @param {Matrix} matrix @param {{causal?: boolean}} [opts]
 * @returns {{cell: {i: number, j: number, v: number} | null, sink: number | null}}
 */
export function strongestCell(matrix, opts = {}) {
  if (!isCausal(matrix, opts)) return { cell: strongest(matrix), sink: null };
  const sink = firstTokenSink(matrix);
  return { cell: strongest(matrix, { fromRow: 1, col: sink === null ? undefined : 0 }), sink };
}

/**
 * "strongest: apple → banana 0.301": the largest value's row and column labels and the value
 * (cellValue: 3 significant digits, never "1" for a weight under 1; approxValue for 8-bit
 * snapshots, "≈ 0.9"); "every cell is masked" when none is finite.
 * With `causal` (a causal self-attention, square), the first query is left out: it sees only
 * itself, so its one weight is 1 and says nothing. When the first token takes at least half of
 * each later row (an attention sink, firstTokenSink), it is named apart, with its share, and the
 * strongest is found among the other keys.
 * With `positions` (a plot that labels only every k-th token), each token is named with its
 * position from 1 too ("y (5) → t (3)"), so a reader finds a token that has no label.
 * @param {string[]} rowLabels @param {string[]} colLabels @param {Matrix} matrix
 * @param {{word?: string, approx?: boolean, causal?: boolean, positions?: boolean}} [opts]
 */
export function strongestText(rowLabels, colLabels, matrix, opts = {}) {
  const word = opts.word ?? "strongest";
  const value = (/** @type {number} */ v) => (opts.approx ? approxValue : cellValue)(v, matrix.dtype);
  const at = (/** @type {string[]} */ names, /** @type {number} */ i) =>
    opts.positions ? `${names[i]} (${i + 1})` : names[i];
  const { sink, cell: s } = strongestCell(matrix, opts);
  if (!isCausal(matrix, opts)) {
    if (!s) return "every cell is masked";
    return `${word}: ${at(rowLabels, s.i)} → ${at(colLabels, s.j)} ${value(s.v)}`;
  }
  const cell = s ? `${at(rowLabels, s.i)} → ${at(colLabels, s.j)} ${value(s.v)}` : "none";
  if (sink === null) return `${word} past the first query (which sees only itself): ${cell}`;
  return (
    `an attention sink: each later query gives on average ${readablePercent(sink)} of its weight to ` +
    `the first token, “${colLabels[0]}”; ${word} elsewhere: ${cell}`
  );
}

/**
 * "loss 3.26 → 0.407 over 300 steps": a curve's first and last value (readableProse: 3
 * significant digits, never an exponent) and its last step; "no steps yet" before any.
 * @param {string} what @param {number[]} steps @param {number[]} values
 */
export function curveText(what, steps, values) {
  if (!values.length) return `${what}: no steps yet`;
  const last = steps[steps.length - 1];
  return (
    `${what} ${readableProse(values[0])} → ${readableProse(values[values.length - 1])} over ${last.toLocaleString("en-US")} ` +
    `step${last === 1 ? "" : "s"}`
  );
}

/**
 * WCAG 2 relative luminance of an sRGB colour.
 * @param {[number, number, number]} rgb 0..255 each
 */
export function luminance(rgb) {
  const [r, g, b] = rgb.map((c) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/**
 * WCAG 2 contrast ratio of two colours (1 to 21).
 * @param {[number, number, number]} a @param {[number, number, number]} b
 */
export function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/**
 * The ink for text on a background: black or white, whichever contrasts more (at least 4.58:1
 * on any colour, so AA for text of any size).
 * @param {[number, number, number]} rgb
 * @returns {"#000000" | "#ffffff"}
 */
export function inkOn(rgb) {
  return contrast(rgb, [0, 0, 0]) >= contrast(rgb, [255, 255, 255]) ? "#000000" : "#ffffff";
}

const JUMP = 10; // PageUp / PageDown move this many columns

/**
 * Where a key moves a cursor at row i, column j of a rows x cols grid: arrows by one (clamped),
 * Home / End to the row's first / last column (with Ctrl: the grid's first / last cell),
 * PageUp / PageDown by ten columns. null for any other key.
 * @param {string} key KeyboardEvent.key @param {number} i @param {number} j
 * @param {number} rows @param {number} cols @param {boolean} [ctrl]
 * @returns {[number, number] | null}
 */
export function moveCursor(key, i, j, rows, cols, ctrl = false) {
  const clamp = (/** @type {number} */ v, /** @type {number} */ n) => Math.max(0, Math.min(n - 1, v));
  switch (key) {
    case "ArrowLeft":
      return [i, clamp(j - 1, cols)];
    case "ArrowRight":
      return [i, clamp(j + 1, cols)];
    case "ArrowUp":
      return [clamp(i - 1, rows), j];
    case "ArrowDown":
      return [clamp(i + 1, rows), j];
    case "Home":
      return ctrl ? [0, 0] : [i, 0];
    case "End":
      return ctrl ? [rows - 1, cols - 1] : [i, cols - 1];
    case "PageUp":
      return [i, clamp(j - JUMP, cols)];
    case "PageDown":
      return [i, clamp(j + JUMP, cols)];
    default:
      return null;
  }
}

/**
 * The point that moved farthest between two positions of the same points (Euclidean), and by
 * how much; null for none.
 * @param {number[][]} from @param {number[][]} to
 * @returns {{i: number, d: number} | null}
 */
export function farthest(from, to) {
  let best = null;
  from.forEach((p, i) => {
    const d = Math.hypot(...p.map((v, c) => to[i][c] - v));
    if (best === null || d > best.d) best = { i, d };
  });
  return best;
}
