// An image's token grid on its picture (views/patches.js): which cell a position is, the cells
// cut from a row as sent, each cell's rectangle of the picture, and the words read aloud.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  cellAt,
  cellOf,
  cellRect,
  defaultTile,
  inImage,
  largest,
  outsideImages,
  patchText,
  shortWeight,
  strongestText,
  tileName,
  tileValues,
} from "../../static/js/views/patches.js";

// An Idefics3-like picture: two 2 x 2 tiles after a tag each, then a global view; text around.
const tiles = [
  { start: 3, rows: 2, cols: 2, box: [0, 0, 32, 48], merge: 2, label: "row 1, column 1" },
  { start: 8, rows: 2, cols: 2, box: [0, 48, 32, 96], merge: 2, label: "row 1, column 2" },
  { start: 13, rows: 2, cols: 2, box: [0, 0, 64, 96], merge: 2, label: "global" },
];
const block = { image: 0, start: 2, stop: 17, rows: 2, cols: 2, height: 64, width: 96, tiles };

test("a position's cell, and the image's span (its tags included)", () => {
  assert.deepEqual(cellOf([block], 3), { image: 0, tile: 0, i: 0, j: 0 });
  assert.deepEqual(cellOf([block], 10), { image: 0, tile: 1, i: 1, j: 0 });
  assert.deepEqual(cellOf([block], 16), { image: 0, tile: 2, i: 1, j: 1 });
  assert.equal(cellOf([block], 7), null); // the second tile's tag
  assert.equal(cellOf([block], 0), null); // text
  assert.equal(inImage([block], 7), true);
  assert.equal(inImage([block], 17), false);
  assert.equal(defaultTile(block), 2);
  assert.equal(defaultTile({ ...block, tiles: [tiles[0]] }), 0);
  assert.equal(tileName(tiles[1], 1), "row 1, column 2");
  assert.equal(tileName({ ...tiles[0], label: "" }, 0), "tile 1");
});

test("a tile's cells are the row's values at its positions, untouched", () => {
  const row = Float32Array.from({ length: 20 }, (_, k) => k / 100);
  assert.deepEqual(tileValues(row, tiles[1]), [row[8], row[9], row[10], row[11]]);
  assert.throws(() => tileValues(row.subarray(0, 15), tiles[2]), /past the row's 15/);
  const outside = outsideImages(row, [block]);
  assert.deepEqual(
    outside.map((o) => o.index),
    [0, 1, 17, 18, 19],
  );
  assert.equal(outside[2].v, row[17]);
});

test("a cell's rectangle of the picture, and the cell under a point", () => {
  assert.deepEqual(cellRect([0, 16, 64, 80], 8, 8, 2, 3), { x: 16 + 3 * 8, y: 16, w: 8, h: 8 });
  assert.deepEqual(cellRect(tiles[1].box, 2, 2, 1, 1), { x: 72, y: 16, w: 24, h: 16 });
  assert.deepEqual(cellAt([0, 16, 64, 80], 8, 8, 16 + 3 * 8 + 1, 17), [2, 3]);
  assert.deepEqual(cellAt([0, 16, 64, 80], 8, 8, 79.9, 63.9), [7, 7]);
  assert.equal(cellAt([0, 16, 64, 80], 8, 8, 10, 10), null); // greyed: outside the crop
});

test("the strongest patch and one patch in words", () => {
  const values = [0.01, 0.02, 0.21, 0.005];
  assert.equal(
    strongestText(values, 2, 2, "“dog”'s attention"),
    "strongest patch: row 2, column 1, 0.21 of “dog”'s attention",
  );
  assert.equal(strongestText([NaN], 1, 1, "x"), "no patch has a weight in x");
  assert.equal(patchText(3, 6, "0.0213", "“dog”'s attention"), "row 4, column 7: 0.0213 of “dog”'s attention");
  // 3 significant digits, never "1" short of it nor "0" above it (numbers.js readableWeight).
  assert.equal(shortWeight(0.0123), "0.0123");
  assert.equal(shortWeight(0.456), "0.456");
  assert.equal(shortWeight(0.997), "0.997"); // was "1.00"
  assert.equal(shortWeight(0.9996), "over 0.999");
  assert.equal(shortWeight(0.00004), "under 0.001");
  assert.equal(shortWeight(0), "0");
  assert.equal(shortWeight(1), "1");
  assert.equal(shortWeight(Math.fround(0.1), "F32"), "0.1");
  assert.equal(
    strongestText([0.0001, 0.9996, 0.0003, 0], 2, 2, "“dog”'s attention"),
    "strongest patch: row 1, column 2, over 0.999 of “dog”'s attention",
  );
});

test("the largest few of many, in position order", () => {
  const items = [0.1, 0.5, 0.2, 0.5, 0.05].map((v, index) => ({ index, v }));
  assert.deepEqual(
    largest(items, 3).map((x) => x.index),
    [1, 2, 3],
  );
  assert.equal(largest(items, 9), items);
});
