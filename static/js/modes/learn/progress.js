// The Learn mode's pure parts: its links (`#learn`, `#learn/4`), the learner's progress as the
// browser keeps it (read back from untrusted text), the body of a step's check, and the
// article's numbers beside the engine's. No DOM: runs in Node for the tests.

import { toRequest } from "../../core/state.js";

/** @typedef {import("../../core/types.js").LearnStep} LearnStep */
/** @typedef {import("../../core/types.js").LearnAnswer} LearnAnswer */
/** @typedef {import("../../core/types.js").ToyState} ToyState */
/** @typedef {import("../../core/types.js").ToyConfig} ToyConfig */
/** @typedef {import("../../core/types.js").TrainRun} TrainRun */
/** @typedef {import("../../core/types.js").TrainView} TrainView */

export const LEARN_HASH = "#learn";
/** Where the browser keeps the progress (localStorage). */
export const STORAGE_KEY = "attnviz.learn";

/**
 * The lab's state a Learn link carries, as the learner left it: a toy table (the payload of the
 * toy lab's own link, `#s=...`) or a Train link (`#train/<run>?...`, with the head in view).
 * @typedef {{toy: string} | {train: string}} LearnLab
 */

/**
 * A task of a train step done with a head of its own (not the one in view), as a Learn link
 * carries it: `found=<task>:<variant>.<layer>.<head>,...` (0-based), so that whoever opens the
 * link checks each task on the view it was done with.
 * @typedef {{task: string, variant: number, layer: number, head: number}} LearnFound
 */

/** A link carries at most this many tasks done with their own view. */
export const MAX_FOUND = 16;

/**
 * The `found` part of a Learn link read back (untrusted text): what cannot be read is left out,
 * a task named twice is read once, and at most MAX_FOUND are kept.
 * @param {string | null | undefined} text
 * @returns {LearnFound[]}
 */
export function decodeFound(text) {
  /** @type {LearnFound[]} */
  const out = [];
  for (const part of (text ?? "").split(",").slice(0, 64)) {
    const m = /^([a-z0-9][a-z0-9-]{0,63}):(\d{1,2})\.(\d{1,3})\.(\d{1,3})$/.exec(part);
    if (!m || out.some((f) => f.task === m[1])) continue;
    out.push({ task: m[1], variant: Number(m[2]), layer: Number(m[3]), head: Number(m[4]) });
    if (out.length === MAX_FOUND) break;
  }
  return out;
}

/** The `found` part of a Learn link ("" for none). @param {LearnFound[]} found */
export const encodeFound = (found) =>
  found
    .slice(0, MAX_FOUND)
    .map((f) => `${f.task}:${f.variant}.${f.layer}.${f.head}`)
    .join(",");

/**
 * A location hash as a Learn link: `{n}` (1-based; null: the learner's last step), with the
 * lab's state when it carries one (`?toy=` or `?train=`), and with a train lab the tasks done
 * with their own view (`&found=`), or null when it is not one. A step that is not a whole
 * number from 1 is `{n: null, bad}`; `#learn/class`, the operator's class view, is
 * `{n: null, class: true}`.
 * @param {string} hash
 * @returns {{n: number | null, bad?: string, lab?: LearnLab, found?: LearnFound[], class?: boolean} | null}
 */
export function decodeLearnHash(hash) {
  const m = /^#learn(?:\/([^?#]*))?(?:\?(.*))?$/.exec(hash || "");
  if (!m) return null;
  if (m[1] === "class") return { n: null, class: true };
  const query = new URLSearchParams(m[2] ?? "");
  const toy = query.get("toy");
  const train = query.get("train");
  const found = train ? decodeFound(query.get("found")) : [];
  /** @type {{lab?: LearnLab, found?: LearnFound[]}} */
  const lab = toy ? { lab: { toy } } : train ? { lab: { train }, ...(found.length ? { found } : {}) } : {};
  if (m[1] === undefined || m[1] === "") return { n: null, ...lab };
  return /^[1-9][0-9]{0,3}$/.test(m[1]) ? { n: Number(m[1]), ...lab } : { n: null, bad: m[1] };
}

