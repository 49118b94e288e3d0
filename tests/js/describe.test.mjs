// The pure parts of the views' text alternatives (views/describe.js): the strongest cell, a
// curve in words, WCAG contrast and the ink of a cell's number, and the keyboard cursor's moves.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  contrast,
  curveText,
  farthest,
  firstTokenSink,
  inkOn,
  luminance,
  moveCursor,
  strongest,
  strongestText,
} from "../../static/js/views/describe.js";
import { SCORE_LUT, WEIGHT_LUT } from "../../static/js/core/theme.js";

const m = (rows) => ({ shape: [rows.length, rows[0].length], data: rows.flat() });

test("strongest: the largest finite value, the first of equal ones, none when all are masked", () => {
  assert.deepEqual(
    strongest(
      m([
        [0.1, 0.3],
        [0.3, 0.2],
      ]),
    ),
    { i: 0, j: 1, v: 0.3 },
  );
  assert.deepEqual(
    strongest(
      m([
        [-Infinity, -2],
        [null, -1],
      ]),
    ),
    { i: 1, j: 1, v: -1 },
  );
  assert.equal(strongest(m([[-Infinity, null]])), null);
  // A non-square matrix (a cross-attention, a generation step's one row).
  assert.deepEqual(strongest({ shape: [1, 3], data: new Float32Array([0.2, 0.5, 0.3]) }), { i: 0, j: 1, v: 0.5 });
});

test("strongestText: the labels and the value to 2 decimals, ≈ for 8-bit snapshots", () => {
  const w = m([
    [0.26, 0.14],
    [0.16, 0.301],
  ]);
  assert.equal(strongestText(["An", "apple"], ["An", "apple"], w), "strongest: apple → apple 0.30");
  assert.equal(
    strongestText(["q"], ["a", "b"], { shape: [1, 2], data: [0.1, 0.9] }, { approx: true, word: "top" }),
    "top: q → b ≈ 0.90",
  );
  assert.equal(strongestText(["a"], ["a"], m([[-Infinity]])), "every cell is masked");
  assert.equal(strongestText(["a"], ["b"], m([[-0.001]])), "strongest: a → b 0.00"); // never -0.00
});

test("strongestText of a causal head: the first query left out, a first-token sink named apart (issue 28, 5.14)", () => {
  const labels = ["d", "a", "b", "c"];
  // Row 0 sees only itself: its 1.00 is no finding. Past it the strongest is b → a.
  const plain = m([
    [1, 0, 0, 0],
    [0.4, 0.6, 0, 0],
    [0.1, 0.7, 0.2, 0],
    [0.2, 0.3, 0.1, 0.4],
  ]);
  assert.equal(strongestText(labels, labels, plain), "strongest: d → d 1.00"); // what it said before
  assert.equal(
    strongestText(labels, labels, plain, { causal: true }),
    "strongest past the first query (which sees only itself): b → a 0.70",
  );
  // Most of each later row on the first token: a sink, named with its share; the strongest
  // among the other keys.
  const sink = m([
    [1, 0, 0, 0],
    [0.9, 0.1, 0, 0],
    [0.6, 0.1, 0.3, 0],
    [0.75, 0.05, 0.05, 0.15],
  ]);
  assert.equal(
    strongestText(labels, labels, sink, { causal: true, approx: true }),
    "an attention sink: each later query gives on average 75% of its weight to the first token, “d”; " +
      "strongest elsewhere: b → b ≈ 0.30",
  );
  assert.equal(firstTokenSink(sink), 0.75);
  // Nearly every later row's weight on the first token, but not all of it: never "100%".
  const nearly = m([
    [1, 0, 0],
    [0.997, 0.003, 0],
    [0.998, 0.001, 0.001],
  ]);
  assert.match(
    strongestText(["a", "b", "c"], ["a", "b", "c"], nearly, { causal: true }),
    /^an attention sink: each later query gives on average over 99% of its weight to the first token/,
  );
  assert.equal(firstTokenSink(plain), null); // 23% on average
  // Scores (not weights) have no sink; masked scores are skipped.
  const scores = m([
    [2, -Infinity, -Infinity],
    [3, 1, -Infinity],
    [0.5, 4, 2],
  ]);
  assert.equal(firstTokenSink(scores), null);
  assert.equal(
    strongestText(["x", "y", "z"], ["x", "y", "z"], scores, { causal: true, word: "largest" }),
    "largest past the first query (which sees only itself): z → y 4.00",
  );
  // One token, or a cross-attention (not square): nothing to leave out.
  assert.equal(
    strongestText(["q"], ["a", "b"], { shape: [1, 2], data: [0.1, 0.9] }, { causal: true }),
    "strongest: q → b 0.90",
  );
  assert.deepEqual(strongest(plain, { fromRow: 1, col: 0 }), { i: 2, j: 1, v: 0.7 });
});

