// state.js: the toy and sentence states, their checks, the request, and the share links.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ablateBody,
  clampSentence,
  decodeShare,
  defaultSentence,
  encodeShare,
  fromPreset,
  headChoices,
  headsNote,
  matchesPreset,
  presetNote,
  normalize,
  problem,
  sentenceFromRaw,
  toRequest,
} from "../../static/js/core/state.js";

// What /api/presets serves (the tests of the API pin the server's side).
const LIMITS = {
  max_tokens: 64,
  max_dim: 64,
  max_layers: 12,
  max_heads: 16,
  max_token_chars: 40,
  max_abs_value: 1000,
  max_text_chars: 20000,
  max_thumb: 1024,
};
const DEFAULTS = {
  layers: 1,
  heads: 1,
  projections: "identity",
  weights: null,
  scale: true,
  mask: "none",
  positional: "none",
  residual: false,
  norm: "none",
  ffn: false,
  seed: 0,
};
const APPLE = {
  id: "apple",
  tokens: ["An", "apple", "and", "a", "banana"],
  axes: ["tech", "fruit", "grammar"],
  embeddings: [
    [0, 0, 1],
    [0.7, 0.8, 0],
    [0, 0, 0.5],
    [0, 0, 1],
    [0, 0.8, 0],
  ],
  config: { layers: 1 },
};

const apple = () => normalize(fromPreset(APPLE, DEFAULTS), LIMITS);

test("a preset's state: the server's defaults, the last layer's vectors, tokens 2 and n", () => {
  const s = apple();
  assert.deepEqual(s.config, DEFAULTS);
  assert.deepEqual(s.view, { layer: 0, head: 0, vlayer: 1, a: 1, b: 4, trails: true, measure: "weights" });
  assert.ok(matchesPreset(s, APPLE, LIMITS, DEFAULTS));
  s.embeddings[1][0] = 0.5;
  assert.ok(!matchesPreset(s, APPLE, LIMITS, DEFAULTS));
});

test("the preset's note: edited only by the reader; a start loaded as it is says what differs", () => {
  const s = apple();
  assert.equal(presetNote(s, APPLE, LIMITS, DEFAULTS, false), "");
  assert.equal(presetNote(s, APPLE, LIMITS, DEFAULTS, true), ""); // edited back to the preset
  // A Learn step's start: the preset with some settings replaced, not the learner's edit.
  s.config.scale = false;
  s.config.mask = "causal";
  assert.equal(presetNote(s, APPLE, LIMITS, DEFAULTS, false), " Here it starts with scale off, mask causal.");
  assert.equal(presetNote(s, APPLE, LIMITS, DEFAULTS, true), " (You have edited it.)");
  const t = apple();
  t.embeddings[1][0] = 0.5; // a link's table
  assert.equal(presetNote(t, APPLE, LIMITS, DEFAULTS, false), " (The table shown differs from it.)");
});

