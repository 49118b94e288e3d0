// Model view: every layer x head as a small heatmap on a <canvas> (one 2-D canvas per cell, in a
// grid of buttons), from the trace's 8-bit thumbnails, pooled by the server to about the size
// they are drawn at. render(grid, data, sel, callbacks).

import { el } from "../core/dom.js";
import { readablePercent, readableProse } from "../core/numbers.js";
import { TEXT_DIM, WEIGHT_LUT } from "../core/theme.js";
import { quotedToken } from "../core/tokens.js";
import { gridArrows, gridStop } from "./access.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */

/**
 * The thumbnails: values [L][H][s][s] uint8 and scale [L][H] (weight ~ value * scale / 255);
 * pool > 1 when each pixel is the largest weight of a pool x pool block.
 * @typedef {{values: NDArray, scale: NDArray, pool: number, size: number}} Thumbs
 */

/**
 * The thumbnail pixels a drawn pixel covers when `out` pixels show `s`: [from, to) along one
 * axis for each of the `out` pixels (every thumbnail pixel is covered at least once).
 * @param {number} s @param {number} out
 */
export function coverage(s, out) {
  return Array.from({ length: out }, (_, p) => {
    const from = Math.floor((p * s) / out);
    return [from, Math.max(from + 1, Math.ceil(((p + 1) * s) / out))];
  });
}

/**
 * One head's thumbnail as an image of `out` x `out` pixels (default: the thumbnail's own
 * size). Shrunk, each pixel shows the largest weight it covers, so a peak is never lost. Weight
 * w is coloured WEIGHT_LUT[round(w * 255)], or with `peak` WEIGHT_LUT[round(w / peak * 255)]
 * (the stored value itself); with `top` (a value-weighted norm's unit, not a weight's 1)
 * WEIGHT_LUT[round(w / top * 255)].
 * @param {Thumbs} thumbs @param {number} layer @param {number} head @param {boolean} [peak]
 * @param {number} [out] @param {number} [top] the value coloured darkest (default 1)
 */
export function thumbImage(thumbs, layer, head, peak = false, out, top = 1) {
  const [, H, s] = thumbs.values.shape;
  const k = layer * H + head;
  const scale = peak ? 1 : thumbs.scale.data[k] / top;
  const pixels = thumbs.values.data.subarray(k * s * s, (k + 1) * s * s);
  const size = out && out < s ? out : s;
  const spans = coverage(s, size);
  const img = new ImageData(size, size);
  for (let y = 0; y < size; y++) {
    const [r0, r1] = spans[y];
    for (let x = 0; x < size; x++) {
      const [c0, c1] = spans[x];
      let v = 0;
      for (let r = r0; r < r1; r++) for (let c = c0; c < c1; c++) v = Math.max(v, pixels[r * s + c]);
      const c = Math.min(255, Math.round(v * scale)) * 3; // w * 255 = value * scale
      const p = (y * size + x) * 4;
      img.data[p] = WEIGHT_LUT[c];
      img.data[p + 1] = WEIGHT_LUT[c + 1];
      img.data[p + 2] = WEIGHT_LUT[c + 2];
      img.data[p + 3] = 255;
    }
  }
  return img;
}

/**
 * Paint one head over the whole of `canvas`, `size` pixels square (default: its CSS box at the
 * device's pixel ratio).
 * @param {HTMLCanvasElement} canvas @param {Thumbs} thumbs @param {number} layer @param {number} head
 * @param {number} [size] @param {boolean} [peak] @param {number} [top] the darkest value
 */
function paint(canvas, thumbs, layer, head, size, peak = false, top = 1) {
  const px = size ?? Math.max(8, Math.round(canvas.clientWidth * (window.devicePixelRatio || 1)));
  if (canvas.width !== px) {
    canvas.width = px;
    canvas.height = px;
  }
  const img = thumbImage(thumbs, layer, head, peak, px, top);
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  if (img.width === px) {
    ctx.putImageData(img, 0, 0);
    return;
  }
  const src = document.createElement("canvas"); // fewer pixels than the canvas: scale up
  src.width = img.width;
  src.height = img.height;
  /** @type {CanvasRenderingContext2D} */ (src.getContext("2d")).putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(src, 0, 0, px, px);
}

/**
 * Build (once per layers x heads shape) the grid of labelled cell buttons.
 * @param {HTMLElement} grid @param {number} layers @param {number} heads
 * @param {(layer: number, head: number) => void} onSelect
 */
