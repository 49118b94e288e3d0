// core/runname.js: a trained run is named by what it trains and when it started, in the
// reader's clock, never by its id.
import assert from "node:assert/strict";
import { test } from "node:test";

import { runName } from "../../static/js/core/runname.js";

test("a run's name: its title and its start, hours and minutes in local time", () => {
  const start = new Date(2026, 11, 5, 21, 4, 59); // local time
  assert.equal(runName("induction, 2 layers", start.getTime() / 1000), "induction, 2 layers, 21:04");
  assert.equal(runName("reverse, 1 layer", null), "reverse, 1 layer");
  assert.equal(runName(undefined, undefined), "a trained model");
});

test("a run its owner named: the name as it is, without the start's time", () => {
  const start = new Date(2026, 11, 5, 21, 4, 59).getTime() / 1000;
  assert.equal(runName("my first induction model", start, true), "my first induction model");
  assert.equal(runName("induction, 2 layers", start, false), "induction, 2 layers, 21:04");
  assert.equal(runName("", start, true), "a trained model, 21:04"); // no name: never an empty one
});
