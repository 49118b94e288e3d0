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
  assert.equal(bestHead(v, marks), ` · induction head L2 H1: ${readable(0.58444)}`);
});

test("under the mark: no induction head, the best and the mark said", () => {
  const v = variant([
    [0.1, 0.18123],
    [0.05, 0.12],
  ]);
  assert.equal(
    bestHead(v, marks),
    ` · no induction head: the best, L1 H2, scores ${readable(0.18123)}, under the 0.4 mark`,
  );
});

test("cross-attention is read by its own mark", () => {
  const v = { arch: { heads: 2 }, induction: null, alignment: [[0.45, 0.9]] };
  assert.equal(bestHead(v, marks), ` · aligned cross-attention head L1 H2: ${readable(0.9)}`);
  assert.match(bestHead(v, { ...marks, alignment: 0.95 }), /^ · no aligned cross-attention head: /);
});

test("a file saved before the marks: the highest score alone; no scores, no words", () => {
  const v = variant([[0.1, 0.2]]);
  assert.equal(bestHead(v, null), ` · highest induction score: L1 H2, ${readable(0.2)}`);
  assert.equal(bestHead({ arch: { heads: 2 }, induction: null, alignment: null }, marks), "");
});