test("normalize keeps heads dividing d, matrices d x d, views in range", () => {
  assert.deepEqual(headChoices(12, 16), [1, 2, 3, 4, 6, 12]);
  const s = apple();
  Object.assign(s.config, { heads: 2, layers: 40, projections: "custom", weights: { q: [[2]] } });
  Object.assign(s.view, { layer: 9, head: 5, vlayer: 99, a: -3, b: 7 });
  normalize(s, LIMITS);
  assert.equal(s.config.heads, 1);
  assert.equal(s.config.layers, 12);
  assert.deepEqual(s.config.weights.q, [
    [2, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ]);
  assert.deepEqual(s.config.weights.o, [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ]);
  assert.deepEqual([s.view.layer, s.view.head, s.view.vlayer, s.view.a, s.view.b], [9, 0, 12, 0, 4]);
  s.view.layer = 30;
  assert.equal(normalize(s, LIMITS).view.layer, 11);
});

test("headsNote says why normalize changed the heads, and nothing when it did not", () => {
  const s = apple();
  s.axes.push("x4");
  s.embeddings.forEach((row) => row.push(0));
  s.config.heads = 2;
  assert.equal(headsNote(2, normalize(s, LIMITS), LIMITS), null); // 2 divides 4
  s.config.heads = 3;
  assert.equal(headsNote(3, normalize(s, LIMITS), LIMITS), "heads: 3 does not divide d = 4, now 2");
  s.config.heads = 32;
  assert.equal(headsNote(32, normalize(s, LIMITS), LIMITS), "heads: 32 is over the cap of 16, now 4");
  s.config.heads = /** @type {any} */ ("two");
  assert.equal(headsNote("two", normalize(s, LIMITS), LIMITS), "heads: two is not a head count, now 1");
});

test("problems the page can see before asking the server", () => {
  const s = apple();
  assert.equal(problem(s, LIMITS), null);
  s.embeddings[1][0] = "abc";
  assert.equal(problem(s, LIMITS), 'embeddings: apple, tech: "abc" is not a number');
  s.embeddings[1][0] = 0.7;
  s.config.seed = -1;
  assert.match(problem(s, LIMITS), /^config\.seed: /);
  s.config.seed = 0;
  s.tokens[0] = "x".repeat(41);
  assert.match(problem(s, LIMITS), /longer than 40 characters/);
});

test("the request names every config key the server knows, weights only when custom", () => {
  const s = apple();
  s.config.weights = { q: [[1]] };
  const body = toRequest(s, DEFAULTS);
  assert.deepEqual(Object.keys(body.config), Object.keys(DEFAULTS));
  assert.equal(body.config.weights, null);
  assert.deepEqual(body.tokens, APPLE.tokens);
});

test("toy links round-trip; old v1 links still open", () => {
  const s = apple();
  s.view.head = 0;
  s.config.layers = 3;
  normalize(s, LIMITS);
  const hash = encodeShare("toy", s, defaultSentence());
  const back = decodeShare(hash, LIMITS, DEFAULTS);
  assert.equal(back.mode, "toy");
  assert.deepEqual(back.toy, s);
  assert.equal(decodeShare("", LIMITS, DEFAULTS), null);
  assert.throws(() => decodeShare("#s=bm90IGpzb24", LIMITS, DEFAULTS));
  const bad =
    "#s=" +
    Buffer.from(JSON.stringify({ v: 1, tokens: ["a"], axes: ["x"], embeddings: [[1, 2]], config: {} })).toString(
      "base64url",
    );
  assert.throws(() => decodeShare(bad, LIMITS, DEFAULTS), /not a valid n x d table/);
});

test("sentence links round-trip; wrong fields fall back to defaults", () => {
  const s = {
    ...defaultSentence("m", "I sat"),
    layer: 3,
    head: 5,
    heads: [1, 5],
    query: 2,
    hideSpecial: true,
    picked: [1, 4],
    dims: 2,
    allKeys: true,
  };
  const back = decodeShare(encodeShare("sentence", apple(), s), LIMITS, DEFAULTS);
  assert.equal(back.mode, "sentence");
  assert.deepEqual(back.sentence, s);
  const raw = sentenceFromRaw({ model: 3, text: "hi", layer: -1, heads: ["x"], dims: 7, allKeys: "yes" });
  assert.deepEqual(raw, { ...defaultSentence(null, "hi") });
  assert.equal(sentenceFromRaw({ aggregate: "rollout" }).aggregate, "rollout");
  assert.equal(sentenceFromRaw({ aggregate: "median" }).aggregate, "head");
});

test("the measure (weights | value-weighted) round-trips in a link; anything else is the weights", () => {
  const s = { ...defaultSentence("m", "I sat"), measure: "value_weighted", aggregate: "value_weighted_sum" };
  const hash = encodeShare("sentence", null, s);
  assert.equal(payload(hash).sentence.measure, "value_weighted");
  assert.deepEqual(decodeShare(hash, LIMITS, DEFAULTS).sentence, s);
  assert.equal(sentenceFromRaw({ measure: "values" }).measure, "weights");
  // At its default it is left out of the link.
  assert.equal(payload(encodeShare("sentence", null, defaultSentence("m", "x"))).sentence.measure, undefined);
});

test("the knock-out round-trips in a link and becomes the trace's ablate; bad entries are dropped", () => {
  const s = {
    ...defaultSentence("m", "I sat"),
    ablate: [
      { layer: 0, head: 1 },
      { layer: 2, head: 0 },
    ],
    ablateMode: "patch",
    ablateSource: "You stood",
    diffLayer: 3,
    diffHead: 2,
  };
  const hash = encodeShare("sentence", null, s);
  assert.deepEqual(payload(hash).sentence.ablate, [
    { layer: 0, head: 1 },
    { layer: 2, head: 0 },
  ]);
  assert.deepEqual(decodeShare(hash, LIMITS, DEFAULTS).sentence, s);
  assert.deepEqual(ablateBody(s), [
    { layer: 0, head: 1, mode: "patch", source: "You stood" },
    { layer: 2, head: 0, mode: "patch", source: "You stood" },
  ]);
  assert.deepEqual(ablateBody({ ...s, ablateSource: "  " }), []); // a patch waits for its source
  assert.deepEqual(ablateBody({ ...s, ablateMode: "mean" }), [
    { layer: 0, head: 1, mode: "mean" },
    { layer: 2, head: 0, mode: "mean" },
  ]);
  const raw = sentenceFromRaw({
    ablate: [{ layer: 1, head: 1 }, { layer: 1, head: 1 }, { layer: -1, head: 0 }, "x", null],
    ablateMode: "half",
    ablateSource: 3,
    diffLayer: -2,
  });
  assert.deepEqual(
    [raw.ablate, raw.ablateMode, raw.ablateSource, raw.diffLayer],
    [[{ layer: 1, head: 1 }], "zero", "", null],
  );
  // At their defaults they are left out of the link; a smaller model drops heads past it.
  assert.equal(payload(encodeShare("sentence", null, defaultSentence("m", "x"))).sentence.ablate, undefined);
  const big = {
    ...s,
    ablate: [
      { layer: 0, head: 1 },
      { layer: 1, head: 7 },
      { layer: 5, head: 0 },
    ],
  };
  assert.deepEqual(clampSentence(big, 2, 4).ablate, [{ layer: 0, head: 1 }]);
  assert.deepEqual([big.diffLayer, big.diffHead], [1, 2]);
});

test("clampSentence keeps choices inside a smaller model and text", () => {
  const s = { ...defaultSentence("m", "x"), layer: 5, head: 11, heads: [11, 3], query: 9, picked: [1, 9] };
  clampSentence(s, 2, 4, 5);
  assert.deepEqual([s.layer, s.head, s.heads, s.query, s.picked], [1, 3, [3], null, [1]]);
  const none = { ...defaultSentence(), heads: [] };
  assert.deepEqual(clampSentence(none, 2, 4).heads, []); // "none" stays none
});

// ---- Share links carry both modes (v3) ----------------------------------------------------

const CAUSAL = {
  id: "causal",
  tokens: ["a", "b"],
  axes: ["x", "y"],
  embeddings: [
    [1, 0],
    [0, 1],
  ],
  config: { layers: 2, mask: "causal" },
};
const CTX = { presets: [APPLE, CAUSAL], limits: LIMITS, defaults: DEFAULTS };
/** The JSON object in a hash. @param {string} hash */
const payload = (hash) => JSON.parse(Buffer.from(hash.slice(3), "base64url").toString());

test("a sentence link carries the toy lab's state, and a toy link the sentence's", () => {
  const toy = apple();
  toy.embeddings[1][0] = 0.25; // an edited table travels whole
  toy.config.layers = 3;
  normalize(toy, LIMITS);
  toy.view.layer = 2;
  const sentence = {
    ...defaultSentence("m", "The animal didn't cross"),
    layer: 4,
    head: 7,
    query: 3,
    hideSpecial: true,
    mergeWords: true,
    picked: "all",
    dims: 3,
  };
  for (const mode of ["sentence", "toy"]) {
    const back = decodeShare(encodeShare(mode, toy, sentence, CTX), LIMITS, DEFAULTS, CTX.presets);
    assert.equal(back.mode, mode);
    assert.deepEqual(back.toy, toy);
    assert.deepEqual(back.sentence, sentence);
  }
});

test("links are compact: a preset's table by its id, defaults left out, an unopened mode absent", () => {
  const toy = apple();
  toy.view.b = 2;
  const untouched = defaultSentence();
  const hash = encodeShare("toy", toy, untouched, CTX);
  assert.deepEqual(payload(hash), { v: 3, mode: "toy", toy: { preset: "apple", config: {}, view: toy.view } });
  const back = decodeShare(hash, LIMITS, DEFAULTS, CTX.presets);
  assert.deepEqual(back.toy, toy);
  assert.equal(back.sentence, null); // opens on the server's default model and example
  // A preset whose config differs from the defaults, set back to a default: that is kept.
  const causal = normalize(fromPreset(CAUSAL, DEFAULTS), LIMITS);
  causal.config.mask = "none";
  const c = decodeShare(encodeShare("toy", causal, null, CTX), LIMITS, DEFAULTS, CTX.presets);
  assert.deepEqual(c.toy, causal);
  // Only the sentence keys that differ from the defaults travel.
  const s = { ...defaultSentence("m", "hi"), head: 2 };
  assert.deepEqual(payload(encodeShare("sentence", null, s, CTX)), {
    v: 3,
    mode: "sentence",
    sentence: { model: "m", text: "hi", head: 2 },
  });
  // A long sentence link is shorter than the full states it restores.
  const long = { ...defaultSentence("m", "word ".repeat(200)) };
  const full = JSON.stringify({ toy, sentence: long });
  assert.ok(encodeShare("sentence", toy, long, CTX).length < Buffer.from(full).toString("base64url").length);
});

test("a link naming a preset this server lacks is refused by name; v1 and v2 links still open", () => {
  const hash =
    "#s=" + Buffer.from(JSON.stringify({ v: 3, mode: "toy", toy: { preset: "gone", view: {} } })).toString("base64url");
  assert.throws(() => decodeShare(hash, LIMITS, DEFAULTS, CTX.presets), /preset 'gone'/);
  const v2 =
    "#s=" +
    Buffer.from(JSON.stringify({ v: 2, mode: "sentence", sentence: { model: "m", text: "x", head: 1 } })).toString(
      "base64url",
    );
  const back = decodeShare(v2, LIMITS, DEFAULTS, CTX.presets);
  assert.deepEqual([back.mode, back.toy, back.sentence.head], ["sentence", null, 1]);
});

test("trajectories' picks: 'all' and [] ('none') survive a link; clampSentence keeps 'all'", () => {
  assert.equal(sentenceFromRaw({ picked: "all" }).picked, "all");
  assert.deepEqual(sentenceFromRaw({ picked: [] }).picked, []);
  assert.equal(sentenceFromRaw({ picked: "some" }).picked, null);
  const s = { ...defaultSentence("m", "x"), picked: "all" };
  assert.equal(clampSentence(s, 2, 2, 3).picked, "all");
});

test("the cards open under More views: a link's known names in the page's order, else the browser's", () => {
  assert.deepEqual(sentenceFromRaw({ more: ["traj", "nothing", "qk"] }).more, ["qk", "traj"]);
  assert.equal(sentenceFromRaw({}).more, null); // no word from the link: this browser's
  assert.equal(sentenceFromRaw({ more: "qk" }).more, null);
  const hash = encodeShare("sentence", null, { ...defaultSentence("m", "x"), more: ["knock"] });
  const back = decodeShare(hash, LIMITS, { layers: 1, heads: 1, projections: "identity", weights: null });
  assert.deepEqual(back?.sentence?.more, ["knock"]);
});
