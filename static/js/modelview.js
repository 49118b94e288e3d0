// Model view: every layer x head as a small heatmap on a <canvas> (one 2-D canvas per cell, in a
// grid of buttons), from the trace's 8-bit thumbnails. render(grid, data, sel, callbacks).

import { el } from "./dom.js";
import { fmt } from "./numbers.js";
import { TEXT_DIM, WEIGHT_LUT } from "./theme.js";

/** @typedef {import("./types.js").NDArray} NDArray */

/**
 * The thumbnails: values [L][H][s][s] uint8 and scale [L][H] (weight ~ value * scale / 255);
 * pool > 1 when each pixel is the largest weight of a pool x pool block.
 * @typedef {{values: NDArray, scale: NDArray, pool: number, size: number}} Thumbs
 */

/**
 * An s x s image of one head's thumbnail: weight w is coloured WEIGHT_LUT[round(w * 255)].
 * @param {Thumbs} thumbs @param {number} layer @param {number} head
 */
export function thumbImage(thumbs, layer, head) {
  const [, H, s] = thumbs.values.shape;
  const k = layer * H + head;
  const scale = thumbs.scale.data[k];
  const pixels = thumbs.values.data.subarray(k * s * s, (k + 1) * s * s);
  const img = new ImageData(s, s);
  for (let p = 0; p < s * s; p++) {
    const c = Math.min(255, Math.round(pixels[p] * scale)) * 3; // w * 255 = value * scale
    img.data[p * 4] = WEIGHT_LUT[c];
    img.data[p * 4 + 1] = WEIGHT_LUT[c + 1];
    img.data[p * 4 + 2] = WEIGHT_LUT[c + 2];
    img.data[p * 4 + 3] = 255;
  }
  return img;
}

/**
 * Paint one head over the whole of `canvas`, `size` pixels square (default: its CSS box at the
 * device's pixel ratio).
 * @param {HTMLCanvasElement} canvas @param {Thumbs} thumbs @param {number} layer @param {number} head
 * @param {number} [size]
 */
function paint(canvas, thumbs, layer, head, size) {
  const px = size ?? Math.max(8, Math.round(canvas.clientWidth * (window.devicePixelRatio || 1)));
  if (canvas.width !== px) {
    canvas.width = px;
    canvas.height = px;
  }
  const s = thumbs.size;
  const src = document.createElement("canvas");
  src.width = s;
  src.height = s;
  /** @type {CanvasRenderingContext2D} */ (src.getContext("2d")).putImageData(thumbImage(thumbs, layer, head), 0, 0);
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
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
        cells.push(el("button", { type: "button", className: "mv-cell",
          dataset: { layer: String(l), head: String(h) }, "aria-label": `layer ${l + 1}, head ${h + 1}` },
        [el("canvas")]));
      }
    }
    grid.replaceChildren(...cells);
  }
  grid.onclick = (e) => {
    const b = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (e.target).closest("button.mv-cell"));
    if (b) onSelect(Number(b.dataset.layer), Number(b.dataset.head));
  };
  // Arrow keys move between cells; Enter or Space (a button's own keys) opens one.
  grid.onkeydown = (e) => {
    const b = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (e.target).closest("button.mv-cell"));
    const steps = /** @type {Record<string, [number, number]>} */ ({ ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] });
    const step = steps[e.key];
    if (!b || !step) return;
    const l = Math.min(layers - 1, Math.max(0, Number(b.dataset.layer) + step[0]));
    const h = Math.min(heads - 1, Math.max(0, Number(b.dataset.head) + step[1]));
    /** @type {HTMLElement | null} */ (grid.querySelector(`button.mv-cell[data-layer="${l}"][data-head="${h}"]`))?.focus();
    e.preventDefault();
  };
}

/**
 * Draw every cell from the thumbnails, marking the selected layer and head.
 * @param {HTMLElement} grid
 * @param {{layers: number, heads: number, thumbs: Thumbs, entropy: NDArray | null}} data
 *   entropy: [L][H] mean entropy (nats) for each cell's title, once it has arrived (titles())
 * @param {{layer: number, head: number}} sel
 * @param {{onSelect: (layer: number, head: number) => void}} callbacks
 */
export function render(grid, data, sel, callbacks) {
  const { layers, heads, thumbs, entropy } = data;
  buildGrid(grid, layers, heads, callbacks.onSelect);
  for (const b of /** @type {NodeListOf<HTMLElement>} */ (grid.querySelectorAll("button.mv-cell"))) {
    const l = Number(b.dataset.layer);
    const h = Number(b.dataset.head);
    paint(/** @type {HTMLCanvasElement} */ (b.firstChild), thumbs, l, h);
    const on = l === sel.layer && h === sel.head;
    b.classList.toggle("selected", on);
    b.setAttribute("aria-pressed", on ? "true" : "false");
    b.title = `layer ${l + 1}, head ${h + 1}`;
  }
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
    b.title = `layer ${l + 1}, head ${h + 1}: mean entropy ${fmt(entropy.data[l * heads + h], 2)} nats`;
  }
}

/**
 * The whole grid as one PNG (labels included), for download.
 * @param {{layers: number, heads: number, thumbs: Thumbs}} data
 * @returns {string} a data: URL
 */
export function gridPng(data) {
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
      paint(c, thumbs, l, h, cell);
      ctx.drawImage(c, pad + h * (cell + gap), pad + l * (cell + gap), cell, cell);
    }
  }
  return canvas.toDataURL("image/png");
}