function buildGrid(grid, layers, heads, onSelect) {
  if (grid.dataset.shape !== `${layers}x${heads}`) {
    grid.dataset.shape = `${layers}x${heads}`;
    grid.style.setProperty("--heads", String(heads));
    const cells = [el("span", { className: "mv-corner" })];
    for (let h = 0; h < heads; h++) cells.push(el("span", { className: "mv-col", textContent: `H${h + 1}` }));
    for (let l = 0; l < layers; l++) {
      cells.push(el("span", { className: "mv-row", textContent: `L${l + 1}` }));
      for (let h = 0; h < heads; h++) {
        cells.push(
          el(
            "button",
            {
              type: "button",
              className: "mv-cell",
              dataset: { layer: String(l), head: String(h) },
              "aria-label": `layer ${l + 1}, head ${h + 1}`,
            },
            [el("canvas")],
          ),
        );
      }
    }
    grid.replaceChildren(...cells);
  }
  grid.onclick = (e) => {
    const b = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (e.target).closest("button.mv-cell"));
    if (b) onSelect(Number(b.dataset.layer), Number(b.dataset.head));
  };
  // Arrow keys move between cells; Enter or Space (a button's own keys) opens one.
  gridArrows(grid, "button.mv-cell", layers, heads);
}

/**
 * Draw every cell from the thumbnails, marking the selected layer and head.
 * @param {HTMLElement} grid
 * @param {{layers: number, heads: number, thumbs: Thumbs, entropy: NDArray | null}} data
 *   entropy: [L][H] mean entropy (nats) for each cell's title, once it has arrived (titles())
 * @param {{layer: number, head: number, peak?: boolean, top?: number, unit?: string}} sel peak:
 *   each head coloured from 0 to its own largest weight; top: the value coloured darkest (1 for
 *   weights; value-weighted norms: the largest of every head's); unit: what a cell shows, in
 *   each cell's name ("value-weighted")
 * @param {{onSelect: (layer: number, head: number) => void}} callbacks
 */
export function render(grid, data, sel, callbacks) {
  const { layers, heads, thumbs, entropy } = data;
  buildGrid(grid, layers, heads, callbacks.onSelect);
  const g = /** @type {any} */ (grid);
  const cells = /** @type {NodeListOf<HTMLElement>} */ (grid.querySelectorAll("button.mv-cell"));
  // Every cell has the size of the first: one layout, not one per cell.
  const first = /** @type {HTMLCanvasElement | null} */ (cells[0]?.firstChild ?? null);
  const px = Math.max(8, Math.round((first?.clientWidth ?? 0) * (window.devicePixelRatio || 1)));
  const peak = Boolean(sel.peak);
  const top = sel.top ?? 1;
  // A new selection alone repaints nothing (the same arrays, size and colouring).
  const same = g.__thumbs?.values === thumbs.values && g.__painted === `${px}:${peak}:${top}`;
  g.__thumbs = thumbs; // what is drawn, for tests and exports
  g.__painted = `${px}:${peak}:${top}`;
  const unit = sel.unit ? `, ${sel.unit}` : "";
  for (const b of cells) {
    const l = Number(b.dataset.layer);
    const h = Number(b.dataset.head);
    if (!same) paint(/** @type {HTMLCanvasElement} */ (b.firstChild), thumbs, l, h, px, peak, top);
    b.setAttribute("aria-label", `layer ${l + 1}, head ${h + 1}${unit}`);
    const on = l === sel.layer && h === sel.head;
    b.classList.toggle("selected", on);
    b.setAttribute("aria-pressed", on ? "true" : "false");
    b.title = `layer ${l + 1}, head ${h + 1}`;
  }
  gridStop(grid, "button.mv-cell");
  if (entropy) titles(grid, entropy);
}

/**
 * Put each head's mean entropy into its cell's title (it arrives after the thumbnails).
 * @param {HTMLElement} grid @param {NDArray} entropy [L][H] nats
 */
export function titles(grid, entropy) {
  const heads = entropy.shape[1];
  for (const b of /** @type {NodeListOf<HTMLElement>} */ (grid.querySelectorAll("button.mv-cell"))) {
    const l = Number(b.dataset.layer);
    const h = Number(b.dataset.head);
    b.title = `layer ${l + 1}, head ${h + 1}: mean entropy ${readableProse(entropy.data[l * heads + h])} nats`;
  }
}

