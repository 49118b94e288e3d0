// modes/train/form.js capped(): a server whose cap on steps (the training options'
// limits.max_steps, the server's setting) is under a preset's or a task's steps says, in words,
// that the run is shorter; at or over them, nothing.
import assert from "node:assert/strict";
import { test } from "node:test";

import { capped } from "../../static/js/modes/train/form.js";

const options = (/** @type {number} */ max_steps) =>
  /** @type {import("../../static/js/core/types.js").TrainOptions} */ (
    /** @type {unknown} */ ({ limits: { max_steps } })
  );
const opt = (/** @type {number} */ steps) => ({ steps, lr: 0.003, batch: 32, seed: 0 });

test("a preset over the cap: the run is shorter, and its claims may not hold", () => {
  assert.equal(
    capped(options(40), opt(300), true),
    "This server trains at most 40 steps a run: the run is shorter than this preset's 300 steps, " +
      "and its claims may not hold.",
  );
});

test("a task whose usual steps are over the cap says so too; numbers read as counts", () => {
  assert.equal(
    capped(options(5), opt(12000), false),
    "This server trains at most 5 steps a run: the run is shorter than this task's usual 12,000 " +
      "steps, and may not learn what a full run does.",
  );
});

test("at or under the cap: nothing to say", () => {
  assert.equal(capped(options(300), opt(300), true), "");
  assert.equal(capped(options(5000), opt(800), false), "");
});
