// The pure parts of the views' text alternatives (views/describe.js): the strongest cell, a
// curve in words, WCAG contrast and the ink of a cell's number, and the keyboard cursor's moves.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  approxValue,
  cellValue,
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

test("strongestText: the labels and the value to 3 significant digits, ≈ for 8-bit snapshots", () => {
  const w = m([
    [0.26, 0.14],
    [0.16, 0.301],
  ]);
  assert.equal(strongestText(["An", "apple"], ["An", "apple"], w), "strongest: apple → apple 0.301");
  assert.equal(
    strongestText(["q"], ["a", "b"], { shape: [1, 2], data: [0.1, 0.9] }, { approx: true, word: "top" }),
    "top: q → b ≈ 0.9",
  );
  // A snapshot's value already said as a bound reads as it is, never "≈ over 0.999" (issue 41).
  assert.equal(
    strongestText(["r"], ["r", "."], m([[0.0004, 0.9996]]), { approx: true }),
    "strongest: r → . over 0.999",
  );
  assert.equal(approxValue(0.42), "≈ 0.42");
  assert.equal(approxValue(0.0004), "under 0.001");
  assert.equal(approxValue(-Infinity), "masked");
  assert.equal(strongestText(["a"], ["a"], m([[-Infinity]])), "every cell is masked");
  assert.equal(strongestText(["a"], ["b"], m([[-0.001]])), "strongest: a → b -0.001");
  // A weight that is not 1 never reads 1 (issue 41): 0.997 as it is, 0.9996 "over 0.999".
  assert.equal(strongestText(["a"], ["a", "b"], m([[0.003, 0.997]])), "strongest: a → b 0.997");
  assert.equal(strongestText(["a"], ["a", "b"], m([[0.0004, 0.9996]])), "strongest: a → b over 0.999");
  // A float32 matrix reads as the API spells its numbers (as the cursor's live region does).
  // Float32Array 0.1015 is 0.1014999970793724: the API writes 0.1015, read "0.102".
  const f32 = { shape: [1, 2], dtype: "F32", data: new Float32Array([0.1, 0.1015]) };
  assert.equal(strongestText(["q"], ["a", "b"], f32), "strongest: q → b 0.102");
  assert.equal(strongestText(["q"], ["a", "b"], { ...f32, dtype: "F64" }), "strongest: q → b 0.101");
});

test("strongestText with positions: each token named with its position from 1 (issue 41)", () => {
  // A heatmap that labels every other token: "y → t" names a token with no label; the
  // positions say which.
  const w = m([
    [1, 0, 0],
    [0.2, 0.8, 0],
    [0.1, 0.2, 0.7],
  ]);
  assert.equal(
    strongestText(["t", "y", "t"], ["t", "y", "t"], w, { causal: true, positions: true }),
    "strongest past the first query (which sees only itself): y (2) → y (2) 0.8",
  );
  assert.equal(strongestText(["a"], ["a", "b"], m([[0.1, 0.9]]), { positions: true }), "strongest: a (1) → b (2) 0.9");
});

test("cellValue: readable(), but never 1 or 0 for a value that is not, never an exponent", () => {
  assert.equal(cellValue(0.30149), "0.301");
  assert.equal(cellValue(1), "1");
  assert.equal(cellValue(0), "0");
  assert.equal(cellValue(0.99951), "over 0.999");
  assert.equal(cellValue(0.0000759), "under 0.001");
  assert.equal(cellValue(-0.0000759), "about -0.00008");
  assert.equal(cellValue(-3e-9), "practically zero");
  assert.equal(cellValue(-12.3456), "-12.3");
  assert.equal(cellValue(-0.9996), "under -0.999"); // a cosine short of -1
  assert.equal(cellValue(-1), "-1");
  assert.equal(cellValue(1234.5), "1235");
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
  assert.equal(strongestText(labels, labels, plain), "strongest: d → d 1"); // what it said before
  assert.equal(
    strongestText(labels, labels, plain, { causal: true }),
    "strongest past the first query (which sees only itself): b → a 0.7",
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
      "strongest elsewhere: b → b ≈ 0.3",
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
    "largest past the first query (which sees only itself): z → y 4",
  );
  // One token, or a cross-attention (not square): nothing to leave out.
  assert.equal(
    strongestText(["q"], ["a", "b"], { shape: [1, 2], data: [0.1, 0.9] }, { causal: true }),
    "strongest: q → b 0.9",
  );
  assert.deepEqual(strongest(plain, { fromRow: 1, col: 0 }), { i: 2, j: 1, v: 0.7 });
});

test("curveText: first and last value (3 significant digits, no exponent) over the last step", () => {
  assert.equal(curveText("loss", [1, 2, 300], [3.2614, 1.5, 0.4071]), "loss 3.26 → 0.407 over 300 steps");
  assert.equal(curveText("loss", [1], [2]), "loss 2 → 2 over 1 step");
  assert.equal(curveText("loss", [1, 5000], [2, 0.996]), "loss 2 → 0.996 over 5,000 steps"); // never "1.00"
  assert.equal(curveText("loss", [1, 9], [2, 0.0000004]), "loss 2 → practically zero over 9 steps");
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
