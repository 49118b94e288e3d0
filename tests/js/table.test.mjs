// The toy lab's note on values that are not numbers (static/js/modes/toy/table.js valueProblem):
// the cell named by its token and dimension, its text and the rule; the cell just edited first;
// how many more; nothing when every value is a number.
import assert from "node:assert/strict";
import { test } from "node:test";

import { valueProblem } from "../../static/js/modes/toy/table.js";

const table = (embeddings) => ({ tokens: ["An", "apple"], axes: ["tech", "fruit"], embeddings });

test("every value a number: no note", () => {
  assert.equal(
    valueProblem(
      table([
        [0, 1],
        [0.7, 0.8],
      ]),
    ),
    null,
  );
});

test("a value that is not a number is named by its cell, its text and the rule", () => {
  const t = table([
    [0, 1],
    [0.7, "1.51.2"],
  ]);
  assert.equal(valueProblem(t), "apple, fruit: 1.51.2 is not a number");
  assert.equal(valueProblem(t, { r: 0, c: 0 }), "apple, fruit: 1.51.2 is not a number"); // a good cell
});

test("an empty cell, several cells: the edited one first, and how many more", () => {
  const t = table([
    ["", 1],
    [0.7, "x"],
  ]);
  assert.equal(valueProblem(t), "An, tech: empty, not a number (and 1 more cell not a number)");
  assert.equal(valueProblem(t, { r: 1, c: 1 }), "apple, fruit: x is not a number (and 1 more cell not a number)");
  const three = {
    tokens: ["", "b"],
    axes: ["", "y"],
    embeddings: [
      ["a", "b"],
      ["c", 2],
    ],
  };
  assert.equal(valueProblem(three), "token 1, dimension 1: a is not a number (and 2 more cells not a number)");
});
