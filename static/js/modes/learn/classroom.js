// The Learn mode's class view and nickname, their pure parts: when a learner was last seen in
// words, a learner's row as text, the class's summary and caption (with the server's rule for
// "stuck"), and the progress the server keeps merged into the browser's. No DOM: runs in Node
// for the tests.

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
 * A span of time in words, in its largest whole unit, rounded down: "0 seconds", "45 seconds",
 * "1 minute", "2 minutes", "3 hours", "2 days".
 * @param {number} seconds
 */
export function spanWords(seconds) {
  const s = Math.max(0, Math.floor(Number.isFinite(seconds) ? seconds : 0));
  const [size, unit] = UNITS.find(([size]) => s >= size) ?? [1, "second"];
  const n = Math.floor(s / size);
  return `${readable(n)} ${unit}${n === 1 ? "" : "s"}`;
}

/**
 * How long ago, in words: "just now" (under 10 s), "45 seconds ago", "1 minute ago",
 * "2 minutes ago", "3 hours ago", "2 days ago" (whole units, rounded down).
 * @param {number} seconds
 */
export function seenAgo(seconds) {
  const s = Math.max(0, Math.floor(Number.isFinite(seconds) ? seconds : 0));
  return s < 10 ? "just now" : `${spanWords(s)} ago`;
}

/**
 * The steps a learner has done, as the table says them: "none yet", or "3 of 17: 2, 4, 5"; for
 * one who has tried nothing of their own, what they did instead (a browser of the teacher's
 * without the token reads so): "nothing tried yet (only opened someone's link)" or "(only
 * opened steps)".
 * @param {ClassLearner} learner @param {number} steps the path's
 */
export function doneText(learner, steps) {
  if (!learner.started)
    return `nothing tried yet (${learner.looked ? "only opened someone's link" : "only opened steps"})`;
  if (!learner.done.length) return "none yet";
  return `${readable(learner.done.length)} of ${readable(steps)}: ${learner.done.map((n) => readable(n)).join(", ")}`;
}

/**
 * The step a learner has open (else the one they last checked), in words.
 * @param {ClassLearner} learner
 */
export function onText(learner) {
  return learner.on ? `on step ${readable(learner.on.n)}, ${learner.on.title}` : "no step opened yet";
}

/**
 * A learner's tries at a task they are stuck on, in words: "4 tries over 3 minutes".
 * @param {import("../../core/types.js").ClassStuckTask} task
 */
export const triesText = (task) =>
  `${readable(task.tries)} ${task.tries === 1 ? "try" : "tries"} over ${spanWords(task.last_try - task.first_try)}`;

/**
 * Where a learner is stuck: each step with tasks they are stuck on, "4. Title", and those
 * tasks' prompts with their tries in words.
 * @param {ClassLearner} learner
 * @returns {{step: string, tasks: {prompt: string, tries: string}[]}[]}
 */
export const stuckLines = (learner) =>
  learner.stuck.map((s) => ({
    step: `${readable(s.n)}. ${s.title}`,
    tasks: s.tasks.map((t) => ({ prompt: t.prompt, tries: triesText(t) })),
  }));

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
    stuck: stuck.length
      ? stuck.map((s) => `${s.step}: ${s.tasks.map((t) => `${t.prompt} (${t.tries})`).join(" ")}`).join("; ")
      : "nowhere",
    seen: seenAgo(learner.seen_s),
  };
}

/**
 * The class in one sentence (the polite live region says it when it changes): how many
 * learners, how many stuck, how many have done every step, and how many have tried nothing of
 * their own yet (never stuck: only opened steps or someone's link, as a browser of the
 * teacher's without the token does).
 * @param {LearnClass} data
 */
export function classSummary(data) {
  const n = data.learners.length;
  // An empty class in short: the card's own line under it says what makes a learner appear
  // (issue 41: not the same sentence twice).
  if (!n) return "No learners yet.";
  const stuck = data.learners.filter((l) => l.stuck.length).length;
  const all = data.learners.filter((l) => l.done.length === data.steps).length;
  const idle = data.learners.filter((l) => !l.started).length;
  const learners = `${readable(n)} ${n === 1 ? "learner" : "learners"}`;
  const parts = [stuck ? `${readable(stuck)} stuck on a task` : "none stuck on a task"];
  if (all) parts.push(`${readable(all)} with every step done`);
  if (idle) parts.push(`${readable(idle)} ${idle === 1 ? "has" : "have"} tried nothing yet`);
  return `${learners}; ${parts.join("; ")}.`;
}

/**
 * What "stuck" means, as the server counts it: "at least 3 tries at a task over at least
 * 2 minutes, and not done" (a try: a different state of the lab checked).
 * @param {LearnClass} data
 */
export const stuckRule = (data) =>
  `at least ${readable(data.stuck_tries)} tries at a task (each a different state of the lab) over at least ` +
  `${spanWords(data.stuck_s)}, and not done`;

/** The class table's order, the first sentence of its caption. */
export const CLASS_ORDER = "Learners on this server, the one seen most recently first.";

/** Who has tried nothing yet, the last sentence of the caption. */
export const CLASS_IDLE =
  "Tried nothing yet: opened steps or someone's link and changed nothing, as a browser of yours " +
  "without the token does.";

/**
 * The class table's caption: its order, the rule for "stuck", and who has tried nothing yet.
 * @param {LearnClass} data
 */
export const classCaption = (data) => `${CLASS_ORDER} Stuck: ${stuckRule(data)}. ${CLASS_IDLE}`;

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
