// What pushed this (views/pushed.js): the attribution read from a compact part, its components
// grouped by layer, named as the page names heads, the top ones for and against in words, and
// which token each choice asks the server for.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  PUSHED_CHOICES,
  attributionOf,
  groupsOf,
  pushWords,
  resolveChoice,
  signed,
  targetOf,
  whatText,
} from "../../static/js/views/pushed.js";
import { readableProse as readable } from "../../static/js/core/numbers.js";
import { shortName as componentName } from "../../static/js/views/why.js";
import { PUSHED, defaultSentence, encodeShare, sentenceFromRaw } from "../../static/js/core/state.js";

/** The components of a 2-layer, 3-head GPT-2-style model, in the server's order. */
function components(layers = 2, heads = 3) {
  const out = [
    { name: "embed", kind: "embed", layer: null, head: null },
    { name: "pos", kind: "pos", layer: null, head: null },
  ];
  for (let l = 0; l < layers; l++) {
    for (let h = 0; h < heads; h++) out.push({ name: `L${l}.H${h}`, kind: "head", layer: l, head: h });
    out.push({ name: `L${l}.attn_bias`, kind: "attn_bias", layer: l, head: null });
    out.push({ name: `L${l}.mlp`, kind: "mlp", layer: l, head: null });
  }
  out.push({ name: "bias", kind: "bias", layer: null, head: null });
  return out;
}

/** A compact part as TraceParts.get answers fields=logit_attribution. */
function part(values, { token = 7, versus = null } = {}) {
  const comps = components();
  assert.equal(values.length, comps.length);
  const logit = values.reduce((s, v) => s + v, 0);
  return {
    meta: { logit_attribution: { position: 4, token, versus, components: comps, logit } },
    arrays: { "logit_attribution.values": { dtype: "F64", shape: [values.length], data: Float64Array.from(values) } },
  };
}

// embed, pos, L0 H1..H3, L0 bias, L0 mlp, L1 H1..H3, L1 bias, L1 mlp, bias
const VALUES = [1.1, -0.25, 0.5, -1.5, 0.0, 0.125, 2.0, 3.2, 0.004, -0.75, -0.003, 0.9, 0.3];

test("attributionOf reads the part's values exactly, and they sum to its logit", () => {
  const p = part(VALUES);
  const a = attributionOf(p);
  assert.equal(a.position, 4);
  assert.equal(a.token, 7);
  assert.equal(a.versus, null);
  assert.deepEqual(a.values, VALUES);
  assert.ok(Array.isArray(a.values));
  assert.equal(a.components.length, VALUES.length);
  assert.equal(a.logit, p.meta.logit_attribution.logit);
  assert.ok(Math.abs(a.values.reduce((s, v) => s + v, 0) - a.logit) < 1e-12);
  assert.throws(() => attributionOf({ meta: {}, arrays: {} }), /no logit_attribution/);
  assert.equal(attributionOf(part(VALUES, { versus: 9 })).versus, 9);
});

test("the components group by layer: heads by index, then the attention bias and the MLP", () => {
  const a = attributionOf(part(VALUES));
  const g = groupsOf(a);
  assert.equal(g.heads, 3);
  assert.deepEqual(g.lead, [0, 1, 12]); // embed, pos, the biases
  assert.deepEqual(
    g.layers.map((r) => [r.layer, r.heads, r.attnBias, r.mlp]),
    [
      [0, [2, 3, 4], 5, 6],
      [1, [7, 8, 9], 10, 11],
    ],
  );
  // Every component is drawn once: the groups cover them all.
  const all = [...g.lead, ...g.layers.flatMap((r) => [...r.heads, r.attnBias, r.mlp])].sort((x, y) => x - y);
  assert.deepEqual(
    all,
    VALUES.map((_, i) => i),
  );
  // In another order (by layer, components shuffled), the grouping is the same.
  const shuffled = { ...a, components: [...a.components].reverse(), values: [...a.values].reverse() };
  const s = groupsOf(shuffled);
  assert.deepEqual(
    s.layers[1].heads.map((i) => shuffled.components[i].name),
    ["L1.H0", "L1.H1", "L1.H2"],
  );
});

