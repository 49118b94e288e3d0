// The Learn mode's class view and nickname, their pure parts: when a learner was last seen in
// words, a learner's row as text, the class's summary, and the progress the server keeps merged
// into the browser's. No DOM: runs in Node for the tests.

import { readable } from "../../core/numbers.js";
import { recordTasks } from "./progress.js";

/** @typedef {import("../../core/types.js").LearnClass} LearnClass */
/** @typedef {import("../../core/types.js").ClassLearner} ClassLearner */
/** @typedef {import("../../core/types.js").LearnKept} LearnKept */
/** @typedef {import("./progress.js").Progress} Progress */

/** The class view's link. */
export const CLASS_HASH = "#learn/class";
/** Where a tab keeps the operator's token once the server took it (sessionStorage). */
export const TOKEN_KEY = "attnviz.operator";

/** @type {[number, string][]} */
const UNITS = [
  [86400, "day"],
  [3600, "hour"],
  [60, "minute"],
  [1, "second"],
];

/**
 * How long ago, in words: "just now" (under 10 s), "45 seconds ago", "1 minute ago",
 * "2 minutes ago", "3 hours ago", "2 days ago" (whole units, rounded down).
 * @param {number} seconds
 */
export function seenAgo(seconds) {
  const s = Math.max(0, Math.floor(Number.isFinite(seconds) ? seconds : 0));
  if (s < 10) return "just now";
  const [size, unit] = /** @type {[number, string]} */ (UNITS.find(([size]) => s >= size));
  const n = Math.floor(s / size);
  return `${readable(n)} ${unit}${n === 1 ? "" : "s"} ago`;
}

/**
 * The steps a learner has done, as the table says them: "none yet", or "3 of 17: 2, 4, 5".
 * @param {ClassLearner} learner @param {number} steps the path's
 */
export function doneText(learner, steps) {
  if (!learner.done.length) return "none yet";
  return `${readable(learner.done.length)} of ${readable(steps)}: ${learner.done.map((n) => readable(n)).join(", ")}`;
}

/**
 * The step a learner last checked, in words.
 * @param {ClassLearner} learner
 */
export function onText(learner) {
  return learner.on ? `on step ${readable(learner.on.n)}, ${learner.on.title}` : "no step checked yet";
}

/**
 * Where a learner is stuck: each step with tasks tried and not done, "4. Title", and those
 * tasks' prompts.
 * @param {ClassLearner} learner
 * @returns {{step: string, tasks: string[]}[]}
 */
export const stuckLines = (learner) =>
  learner.stuck.map((s) => ({ step: `${readable(s.n)}. ${s.title}`, tasks: [...s.tasks] }));

/**
 * A learner's row as text, in the table's order: the learner (and the step they are on), the
 * steps done, where stuck, last seen.
 * @param {ClassLearner} learner @param {number} steps
 */
export function rowText(learner, steps) {
  const stuck = stuckLines(learner);
  return {
    label: learner.label,
    on: onText(learner),
    done: doneText(learner, steps),
    stuck: stuck.length ? stuck.map((s) => `${s.step}: ${s.tasks.join(" ")}`).join("; ") : "nowhere",
    seen: seenAgo(learner.seen_s),
  };
}

/**
 * The class in one sentence (the polite live region says it when it changes): how many
 * learners, how many stuck, how many have done every step.
 * @param {LearnClass} data
 */
export function classSummary(data) {
  const n = data.learners.length;
  if (!n) return "No learner has checked a task on this server yet.";
  const stuck = data.learners.filter((l) => l.stuck.length).length;
  const all = data.learners.filter((l) => l.done.length === data.steps).length;
  const learners = `${readable(n)} ${n === 1 ? "learner" : "learners"}`;
  const parts = [stuck ? `${readable(stuck)} stuck on a task (tried, not done)` : "none stuck on a task"];
  if (all) parts.push(`${readable(all)} with every step done`);
  return `${learners}; ${parts.join("; ")}.`;
}

/**
 * The browser's progress with the tasks the server found done added (the server's record is
 * its own answers: a task it found done is done here too). Nothing is taken away.
 * @param {Progress} progress @param {LearnKept | null} kept
 * @returns {Progress}
 */
export function mergeKept(progress, kept) {
  let out = progress;
  for (const [step, record] of Object.entries(kept?.steps ?? {})) {
    const done = Array.isArray(record?.done) ? record.done.filter((t) => typeof t === "string") : [];
    out = recordTasks(
      out,
      step,
      done.map((id) => ({ id, done: true })),
    );
  }
  return out;
}