/**
 * The link of step n (1-based), with the lab's state when given, and with a train lab the
 * tasks done with their own view.
 * @param {number} n @param {LearnLab | null} [lab] @param {LearnFound[]} [found]
 */
export function encodeLearnHash(n, lab = null, found = []) {
  /** @type {Record<string, string>} */
  const more = lab && "train" in lab && found.length ? { found: encodeFound(found) } : {};
  const query = !lab ? "" : `?${new URLSearchParams("toy" in lab ? { toy: lab.toy } : { train: lab.train, ...more })}`;
  return `${LEARN_HASH}/${n}${query}`;
}

/**
 * The learner's progress: the last step open, each step's tasks done (by id; kept once done,
 * even if the lab is changed back afterwards), and each toy step's lab as the learner last left
 * it (`labs`, by step id: its link's `toy=` part), which reopens when they come back to the step.
 * @typedef {{v: 2, last: number | null, done: Record<string, string[]>, labs: Record<string, string>}} Progress
 */

/** The version of the progress the browser keeps (`v`). */
export const PROGRESS_VERSION = 2;

/** @returns {Progress} */
export const emptyProgress = () => ({ v: 2, last: null, done: {}, labs: {} });

/**
 * Each older version of the kept progress brought to the next (`MIGRATIONS[v]`: from v to
 * v + 1), so a browser's progress survives a new page: version 1 had no labs.
 * @type {Record<number, (raw: any) => any>}
 */
const MIGRATIONS = {
  1: (raw) => ({ ...raw, v: 2, labs: {} }),
};

const ID = /^[a-z0-9][a-z0-9-]{0,63}$/;
/** A toy lab as a link carries it (base64url, core/state.js encodeShare). */
const LAB = /^[A-Za-z0-9_-]+$/;

/**
 * Progress from the text the browser kept (anything: an older version's, migrated; a newer
 * one's or one edited by hand, read as far as it can be; none). What cannot be read is left
 * out; nothing throws.
 * @param {string | null | undefined} text
 * @param {number} [maxLab] the longest lab kept (LIMITS.max_learn_lab_chars); none without it
 * @returns {Progress}
 */
export function readProgress(text, maxLab = 0) {
  const out = emptyProgress();
  let raw;
  try {
    raw = text ? JSON.parse(text) : null;
  } catch {
    return out;
  }
  if (!raw || typeof raw !== "object") return out;
  while (Object.hasOwn(MIGRATIONS, raw.v)) raw = MIGRATIONS[raw.v](raw);
  if (raw.v !== PROGRESS_VERSION) return out;
  if (Number.isInteger(raw.last) && raw.last >= 1 && raw.last <= 9999) out.last = raw.last;
  for (const [step, tasks] of entries(raw.done)) {
    if (!ID.test(step) || !Array.isArray(tasks)) continue;
    const ids = [...new Set(tasks.filter((t) => typeof t === "string" && ID.test(t)))].slice(0, 16);
    if (ids.length) out.done[step] = ids;
  }
  for (const [step, lab] of entries(raw.labs))
    if (ID.test(step) && typeof lab === "string" && lab.length <= maxLab && LAB.test(lab)) out.labs[step] = lab;
  return out;
}

/** An object's first 64 entries ([] for anything else). @param {unknown} x @returns {[string, unknown][]} */
const entries = (x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.entries(x).slice(0, 64) : []);

/**
 * The progress with a toy step's lab as the learner left it (its link's `toy=` part), or
 * without one (null: the learner is back at the step's start). A lab over `maxLab` is not
 * kept: the one kept before stays. Nothing changed: the same object (nothing to save).
 * @param {Progress} p @param {string} step the step's id @param {string | null} lab
 * @param {number} maxLab LIMITS.max_learn_lab_chars
 * @returns {Progress}
 */
