// views/composition.js's pure parts: the strongest edges of a kind (nulls skipped, ties the
// earlier heads first), and the role a head takes from the atlas (induction first).
import assert from "node:assert/strict";
import { test } from "node:test";

import { ROLE_AT, edgeWords, roleOf, strongestEdges } from "../../static/js/views/composition.js";

// 3 layers x 2 heads: [lb][hb][la * 2 + ha]
const comp = {
  model: "m",
  layers: 3,
  heads: 2,
  names: [],
  processing: "",
  seconds: 0,
  kinds: {
    q: [
      [[], []],
      [
        [0.5, 0.2],
        [null, 0.5],
      ],
      [
        [0.1, 0.9, 0.5, 0.3],
        [0.2, 0.2, 0.2, 0.2],
      ],
    ],
    k: [
      [[], []],
      [
        [0, 0],
        [0, 0],
      ],
      [
        [0, 0, 0, 0],
        [0, 0, 0, 0],
      ],
    ],
    v: [
      [[], []],
      [
        [0, 0],
        [0, 0],
      ],
      [
        [0, 0, 0, 0],
        [0, 0, 0, 0],
      ],
    ],
  },
};

test("the strongest edges: best first, ties the earlier heads first, nulls left out", () => {
  const edges = strongestEdges(comp, "q", 4);
  assert.deepEqual(edges, [
    { la: 0, ha: 1, lb: 2, hb: 0, v: 0.9 },
    { la: 0, ha: 0, lb: 1, hb: 0, v: 0.5 },
    { la: 0, ha: 1, lb: 1, hb: 1, v: 0.5 },
    { la: 1, ha: 0, lb: 2, hb: 0, v: 0.5 },
  ]);
  assert.equal(strongestEdges(comp, "q", 100).length, 11); // 4 + 8 pairs, one of them null
});

test("a head's role: the first of induction, previous token, sink its atlas score reaches", () => {
  const grid = (v) => [
    [v, 0],
    [0, 0],
    [0, 0],
  ];
  const atlas = {
    scores: [
      { name: "previous_token", grid: grid(0.9) },
      { name: "induction", grid: grid(ROLE_AT) },
      { name: "first_token", grid: grid(0.99) },
    ],
  };
  assert.equal(roleOf(atlas, 0, 0)?.name, "induction");
  assert.equal(roleOf(atlas, 0, 1), null);
  assert.equal(roleOf(null, 0, 0), null);
  assert.equal(
    edgeWords({ la: 0, ha: 0, lb: 2, hb: 1, v: 0.12345 }, atlas),
    "layer 1 head 1 (induction) → layer 3 head 2: 0.123",
  );
  // 3 significant digits, never "1" short of it nor "0" above it (was "0.012", "1.000", "0.000").
  const said = (v) => edgeWords({ la: 0, ha: 1, lb: 1, hb: 0, v }, null).split(": ")[1];
  assert.deepEqual([0.012345, 0.9996, 0.0004, 0.5].map(said), ["0.0123", "over 0.999", "under 0.001", "0.5"]);
});
