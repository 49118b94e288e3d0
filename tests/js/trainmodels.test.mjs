// The Trained models card's words for a variant's best head (static/js/modes/train/views/
// trainmodels.js bestHead): named by the marks the run sends (those Learn's checks use), so a
// head under the mark is said to be no induction head; a file saved before the marks: the
// highest score alone. (Step 17's preset trained in the page is minutes of work; the card's
// words over any scores are read here, the claims' in tests/training/test_ablations.py.)
import assert from "node:assert/strict";
import { test } from "node:test";

import { readable } from "../../static/js/core/numbers.js";
import { bestHead } from "../../static/js/modes/train/views/trainmodels.js";

const variant = (induction) => ({ arch: { heads: 2 }, induction, alignment: null });
const marks = { induction: 0.4, alignment: 0.5 };

test("a head at the mark is an induction head, named by its layer and head", () => {
  const v = variant([
    [0.1, 0.2],
    [0.58444, 0.3],
  ]);
  assert.equal(bestHead(v, marks), ` · induction head (layer 2, head 1): ${readable(0.58444)}`);
});

test("under the mark: no induction head, the best and the mark said", () => {
  const v = variant([
    [0.1, 0.18123],
    [0.05, 0.12],
  ]);
  assert.equal(
    bestHead(v, marks),
    ` · no induction head: the best (layer 1, head 2) scores ${readable(0.18123)}, under the 0.4 mark`,
  );
});

test("cross-attention is read by its own mark", () => {
  const v = { arch: { heads: 2 }, induction: null, alignment: [[0.45, 0.9]] };
  assert.equal(bestHead(v, marks), ` · aligned cross-attention head (layer 1, head 2): ${readable(0.9)}`);
  assert.match(bestHead(v, { ...marks, alignment: 0.95 }), /^ · no aligned cross-attention head: /);
});

test("a file saved before the marks: the highest score alone; no scores, no words", () => {
  const v = variant([[0.1, 0.2]]);
  assert.equal(bestHead(v, null), ` · highest induction score: ${readable(0.2)} (layer 1, head 2)`);
  assert.equal(bestHead({ arch: { heads: 2 }, induction: null, alignment: null }, marks), "");
});

test("a score short of 1 never reads 1 (issue 41)", () => {
  const v = { arch: { heads: 2 }, induction: null, alignment: [[0.45, 0.99962]] };
  assert.equal(bestHead(v, marks), " · aligned cross-attention head (layer 1, head 2): over 0.999");
  assert.equal(
    bestHead({ ...v, alignment: [[0.45, 1]] }, marks),
    " · aligned cross-attention head (layer 1, head 2): 1",
  );
});

// Issue 41 (step 17): the card names the head the positions preset's claim measures, a head of
// the marks' first layer for an induction head on (`induction_from`, the server's), so a learner
// never reads two different "best" heads; a first-layer head that scores more is named with why
// it is none.
const from = { ...marks, induction_from: 1 };
const none =
  "a head of layer 1 cannot be one (it needs an earlier layer's head to mark the letter before each position)";

test("an induction head is looked for from the marks' first layer for one, as the claim measures", () => {
  const v = variant([
    [0.1, 0.18123],
    [0.00259, 0.0012],
  ]);
  assert.equal(
    bestHead(v, from),
    ` · no induction head: the best layer-2 head (layer 2, head 1) scores ${readable(0.00259)}, under the 0.4 mark; ` +
      `another head (layer 1, head 2) scores more, ${readable(0.18123)}, but ${none}`,
  );
  const formed = variant([
    [0.1, 0.2],
    [0.58444, 0.3],
  ]);
  assert.equal(bestHead(formed, from), ` · induction head (layer 2, head 1): ${readable(0.58444)}`);
  // A first-layer head over the mark is still none, and said so beside the one that is.
  const early = variant([
    [0.45, 0.2],
    [0.41, 0.3],
  ]);
  assert.equal(
    bestHead(early, from),
    ` · induction head (layer 2, head 1): ${readable(0.41)}; another head (layer 1, head 1) scores more, 0.45, but ${none}`,
  );
});

test("deeper models name the layers looked in; one layer has no induction head", () => {
  const deep = variant([
    [0.1, 0.2],
    [0.05, 0.12],
    [0.3, 0.01],
  ]);
  assert.equal(
    bestHead(deep, from),
    ` · no induction head: the best head of layers 2 to 3 (layer 3, head 1) scores ${readable(0.3)}, under the 0.4 mark`,
  );
  assert.equal(bestHead(variant([[0.5, 0.2]]), from), ` · no induction head: ${none}, and this model has 1 layer`);
  // Cross-attention is looked for in every layer.
  const cross = { arch: { heads: 2 }, induction: null, alignment: [[0.45, 0.9]] };
  assert.equal(bestHead(cross, from), ` · aligned cross-attention head (layer 1, head 2): ${readable(0.9)}`);
});

test("a score just under the mark never reads as the mark (issue 41)", () => {
  const v = { arch: { heads: 2 }, induction: null, alignment: [[0.1, 0.49996]] };
  assert.equal(
    bestHead(v, marks),
    " · no aligned cross-attention head: the best (layer 1, head 2) scores just under 0.5, under the 0.5 mark",
  );
});