export function setLab(p, step, lab, maxLab) {
  if (lab === null) {
    if (!Object.hasOwn(p.labs, step)) return p;
    const labs = { ...p.labs };
    delete labs[step];
    return { ...p, labs };
  }
  if (lab.length > maxLab || !LAB.test(lab) || !ID.test(step) || p.labs[step] === lab) return p;
  return { ...p, labs: { ...p.labs, [step]: lab } };
}

/** @param {Progress} p */
export const writeProgress = (p) => JSON.stringify(p);

/**
 * The progress with the tasks a check found done added (a task once done stays done).
 * @param {Progress} p @param {string} step the step's id @param {{id: string, done: boolean}[]} tasks
 * @returns {Progress}
 */
export function recordTasks(p, step, tasks) {
  const now = tasks.filter((t) => t.done && ID.test(t.id)).map((t) => t.id);
  const before = p.done[step] || [];
  const all = [...new Set([...before, ...now])];
  if (all.length === before.length) return p;
  return { ...p, done: { ...p.done, [step]: all } };
}

/** @param {Progress} p @param {number} n @returns {Progress} */
export const setLast = (p, n) => (p.last === n ? p : { ...p, last: n });

/**
 * True when every task of the step has been done (a step without tasks: never).
 * @param {Progress} p @param {{id: string, tasks: {id: string}[]}} step
 */
export function stepDone(p, step) {
  const done = p.done[step.id] || [];
  return step.tasks.length > 0 && step.tasks.every((t) => done.includes(t.id));
}

/** @param {Progress} p @param {string} step @param {string} task */
export const taskDone = (p, step, task) => (p.done[step] || []).includes(task);

/**
 * The step to open for a link's n (null: the last one open, else the first), within 1..count;
 * `said` tells why another one than asked opens.
 * @param {{n: number | null, bad?: string}} link @param {Progress} p @param {number} count
 * @returns {{n: number, said: string | null}}
 */
export function stepToOpen(link, p, count) {
  const fallback = p.last !== null && p.last <= count ? p.last : 1;
  if (link.bad !== undefined)
    return { n: fallback, said: `There is no step "${link.bad}": steps are numbered 1 to ${count}.` };
  if (link.n === null) return { n: fallback, said: null };
  if (link.n > count)
    return { n: count, said: `There is no step ${link.n}: the path has ${count} steps. This is the last.` };
  return { n: link.n, said: null };
}

/**
 * A toy step's starting state, whole: the server's config keys over the defaults, the view's
 * keys over a default view.
 * @param {NonNullable<LearnStep["toy"]>} toy @param {ToyConfig} defaults
 * @returns {ToyState}
 */
export function stepToyState(toy, defaults) {
  const n = toy.tokens.length;
  const layers = toy.config?.layers ?? defaults.layers;
  return {
    preset: toy.preset ?? null,
    tokens: [...toy.tokens],
    axes: [...toy.axes],
    embeddings: toy.embeddings.map((row) => [...row]),
    config: { ...defaults, ...JSON.parse(JSON.stringify(toy.config || {})) },
    view: {
      layer: 0,
      head: 0,
      vlayer: layers,
      a: Math.min(1, n - 1),
      b: n - 1,
      trails: true,
      measure: /** @type {import("../../core/types.js").Measure} */ ("weights"),
      ...(toy.view || {}),
    },
  };
}

/**
 * The body of a toy step's check: the lab's inputs as a trace request, and its view.
 * @param {ToyState} state @param {ToyConfig} defaults
 */
export function toyCheckBody(state, defaults) {
  const { layer, head, vlayer, a, b } = state.view;
  return { toy: toRequest(state, defaults), view: { layer, head, vlayer, a, b } };
}

/**
 * The body of a train step's check: the run open, the head in view and the attention the card
 * shows, and the cell of its heatmap whose Why this score is open (query and key; none when none
 * is, or a key after the query, which no causal query sees); with the tasks found done earlier on
 * the run, each with its head (`found`), so that an answer names the head the learner found for
 * a task, not the strongest.
 * @param {TrainRun} run @param {TrainView} view @param {LearnFound[]} [found]
 */
