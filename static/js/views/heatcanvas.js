// A large heatmap of attention weights on one <canvas>, through the weight colour table: one
// image of rows x columns pixels scaled up, so 512 x 512 draws as fast as 8 x 8. Token labels where they
// fit (every k-th when they do not, and always those its text names), a colour bar, and the weight of the cell under the pointer,
// or under the keyboard's cursor, to 3 significant digits (the canvas takes focus; the arrow keys
// move it and a live region reads the cell), a summary line ("strongest: apple → banana 0.30")
// and, up to TABLE_MAX cells, the numbers in a table. render(container, data, sel, callbacks).

import { el, sizeCanvas } from "../core/dom.js";
import { exact, readable, readableWeight } from "../core/numbers.js";
import { FONT, GRID, TEXT, TEXT_DIM, WEIGHT_LUT } from "../core/theme.js";
import { shownToken, spokenToken } from "../core/tokens.js";
import { describe, keyCursor, matrixTable } from "./access.js";
import { approxValue, strongestCell, strongestText } from "./describe.js";

/** A cell a Learn task points at: an orange ring, apart from the weights' blues. */
const TARGET = "#c2410c";

/** @typedef {import("../core/types.js").NDArray} NDArray */

const LABEL_PX = 11; // the least room a label gets; closer rows label every k-th token
const BAR = 66; // colour bar and its ticks ("0.000", "3.795"), right of the plot
const MAX_SIDE = 760;
export const TABLE_MAX = 400; // cells: more (a long text) get the summary line only

/**
 * The colour bar's ticks at 0, half and all of `vmax` (the darkest colour's weight): "0", "0.5",
 * "1" for weights to 1; else by numbers.js's rules (readableWeight: 3 significant digits, a top
 * short of 1 never "1" but "over 0.999"), the top as the cursor reads that cell.
 * @param {number} vmax @param {string} [dtype]
 * @returns {string[]}
 */
export function barTicks(vmax, dtype) {
  if (vmax === 1) return ["0", "0.5", "1"];
  return ["0", readableWeight(vmax / 2), readableWeight(vmax, dtype)];
}

/** @param {CanvasRenderingContext2D} ctx @param {string[]} labels @param {number} font */
function widest(ctx, labels, font) {
  ctx.font = `${font}px ${FONT}`;
  let w = 0;
  for (const s of labels) w = Math.max(w, ctx.measureText(s).width);
  return w;
}

/**
 * The matrix as a rows x columns image through the weight colour table: weights from 0 to
 * `top` (clamped).
 * @param {NDArray} matrix @param {number} top
 */
function image(matrix, top) {
  const [R, C] = matrix.shape;
  const img = new ImageData(C, R);
  const z = matrix.data;
  for (let p = 0; p < R * C; p++) {
    const c = Math.round(Math.min(1, Math.max(0, z[p] / top)) * 255) * 3;
    img.data[p * 4] = WEIGHT_LUT[c];
    img.data[p * 4 + 1] = WEIGHT_LUT[c + 1];
    img.data[p * 4 + 2] = WEIGHT_LUT[c + 2];
    img.data[p * 4 + 3] = 255;
  }
  return img;
}

/**
 * The labels a side of the heatmap writes ("" where none): every k-th token (`every`), and
 * always the tokens at `named` (the chosen query, the cell the summary names, a task's target;
 * -1: none), the k-th labels closer to one of them than `every` left out to give it room.
 * @param {string[]} labels @param {number} every @param {number[]} named
 */
export function labelsShown(labels, every, named) {
  const must = named.filter((i) => i >= 0 && i < labels.length);
  return labels.map((s, i) =>
    must.includes(i) || (i % every === 0 && !must.some((n) => Math.abs(i - n) < every)) ? s : "",
  );
}

