// An image's token grid on its picture, pure (no DOM): which grid cell a sequence position is,
// the cells' values cut from a row of weights the server sent (a selection, never a new
// number), each cell's rectangle of the picture, and the words a reader hears (the strongest
// patch, one patch under the cursor). The grid of a tile is meta.images[i].tiles[t]: cell
// (row, col) is position start + row * cols + col and covers box cut into rows x cols.

import { readableWeight } from "../core/numbers.js";
import { strongest } from "./describe.js";

/** @typedef {import("../core/types.js").ImageBlock} ImageBlock */
/** @typedef {import("../core/types.js").ImageTile} ImageTile */

/** The tile a picture opens on: its global view when it is split, else its only tile. @param {ImageBlock} block */
export function defaultTile(block) {
  const global = block.tiles.findIndex((t) => t.label === "global");
  return global >= 0 ? global : 0;
}

/** A tile's name for a picker: its label ("row 1, column 2", "global"), else "tile N". @param {ImageTile} tile @param {number} t */
export const tileName = (tile, t) =>
  tile.label === "global" ? "the whole picture (global view)" : tile.label || `tile ${t + 1}`;

/**
 * Where an original position is in the images: the image, its tile and the cell; null for a
 * position in no grid (text, or a processor's tag around the tiles).
 * @param {ImageBlock[]} blocks @param {number} position
 * @returns {{image: number, tile: number, i: number, j: number} | null}
 */
export function cellOf(blocks, position) {
  for (const [image, block] of blocks.entries()) {
    if (position < block.start || position >= block.stop) continue;
    for (const [tile, t] of block.tiles.entries()) {
      const k = position - t.start;
      if (k >= 0 && k < t.rows * t.cols) return { image, tile, i: Math.floor(k / t.cols), j: k % t.cols };
    }
  }
  return null;
}

/** True when a position is one of an image's tokens (its grids' or the tags around them). @param {ImageBlock[]} blocks @param {number} position */
export const inImage = (blocks, position) => blocks.some((b) => position >= b.start && position < b.stop);

/**
 * A tile's cells cut from a row over every position: value (row, col) is row[start + row *
 * cols + col], as sent (no number is made here).
 * @param {ArrayLike<number>} row @param {{start: number, rows: number, cols: number}} tile
 * @returns {number[]} rows x cols, row-major
 */
export function tileValues(row, tile) {
  const n = tile.rows * tile.cols;
  if (tile.start + n > row.length)
    throw new RangeError(`the tile's positions end at ${tile.start + n}, past the row's ${row.length}`);
  return Array.from({ length: n }, (_, k) => row[tile.start + k]);
}

/**
 * The rectangle of the picture cell (i, j) of a rows x cols grid over `box` covers.
 * @param {number[]} box [top, left, bottom, right] in the picture's pixels
 * @param {number} rows @param {number} cols @param {number} i @param {number} j
 * @returns {{x: number, y: number, w: number, h: number}}
 */
export function cellRect(box, rows, cols, i, j) {
  const [top, left, bottom, right] = box;
  const h = (bottom - top) / rows;
  const w = (right - left) / cols;
  return { x: left + j * w, y: top + i * h, w, h };
}

/**
 * The cell under a point of the picture (its pixels), or null outside the grid's box.
 * @param {number[]} box @param {number} rows @param {number} cols @param {number} x @param {number} y
 * @returns {[number, number] | null}
 */
export function cellAt(box, rows, cols, x, y) {
  const [top, left, bottom, right] = box;
  if (x < left || x >= right || y < top || y >= bottom) return null;
  const i = Math.min(rows - 1, Math.floor(((y - top) / (bottom - top)) * rows));
  const j = Math.min(cols - 1, Math.floor(((x - left) / (right - left)) * cols));
  return [i, j];
}

/**
 * A weight in running text, by numbers.js's rules (readableWeight): 3 significant digits, never
 * "1" short of it ("over 0.999" for 0.9996; 0.997 reads "0.997") nor "0" above it ("under
 * 0.001"); a float32 ("F32") as the API spells it.
 * @param {number} v @param {string} [dtype]
 */
export const shortWeight = (v, dtype) => readableWeight(v, dtype);

/** The strongest cell (the first of equal ones), or null. @param {number[]} values @param {number} rows @param {number} cols */
export const strongestCell = (values, rows, cols) => strongest({ shape: [rows, cols], data: values });

/**
 * "strongest patch: row 4, column 7, 0.21 of “dog”'s attention" (rows and columns from 1).
 * @param {number[]} values @param {number} rows @param {number} cols @param {string} what
 */
export function strongestText(values, rows, cols, what) {
  const s = strongestCell(values, rows, cols);
  if (!s) return `no patch has a weight in ${what}`;
  return `strongest patch: row ${s.i + 1}, column ${s.j + 1}, ${shortWeight(s.v)} of ${what}`;
}

/** "row 4, column 7: 0.0213 of “dog”'s attention" @param {number} i @param {number} j @param {string} value @param {string} what */
export const patchText = (i, j, value, what) => `row ${i + 1}, column ${j + 1}: ${value} of ${what}`;

/**
 * The positions outside every image (the text, its special tokens), each with its weight in
 * `row`, as sent.
 * @param {ArrayLike<number>} row @param {ImageBlock[]} blocks
 * @returns {{index: number, v: number}[]}
 */
export function outsideImages(row, blocks) {
  const out = [];
  for (let k = 0; k < row.length; k++) if (!inImage(blocks, k)) out.push({ index: k, v: row[k] });
  return out;
}

/**
 * At most `k` of them: the largest weights (the first of equal ones), kept in position order.
 * @param {{index: number, v: number}[]} items @param {number} k
 */
export function largest(items, k) {
  if (items.length <= k) return items;
  const keep = new Set(
    items
      .map((item, at) => ({ at, v: item.v }))
      .sort((a, b) => b.v - a.v || a.at - b.at)
      .slice(0, k)
      .map((x) => x.at),
  );
  return items.filter((_, at) => keep.has(at));
}