export function trainCheckBody(run, view, found = []) {
  const { query, key } = view;
  const cell = query !== null && query !== undefined && key !== null && key !== undefined && key <= query;
  return {
    run: run.id,
    view: {
      variant: view.variant,
      layer: view.layer,
      head: view.head,
      chosen: Boolean(view.picked),
      ...(view.attention ? { attention: view.attention } : {}),
      ...(cell ? { query, key } : {}),
    },
    ...(found.length ? { found: found.map(({ task, variant, layer, head }) => ({ task, variant, layer, head })) } : {}),
  };
}

/**
 * What a train step's check depends on (the same key: no new check): the run, its state and
 * claims, its variants' states and measured scores, and the head in view. Not its steps or
 * checkpoints as they stream in, except its last checkpoint's step; the cell open.
 * @param {TrainRun} run @param {TrainView} view
 */
export function trainCheckKey(run, view) {
  const variants = run.variants.map((v) => [
    v.state,
    v.checkpoints.length ? v.checkpoints[v.checkpoints.length - 1].step : -1,
    Boolean(v.induction),
    Boolean(v.alignment),
  ]);
  const { variant, layer, head, query, key } = view;
  return JSON.stringify([
    run.id,
    run.state,
    run.claims?.length ?? null,
    variants,
    variant,
    layer,
    head,
    query,
    key,
    Boolean(view.picked),
    view.attention ?? null,
  ]);
}

/**
 * A number rounded to `decimals` places as text (no "-0").
 * @param {number} x @param {number} decimals
 */
export function fixed(x, decimals) {
  const s = x.toFixed(decimals);
  return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
}

/**
 * An article table's cells: the article's number and the engine's, both at the article's
 * rounding, and whether they agree there.
 * @param {import("../../core/types.js").ArticleTable} table
 * @returns {{label: string, cells: {article: string, engine: string, agrees: boolean}[]}[]}
 */
export function articleRows(table) {
  return table.rows.map((row) => ({
    label: row.label,
    cells: row.article.map((a, j) => {
      const article = fixed(a, table.decimals);
      const engine = row.engine[j] === undefined || row.engine[j] === null ? "–" : fixed(row.engine[j], table.decimals);
      return { article, engine, agrees: article === engine };
    }),
  }));
}

/**
 * The progress list's line for a step: "4. Title", with ", done" when every task has been done:
 * the link's accessible name.
 * @param {LearnStep} step @param {Progress} p
 */
export function stepLabel(step, p) {
  return `${step.n}. ${step.title}${stepDone(p, step) ? ", done" : ""}`;
}

/**
 * How many steps are done.
 * @param {LearnStep[]} steps @param {Progress} p
 */
export const stepsDone = (steps, p) => steps.filter((s) => stepDone(p, s)).length;

/**
 * An answer to show with each task: the check's, or, before one, what to do first.
 * @param {LearnStep} step @param {LearnAnswer | null} answer @param {Progress} p
 * A finding done before stays done (``found``): its check still says what is true of the head in
 * view now. A task passed on someone else's work (an answer not `credited`: a shared link's lab
 * as it came, another visitor's run) is `shown`, not done: it counts for no one, unless the
 * learner did it before (then it is done, as their progress says).
 * @returns {{id: string, prompt: string, hint: string, action: string | null, done: boolean, before: boolean,
 *   found: boolean, shown: boolean, says: string, tried: boolean}[]}
 */
export function taskLines(step, answer, p) {
  return step.tasks.map((t) => {
    const got = answer?.tasks.find((a) => a.id === t.id) ?? null;
    const had = taskDone(p, step.id, t.id);
    const before = !got?.done && had;
    const shown = Boolean(got?.done) && answer?.credited === false && !had;
    return {
      id: t.id,
      prompt: t.prompt,
      hint: t.hint,
      action: t.action ?? null,
      done: Boolean(got?.done) && !shown,
      before: before && !t.finding,
      found: before && t.finding,
      shown,
      says: got ? got.says : "",
      // Whether the learner has tried this task (changed a part of the lab it reads): until
      // then its answer says only that it is not started, and it has no "Not yet".
      tried: got?.tried ?? true,
    };
  });
}
