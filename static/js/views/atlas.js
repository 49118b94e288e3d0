// Head atlas: one score of every head of a model as a layers x heads grid of buttons, each
// showing its number on a colour of the weight scale (0 to 1); a head is opened by a click, or
// by Enter on the focused cell (the arrow keys move between cells). Its text alternative names
// the strongest heads in words. render(container, data, selection, callbacks).

import { el } from "../core/dom.js";
import { exact, readableCell, readableWeight } from "../core/numbers.js";
import { WEIGHT_LUT } from "../core/theme.js";
import { describe, gridArrows, matrixTable } from "./access.js";

/** @typedef {import("../core/types.js").AtlasScore} AtlasScore */

export const STRONGEST = 5; // heads named in the summary

/** Relative luminance of an sRGB colour (WCAG 2). @param {number[]} rgb 0..255 */
function luminance(rgb) {
  const [r, g, b] = rgb.map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/**
 * A cell's colours for score `v` (0..1): the weight scale's colour, and the text colour (black or
 * white) that contrasts with it the more: 4.58:1 at the least, whatever the background.
 * @param {number} v @returns {{background: string, color: string}}
 */
export function cellColours(v) {
  const c = Math.max(0, Math.min(255, Math.round(v * 255))) * 3;
  const rgb = [WEIGHT_LUT[c], WEIGHT_LUT[c + 1], WEIGHT_LUT[c + 2]];
  const l = luminance(rgb);
  const white = 1.05 / (l + 0.05);
  const black = (l + 0.05) / 0.05;
  return { background: `rgb(${rgb.join(",")})`, color: black >= white ? "#000000" : "#ffffff" };
}

/**
 * What one head's score says in words: "layer 2 head 1 0.853" (positional: "at offset 1"), the
 * score by numbers.js's rules (readableWeight: 3 significant digits, "over 0.999" short of 1,
 * "under 0.001" above 0), or as `say` says it (the cell's button: cellText).
 * @param {AtlasScore} score @param {number} l @param {number} h
 * @param {(v: number) => string} [say]
 */
export function headWords(score, l, h, say = readableWeight) {
  const off = score.offsets ? ` at offset ${score.offsets[l][h]}` : "";
  return `layer ${l + 1} head ${h + 1} ${say(score.grid[l][h])}${off}`;
}

/**
 * A cell's number as its button shows it, to 2 decimals to fit the cell but never "1.00" short
 * of 1 nor "0.00" above 0 (readableCell: ">0.99", "<0.01"; the button's label says it to 3
 * significant digits, headWords).
 * @param {number} v
 */
export const cellText = (v) => readableCell(v, 2);

/**
 * The strongest heads of a score, best first, in words: "induction: layer 2 head 1 0.85, ...".
 * @param {AtlasScore} score @param {number} [count]
 */
export function strongest(score, count = STRONGEST) {
  const all = score.grid.flatMap((row, l) => row.map((v, h) => ({ v, l, h })));
  all.sort((a, b) => b.v - a.v || a.l - b.l || a.h - b.h);
  return (
    `${score.title}: ` +
    all
      .slice(0, count)
      .map(({ l, h }) => headWords(score, l, h))
      .join(", ")
  );
}

/**
 * How much a score varies over a model's heads: the standard deviation of its grid.
 * @param {AtlasScore} score
 */
export function spread(score) {
  const all = score.grid.flat();
  if (!all.length) return 0;
  const mean = all.reduce((a, b) => a + b, 0) / all.length;
  return Math.sqrt(all.reduce((a, v) => a + (v - mean) ** 2, 0) / all.length);
}

/**
 * The score that varies most over this model's heads (the first of the API's order on a tie):
 * the one the atlas opens on, since a score almost equal on every head (induction on an
 * encoder) draws a blank grid.
 * @param {AtlasScore[]} scores @returns {AtlasScore}
 */
export function mostVaried(scores) {
  return scores.reduce((best, s) => (spread(s) > spread(best) ? s : best), scores[0]);
}

/**
 * Build (once per layers x heads shape) the grid of cell buttons.
 * @param {HTMLElement} grid @param {number} layers @param {number} heads
 */
function buildGrid(grid, layers, heads) {
  if (grid.dataset.shape === `${layers}x${heads}`) return;
  grid.dataset.shape = `${layers}x${heads}`;
  grid.style.setProperty("--heads", String(heads));
  const cells = [el("span", { className: "atlas-corner" })];
  for (let h = 0; h < heads; h++)
    cells.push(el("span", { className: "atlas-col", textContent: `H${h + 1}`, "aria-hidden": "true" }));
  for (let l = 0; l < layers; l++) {
    cells.push(el("span", { className: "atlas-row", textContent: `L${l + 1}`, "aria-hidden": "true" }));
    for (let h = 0; h < heads; h++) {
      cells.push(
        el("button", { type: "button", className: "atlas-cell", dataset: { layer: String(l), head: String(h) } }),
      );
    }
  }
  grid.replaceChildren(...cells);
}

/**
 * Draw one score of every head.
 * @param {HTMLElement} container the view's box (the grid and its text alternative go in it)
 * @param {{layers: number, heads: number, score: AtlasScore}} data
 * @param {{layer: number, head: number} | null} selection the head last opened, marked
 * @param {{onPick: (layer: number, head: number) => void}} callbacks onPick: a head is opened
 */
export function render(container, data, selection, callbacks) {
  const { layers, heads, score } = data;
  let grid = /** @type {HTMLElement | null} */ (container.querySelector(".atlas-grid"));
  if (!grid) {
    grid = el("div", { className: "atlas-grid", role: "group" });
    container.replaceChildren(el("div", { className: "atlas-scroll" }, [grid]));
  }
  grid.setAttribute("aria-label", `${score.title} of every head: layers by heads`);
  buildGrid(grid, layers, heads);
  for (const b of /** @type {NodeListOf<HTMLElement>} */ (grid.querySelectorAll("button.atlas-cell"))) {
    const l = Number(b.dataset.layer);
    const h = Number(b.dataset.head);
    const v = score.grid[l][h];
    const { background, color } = cellColours(v);
    b.style.background = background;
    b.style.color = color;
    b.textContent = cellText(v);
    b.dataset.value = String(v);
    // The button's name holds the number it shows (WCAG 2.5.3, label in name); its tooltip the
    // score to 3 significant digits.
    b.setAttribute("aria-label", `${score.title}, ${headWords(score, l, h, cellText)}: open it on the probe`);
    b.title = `${score.title}, ${headWords(score, l, h)}`;
    const on = selection !== null && l === selection.layer && h === selection.head;
    b.classList.toggle("selected", on);
    b.setAttribute("aria-pressed", on ? "true" : "false");
  }
  grid.onclick = (e) => {
    const b = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (e.target).closest("button.atlas-cell"));
    if (b) callbacks.onPick(Number(b.dataset.layer), Number(b.dataset.head));
  };
  gridArrows(grid, "button.atlas-cell", layers, heads); // after the selection: its Tab stop
  const scroll = /** @type {HTMLElement} */ (grid.parentElement);
  describe(scroll, {
    summary: `Strongest heads, ${strongest(score)}.`,
    table: matrixTable(
      `${score.title} of every head`,
      "layer",
      Array.from({ length: layers }, (_, l) => `layer ${l + 1}`),
      Array.from({ length: heads }, (_, h) => `head ${h + 1}`),
      (l, h) =>
        score.offsets ? `${exact(score.grid[l][h])} (offset ${score.offsets[l][h]})` : exact(score.grid[l][h]),
    ),
  });
}