test("components are named 1-based, as the page names heads", () => {
  const names = attributionOf(part(VALUES)).components.map(componentName);
  assert.deepEqual(names, [
    "embedding",
    "position",
    "L1 H1",
    "L1 H2",
    "L1 H3",
    "L1 attn bias",
    "L1 MLP",
    "L2 H1",
    "L2 H2",
    "L2 H3",
    "L2 attn bias",
    "L2 MLP",
    "biases",
  ]);
  assert.equal(componentName({ name: "type", kind: "type", layer: null, head: null }), "token type");
  assert.equal(componentName({ name: "rest", kind: "rest", layer: null, head: null }), "the rest");
});

test("the top components for and against, in words, of the logit they sum to", () => {
  const a = attributionOf(part(VALUES));
  const words = pushWords(a);
  const logit = VALUES.reduce((s, v) => s + v, 0);
  assert.equal(
    words,
    "Up: L2 H1 +3.2, L1 MLP +2, embedding +1.1; down: L1 H2 −1.5, L2 H3 −0.75, " +
      `position −0.25; of a logit of ${readable(logit)}.`,
  );
  assert.match(pushWords(a, 1, true), /^Up: L2 H1 \+3\.2; down: L1 H2 −1\.5; of a logit difference of /);
  const none = { ...a, values: a.values.map(Math.abs), logit: a.values.reduce((s, v) => s + Math.abs(v), 0) };
  assert.match(pushWords(none), /; down: nothing; /);
  // By numbers.js's rules: 3 significant digits, a true minus, never an exponent nor "−0.00".
  assert.equal(signed(0), "0");
  assert.equal(signed(-1.5), "−1.5");
  assert.equal(signed(-0.003), "−0.003");
  assert.equal(signed(0.5), "+0.5");
  assert.equal(signed(14.620398596252752), "+14.6");
  assert.equal(signed(-0.0000759), "about −0.00008");
  assert.equal(signed(5.33e-10), "practically zero");
  const tiny = { ...a, logit: 0.0004, values: a.values.map((v) => v * 1e-4) };
  assert.match(pushWords(tiny), /^Up: L2 H1 about \+0\.0003, .* of a logit of about 0\.0004\.$/);
});

test("each choice asks for its token; without a next token, or when it is the top, the top", () => {
  const top = { id: 5, label: " a" };
  const next = { id: 8, label: " the" };
  const both = { next, top };
  assert.deepEqual(targetOf("top", both), { token: 5 });
  assert.deepEqual(targetOf("next", both), { token: 8 });
  assert.deepEqual(targetOf("diff", both), { token: 8, versus: 5 });
  assert.equal(whatText(both, "diff"), "the logit of “␣the” minus that of “␣a”");
  assert.equal(whatText(both, "next"), "the logit of “␣the”");
  // The last position: nothing follows.
  const end = { next: null, top };
  for (const c of PUSHED_CHOICES) assert.equal(resolveChoice(c, end), "top");
  assert.deepEqual(targetOf("next", end), { token: 5 });
  // The next token is the top prediction: no difference to attribute.
  const same = { next: { ...top }, top };
  assert.equal(resolveChoice("diff", same), "top");
  assert.equal(resolveChoice("next", same), "next");
});

test("the choice is a sentence state key, kept in a link; the view offers the state's choices", () => {
  assert.deepEqual([...PUSHED_CHOICES].sort(), [...PUSHED].sort());
  assert.equal(defaultSentence().pushed, "top");
  const hash = encodeShare("sentence", null, { ...defaultSentence("m", "x"), pushed: "diff" });
  const raw = JSON.parse(Buffer.from(hash.slice(3), "base64url").toString());
  assert.equal(raw.sentence.pushed, "diff");
  assert.equal(sentenceFromRaw(raw.sentence).pushed, "diff");
  assert.equal(sentenceFromRaw({ pushed: "everything" }).pushed, "top");
  const plain = JSON.parse(Buffer.from(encodeShare("sentence", null, defaultSentence("m", "x")).slice(3), "base64url"));
  assert.equal(plain.sentence.pushed, undefined); // the default is left out
});
