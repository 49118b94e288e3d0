// M-RoPE in words (views/mrope.js): each section's rotary pairs and the difference of its index,
// query less key, from meta.mrope alone; the key the sentence is about.
import assert from "node:assert/strict";
import { test } from "node:test";

import { chosenKey, indicesOf, mropeSentence, sectionTurns } from "../../static/js/views/mrope.js";

// Six positions: two text tokens, a 2 x 2 image grid at temporal 2, then a text token after it
// (its index one past the grid's largest).
const MROPE = {
  sections: [16, 24, 24],
  positions: [
    [0, 1, 2, 2, 2, 2, 4],
    [0, 1, 2, 2, 3, 3, 4],
    [0, 1, 2, 3, 2, 3, 4],
  ],
};
const TOKENS = ["a", "dog", "<|image_pad|>", "<|image_pad|>", "<|image_pad|>", "<|image_pad|>", "runs"];

test("each position's three indices", () => {
  assert.deepEqual(indicesOf(MROPE, 5), [2, 3, 3]);
  assert.deepEqual(indicesOf(MROPE, 6), [4, 4, 4]);
});

test("each section turns by its own index's difference, query less key", () => {
  assert.equal(
    sectionTurns(MROPE, 6, 3),
    "temporal: 16 pairs turn by Δ2; height: 24 pairs by Δ2; width: 24 pairs by Δ1",
  );
  assert.equal(
    sectionTurns(MROPE, 4, 3),
    "temporal: 16 pairs turn by Δ0; height: 24 pairs by Δ1; width: 24 pairs by Δ-1",
  );
  assert.equal(
    sectionTurns(MROPE, 2, 2),
    "temporal: 16 pairs turn by Δ0; height: 24 pairs by Δ0; width: 24 pairs by Δ0",
  );
});

test("the sentence names the query, the key, their indices and the turns", () => {
  const said = mropeSentence(MROPE, 6, 4, TOKENS, "the query's largest weight");
  assert.match(said, /^M-RoPE: each position has three indices, and its rotary pairs are cut into three sections/);
  assert.ok(said.includes("The query “runs” (token 7) is at (temporal 4, height 4, width 4);"), said);
  assert.ok(
    said.includes("the key “<|image_pad|>” (token 5, the query's largest weight) at (temporal 2, height 3, width 2)."),
    said,
  );
  assert.ok(
    said.endsWith("Query less key — temporal: 16 pairs turn by Δ2; height: 24 pairs by Δ1; width: 24 pairs by Δ2."),
    said,
  );
  const interleaved = mropeSentence({ ...MROPE, interleaved: true }, 6, 4, TOKENS);
  assert.ok(interleaved.includes("its rotary pairs are dealt in turn to three sections"), interleaved);
  assert.ok(interleaved.includes("(token 5) at"), interleaved);
});

test("the key: the one picked when the query sees it, else the largest weight", () => {
  const weights = [0.1, NaN, 0.5, 0.2, -Infinity];
  assert.deepEqual(chosenKey(weights, 3, true, 3), { key: 3, which: "the key chosen" });
  assert.deepEqual(chosenKey(weights, 4, true, 3), { key: 2, which: "the query's largest weight" });
  assert.deepEqual(chosenKey(weights, 4, false, 3), { key: 4, which: "the key chosen" });
  assert.deepEqual(chosenKey(weights, null, true, 3), { key: 2, which: "the query's largest weight" });
});

test("the query-key card's rotary note names M-RoPE's sections, else the one position", async () => {
  const { headNotes } = await import("../../static/js/views/qkview.js");
  const base = { heads: 4, kv_heads: 4, attention: { windows: [null], qk_norm: "none" } };
  const rope = { base: 1000000, style: "halves", scaling: null, rotary_dim: null, local_base: null };
  const [multi] = headNotes({ ...base, rope: { ...rope, sections: [16, 24, 24] } }, 0);
  assert.match(multi, /multimodal RoPE rotation \(M-RoPE\)/);
  assert.match(multi, /one of the token's 3 position indices × 1,000,000\^\(−2i\/d\)/);
  assert.match(multi, /sections of 16, 24, 24 \(temporal, height, width\)/);
  const [plain] = headNotes({ ...base, rope: { ...rope, sections: null } }, 0);
  assert.match(plain, /turned by position × 1,000,000\^\(−2i\/d\)/);
  assert.doesNotMatch(plain, /M-RoPE/);
});
