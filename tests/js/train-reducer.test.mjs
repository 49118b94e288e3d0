// modes/train/reducer.js: the Train tab's copy of a run, kept by the run's server-sent events
// (state, steps, checkpoint, variant, claims, end), as a pure function. tests/test_js.py also
// feeds it the events of real runs and compares with the server's own copy.
import assert from "node:assert/strict";
import { test } from "node:test";

import { defaultTrainView } from "../../static/js/core/state.js";
import { headMatrix, inLine, shownSteps, thumbsOf } from "../../static/js/core/trainrun.js";
import { EVENTS, initialState, opened, reduce } from "../../static/js/modes/train/reducer.js";

/** A checkpoint at `step` whose 1 x 1 x 2 x 2 snapshot holds `values` (uint8) at scale `scale`. */
const checkpoint = (step, values = [255, 0, 128, 127], scale = 1) => ({
  step,
  heldout: 3 - step / 100,
  seconds: step / 10,
  sample: null,
  thumbs: { shape: [1, 1, 2, 2], values: Buffer.from(values).toString("base64"), scale: [[scale]] },
});

const variant = (label, state = "waiting") => ({
  label,
  arch: { layers: 1, heads: 1 },
  params: 100,
  state,
  model: null,
  induction: null,
  checkpoints: [],
  history: { step: [], loss: [], grad_norms: [], seconds: [] },
});

/** A running run of two variants (a compared switch), nothing trained yet. */
const fresh = () => ({
  id: "r1-0000000001",
  state: "running",
  reason: null,
  task: "induction",
  about: "",
  preset: null,
  compare: "scale",
  steps: 4,
  opt: { steps: 4, lr: 0.01, batch: 8, seed: 0 },
  checkpoint_steps: [0, 2, 4],
  probe: { tokens: ["a", "b"], text: "ab", look: "", prompt: null },
  baseline: null,
  claims: null,
  variants: [variant("1/√d scaling", "running"), variant("no scaling")],
});

/** Deep copies, so that a test can see that nothing it passed was changed. */
const frozen = (x) => JSON.parse(JSON.stringify(x));

/** Apply events in turn, checking that none changes the state it is given. */
function run(state, events) {
  for (const e of events) {
    const before = frozen(state);
    const next = reduce(state, e);
    assert.deepEqual(frozen(state), before, `${e.type} changed the state it was given`);
    state = next;
  }
  return state;
}

const steps = (v, from, to) => {
  const step = Array.from({ length: to - from + 1 }, (_, i) => from + i);
  return {
    type: "steps",
    data: {
      variant: v,
      step,
      loss: step.map((s) => 3 / s),
      grad_norms: step.map((s) => [s, 2 * s]),
      seconds: step.map((s) => s / 10),
    },
  };
};

test("the events a run sends are the reducer's, state first and end last", () => {
  // (issue 27: `queue` added, a waiting run's place and estimate, sent before it starts.)
  assert.deepEqual(EVENTS, ["state", "queue", "steps", "checkpoint", "variant", "claims", "end"]);
  assert.deepEqual(initialState(), { run: null, view: defaultTrainView(), follow: true, picked: false });
});

test("state: a run opens at its newest checkpoint, of the last variant that has one", () => {
  const r = fresh();
  r.variants[0].checkpoints = [checkpoint(0), checkpoint(2)];
  r.variants[1].checkpoints = [checkpoint(0)];
  const s = reduce(initialState(), { type: "state", data: r });
  assert.equal(s.run, r);
  assert.equal(s.follow, true);
  assert.deepEqual(s.view, { ...defaultTrainView(), variant: 1, checkpoint: shownSteps(r).indexOf(0) });
  // No checkpoint at all: the defaults; an encoder-decoder shows its cross-attention first.
  const none = opened(fresh());
  assert.deepEqual(none.view, defaultTrainView());
  const seq2seq = { ...fresh(), probe: { ...fresh().probe, source: ["x", "y"] } };
  assert.equal(opened(seq2seq).view.attention, "cross");
  // A new run's state replaces everything, the reader's choices too.
  const chosen = { ...s, view: { ...s.view, layer: 3, head: 2 }, follow: false };
  assert.deepEqual(reduce(chosen, { type: "state", data: fresh() }), opened(fresh()));
});

test("steps: each batch of steps is appended to its variant's history, column by column", () => {
  const before = opened(fresh());
  const s = run(before, [steps(0, 1, 2), steps(0, 3, 3)]);
  assert.deepEqual(s.run.variants[0].history, {
    step: [1, 2, 3],
    loss: [3, 1.5, 1],
    grad_norms: [
      [1, 2],
      [2, 4],
      [3, 6],
    ],
    seconds: [0.1, 0.2, 0.3],
  });
  assert.equal(s.run.variants[1], before.run.variants[1]); // the other variant is the same object
  assert.equal(s.run.variants[0].checkpoints, before.run.variants[0].checkpoints);
});

