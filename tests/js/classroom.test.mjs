// The class view's and the nickname's pure parts (static/js/modes/learn/classroom.js): last seen
// and a span in words, a learner's row as text (where stuck, with the tries), the class in one
// sentence, the caption with the server's rule for "stuck", the server's record merged into the
// browser's progress, and the class view's link.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  classCaption,
  classSummary,
  doneText,
  mergeKept,
  onText,
  rowText,
  seenAgo,
  spanWords,
  stuckLines,
} from "../../static/js/modes/learn/classroom.js";
import { decodeLearnHash, emptyProgress } from "../../static/js/modes/learn/progress.js";

/** @param {object} [over] */
const learner = (over = {}) => ({
  label: "Learner 3",
  named: false,
  on: { n: 4, id: "worked-example", title: "An apple and a banana, by hand" },
  done: [2, 3],
  stuck: [
    {
      n: 4,
      id: "worked-example",
      title: "An apple and a banana, by hand",
      tasks: [{ prompt: "Edit only banana's row.", tries: 4, first_try: 700, last_try: 890.5 }],
    },
  ],
  started: true,
  looked: false,
  last_seen: 1000,
  seen_s: 130,
  ...over,
});

test("last seen reads in whole units, rounded down", () => {
  const cases = [
    [0, "just now"],
    [9.99, "just now"],
    [-5, "just now"],
    [10, "10 seconds ago"],
    [59.9, "59 seconds ago"],
    [60, "1 minute ago"],
    [130, "2 minutes ago"],
    [3599, "59 minutes ago"],
    [3600, "1 hour ago"],
    [7 * 3600 + 59, "7 hours ago"],
    [86400, "1 day ago"],
    [86400 * 45, "45 days ago"],
    [Number.NaN, "just now"],
  ];
  for (const [s, words] of cases) assert.equal(seenAgo(/** @type {number} */ (s)), words, String(s));
  assert.equal(spanWords(0), "0 seconds");
  assert.equal(spanWords(1), "1 second");
  assert.equal(spanWords(120), "2 minutes");
  assert.equal(spanWords(190.5), "3 minutes");
  assert.equal(spanWords(-3), "0 seconds");
});

test("a learner's row says the steps done, where stuck and the step they are on", () => {
  const l = learner();
  assert.equal(doneText(l, 17), "2 of 17: 2, 3");
  assert.equal(doneText(learner({ done: [] }), 17), "none yet");
  assert.equal(onText(l), "on step 4, An apple and a banana, by hand");
  assert.equal(onText(learner({ on: null })), "no step opened yet");
  // One who has tried nothing of their own (a teacher's browser without the token): said so.
  const idle = { done: [], stuck: [], started: false };
  assert.equal(doneText(learner(idle), 17), "nothing tried yet (only opened steps)");
  assert.equal(doneText(learner({ ...idle, looked: true }), 17), "nothing tried yet (only opened someone's link)");
  assert.equal(doneText(learner({ done: [], looked: true }), 17), "none yet", "one who tried is a learner at work");
  assert.deepEqual(stuckLines(l), [
    {
      step: "4. An apple and a banana, by hand",
      tasks: [{ prompt: "Edit only banana's row.", tries: "4 tries over 3 minutes" }],
    },
  ]);
  assert.deepEqual(rowText(l, 17), {
    label: "Learner 3",
    on: "on step 4, An apple and a banana, by hand",
    done: "2 of 17: 2, 3",
    stuck: "4. An apple and a banana, by hand: Edit only banana's row. (4 tries over 3 minutes)",
    seen: "2 minutes ago",
  });
  assert.equal(rowText(learner({ stuck: [] }), 17).stuck, "nowhere");
});

test("the class in one sentence, and its caption with the server's rule for stuck", () => {
  const data = {
    learners: [],
    steps: 17,
    now: 0,
    poll_s: 2,
    stuck_tries: 3,
    stuck_s: 120,
    max_learners: 500,
    keep_days: 90,
  };
  // In short: the card's empty line says the rest (issue 41: never the same sentence twice).
  assert.equal(classSummary(data), "No learners yet.");
  const all = Array.from({ length: 17 }, (_, i) => i + 1);
  data.learners = [learner(), learner({ label: "Ada", stuck: [] }), learner({ done: all, stuck: [] })];
  assert.equal(classSummary(data), "3 learners; 1 stuck on a task; 1 with every step done.");
  data.learners = [learner({ stuck: [] })];
  assert.equal(classSummary(data), "1 learner; none stuck on a task.");
  // Those who have tried nothing yet are counted apart, never as stuck.
  const idle = { done: [], stuck: [], started: false };
  data.learners = [learner(), learner({ ...idle, looked: true }), learner(idle)];
  assert.equal(classSummary(data), "3 learners; 1 stuck on a task; 2 have tried nothing yet.");
  data.learners = [learner({ ...idle, looked: true })];
  assert.equal(classSummary(data), "1 learner; none stuck on a task; 1 has tried nothing yet.");
  assert.equal(
    classCaption(data),
    "Learners on this server, the one seen most recently first. Stuck: at least 3 tries at a task " +
      "(each a different state of the lab) over at least 2 minutes, and not done. Tried nothing yet: " +
      "opened steps or someone's link and changed nothing, as a browser of yours without the token does.",
  );
  assert.match(classCaption({ ...data, stuck_tries: 5, stuck_s: 3600 }), /at least 5 tries .* at least 1 hour,/);
});

test("the server's record adds the tasks it found done, and takes nothing away", () => {
  const mine = { v: /** @type {1} */ (1), last: 3, done: { "dot-products": ["apple-to-banana"] } };
  const kept = {
    kept: true,
    nickname: null,
    last: "qkv",
    watched: true,
    steps: {
      qkv: { done: ["quiet-values"], tried: ["quiet-values", "determiner-finds-a"] },
      scaling: { done: [], tried: ["unscaled-one-hot"] },
      "dot-products": { done: [], tried: [] },
    },
  };
  assert.deepEqual(mergeKept(mine, kept), {
    v: 1,
    last: 3,
    done: { "dot-products": ["apple-to-banana"], qkv: ["quiet-values"] },
  });
  // Nothing new: the same object (nothing to save or redraw).
  assert.equal(mergeKept(mine, { ...kept, steps: {} }), mine);
  assert.equal(mergeKept(mine, null), mine);
  // Whatever cannot be a task id is left out.
  const odd = { ...kept, steps: { qkv: { done: ["Quiet values!", 7], tried: [] } } };
  assert.deepEqual(mergeKept(emptyProgress(), /** @type {any} */ (odd)), emptyProgress());
});

test("#learn/class is the class view's link, not a step", () => {
  assert.deepEqual(decodeLearnHash("#learn/class"), { n: null, class: true });
  assert.deepEqual(decodeLearnHash("#learn/classes"), { n: null, bad: "classes" });
});