/**
 * Draw `data.matrix` (rows x columns weights; rows are queries) into `container`.
 * @param {HTMLElement} container
 * @param {{labels: string[], matrix: NDArray, title: string, caption?: string, approx?: boolean,
 *   rowLabels?: string[], axes?: [string, string], unit?: string, causal?: boolean,
 *   blocks?: {from: number, to: number, label: string}[], cellNote?: (row: number, col: number) => string,
 *   rule?: string}} data
 *   labels: the columns' (keys'); rowLabels: the rows' when they differ (a cross-attention's
 *   queries); axes: what rows and columns are, ["query", "key"] by default; approx: the weights
 *   are 8-bit snapshots, read "≈ 0.42" rather than exactly; unit: what a cell is, "weight" by
 *   default ("value-weighted norm": ||a v W_O||, not a weight); causal: a causal
 *   self-attention, whose summary leaves out the first query (it sees only itself) and names a
 *   first-token sink apart (describe.js strongestText); blocks: labelled runs of rows (and the
 *   same columns) framed on the plot (an image's patches: from..to-1); cellNote: a line the
 *   hover text and the keyboard's live text add for a cell ("exact: the sum over the image's
 *   64 keys"); rule: how some cells were made, said with the numbers table
 * @param {{query?: number, cell?: [number, number] | null, target?: number[] | null, peak?: boolean}} [sel]
 *   query: a row to mark (the chosen query), -1 or absent for none; cell: a cell to mark (the
 *   one Why this score explains); target: a cell a Learn task points at (a dashed ring in the
 *   orange); peak: colour from 0 to the largest weight (else to 1)
 * @param {{onPick?: (row: number) => void, onPickCell?: (row: number, col: number) => void,
 *   pickCell?: string}} [callbacks] onPick: a click on a row (or Enter); onPickCell, instead: a
 *   click on a cell (or Enter on it), and pickCell what that does, in words ("explains the
 *   cell's score in Why this score, below"), for the keyboard label and the live region
 */