test("checkpoint: appended; the slider follows the newest, or stays where the reader put it", () => {
  let s = run(opened(fresh()), [
    { type: "checkpoint", data: { variant: 0, checkpoint: checkpoint(0) } },
    steps(0, 1, 2),
    { type: "checkpoint", data: { variant: 0, checkpoint: checkpoint(2) } },
  ]);
  assert.deepEqual(
    s.run.variants[0].checkpoints.map((c) => c.step),
    [0, 2],
  );
  assert.deepEqual(shownSteps(s.run), [0, 2, 4]); // while running: the schedule
  assert.equal(s.view.checkpoint, 1); // following: step 2 is shown
  // The reader moved the slider back: a new checkpoint does not move it.
  const back = { ...s, follow: false, view: { ...s.view, checkpoint: 0 } };
  const after = reduce(back, { type: "checkpoint", data: { variant: 0, checkpoint: checkpoint(4) } });
  assert.equal(after.view.checkpoint, 0);
  assert.equal(after.run.variants[0].checkpoints.length, 3);
  // The next variant's first checkpoint (step 0) moves a following view to that variant.
  s = reduce(s, { type: "checkpoint", data: { variant: 1, checkpoint: checkpoint(0) } });
  assert.deepEqual([s.view.variant, s.view.checkpoint], [1, 0]);
  // ... but a later one of another variant does not.
  const other = reduce(
    { ...s, view: { ...s.view, variant: 0 } },
    { type: "checkpoint", data: { variant: 1, checkpoint: checkpoint(2) } },
  );
  assert.deepEqual([other.view.variant, other.view.checkpoint], [0, 1]);
});

test("variant: a variant's state, model and scores change as the server says", () => {
  const s = run(opened(fresh()), [
    {
      type: "variant",
      data: { variant: 0, state: "done", model: "r1-0000000001-1-d-scaling", induction: [[0.9]], alignment: null },
    },
    { type: "variant", data: { variant: 1, state: "running" } },
  ]);
  assert.deepEqual(
    s.run.variants.map((v) => v.state),
    ["done", "running"],
  );
  assert.equal(s.run.variants[0].model, "r1-0000000001-1-d-scaling");
  assert.deepEqual(s.run.variants[0].induction, [[0.9]]);
  assert.equal(s.run.variants[0].label, "1/√d scaling"); // what the event does not name is kept
  assert.equal("variant" in s.run.variants[0], false); // the index is not a field of the variant
});

test("claims: a preset's claims, measured, replace none", () => {
  const claims = [{ claim: "scaled trains faster", value: 0.25, holds: true }];
  const s = reduce(opened(fresh()), { type: "claims", data: { claims } });
  assert.deepEqual(s.run.claims, claims);
});

test("end: done, cancelled or failed; the slider runs over the checkpoints the run has", () => {
  const cp = (v, step) => ({ type: "checkpoint", data: { variant: v, checkpoint: checkpoint(step) } });
  const trained = run(opened(fresh()), [cp(0, 0), steps(0, 1, 2), cp(0, 2)]);
  // Cancelled at step 2 while following: the newest of the checkpoints it has.
  const cancelled = reduce(trained, { type: "end", data: { state: "cancelled", reason: "cancelled" } });
  assert.equal(cancelled.run.state, "cancelled");
  assert.equal(cancelled.run.reason, "cancelled");
  assert.deepEqual(shownSteps(cancelled.run), [0, 2]); // no longer the schedule's step 4
  assert.equal(cancelled.view.checkpoint, 1);
  // The variants still running or waiting are cancelled, as the server's copy says.
  assert.deepEqual(
    cancelled.run.variants.map((v) => v.state),
    ["cancelled", "cancelled"],
  );
  // Not following, at a scheduled step the run never reached: the step before it.
  const scrubbed = { ...trained, follow: false, view: { ...trained.view, checkpoint: 2 } }; // step 4
  assert.equal(
    reduce(scrubbed, { type: "end", data: { state: "failed", reason: "training failed: boom" } }).view.checkpoint,
    1,
  );
  // Not following, at a step it has: that step.
  const kept = { ...trained, follow: false, view: { ...trained.view, checkpoint: 0 } };
  assert.equal(reduce(kept, { type: "end", data: { state: "cancelled", reason: "cancelled" } }).view.checkpoint, 0);
  // Done: finished variants keep their state.
  const done = run(trained, [
    { type: "variant", data: { variant: 0, state: "done" } },
    { type: "variant", data: { variant: 1, state: "done" } },
    { type: "end", data: { state: "done", reason: null } },
  ]);
  assert.deepEqual(
    done.run.variants.map((v) => v.state),
    ["done", "done"],
  );
  assert.equal(done.run.state, "done");
});

test("events before the state, or of a variant the run lacks, change nothing", () => {
  const none = initialState();
  for (const e of [steps(0, 1, 1), { type: "end", data: { state: "done", reason: null } }]) {
    assert.equal(reduce(none, e), none);
  }
  const s = opened(fresh());
  assert.equal(reduce(s, steps(5, 1, 1)), s);
  assert.equal(reduce(s, { type: "checkpoint", data: { variant: 9, checkpoint: checkpoint(0) } }), s);
  assert.equal(reduce(s, { type: "variant", data: { variant: -1, state: "done" } }), s);
  assert.equal(reduce(s, /** @type {any} */ ({ type: "unknown", data: {} })), s);
});