/**
 * The whole grid as one PNG (labels included), for download.
 * @param {{layers: number, heads: number, thumbs: Thumbs}} data
 * @param {boolean} [peak] @param {number} [top] the value coloured darkest (render's)
 * @returns {string} a data: URL
 */
export function gridPng(data, peak = false, top = 1) {
  const cell = 64;
  const gap = 4;
  const pad = 28;
  const { layers, heads, thumbs } = data;
  const canvas = document.createElement("canvas");
  canvas.width = pad + heads * (cell + gap);
  canvas.height = pad + layers * (cell + gap);
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = TEXT_DIM;
  ctx.font = "12px system-ui, sans-serif";
  ctx.textAlign = "center";
  for (let h = 0; h < heads; h++) ctx.fillText(`H${h + 1}`, pad + h * (cell + gap) + cell / 2, 18);
  ctx.textAlign = "left";
  for (let l = 0; l < layers; l++) {
    ctx.fillText(`L${l + 1}`, 2, pad + l * (cell + gap) + cell / 2 + 4);
    for (let h = 0; h < heads; h++) {
      const c = document.createElement("canvas");
      paint(c, thumbs, l, h, cell, peak, top);
      ctx.drawImage(c, pad + h * (cell + gap), pad + l * (cell + gap), cell, cell);
    }
  }
  return canvas.toDataURL("image/png");
}

/**
 * A note when one token takes most of the weight of every other row: the column with the
 * largest mean weight over the rows other than its own, when that mean is at least one half.
 * Empty when there is none, or for a matrix whose rows are not weights that sum to 1 (max over
 * heads). The token is called an attention sink only when it is one a head can park weight on
 * whatever the text says: the first token, a special token (`special`, the trace's, per text
 * token), or punctuation. A content word that draws the rows ("it" → "animal") is named as
 * what the head reads, not as a sink.
 * Under the token options a row is a group of tokens (`groups`, the token view's): the note
 * names the tokens of the row, numbered as the text's tokens are, not the row.
 * @param {NDArray} matrix [m][m] @param {string[]} labels @param {boolean} rowsSumToOne
 * @param {number[][] | null} [groups] the tokens of each row (default: row i is token i)
 * @param {boolean[] | null} [special] per text token: a special token ([CLS], [SEP], BOS)
 * @returns {string}
 */
export function sinkNote(matrix, labels, rowsSumToOne, groups = null, special = null) {
  const m = matrix.shape[0];
  if (!rowsSumToOne || m < 3) return "";
  let best = -1;
  let top = 0;
  for (let j = 0; j < m; j++) {
    let sum = 0;
    for (let i = 0; i < m; i++) if (i !== j) sum += matrix.data[i * m + j];
    const mean = sum / (m - 1);
    if (mean > top) [best, top] = [j, mean];
  }
  if (top < 0.5) return "";
  const tokens = groups ? groups[best] : [best];
  const [first, last] = [tokens[0], tokens[tokens.length - 1]];
  const where =
    first === 0 ? "the first token" : tokens.length > 1 ? `tokens ${first + 1}–${last + 1}` : `token ${first + 1}`;
  const share = `on average ${readablePercent(top)} of each other row's weight goes to ${where}, ${quotedToken(labels[best])}.`;
  const punctuation = /^[\s\p{P}\p{S}]+$/u.test(labels[best]);
  if (first !== 0 && !punctuation && !tokens.some((t) => special?.[t])) {
    return (
      `One token draws this head: ${share} It is a word of the text, so the head reads it for ` +
      "what it says; it is not an attention sink, a token (the first, [CLS], [SEP], punctuation) " +
      "that draws weight whatever the text."
    );
  }
  return (
    `An attention sink: ${share} Softmax must give each row's weight to some token; models learn to ` +
    "park what a head does not need on a token every query can see (in a causal model, the first " +
    "is the only one), and often keep that token's value vector small, so the parked weight " +
    "changes little. Much weight on it does not mean it matters."
  );
}

/**
 * The largest value of every head's thumbnail (their scales' maximum): the darkest colour of a
 * grid of value-weighted norms, so that heads are compared on one scale.
 * @param {Thumbs} thumbs @returns {number}
 */
export function thumbsTop(thumbs) {
  let top = 0;
  for (const v of thumbs.scale.data) if (v > top) top = v;
  return top > 0 ? top : 1;
}