export function render(container, data, sel = {}, callbacks = {}) {
  let root = /** @type {HTMLElement & {__heat?: any}} */ (container.querySelector(":scope > .hc"));
  if (!root) {
    root = el("div", { className: "hc" }, [
      el("p", { className: "hc-title" }),
      el("div", { className: "hc-body" }, [
        el("canvas", { className: "hc-canvas" }),
        el("div", { className: "hc-cursor", hidden: true }),
        el("div", { className: "hc-tip", hidden: true, role: "tooltip" }),
      ]),
    ]);
    container.replaceChildren(root);
  }
  const { matrix, title } = data;
  // Tokens as drawn (spaces, newlines and bytes visible) and as read aloud (named).
  const labels = data.labels.map(shownToken);
  const rowLabels = (data.rowLabels ?? data.labels).map(shownToken);
  const spokenCols = data.labels.map(spokenToken);
  const spokenRows = (data.rowLabels ?? data.labels).map(spokenToken);
  const [rowAxis, colAxis] = data.axes ?? ["query", "key"];
  const R = matrix.shape[0];
  const C = matrix.shape[1] ?? R;
  const m = Math.max(R, C); // the longer side sets the cell
  /** @type {HTMLElement} */ (root.querySelector(".hc-title")).textContent = title;
  const canvas = /** @type {HTMLCanvasElement} */ (root.querySelector("canvas"));
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));

  let vmax = 1; // the weight of the darkest colour
  if (sel.peak) {
    vmax = 0;
    for (const v of matrix.data) if (v > vmax) vmax = v;
    if (!(vmax > 0)) vmax = 1;
  }
  const ticks = barTicks(vmax, matrix.dtype);

  // Geometry in CSS pixels: labels left and below, the colour bar right (wider where its top
  // tick needs words: "over 0.999"). Labels every k-th token when rows are closer than
  // LABEL_PX (k from the side the widest label leaves), and always the tokens the text names:
  // the chosen query, the summary's strongest cell, the task's target (labelsShown).
  const width = Math.max(260, root.clientWidth || container.clientWidth || 600);
  const font = m <= 16 ? 13 : m <= 40 ? 11 : 10;
  const bar = Math.max(BAR, 28 + Math.ceil(widest(ctx, ticks, 11)) + 4);
  const fit = (/** @type {number} */ w) => Math.max(120, Math.min(MAX_SIDE, width - (w + 18) - bar - 8));
  const allW = Math.min(160, Math.ceil(widest(ctx, [...labels, ...rowLabels], font)) + 10);
  const every = Math.max(1, Math.ceil(LABEL_PX / (fit(allW) / m)));
  const q = sel.query ?? -1;
  const { cell: named, sink } = strongestCell(matrix, { causal: data.causal });
  const target = sel.target;
  const shownRows = labelsShown(rowLabels, every, [q, named?.i ?? -1, target?.[0] ?? -1]);
  const shown = labelsShown(labels, every, [named?.j ?? -1, target?.[1] ?? -1, sink === null ? -1 : 0]);
  const labelW = Math.min(160, Math.ceil(widest(ctx, [...shown, ...shownRows], font)) + 10);
  const left = labelW + 18;
  const cell = fit(labelW) / m;
  const side = C * cell; // the plot's width
  const tall = R * cell; // its height
  const bottom = Math.min(150, Math.ceil(labelW * 0.77) + 24); // labels at -50 degrees
  const top = 6;
  const barH = Math.max(tall, 64); // the colour bar keeps room for its ticks beside one row
  const height = top + Math.max(tall + bottom, barH + 14);
  const wide = left + Math.max(side, 120) + bar;
  sizeCanvas(canvas, ctx, wide, height);

  const src = document.createElement("canvas");
  src.width = C;
  src.height = R;
  /** @type {CanvasRenderingContext2D} */ (src.getContext("2d")).putImageData(image(matrix, vmax), 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(src, left, top, side, tall);
  ctx.strokeStyle = GRID;
  ctx.strokeRect(left - 0.5, top - 0.5, side + 1, tall + 1);

  // Labels: queries left (right-aligned), keys below (tilted).
  ctx.fillStyle = TEXT;
  ctx.font = `${font}px ${FONT}`;
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  shownRows.forEach((s, i) => {
    if (!s) return;
    ctx.font = `${i === q ? "bold " : ""}${font}px ${FONT}`;
    ctx.fillText(s, left - 6, top + (i + 0.5) * cell, labelW);
  });
  ctx.font = `${font}px ${FONT}`;
  shown.forEach((s, j) => {
    if (!s) return;
    ctx.save();
    ctx.translate(left + (j + 0.5) * cell, top + tall + 6);
    ctx.rotate((-50 * Math.PI) / 180);
    ctx.textAlign = "right";
    ctx.fillText(s, 0, 0, labelW);
    ctx.restore();
  });
  ctx.fillStyle = TEXT_DIM;
  ctx.font = `12px ${FONT}`;
  ctx.textAlign = "center";
  ctx.fillText(colAxis, left + side / 2, top + tall + bottom - 8);
  ctx.save();
  ctx.translate(10, top + tall / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText(rowAxis, 0, 0);
  ctx.restore();
  if (q >= 0 && q < R) {
    // mark the chosen query's row
    ctx.strokeStyle = TEXT;
    ctx.lineWidth = 1;
    ctx.strokeRect(left + 0.5, top + q * cell + 0.5, side - 1, Math.max(1, cell - 1));
  }

  // Blocks (an image's patches): a frame around their rows and their columns, and the label.
  for (const b of data.blocks ?? []) {
    const y0 = top + b.from * cell;
    const x0 = left + b.from * cell;
    const span = (b.to - b.from) * cell;
    ctx.strokeStyle = TEXT;
    ctx.setLineDash([4, 3]);
    ctx.strokeRect(left + 0.5, y0 + 0.5, side - 1, Math.max(1, span - 1));
    ctx.strokeRect(x0 + 0.5, top + 0.5, Math.max(1, span - 1), tall - 1);
    ctx.setLineDash([]);
    if (span >= 16) {
      // the label, on a white ground, in the corner of the block's own square
      ctx.font = `11px ${FONT}`;
      const w = Math.min(ctx.measureText(b.label).width + 8, left + side - x0 - 6);
      ctx.fillStyle = "#ffffff";
      ctx.fillRect(x0 + 3, y0 + 3, w, 15);
      ctx.fillStyle = TEXT;
      ctx.textAlign = "left";
      ctx.fillText(b.label, x0 + 7, y0 + 11, w - 8);
    }
  }

  if (target && target[0] >= 0 && target[0] < R && target[1] >= 0 && target[1] < C) {
    // the cell a task points at: a dashed ring around it, in the accent colour, on every colour
    const [ti, tj] = target;
    const w = Math.max(6, cell + 4);
    const tx = left + tj * cell + cell / 2 - w / 2;
    const ty = top + ti * cell + cell / 2 - w / 2;
    ctx.lineWidth = 2;
    ctx.setLineDash([3, 2]);
    ctx.strokeStyle = "#ffffff";
    ctx.strokeRect(tx - 2, ty - 2, w + 4, w + 4);
    ctx.strokeStyle = TARGET;
    ctx.strokeRect(tx, ty, w, w);
    ctx.setLineDash([]);
    ctx.lineWidth = 1;
  }

  const mark = sel.cell;
  if (mark && mark[0] >= 0 && mark[0] < R && mark[1] >= 0 && mark[1] < C) {
    // the picked cell: a dark ring inside a white one, seen on every colour
    const [ci, cj] = mark;
    const w = Math.max(3, cell);
    const cx = left + cj * cell + cell / 2 - w / 2;
    const cy = top + ci * cell + cell / 2 - w / 2;
    ctx.lineWidth = 2;
    ctx.strokeStyle = "#ffffff";
    ctx.strokeRect(cx - 1, cy - 1, w + 2, w + 2);
    ctx.strokeStyle = TEXT;
    ctx.strokeRect(cx + 1, cy + 1, w - 2, w - 2);
    ctx.lineWidth = 1;
  }

  // Colour bar: 0 at the bottom, vmax at the top.
  const bx = left + Math.max(side, 120) + 12;
  for (let y = 0; y < barH; y++) {
    const c = Math.round((1 - y / Math.max(1, barH - 1)) * 255) * 3;
    ctx.fillStyle = `rgb(${WEIGHT_LUT[c]},${WEIGHT_LUT[c + 1]},${WEIGHT_LUT[c + 2]})`;
    ctx.fillRect(bx, top + y, 12, 1);
  }
  ctx.fillStyle = TEXT_DIM;
  ctx.font = `11px ${FONT}`;
  ctx.textAlign = "left";
  [0, 0.5, 1].forEach((t, k) => ctx.fillText(ticks[k], bx + 16, top + (1 - t) * barH));

  // The weight under the pointer, or under the keyboard's cursor (3 significant digits).
  const tip = /** @type {HTMLElement} */ (root.querySelector(".hc-tip"));
  const cursor = /** @type {HTMLElement} */ (root.querySelector(".hc-cursor"));
  /** @param {MouseEvent} e @returns {[number, number] | null} */
  const at = (e) => {
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left - left;
    const y = e.clientY - r.top - top;
    if (x < 0 || y < 0 || x >= side || y >= tall) return null;
    return [Math.min(R - 1, Math.floor(y / cell)), Math.min(C - 1, Math.floor(x / cell))];
  };
  const unit = data.unit ?? "weight";
  /** The weight as the tooltip and the live region write it. @param {number} v */
  // A snapshot's value is rounded (its caption says so): "≈", never its storage's bit count.
  // Its digits by the summary's rules (approxValue: 3 significant digits, never "1" short of
  // it, no "≈" before "over 0.999").
  const value = (v) => (data.approx ? approxValue(v, matrix.dtype) : readable(v, matrix.dtype));
  /** @param {number} i @param {number} j */
  const show = (i, j) => {
    tip.hidden = cursor.hidden = false;
    const v = matrix.data[i * C + j];
    tip.replaceChildren(
      el("span", {}, [`${rowAxis} `, el("b", { textContent: rowLabels[i] })]),
      el("br"),
      el("span", {}, [`${colAxis} `, el("b", { textContent: labels[j] })]),
      el("br"),
      el("span", { className: "hc-value", textContent: `${unit} ${value(v)}` }),
    );
    const note = data.cellNote?.(i, j);
    if (note) tip.append(el("br"), el("span", { className: "hc-note", textContent: note }));
    const x = left + (j + 1) * cell + 10;
    tip.style.left = `${Math.min(x, left + side - 150)}px`;
    tip.style.top = `${top + (i + 1) * cell + 8}px`;
    Object.assign(cursor.style, {
      left: `${left + j * cell}px`,
      top: `${top + i * cell}px`,
      width: `${Math.max(2, cell)}px`,
      height: `${Math.max(2, cell)}px`,
    });
  };
  const hide = () => {
    tip.hidden = true;
    cursor.hidden = true;
  };
  hide(); // a tooltip left from the matrix drawn before would say its number, not this one's
  canvas.onmousemove = (e) => {
    const ij = at(e);
    canvas.style.cursor = ij && picks ? "pointer" : "";
    if (ij) show(ij[0], ij[1]);
    else hide();
  };
  canvas.onmouseleave = () => {
    if (document.activeElement !== canvas) hide();
  };
  const picks = Boolean(callbacks.onPick || callbacks.onPickCell);
  /** @param {number} i @param {number} j */
  const pick = (i, j) => (callbacks.onPickCell ? callbacks.onPickCell(i, j) : callbacks.onPick?.(i));
  canvas.onclick = (e) => {
    const ij = at(e);
    if (ij) pick(ij[0], ij[1]);
  };

  // The text alternative and the keyboard's path.
  const blocksSaid = (data.blocks ?? [])
    .map(
      (b) =>
        `${b.label}, ${b.to - b.from === 1 ? `row and column ${b.to}` : `rows and columns ${b.from + 1} to ${b.to}`}`,
    )
    .join("; ");
  const text = describe(/** @type {HTMLElement} */ (root.querySelector(".hc-body")), {
    summary:
      `${R} × ${C} ${unit}s, ${strongestText(rowLabels, labels, matrix, {
        approx: data.approx,
        causal: data.causal,
        positions: every > 1,
      })}` +
      (blocksSaid ? `. Blocks: ${blocksSaid}.` : "") +
      (data.rule ? ` ${data.rule}` : ""),
    table:
      R * C <= TABLE_MAX
        ? matrixTable(
            `${title}: the ${unit}s, ${rowAxis} rows by ${colAxis} columns` +
              (data.approx ? ". Each is the snapshot's rounded value, written in full" : "") +
              (data.rule ? `. ${data.rule}` : ""),
            rowAxis,
            rowLabels,
            labels,
            (i, j) => exact(matrix.data[i * C + j], matrix.dtype),
          )
        : null,
  });
  keyCursor(canvas, text.live, {
    rows: R,
    cols: C,
    describedBy: text.summary.id,
    label:
      `${title}: heatmap of ${R} × ${C} ${unit === "weight" ? "attention weight" : unit}s, ${rowAxis} rows by ${colAxis} columns. ` +
      `Arrow keys move between cells${
        callbacks.onPickCell
          ? `; Enter ${callbacks.pickCell ?? `makes the row's token the ${rowAxis}`}`
          : callbacks.onPick
            ? `; Enter makes the row's token the ${rowAxis}`
            : ""
      }.`,
    text: (i, j) =>
      `${spokenRows[i]} → ${spokenCols[j]}: ${value(matrix.data[i * C + j])} ` +
      `(${rowAxis} ${i + 1}, ${colAxis} ${j + 1})` +
      (data.cellNote?.(i, j) ? `; ${data.cellNote(i, j)}` : ""),
    show,
    hide,
    pick: picks
      ? (i, j) => {
          pick(i, j);
          if (callbacks.onPickCell)
            text.live.textContent = `${spokenRows[i]} → ${spokenCols[j]}: ${callbacks.pickCell ?? "picked"}`;
        }
      : undefined,
  });
  // What is drawn, for tests and exports: the labels and the very numbers.
  root.__heat = {
    labels: data.labels,
    rowLabels: data.rowLabels ?? data.labels,
    drawn: { labels, rowLabels },
    shown: { labels: shown, rowLabels: shownRows }, // the labels written ("": none at that token)
    every, // a label every k-th token (k > 1: the summary names each token's position too)
    matrix,
    vmax,
    blocks: data.blocks ?? [],
    marked: mark ?? null,
    target: target ?? null,
    geometry: { left, top, side, tall, cell },
  };
}

/**
 * The drawn heatmap as a PNG data: URL (null before the first draw).
 * @param {HTMLElement} container
 */
export function heatPng(container) {
  const canvas = /** @type {HTMLCanvasElement | null} */ (container.querySelector(".hc canvas"));
  return canvas ? canvas.toDataURL("image/png") : null;
}