test("a checkpoint's 8-bit snapshot decodes to weights value * scale / 255", () => {
  const cp = checkpoint(0, [255, 0, 51, 204], 0.5);
  const t = thumbsOf(cp);
  assert.deepEqual(Array.from(t.values.data), [255, 0, 51, 204]);
  assert.deepEqual(t.values.shape, [1, 1, 2, 2]);
  assert.equal(thumbsOf(cp), t); // decoded once
  const m = headMatrix(cp, 0, 0);
  assert.deepEqual(m.shape, [2, 2]);
  const want = [255, 0, 51, 204].map((v) => Math.fround(v * (Math.fround(0.5) / 255)));
  assert.deepEqual(Array.from(m.data), want);
});

/** A run waiting in line: queued at `place`, `wait` seconds from its start. */
const queued = (place, wait) => ({
  ...fresh(),
  state: "queued",
  place,
  wait_s: wait,
  variants: [variant("1/√d scaling"), variant("no scaling")],
});

test("a queue event moves a waiting run up the line, then starts it", () => {
  const s = run(initialState(), [{ type: "state", data: queued(3, 40) }]);
  assert.equal(s.run.state, "queued");
  assert.deepEqual([s.run.place, s.run.wait_s], [3, 40]);
  // A run ahead ended: one place up, a shorter wait; nothing else of the run changes.
  const up = run(s, [{ type: "queue", data: { state: "queued", place: 2, wait_s: 25 } }]);
  assert.deepEqual([up.run.state, up.run.place, up.run.wait_s], ["queued", 2, 25]);
  assert.deepEqual(up.run.variants, s.run.variants);
  assert.deepEqual(up.view, s.view);
  // It starts: running, no place; then its steps come as any run's.
  const going = run(up, [
    { type: "queue", data: { state: "queued", place: 1, wait_s: 3 } },
    { type: "queue", data: { state: "running", place: null, wait_s: null } },
    { type: "variant", data: { variant: 0, state: "running" } },
    steps(0, 1, 2),
  ]);
  assert.deepEqual([going.run.state, going.run.place, going.run.wait_s], ["running", null, null]);
  assert.deepEqual(going.run.variants[0].history.step, [1, 2]);
});

test("a waiting run cancelled ends with no place, every variant cancelled", () => {
  const s = run(initialState(), [
    { type: "state", data: queued(2, 30) },
    { type: "end", data: { state: "cancelled", reason: "cancelled while waiting in line", place: null, wait_s: null } },
  ]);
  assert.deepEqual([s.run.state, s.run.place, s.run.wait_s], ["cancelled", null, null]);
  assert.deepEqual(
    s.run.variants.map((v) => v.state),
    ["cancelled", "cancelled"],
  );
});

test("a place in line is said in words, the estimate never negative", () => {
  assert.equal(inLine(1, 12), "next in line, about 12 s");
  assert.equal(inLine(2, 30), "2nd in line, about 30 s");
  assert.equal(inLine(3, 40), "3rd in line, about 40 s");
  assert.equal(inLine(4, 40), "4th in line, about 40 s");
  assert.deepEqual(
    [11, 12, 13, 21, 22, 23, 111].map((n) => inLine(n, null)),
    ["11th in line", "12th in line", "13th in line", "21st in line", "22nd in line", "23rd in line", "111th in line"],
  );
  assert.equal(inLine(1, 0), "next in line, starting any moment");
  assert.equal(inLine(1, -5), "next in line, starting any moment");
  assert.equal(inLine(5, 150), "5th in line, about 3 min");
});

test("the page's own actions: open, watch, choose, follow, renamed, each a new state", () => {
  let s = run(initialState(), [{ type: "open", data: fresh() }]);
  assert.deepEqual(s, opened(fresh()));
  s = run(s, [{ type: "choose", data: { checkpoint: 1 } }]);
  assert.equal(s.view.checkpoint, 1);
  assert.equal(s.picked, false); // a checkpoint is no head chosen
  s = run(s, [
    { type: "choose", data: { layer: 0, head: 1 } },
    { type: "follow", data: false },
  ]);
  assert.deepEqual([s.view.layer, s.view.head, s.picked, s.follow], [0, 1, true, false]);
  // following off: a new checkpoint does not move the slider
  const at = s.view.checkpoint;
  s = run(s, [{ type: "checkpoint", data: { variant: 0, checkpoint: checkpoint(0) } }]);
  assert.equal(s.view.checkpoint, at);
  s = run(s, [{ type: "renamed", data: { id: "r1-0000000001", title: "mine", named: true } }]);
  assert.deepEqual([s.run?.title, s.run?.named], ["mine", true]);
  const other = run(s, [{ type: "renamed", data: { id: "r2-0000000002", title: "theirs", named: true } }]);
  assert.equal(other, s); // another run's name: nothing
  s = run(s, [{ type: "watch" }]);
  assert.deepEqual([s.view, s.follow], [defaultTrainView(), true]);
});
