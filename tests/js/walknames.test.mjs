// The first hour's second walk (issue 41), its pure parts: a heatmap that labels every k-th
// token labels the tokens its text names all the same (heatcanvas.js labelsShown, the cell
// describe.js strongestCell names), and the toy lab's weights are named by their axes
// (toy/controls.js weightName, as the table names a cell "banana, fruit").
import assert from "node:assert/strict";
import { test } from "node:test";

import { labelsShown } from "../../static/js/views/heatcanvas.js";
import { strongestCell, strongestText } from "../../static/js/views/describe.js";
import { weightName } from "../../static/js/modes/toy/controls.js";

const m = (rows) => ({ shape: [rows.length, rows[0].length], data: rows.flat() });

test("labelsShown: every k-th label, and always the named ones, their neighbours left out", () => {
  const labels = ["a", "b", "c", "d", "e", "f", "g"];
  assert.deepEqual(labelsShown(labels, 1, [3]), labels);
  assert.deepEqual(labelsShown(labels, 2, []), ["a", "", "c", "", "e", "", "g"]);
  assert.deepEqual(labelsShown(labels, 2, [3, -1]), ["a", "", "", "d", "", "", "g"]);
  assert.deepEqual(labelsShown(labels, 3, [1, 5]), ["", "b", "", "", "", "f", ""]);
  assert.deepEqual(labelsShown(labels, 2, [9]), ["a", "", "c", "", "e", "", "g"]); // out of range
});

test("strongestCell: the cell strongestText names, past the first query of a causal head", () => {
  const w = m([
    [1, 0, 0],
    [0.2, 0.8, 0],
    [0.1, 0.3, 0.6],
  ]);
  assert.deepEqual(strongestCell(w), { cell: { i: 0, j: 0, v: 1 }, sink: null });
  assert.deepEqual(strongestCell(w, { causal: true }).cell, { i: 1, j: 1, v: 0.8 });
  assert.match(strongestText(["x", "y", "z"], ["x", "y", "z"], w, { causal: true }), /: y → y 0\.8$/);
  const sink = m([
    [1, 0, 0],
    [0.7, 0.3, 0],
    [0.6, 0.1, 0.3],
  ]);
  const got = strongestCell(sink, { causal: true });
  assert.ok(Math.abs(got.sink - 0.65) < 1e-12, String(got.sink));
  assert.deepEqual(got.cell, { i: 1, j: 1, v: 0.3 }); // the first key left out: the sink is named apart
});

test("weightName: a weight named by its axes, its head where there are several", () => {
  const axes = ["tech", "fruit", "grammar"];
  assert.equal(weightName("q", axes, 1, 2, 1), "W_Q, grammar row, fruit column");
  assert.equal(weightName("v", axes, 1, 2, 2), "W_V, grammar row, grammar column");
  assert.equal(weightName("k", axes, 3, 0, 2), "W_K, tech row, grammar column (head 3)");
  assert.equal(weightName("o", ["a", "s", "p", "g"], 2, 2, 3), "W_O, p row (head 2), g column");
  // An axis without a name is its dimension; one named twice says which.
  assert.equal(weightName("q", ["x", " ", "x"], 1, 1, 2), "W_Q, dimension 2 row, x (dimension 3) column");
});
