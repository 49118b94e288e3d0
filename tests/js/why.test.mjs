// views/why.js's pure parts: a compact part's qk_attribution as the view takes it, the
// components and pairs in words, the pairs largest first, the keys the key view draws (the
// strongest and the panel's key, each split by the part's by_key row), and a `rest` fold whose
// cells still sum to the score.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  attributionOf,
  componentWords,
  keyRows,
  pairWords,
  shortName,
  signedReadable,
  topPairs,
} from "../../static/js/views/why.js";
import { readable } from "../../static/js/core/numbers.js";

const tokens = ["<|endoftext|>", "Mr", " and", " Mrs", " D", "urs", "ley"];
const components = [
  { name: "embed", kind: "embed", layer: null, head: null },
  { name: "pos", kind: "pos", layer: null, head: null },
  { name: "L0.H3", kind: "head", layer: 0, head: 3 },
  { name: "L0.mlp", kind: "mlp", layer: 0, head: null },
  { name: "rest", kind: "rest", layer: null, head: null },
];
const N = components.length;
// [q][k], as the server folds the smallest components into `rest` (their rows and columns summed).
const full = [
  [0.5, -0.1, 2.1, 0.0, 0.2],
  [0.1, 0.3, -0.4, 0.05, 0.0],
  [0.2, 0.1, 0.9, -0.2, 0.1],
  [0.0, 0.0, 0.3, 0.4, -0.05],
  [0.02, 0.01, 0.0, 0.1, 0.1],
];
const score = full.flat().reduce((a, b) => a + b, 0);
const keys = [0, 1, 2, 3, 4]; // query 4 sees keys 0..4
const keyScores = [5.0, score, 0.5, -1.2, 0.7];
// by_key: each key's score split by the key side's components, rows summing to its score
const byKey = keyScores.map((s, r) => {
  const row = r === 1 ? components.map((_, j) => full.reduce((a, q) => a + q[j], 0)) : [s / 2, s / 4, s / 8, s / 16, 0];
  if (r !== 1) row[4] = s - row.slice(0, 4).reduce((a, b) => a + b, 0);
  return row;
});
const f64 = (rows) => ({ dtype: "F64", shape: [rows.length, rows[0].length], data: Float64Array.from(rows.flat()) });
const part = {
  meta: { tokens, qk_attribution: { layer: 1, head: 2, query: 4, key: 1, components, score } },
  arrays: {
    "qk_attribution.matrix": f64(full),
    "qk_attribution.keys": { dtype: "I32", shape: [5], data: Int32Array.from(keys) },
    "qk_attribution.key_scores": { dtype: "F64", shape: [5], data: Float64Array.from(keyScores) },
    "qk_attribution.by_key": f64(byKey),
    "qk_attribution.by_query": f64(byKey),
  },
};

test("attributionOf takes the part's meta and arrays as they are", () => {
  const att = attributionOf(part);
  assert.deepEqual([att.layer, att.head, att.query, att.key, att.score], [1, 2, 4, 1, score]);
  assert.equal(att.components, components);
  assert.equal(att.matrix, part.arrays["qk_attribution.matrix"]);
  assert.equal(att.by_key, part.arrays["qk_attribution.by_key"]);
  assert.equal(att.by_query, part.arrays["qk_attribution.by_query"]);
  assert.deepEqual(Array.from(att.keys.data), keys);
  assert.throws(() => attributionOf({ meta: { tokens }, arrays: {} }), /qk_attribution/);
});

