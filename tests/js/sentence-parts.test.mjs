// modes/sentence/parts.js: which part of the trace each sentence view asks for, from the state
// and the first response, asked of whatever `Parts` the controller opened (here a fake that
// records the parameters, as a page without a server would serve them).
import assert from "node:assert/strict";
import { test } from "node:test";

import { defaultSentence } from "../../static/js/core/state.js";
import { createParts, thumbsOf } from "../../static/js/modes/sentence/parts.js";

// No page: the thumbnails' side falls back to a 1000-pixel grid at pixel ratio 1.
globalThis.document = /** @type {any} */ ({ getElementById: () => null });
globalThis.window = /** @type {any} */ ({ devicePixelRatio: 1 });

const u8 = (shape) => ({ dtype: "U8", shape, data: new Uint8Array(shape.reduce((a, b) => a * b, 1)) });
const f32 = (shape) => ({ dtype: "F32", shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) });

/** A first response's meta: 4 tokens, the first and last special, 2 layers x 3 heads. */
const meta = (extra = {}) => ({
  n: 4,
  layers: 2,
  heads: 3,
  tokens: ["[CLS]", "a", "b", "[SEP]"],
  special: [true, false, false, true],
  ...extra,
});

/** The thumbnails part: `pool` 1 keeps every row. */
const thumbs = (pool) => ({
  meta: { ...meta(), thumbs: { pool, size: 4 } },
  arrays: { "thumbs.values": u8([2, 3, 4, 4]), "thumbs.scale": f32([2, 3]) },
});

function setup(first, state = {}) {
  const asked = [];
  const app = {
    s: { ...defaultSentence("m", "a b"), ...state },
    models: null,
    first,
    entropy: null,
    active: true,
    problem: null,
    generation: 1,
    parts: {
      body: {},
      seed() {},
      get(params) {
        asked.push(params);
        return Promise.resolve(params.fields === "thumbs" ? thumbs(first.meta.thumbs?.pool ?? 1) : first);
      },
    },
  };
  const p = createParts(app, () => ({ heads: 3 }));
  return { app, p, asked };
}

test("the model view asks for the chosen head exact, or the chosen aggregate of its layer", async () => {
  const { app, p, asked } = setup({ meta: meta(), arrays: {} }, { layer: 1, head: 2 });
  await p.headPart();
  app.s.aggregate = "rollout";
  app.s.hideSpecial = true;
  await p.headPart();
  assert.deepEqual(asked, [
    { fields: "view", layer: 1, head: 2, hide_special: false, merge_words: false },
    { fields: "rollout", layer: 1, hide_special: true, merge_words: false },
  ]);
  // The thumbnails: as wide as the grid's cells (1000 px over 3.6 heads).
  assert.deepEqual(p.thumbParams(), {
    fields: "thumbs",
    thumb: Math.ceil(1000 / 3.6),
    hide_special: true,
    merge_words: false,
  });
});

test("the query: the chosen token, unless it is a hidden special token; else the first ordinary", () => {
  const { app, p } = setup({ meta: meta(), arrays: {} });
  app.s.query = null;
  assert.equal(p.queryIndex(), 1);
  app.s.query = 3;
  assert.equal(p.queryIndex(), 3);
  app.s.hideSpecial = true;
  assert.equal(p.queryIndex(), 1);
  app.s.query = 9; // past the text
  assert.equal(p.queryIndex(), 1);
  app.s.query = 2;
  assert.equal(p.queryRow([[0], [1], [2, 3]]), 2);
  assert.equal(p.queryRow([[0], [1]]), -1);
});

test("the query-key part names the query; hiding special tokens adds the server's row", async () => {
  const { app, p, asked } = setup({ meta: meta(), arrays: {} }, { layer: 0, head: 1, query: 2 });
  await p.queryPart();
  app.s.hideSpecial = true;
  await p.queryPart();
  assert.deepEqual(asked, [
    { fields: "queries,keys,scores,attentions", layer: 0, head: 1, query: 2 },
    { fields: "queries,keys,scores,attentions,view", layer: 0, head: 1, query: 2, hide_special: true },
  ]);
});

test("a layer's 8-bit weights: the thumbnails' layer when unpooled, else that layer alone", async () => {
  const small = setup({ meta: meta({ thumbs: { pool: 1, size: 4 } }), arrays: {} }, { layer: 1 });
  const layer = await small.p.layerPart();
  assert.deepEqual(layer.values.shape, [3, 4, 4]);
  assert.deepEqual(
    small.asked.map((a) => a.thumb_layer),
    [undefined],
  ); // the thumbnails only
  const long = setup({ meta: meta({ thumbs: { pool: 4, size: 4 } }), arrays: {} }, { layer: 1 });
  await long.p.layerPart();
  assert.deepEqual(long.asked, [
    { fields: "thumbs", thumb: 0, thumb_layer: 1, hide_special: false, merge_words: false },
  ]);
});

test("a long text's head view reads the query's rows first; generation asks for the row that wrote", async () => {
  const short = setup({ meta: meta(), arrays: {} });
  assert.equal(short.p.readsRows(), false);
  const long = setup({ meta: meta({ n: 300 }), arrays: {} }, { layer: 1, query: 5 });
  assert.equal(long.p.readsRows(), true);
  long.app.s.mergeWords = true; // an option regroups the rows: the layer, not the rows
  assert.equal(long.p.readsRows(), false);
  const gen = setup(
    { meta: meta({ n: 10, generated: { start: 6, steps: 4 } }), arrays: {} },
    { layer: 1, head: 0, step: 2 },
  );
  assert.equal(gen.p.genStep(), 2);
  await gen.p.genPart();
  assert.deepEqual(gen.asked, [{ fields: "attentions", layer: 1, head: 0, query: 6 }]); // start + step - 2
  gen.app.s.step = null; // the last step
  assert.equal(gen.p.genStep(), 4);
  assert.equal(thumbsOf(thumbs(2)).pool, 2);
});

test("value-weighted: the model and head views' parts carry the measure, once the trace has it", async () => {
  const { app, p, asked } = setup(
    { meta: meta({ thumbs: { pool: 1, size: 4 } }), arrays: {} },
    { layer: 1, head: 2, measure: "value_weighted" },
  );
  await p.headPart();
  app.s.aggregate = "head_max";
  await p.headPart();
  app.s.aggregate = "value_weighted_sum"; // its own array: no measure
  await p.headPart();
  await p.rowsPart();
  assert.deepEqual(asked, [
    { fields: "view", layer: 1, head: 2, hide_special: false, merge_words: false, measure: "value_weighted" },
    { fields: "head_max", layer: 1, hide_special: false, merge_words: false, measure: "value_weighted" },
    { fields: "value_weighted_sum", layer: 1, hide_special: false, merge_words: false },
    { fields: "value_weighted", layer: 1, query: 1 },
  ]);
  assert.equal(p.thumbParams().measure, "value_weighted");
  // A trace that lacks it (a model served through transformers): the weights, as before.
  const bridged = setup(
    { meta: meta({ unavailable: { value_weighted: "value_weighted: no W_O" } }), arrays: {} },
    { measure: "value_weighted" },
  );
  assert.equal(bridged.p.thumbParams().measure, undefined);
  assert.equal(bridged.p.valueWeighted(), false);
});
