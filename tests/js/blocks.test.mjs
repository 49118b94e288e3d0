// The image blocks of sentence mode (static/js/modes/sentence/blocks.js): labels, the rows a
// collapsed image becomes, its column the sum and its row the mean of the trace's numbers, and
// the browser's checks of an image file.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  blockLabel,
  collapseLayer,
  collapseMatrix,
  collapsePlan,
  collapsedByDefault,
  collapsedNote,
  imageBlocks,
  imageProblem,
  patchLabels,
  sizeText,
} from "../../static/js/modes/sentence/blocks.js";

const tile = (start, rows, cols, label = "") => ({ start, rows, cols, box: [0, 0, 1, 1], merge: 1, label });
const image = (i, start, stop, tiles) => ({
  image: i,
  start,
  stop,
  rows: 2,
  cols: 2,
  height: 8,
  width: 8,
  tiles,
  type: "png",
});

test("a block's label names its grid, or its tiles and global view", () => {
  assert.equal(blockLabel(image(0, 1, 5, [tile(1, 2, 2)])), "image 1: 2 × 2 patches");
  const split = image(1, 0, 40, [
    tile(1, 4, 4),
    tile(17, 4, 4),
    tile(33, 4, 4),
    tile(49, 4, 4),
    tile(65, 4, 4, "global"),
  ]);
  assert.equal(blockLabel(split), "image 2: 4 tiles of 4 × 4 and a global 4 × 4");
});

test("blocks are the shown rows inside an image; hidden tokens leave none", () => {
  const images = [image(0, 1, 5, [tile(1, 2, 2)])];
  const groups = [[0], [1], [2], [3], [4], [5]];
  assert.deepEqual(imageBlocks(images, groups), [
    { image: 0, label: "image 1: 2 × 2 patches", rows: [1, 2, 3, 4], tokens: 4 },
  ]);
  assert.deepEqual(imageBlocks(images, [[0], [5]]), []); // hide special tokens: the image is gone
  assert.equal(collapsedByDefault(images), false);
  assert.equal(collapsedByDefault([image(0, 0, 64, [])]), true);
  assert.equal(collapsedByDefault(undefined), false);
});

test("collapsed: the column is the sum over the block's keys, the row the mean of its rows", () => {
  const labels = ["a", "<image>", "<image>", "b"];
  const blocks = imageBlocks(
    [image(0, 1, 3, [tile(1, 1, 2)])],
    labels.map((_, i) => [i]),
  );
  const plan = collapsePlan(labels, blocks, true);
  assert.deepEqual(plan, { groups: [[0], [1, 2], [3]], labels: ["a", "image 1", "b"], block: [null, 0, null] });
  assert.deepEqual(collapsePlan(labels, blocks, false).groups, [[0], [1], [2], [3]]);
  // rows sum to 1
  const m = [
    [1, 0, 0, 0],
    [0.5, 0.5, 0, 0],
    [0.2, 0.3, 0.5, 0],
    [0.1, 0.2, 0.3, 0.4],
  ];
  const matrix = { dtype: "F32", shape: [4, 4], data: Float32Array.from(m.flat()) };
  const out = collapseMatrix(matrix, plan.groups);
  assert.deepEqual(out.shape, [3, 3]);
  const f = (x) => Math.fround(x);
  const want = [
    [1, 0, 0],
    [(0.5 + f(0.2)) / 2, (0.5 + f(0.3) + 0.5) / 2, 0],
    [f(0.1), f(0.2) + f(0.3), f(0.4)],
  ];
  want.flat().forEach((w, k) => assert.ok(Math.abs(out.data[k] - w) < 1e-12, `${k}: ${out.data[k]} vs ${w}`));
  for (let r = 0; r < 3; r++) {
    const sum = out.data.slice(r * 3, r * 3 + 3).reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum - 1) < 1e-6);
  }
  assert.equal(collapseMatrix(matrix, [[0], [1], [2], [3]]), matrix); // nothing collapsed: the very matrix
  assert.equal(collapsedNote(plan, 0, 1), "exact: the sum over the image's 2 keys");
  assert.equal(collapsedNote(plan, 1, 1), "exact: the sum over the image's 2 keys, the mean of its 2 query rows");
  assert.equal(collapsedNote(plan, 0, 0), "");
});

test("a layer's 8-bit weights collapse to weights read through a scale of 255", () => {
  const values = { dtype: "U8", shape: [1, 3, 3], data: Uint8Array.from([255, 0, 0, 128, 127, 0, 51, 102, 102]) };
  const scale = { dtype: "F32", shape: [1], data: Float32Array.from([1]) };
  const { values: v, scale: s } = collapseLayer(values, scale, [[0], [1, 2]]);
  assert.deepEqual(v.shape, [1, 2, 2]);
  assert.equal(s.data[0], 255);
  assert.ok(Math.abs(v.data[2] - (128 + 51) / 255 / 2) < 1e-12); // row "image", column "a"
  assert.ok(Math.abs(v.data[3] - (127 + 102 + 102) / 255 / 2) < 1e-12);
});

test("a file is checked against the server's caps, each rule named", () => {
  const caps = { max_images: 2, max_bytes: 1000, types: ["image/png", "image/jpeg", "image/webp"] };
  assert.equal(imageProblem({ name: "a.png", type: "image/png", size: 10 }, caps, 0), null);
  assert.match(
    imageProblem({ name: "a.svg", type: "image/svg+xml", size: 10 }, caps, 0),
    /must be one of PNG, JPEG, WEBP/,
  );
  assert.match(imageProblem({ name: "b.png", type: "image/png", size: 1001 }, caps, 0), /at most 1000 bytes/);
  assert.match(imageProblem({ name: "c.png", type: "image/png", size: 1 }, caps, 2), /at most 2 images per text/);
  assert.equal(sizeText(10 * 1024 * 1024), "10 MB");
  assert.equal(sizeText(48 * 1024 + 300), "48 KB");
  assert.equal(sizeText(1536), "1.5 KB");
});

test("each patch is named by its place in its grid, its tile's in a split picture", () => {
  const labels = ["a", "<image>", "<image>", "<image>", "<image>", "b"];
  const groups = labels.map((_, i) => [i]);
  assert.deepEqual(patchLabels([image(0, 1, 5, [tile(1, 2, 2)])], groups, labels), [
    "a",
    "image 1 · 1,1",
    "image 1 · 1,2",
    "image 1 · 2,1",
    "image 1 · 2,2",
    "b",
  ]);
  const split = [image(0, 0, 6, [tile(1, 1, 2), tile(4, 1, 1, "global")])];
  assert.deepEqual(patchLabels(split, groups, labels).slice(1, 5), [
    "image 1 · tile 1 · 1,1",
    "image 1 · tile 1 · 1,2",
    "<image>",
    "image 1 · global · 1,1",
  ]);
});