test("components and pairs in words, heads 1-based with their atlas role", () => {
  const roles = { "L0.H3": "a previous-token head" };
  assert.equal(componentWords(components[2], tokens, 4, roles), "layer 1 head 4 (a previous-token head)");
  assert.equal(componentWords(components[2], tokens, 4), "layer 1 head 4");
  assert.equal(componentWords(components[0], tokens, 1), "the embedding of “Mr”");
  assert.equal(componentWords(components[1], tokens, 2), "the position embedding of “␣and” (position 3)");
  assert.equal(componentWords(components[3], tokens, 1), "layer 1's MLP");
  assert.deepEqual(components.map(shortName), ["embedding", "position", "L1 H4", "L1 MLP", "the rest"]);
  const att = attributionOf(part);
  const [first] = topPairs(att, 1);
  assert.deepEqual(first, { i: 0, j: 2, v: 2.1 });
  assert.equal(
    pairWords(att, tokens, { i: 2, j: 0, v: full[2][0] }, roles),
    `query from layer 1 head 4 (a previous-token head) × key from the embedding of “Mr”: +0.2 of ${readable(score)}`,
  );
  // Biases with biases: the part no word changes, said as what it is (issue 41).
  const bias = { kind: "bias", name: "bias" };
  const biased = { ...att, components: [bias, ...att.components.slice(1)] };
  assert.equal(
    pairWords(biased, tokens, { i: 0, j: 0, v: 0.32 }),
    "the biases on both sides, fixed offsets the norms and projections add to every token: a part of the " +
      `score no word changes, +0.32 of ${readable(score)}`,
  );
  assert.match(componentWords(bias, tokens, 1), /^the biases \(fixed offsets/);
  // small scores keep their 3 significant digits, so that no part reads 0.00 that is not
  const small = { ...att, matrix: { ...att.matrix, data: att.matrix.data.map((v) => v / 100) } };
  assert.equal(
    pairWords(small, tokens, { i: 0, j: 2, v: 0.021 }),
    `query from the embedding of “␣D” × key from layer 1 head 4: +0.021 of ${readable(att.score)}`,
  );
  // One precision for the score in one card (issue 41: "score 18.2" above "+4.78 of 18.18").
  const big = { ...att, score: 18.1843 };
  assert.equal(
    pairWords(big, tokens, { i: 0, j: 2, v: 4.7812 }),
    "query from the embedding of “␣D” × key from layer 1 head 4: +4.78 of 18.2",
  );
  assert.equal(signedReadable(-0.31349), "−0.313");
  assert.equal(signedReadable(0), "0");
  assert.equal(signedReadable(-0.001), "−0.001"); // never "0.00" for a part that is not none
  assert.equal(signedReadable(0.0004567), "+0.000457");
});

test("the pairs come largest magnitude first, every cell once, the cells summing to the score", () => {
  const att = attributionOf(part);
  const pairs = topPairs(att);
  assert.equal(pairs.length, N * N);
  for (let p = 1; p < pairs.length; p++) assert.ok(Math.abs(pairs[p - 1].v) >= Math.abs(pairs[p].v));
  for (const p of pairs) assert.equal(p.v, full[p.i][p.j]);
  // the rest fold keeps the sum: every cell, `rest`'s row and column included, adds to the score
  const sum = pairs.reduce((a, p) => a + p.v, 0);
  assert.ok(Math.abs(sum - att.score) < 1e-12);
  assert.ok(pairs.some((p) => p.i === N - 1 || p.j === N - 1));
});

test("the key view draws the strongest keys and the panel's, each split as by_key says", () => {
  const att = attributionOf(part);
  const all = keyRows(att);
  assert.equal(all.left, 0);
  assert.equal(all.winner, 0); // score 5.0 against 4.73
  assert.deepEqual(
    all.rows.map((r) => r.key),
    [0, 1, 4, 2, 3],
  );
  for (const r of all.rows) {
    assert.equal(r.score, keyScores[r.index]);
    assert.deepEqual(r.parts, byKey[r.index]);
    assert.ok(Math.abs(r.parts.reduce((a, b) => a + b, 0) - r.score) < 1e-12);
  }
  // the picked key's parts are its matrix's columns summed over the query side
  const picked = all.rows.find((r) => r.key === att.key);
  for (let j = 0; j < N; j++) assert.ok(Math.abs(picked.parts[j] - full.reduce((a, q) => a + q[j], 0)) < 1e-12);
  // a long text: the strongest `limit`, the panel's key besides, the rest counted
  const few = keyRows({ ...att, key: 3 }, 2);
  assert.deepEqual(
    few.rows.map((r) => r.key),
    [0, 1, 3],
  );
  assert.equal(few.left, 2);
});

test("every cell's text reaches 4.5:1 on its colour, the score scale end to end", async () => {
  const { inkOn, luminance } = await import("../../static/js/views/describe.js");
  const { SCORE_LUT } = await import("../../static/js/core/theme.js");
  for (let i = 0; i < 256; i++) {
    const rgb = [SCORE_LUT[i * 3], SCORE_LUT[i * 3 + 1], SCORE_LUT[i * 3 + 2]];
    const ink = inkOn(rgb) === "#000000" ? [0, 0, 0] : [255, 255, 255];
    const [a, b] = [luminance(rgb), luminance(ink)];
    assert.ok((Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05) >= 4.5, `rgb(${rgb})`);
  }
});

test("the atlas's roles by the heads' component names, in words", async () => {
  const { headRoles } = await import("../../static/js/views/composition.js");
  const grid = (v) => [
    [0, v],
    [0, 0],
  ];
  const atlas = {
    model: "m",
    layers: 2,
    heads: 2,
    scores: [
      { name: "previous_token", grid: grid(0.9) },
      {
        name: "induction",
        grid: [
          [0, 0],
          [0.8, 0],
        ],
      },
      {
        name: "first_token",
        grid: [
          [0, 0],
          [0, 0.5],
        ],
      },
    ],
  };
  assert.deepEqual(headRoles(atlas), {
    "L0.H1": "a previous-token head",
    "L1.H0": "an induction head",
    "L1.H1": "an attention sink",
  });
  assert.deepEqual(headRoles(null), {});
});
