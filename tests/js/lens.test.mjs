// The Predictions card's pure parts (views/lens.js): percentages, the window of positions
// around the query, a cell's words from a window's arrays, and the first layer that knows the
// next token.
import assert from "node:assert/strict";
import { test } from "node:test";

import { spokenToken } from "../../static/js/core/tokens.js";
import { exact } from "../../static/js/core/numbers.js";
import {
  cellText,
  columnsFor,
  firstKnown,
  numbersTable,
  percent,
  rowName,
  windowOf,
} from "../../static/js/views/lens.js";

test("percentages: one decimal, two below 1%, a floor below 0.01%", () => {
  assert.equal(percent(0.4567), "45.7%");
  assert.equal(percent(0.01), "1.0%");
  assert.equal(percent(0.0054), "0.54%");
  assert.equal(percent(0.00005), "<0.01%");
  // Never a value it is not: "100.0%" only for all of it, "0%" only for none.
  assert.equal(percent(0.9996), "over 99.9%");
  assert.equal(percent(0.9994), "99.9%");
  assert.equal(percent(1), "100.0%");
  assert.equal(percent(0), "0%");
  assert.equal(percent(1e-9), "<0.01%");
});

test("the window: as many positions as fit, around the query, within the text", () => {
  assert.deepEqual(windowOf(30, 0, 4), [0, 1, 2, 3]);
  assert.deepEqual(windowOf(30, 10, 4), [8, 9, 10, 11]);
  assert.deepEqual(windowOf(30, 29, 4), [26, 27, 28, 29]);
  assert.deepEqual(windowOf(2, 1, 16), [0, 1]);
  assert.equal(columnsFor(480), 5);
  assert.equal(columnsFor(100), 3);
  assert.equal(columnsFor(4000), 16);
  assert.deepEqual(
    [0, 1, 2].map((r) => rowName(r, 3)),
    ["embeddings", "layer 1", "layer 2 (output)"],
  );
});

/** Two hidden states over positions 5 and 6 of a text of 7 tokens (a window from 5). */
const data = {
  tokens: ["a", "b", "c", "d", "e", " cat", " sat"],
  start: 5,
  top: {
    k: 1,
    ids: { dtype: "I32", shape: [2, 1], data: new Int32Array([9, 4]) },
    probs: { dtype: "F32", shape: [2, 1], data: new Float32Array([0.5, 0.25]) },
    vocab: { 9: " sat", 4: "!" },
  },
  lens: {
    rows: 2,
    ids: { dtype: "I32", shape: [2, 2], data: new Int32Array([3, 4, 9, 4]) },
    probs: { dtype: "F32", shape: [2, 2], data: new Float32Array([0.125, 0.5, 0.5, 0.25]) },
    targets: { dtype: "I32", shape: [2], data: new Int32Array([9, -1]) },
    target_ranks: { dtype: "I32", shape: [2, 2], data: new Int32Array([7, 0, 1, 0]) },
    target_probs: { dtype: "F32", shape: [2, 2], data: new Float32Array([0.001, 0, 0.5, 0]) },
    vocab: { 3: " the", 4: "!", 9: " sat" },
  },
};

// A space is drawn "␣" (issue 28, 5.10: a token's spaces were blanks): these expectations
// changed on purpose with the one token helper, core/tokens.js.
test("a cell's words: its row's top token, and the rank of the token that comes next", () => {
  assert.equal(
    cellText(/** @type {any} */ (data), 0, 5),
    "embeddings, after “␣cat” (token 6): top “␣the” 12.5%; the next token “␣sat” is rank 7, 0.10%",
  );
  assert.equal(
    cellText(/** @type {any} */ (data), 1, 5),
    "layer 1 (output), after “␣cat” (token 6): top “␣sat” 50.0%; the next token “␣sat” is rank 1, 50.0%",
  );
  assert.equal(
    cellText(/** @type {any} */ (data), 1, 6),
    "layer 1 (output), after “␣sat” (token 7): top “!” 25.0%; the text ends here",
  );
  assert.equal(firstKnown(/** @type {any} */ (data), 5), 1);
  assert.equal(firstKnown(/** @type {any} */ (data), 6), -1);
});

test("an encoder's head: each position's own token, and a mask the text does not fill", () => {
  const masked = /** @type {any} */ ({
    ...data,
    predicts: "masked",
    lens: { ...data.lens, targets: { dtype: "I32", shape: [2], data: new Int32Array([3, -1]) } },
  });
  assert.equal(
    cellText(masked, 0, 5),
    "embeddings, at “␣cat” (token 6): top “␣the” 12.5%; the text's token “␣the” is rank 7, 0.10%",
  );
  assert.equal(
    cellText(masked, 1, 6),
    "layer 1 (output), at “␣sat” (token 7): top “!” 25.0%; a mask: the text does not say",
  );
});

test("the live region names what the page draws as marks", () => {
  const spoken = (/** @type {string} */ t) => `“${spokenToken(t)}”`;
  assert.equal(
    cellText(/** @type {any} */ (data), 0, 5, spoken),
    "embeddings, after “space cat” (token 6): top “space the” 12.5%; the next token “space sat” is rank 7, 0.10%",
  );
});

test("the numbers table: each cell's probability exactly as the API sent it, never a percentage", () => {
  // A float32 the page's percentage rounds (0.1 of a percent) and a float32 of many digits.
  const f = Math.fround;
  const probs = new Float32Array([f(0.123456789), 0.5, f(0.987654321), f(1e-7)]);
  const exactData = /** @type {any} */ ({
    ...data,
    lens: { ...data.lens, probs: { dtype: "F32", shape: [2, 2], data: probs } },
  });
  const t = numbersTable(exactData);
  assert.deepEqual(t.head, ["layer", "6. ␣cat", "7. ␣sat"]);
  assert.deepEqual(
    t.rows.map((r) => r[0]),
    ["embeddings", "layer 1 (output)"],
  );
  // The shortest digits that read back as each float32, as the JSON trace spells them.
  assert.equal(t.rows[0][1], "␣the 0.12345679; next rank 7");
  assert.equal(t.rows[0][2], "! 0.5"); // the text ends there: no rank
  assert.equal(t.rows[1][1], "␣sat 0.9876543; next rank 1");
  assert.equal(t.rows[1][2], "! 1e-7");
  for (const [i, p] of [...probs].entries()) {
    const cell = t.rows[Math.floor(i / 2)][1 + (i % 2)];
    assert.ok(cell.includes(` ${exact(p, "F32")}`), cell);
    assert.equal(Math.fround(Number(exact(p, "F32"))), p); // reads back as the very float32
    assert.ok(!cell.includes("%"), cell);
  }
  assert.match(t.caption, /probability, exact; the next token's rank$/);
  const masked = numbersTable(/** @type {any} */ ({ ...exactData, predicts: "masked" }));
  assert.equal(masked.rows[0][1], "␣the 0.12345679; text's rank 7");
});