test("curveText: first and last value over the last step", () => {
  assert.equal(curveText("loss", [1, 2, 300], [3.2614, 1.5, 0.4071]), "loss 3.26 → 0.41 over 300 steps");
  assert.equal(curveText("loss", [1], [2]), "loss 2.00 → 2.00 over 1 step");
  assert.equal(curveText("loss", [1, 5000], [2, 1]), "loss 2.00 → 1.00 over 5,000 steps");
  assert.equal(curveText("loss", [], []), "loss: no steps yet");
});

test("contrast: WCAG's closed forms, and an ink of AA contrast on every colour of both scales", () => {
  assert.equal(luminance([255, 255, 255]), 1);
  assert.equal(luminance([0, 0, 0]), 0);
  assert.equal(contrast([0, 0, 0], [255, 255, 255]), 21);
  assert.equal(contrast([255, 255, 255], [0, 0, 0]), 21);
  assert.ok(Math.abs(contrast([0x76, 0x76, 0x76], [255, 255, 255]) - 4.54) < 0.01); // #767676: AA's edge
  assert.equal(inkOn([255, 255, 255]), "#000000");
  assert.equal(inkOn([8, 48, 107]), "#ffffff"); // the weight scale's darkest
  for (const lut of [WEIGHT_LUT, SCORE_LUT]) {
    for (let i = 0; i < 256; i++) {
      const rgb = /** @type {[number, number, number]} */ ([lut[3 * i], lut[3 * i + 1], lut[3 * i + 2]]);
      const ink = inkOn(rgb) === "#000000" ? [0, 0, 0] : [255, 255, 255];
      assert.ok(contrast(rgb, ink) >= 4.5, `entry ${i}: ${contrast(rgb, ink)}`);
    }
  }
});

test("moveCursor: arrows clamp, Home/End to the row's ends (with Ctrl the grid's), pages of ten", () => {
  assert.deepEqual(moveCursor("ArrowRight", 0, 0, 3, 4), [0, 1]);
  assert.deepEqual(moveCursor("ArrowLeft", 0, 0, 3, 4), [0, 0]);
  assert.deepEqual(moveCursor("ArrowUp", 0, 2, 3, 4), [0, 2]);
  assert.deepEqual(moveCursor("ArrowDown", 2, 2, 3, 4), [2, 2]);
  assert.deepEqual(moveCursor("ArrowDown", 1, 2, 3, 4), [2, 2]);
  assert.deepEqual(moveCursor("End", 1, 0, 3, 4), [1, 3]);
  assert.deepEqual(moveCursor("Home", 1, 3, 3, 4), [1, 0]);
  assert.deepEqual(moveCursor("End", 1, 0, 3, 4, true), [2, 3]);
  assert.deepEqual(moveCursor("Home", 2, 3, 3, 4, true), [0, 0]);
  assert.deepEqual(moveCursor("PageDown", 0, 5, 1, 30), [0, 15]);
  assert.deepEqual(moveCursor("PageDown", 0, 25, 1, 30), [0, 29]);
  assert.deepEqual(moveCursor("PageUp", 0, 5, 1, 30), [0, 0]);
  assert.equal(moveCursor("a", 0, 0, 3, 4), null);
  assert.equal(moveCursor("Tab", 0, 0, 3, 4), null); // Tab leaves the plot
});

test("farthest: the point that moved most between two layers, by Euclidean distance", () => {
  assert.deepEqual(
    farthest(
      [
        [0, 0],
        [1, 1],
      ],
      [
        [3, 4],
        [1, 2],
      ],
    ),
    { i: 0, d: 5 },
  );
  assert.equal(farthest([], []), null);
});
