// The Learn mode: the derivation as a path of steps (fetchLearn), each a live state of the
// toy lab or the Train tab shown beneath the guide. Opening a step loads the learner's own work
// of it into its lab (unless the lab still holds that step, as the learner left it): a toy
// step's lab as they last left it (kept in their progress), a train step's newest run of theirs
// with its settings (a step that continues an earlier one shares that step's lab and run: step
// 13 reads step 12's), step 1's newest comparison; else, and on Start this step again, its
// starting state. The page tells the server the step open (the class view's "on step N"), then
// asks it whether the step's tasks are done after every change of the lab (debounced; an answer
// to an older question is dropped) and keeps the tasks done in localStorage. The guide's state
// changes through `change(patch)`, which keeps the progress, draws the guide and outlines the
// lab's cards as core/feeds.js's LEARN_FEEDS says its keys feed; the guide (guide.js) writes
// nothing.
// main.js owns the labs: this controller asks it to show one (hooks.openLab) and reads the
// labs' state through the hooks. The server keeps the progress too (its own answers): what it
// found done is merged in when the path first opens. `#learn/class` opens the operator's class
// view (classview.js) in the guide's place, with no lab beneath.

import {
  checkLearn,
  fetchComparisons,
  fetchLearn,
  fetchLearnProgress,
  fetchRuns,
  openedLearn,
} from "../../core/api.js";
import { byId } from "../../core/dom.js";
import { LEARN_FEEDS, viewsFed } from "../../core/feeds.js";
import { problem as toyProblem } from "../../core/state.js";
import { mergeKept } from "./classroom.js";
import { createClassView, createNickname, heldToken } from "./classview.js";
import * as guide from "./guide.js";
import {
  emptyProgress,
  readProgress,
  recordTasks,
  setLab,
  setLast,
  STORAGE_KEY,
  stepDone,
  stepToOpen,
  stepToyState,
  toyCheckBody,
  trainCheckBody,
  trainCheckKey,
  writeProgress,
} from "./progress.js";

/** @typedef {import("../../core/types.js").LearnStep} LearnStep */
/** @typedef {import("../../core/types.js").LearnAnswer} LearnAnswer */
/** @typedef {import("../../core/types.js").ToyState} ToyState */
/** @typedef {import("../../core/types.js").TrainRun} TrainRun */
/** @typedef {import("../../core/types.js").TrainView} TrainView */
/** @typedef {import("../train/link.js").TrainLink} TrainLink */

/** A check waits this long after the last change of the lab (ms). */
const CHECK_DELAY = 200;
/** While a recurrent comparison runs (step 1), it is checked again this often (ms). */
const POLL_MS = 2000;

/**
 * @param {{setError: (m: string | null) => void, setPending: (p: boolean) => void,
 *   checked: () => void, linked: () => void,
 *   openLab: (lab: "toy" | "train", state: ToyState | TrainLink | null) => Promise<void> | void,
 *   explore: (lab: "toy" | "train") => void,
 *   limits: import("../../core/types.js").Limits, defaults: import("../../core/types.js").ToyConfig,
 *   toyState: () => ToyState | null, toyLink: () => string | null,
 *   trainRun: () => TrainRun | null, trainView: () => TrainView,
 *   recurrentId: () => string | null, openComparison: (id: string) => Promise<boolean>,
 *   markCell: (cell: number[] | null) => void, narrowed?: () => void,
 *   labOfLink: (lab: "toy" | "train", link: import("./progress.js").LearnLab) =>
 *     {state: ToyState | TrainLink} | {problem: string}}} hooks checked: an answer is shown (data-checks);
 *   linked: the step open changed (the address bar); openLab: show a lab beneath the guide with
 *   this state (null: as it is); explore: leave the guide for the lab; labOfLink: a Learn link's
 *   lab state read for the step's lab, or why it cannot be; toyLink: the toy lab's state as a
 *   Learn link's `toy=` part carries it (kept in the progress); markCell: mark the cell of the lab's
 *   large heatmap an answer points at (null: none); openComparison: show a comparison the server
 *   keeps in its card (step 1's); narrowed: the lab's cards shown changed (a step's `only`): the
 *   header names what is in view
 */
export function createLearn(hooks) {
  const app = {
    /** @type {LearnStep[] | null} */ steps: null,
    progress: loadProgress(),
    n: 1,
    opened: false, // a step has been opened (its link is the page's)
    active: false,
    /** The step whose starting state each lab last received (the lab holds it, or the learner's changes to it). */
    loaded: /** @type {Record<"toy" | "train", number | null>} */ ({ toy: null, train: null }),
    /** @type {LearnAnswer | null} */ answer: null,
    /** @type {string | null} */ problem: null,
    /** @type {string | null} */ shown: null, // the key of the question the answer shown answers
    /** @type {string | null} */ waiting: null, // the key of the question scheduled or in flight
    seq: 0,
    /** @type {ReturnType<typeof setTimeout> | undefined} */ timer: undefined,
    /** @type {ReturnType<typeof setInterval> | undefined} */ poll: undefined,
    /** @type {Element[]} */ outlined: [],
    /** @type {Element[]} */ away: [], // the lab's cards set aside by the step open (only)
    /** The first question asked of each step since its lab was loaded ("": there was nothing
     * to ask yet, no run) and the steps the learner has tried since (asked another question):
     * until then a task shows its question only. @type {Map<number, string>} */
    startKey: new Map(),
    /** @type {Set<number>} */ tried: new Set(),
    /** A toy step opened from a Learn link (someone's lab): the key of the check of the
     * link's state, unchanged (null: not asked yet). That check is sent `from_link`, and the
     * server credits it to no one (its answer says whose lab it is, `seen`; a task passed there
     * shows Shown, not Done); the learner's own change is theirs. @type {Map<number, string | null>} */
    linked: new Map(),
    /** The step each run in the Train lab was first seen in (run id -> step n): a run is checked
     * only by the step it was trained (or opened) in, never by the next step it is left in view
     * for. @type {Map<string, number>} */
    runSteps: new Map(),
    kept: false, // the server's record of the learner has been read (once a page)
    /** The step whose learner's run is being looked for (a step that continues another, opened
     * anew: in a new tab, or started again); no check is asked meanwhile. @type {number | null} */
    seeking: null,
    /** The head each task of a train step was found done with, for each run ("<step id> <run
     * id>" -> task id -> head): what the step's link carries beside the head in view.
     * @type {Map<string, Map<string, {variant: number, layer: number, head: number}>>} */
    found: new Map(),
    /** The answers of the checks of the heads a link carried (a task's own, not the head in
     * view), for the step and run they were asked of: a task done there shows done.
     * @type {{n: number, run: string, tasks: LearnAnswer["tasks"]} | null} */
    carried: null,
  };
  const container = byId("learn-guide");
  const section = byId("learn-mode");
  const classView = createClassView(byId("learn-class"));
  const nickname = createNickname(
    /** @type {HTMLFormElement} */ (container.querySelector("[data-role=name-form]")),
    hooks.limits.max_nickname_chars,
  );
  const step = () => /** @type {LearnStep[]} */ (app.steps)[app.n - 1];
  /** The step whose lab (and run) step `s` uses: the one it continues, else its own. @param {LearnStep} s */
  const labOf = (s) => (s.continues ? (app.steps?.find((t) => t.id === s.continues)?.n ?? s.n) : s.n);
  /** A step checked on the recurrent comparison in its card (step 1). @param {LearnStep} s */
  const compares = (s) => s.id === "rnn" || s.train?.settings?.recurrent !== undefined;

  function loadProgress() {
    try {
      return readProgress(localStorage.getItem(STORAGE_KEY), hooks.limits.max_learn_lab_chars);
    } catch {
      return emptyProgress(); // storage refused (a private window's policy): progress lives in the page
    }
  }

  /**
   * Change the guide's state: `patch` merged, then what its keys feed (LEARN_FEEDS): the
   * progress kept in this browser, the guide drawn, the lab's cards outlined. `quiet`: the
   * state alone (the progress kept all the same): the caller draws once it has done the rest.
   * @param {Partial<typeof app>} patch @param {{quiet?: boolean}} [how]
   */
  function change(patch, { quiet = false } = {}) {
    Object.assign(app, patch);
    const fed = viewsFed(LEARN_FEEDS, Object.keys(patch));
    if (fed.includes("keep")) saveProgress();
    if (quiet) return;
    if (fed.includes("guide")) draw();
    if (fed.includes("outline")) outline();
  }

  function saveProgress() {
    try {
      localStorage.setItem(STORAGE_KEY, writeProgress(app.progress));
    } catch {
      // not kept beyond this page; nothing else to do
    }
  }

  /** The server's record of the learner: its nickname in the form, and the tasks it found
   * done added to the browser's (a browser whose storage was cleared gets them back). */
  async function loadKept() {
    if (app.kept) return;
    app.kept = true;
    try {
      const kept = await fetchLearnProgress();
      nickname.load(kept);
      const merged = mergeKept(app.progress, kept);
      if (merged !== app.progress) change({ progress: merged });
    } catch {
      app.kept = false; // asked again when the path opens again; the browser's progress stands
    }
  }

  /** The guide or the class view in the Learn tab (the guide's link to it, for the operator). @param {boolean} on */
  function showClass(on) {
    if (on) section.dataset.view = "class";
    else delete section.dataset.view;
    const link = /** @type {HTMLElement} */ (container.querySelector("[data-role=class-link]"));
    link.hidden = !heldToken();
  }

  // ---- Drawing -------------------------------------------------------------------------------

  /** The cards the step is about that the page has, by their heading's own words (not what
   * the card fills in, such as the run's id: a chip names the card, whatever it shows). */
  function looks() {
    /** @type {Map<string, string>} */
    const cards = new Map();
    for (const id of step().focus) {
      const card = document.getElementById(id)?.closest("section.card");
      const h2 = card?.querySelector("h2");
      const name = h2 ? headingName(h2) : "";
      if (card?.id && name && !cards.has(card.id)) cards.set(card.id, name);
    }
    return [...cards].map(([id, name]) => ({ id, name }));
  }

  function draw() {
    if (!app.steps) return;
    guide.render(
      container,
      {
        steps: app.steps,
        progress: app.progress,
        answer: shownAnswer(),
        problem: app.problem,
        looks: looks(),
        tried: app.tried.has(app.n),
      },
      { n: app.n },
      {
        onReset: () => open(app.n, { fresh: true }),
        onExplore: () => hooks.explore(step().lab),
        onLook(id) {
          const card = document.getElementById(id);
          if (!card) return;
          card.scrollIntoView({ block: "start" });
          const heading = /** @type {HTMLElement | null} */ (card.querySelector("h2"));
          if (heading) {
            if (!heading.hasAttribute("tabindex")) heading.tabIndex = -1;
            heading.focus({ preventScroll: true });
          }
        },
      },
    );
  }

  /** Outline the cards the step is about (none when the guide is closed). */
  function outline() {
    for (const e of app.outlined) e.classList.remove("learn-focus");
    app.outlined =
      app.active && app.steps
        ? step().focus.flatMap((id) => {
            const e = document.getElementById(id);
            return e ? [e] : [];
          })
        : [];
    for (const e of app.outlined) e.classList.add("learn-focus");
    narrow();
  }

  /** A step that shows only some of its lab's cards (its `only`): the lab's other cards and
   * panels set aside while the guide is open, the lab one column wide. */
  function narrow() {
    for (const e of app.away) e.classList.remove("learn-away");
    for (const e of document.querySelectorAll(".layout.learn-narrow")) e.classList.remove("learn-narrow");
    const only = app.active && app.steps ? (step().only ?? []) : [];
    const lab = only.length ? document.getElementById(`${step().lab}-mode`) : null;
    const kept = only.flatMap((id) => {
      const e = document.getElementById(id);
      return e ? [e] : [];
    });
    app.away = lab
      ? [...lab.querySelectorAll("section.card, aside.panel, .split, .card-row")].filter(
          (e) => !kept.some((k) => e.contains(k) || k.contains(e)),
        )
      : [];
    for (const e of app.away) e.classList.add("learn-away");
    if (lab && !kept.some((k) => k.closest("aside.panel"))) lab.classList.add("learn-narrow");
    hooks.narrowed?.();
  }

  // ---- Steps ---------------------------------------------------------------------------------

  /**
   * Open step n: its lab beneath the guide, loaded with the step's starting state unless the
   * lab still holds this step (fresh: load it again all the same).
   * @param {number} n
   * @param {{fresh?: boolean, focus?: boolean, given?: ToyState | TrainLink | null}} [how] given:
   *   a link's lab state, as a learner left it (loaded instead of the step's start, and tried)
   */
  function open(n, { fresh = false, focus = false, given = null } = {}) {
    const changed = n !== app.n;
    const before = hooks.trainRun();
    // The run in view was trained in the step open until now (0: before any step was opened).
    if (before && !app.runSteps.has(before.id)) app.runSteps.set(before.id, app.opened ? labOf(step()) : 0);
    // The step's own answer, none yet (an answer to a question in flight is now stale).
    const anew = { carried: null, answer: null, problem: null, shown: null, waiting: null, seq: app.seq + 1 };
    change({ n, opened: true, ...(changed || fresh ? anew : {}) }, { quiet: true });
    const s = step();
    const last = setLast(app.progress, n);
    // Start this step again: the step's start, and no lab of the learner's kept for it.
    change({ progress: fresh ? setLab(last, s.id, null, hooks.limits.max_learn_lab_chars) : last }, { quiet: true });
    openedLearn(s.id, heldToken()); // the class view's "on step n" (the operator's tab: no one)
    hooks.linked();
    const kept = given || fresh || app.loaded[s.lab] === labOf(s) ? null : keptLab(s);
    if (given || kept) {
      // A link's state, or the learner's own lab of the step as they left it (their progress
      // keeps it): their answers shown at once. A link's, unchanged, is credited to no one.
      app.loaded[s.lab] = labOf(s);
      app.startKey.set(n, "");
      change({ tried: plus(app.tried, n) }, { quiet: true });
      if (given && s.lab === "toy") app.linked.set(n, null);
      else app.linked.delete(n);
      hooks.openLab(s.lab, given ?? kept);
    } else if (fresh || app.loaded[s.lab] !== labOf(s)) {
      app.loaded[s.lab] = labOf(s);
      app.startKey.delete(n);
      change({ tried: minus(app.tried, n) }, { quiet: true });
      app.linked.delete(n);
      if (s.lab === "toy" && s.toy) hooks.openLab("toy", stepToyState(s.toy, hooks.defaults));
      else {
        const shown = hooks.openLab(
          s.lab,
          s.lab === "train" ? { run: null, settings: { ...(s.train?.settings ?? {}) } } : null,
        );
        // The learner's run of the step reopens (step 13: step 12's, also when started
        // again, since that run is its start), and step 1's comparison.
        if (compares(s)) seekComparison(s);
        else if (s.lab === "train" && (s.continues || !fresh)) seekRun(s, shown);
      }
    } else {
      hooks.openLab(s.lab, null);
    }
    draw();
    outline();
    if (focus) showTitle();
    labChanged(0); // the lab's new state: asked at once, beside its trace
  }

  /**
   * A toy step's lab as the learner last left it (kept in their progress), read as its link's
   * is; null when none is kept. One that cannot be read any more is forgotten, and said.
   * @param {LearnStep} s @returns {ToyState | null}
   */
  function keptLab(s) {
    const toy = s.lab === "toy" ? app.progress.labs[s.id] : undefined;
    if (!toy) return null;
    const read = hooks.labOfLink("toy", { toy });
    if ("state" in read && "tokens" in read.state) return read.state;
    change({ progress: setLab(app.progress, s.id, null, hooks.limits.max_learn_lab_chars) }, { quiet: true });
    hooks.setError("The table you left in this step could not be opened again, so the step opens as it starts.");
    return null;
  }

  /**
   * Keep the toy step's lab in the progress as the learner leaves it, to reopen when they come
   * back: after each change of theirs (not a link's state as it came), none once the lab is
   * back at the step's start.
   * @param {string} key the question's key of the lab now
   */
  function keepLab(key) {
    const s = step();
    if (s.lab !== "toy" || app.linked.get(app.n) === key) return;
    const start = app.startKey.get(app.n);
    const lab = key === start ? null : app.tried.has(app.n) ? hooks.toyLink() : undefined;
    if (lab === undefined) return;
    const next = setLab(app.progress, s.id, lab, hooks.limits.max_learn_lab_chars);
    if (next !== app.progress) change({ progress: next }, { quiet: true }); // kept: no view shows a lab
  }

  /** The step's title focused (a step opened from the guide: its list, Previous, Next) and,
   * when it is out of the window, scrolled to its top with the line above it. */
  function showTitle() {
    const title = /** @type {HTMLElement} */ (container.querySelector("#learn-title"));
    title.focus({ preventScroll: true });
    const top = /** @type {HTMLElement} */ (title.previousElementSibling ?? title);
    if (top.getBoundingClientRect().top < 0 || title.getBoundingClientRect().bottom > window.innerHeight)
      top.scrollIntoView({ block: "start" });
  }

  /**
   * A train step opened with its lab anew (a new tab, back from another step), or a step that
   * reads an earlier step's run (step 13 reads step 12's) also when started again: the newest
   * run this visitor trained with the step's settings opens in the lab, as it stays open when
   * the learner comes by Next. None: the step says to train it (step 13: there first). The run
   * in view stays when it is that step's already.
   * @param {LearnStep} s @param {Promise<void> | void} shown the lab shown with the step's
   *   settings (settled: the Train tab is set up, and a run can be opened in it)
   */
  async function seekRun(s, shown) {
    const of = labOf(s);
    const inView = hooks.trainRun();
    if (inView && app.runSteps.get(inView.id) === of) return;
    const settings = { ...(s.train?.settings ?? {}) };
    app.seeking = s.n;
    hooks.setPending(true);
    /** @type {import("../../core/types.js").TrainRunSummary | undefined} */
    let found;
    try {
      const [listed] = await Promise.all([fetchRuns(), shown]);
      const { runs } = /** @type {{runs: import("../../core/types.js").TrainRunSummary[]}} */ (listed);
      found = runs
        .filter(
          (r) =>
            r.yours &&
            r.task === settings.task &&
            (r.preset ?? null) === (settings.preset ?? null) &&
            (r.compare ?? null) === (settings.compare ?? null) &&
            ["done", "running", "queued"].includes(r.state),
        )
        .sort((a, b) => b.created - a.created)[0];
    } catch {
      found = undefined; // not listed: the step says to train the run first, as with none
    }
    const still = app.seeking === s.n && app.n === s.n && app.loaded.train === of;
    if (still && found) {
      app.runSteps.set(found.id, of);
      await hooks.openLab("train", { run: found.id, settings });
      // The learner's own run of this step, as a link's state is: its answer in full at once
      // (step 13 starts from step 12's run: its question alone until the learner works in it).
      if (!s.continues && app.n === s.n) {
        app.startKey.set(s.n, "");
        change({ tried: plus(app.tried, s.n) }, { quiet: true });
      }
    }
    if (app.seeking !== s.n) return;
    app.seeking = null;
    hooks.setPending(false);
    labChanged(0);
  }

  /**
   * Step 1 opened with its lab anew (a new tab, a link without a comparison) and no comparison
   * in its card: the newest this visitor ran that is done or running (yours in
   * fetchComparisons) opens there, and the step is answered on it. None: the step says what to
   * press. No check is asked meanwhile.
   * @param {LearnStep} s
   */
  async function seekComparison(s) {
    if (hooks.recurrentId()) return;
    app.seeking = s.n;
    hooks.setPending(true);
    /** @type {import("../../core/types.js").RecurrentSummary | undefined} */
    let found;
    try {
      const { comparisons } = await fetchComparisons(); // newest first
      found = comparisons.find((c) => c.yours && ["done", "running", "queued"].includes(c.state));
    } catch {
      found = undefined; // not listed: the step says to run it, as with none
    }
    if (
      found &&
      app.seeking === s.n &&
      app.n === s.n &&
      !hooks.recurrentId() &&
      (await hooks.openComparison(found.id))
    ) {
      // The learner's own run of the task, as a link's state is: its answer in full at once.
      app.startKey.set(s.n, "");
      change({ tried: plus(app.tried, s.n) }, { quiet: true });
    }
    if (app.seeking !== s.n) return;
    app.seeking = null;
    hooks.setPending(false);
    labChanged(0);
  }

  async function loadSteps() {
    hooks.setPending(true);
    try {
      const { steps } = /** @type {{steps: LearnStep[]}} */ (await fetchLearn());
      change({ steps }, { quiet: true }); // the path's first step opens next, and draws it
      if (!steps.length) throw new Error("the server has no steps");
      return true;
    } catch (err) {
      hooks.setError(`Could not load the Learn path: ${/** @type {Error} */ (err).message}`);
      const loading = container.querySelector("[data-role=loading]");
      if (loading) loading.textContent = "The path could not be loaded: open this tab again to retry.";
      return false;
    } finally {
      hooks.setPending(false);
    }
  }

  // ---- Checks --------------------------------------------------------------------------------

  /**
   * The question to ask for the step open, as the lab is now: a key (the same key: the answer
   * shown stands) and a body; or, when there is nothing to ask yet, why (start: the learner
   * has not started anything, and the task's hint says what to do).
   * @returns {{key: string, body: object} | {wait: string, start?: boolean}}
   */
  function question() {
    const s = step();
    if (s.lab === "toy") {
      const state = hooks.toyState();
      if (!state) return { wait: "" };
      const bad = toyProblem(state, hooks.limits);
      // Not this table's answers (the last good table's) but what to fix, checked again then.
      const cell = bad?.startsWith("embeddings: ") ? bad.slice("embeddings: ".length) : null;
      if (cell)
        return { wait: `The table has a cell that is not a number (${cell}): fix it to check the tasks again.` };
      if (bad) return { wait: `The table cannot be checked until it is fixed: ${bad}.` };
      const body = toyCheckBody(state, hooks.defaults);
      return { key: JSON.stringify(body), body };
    }
    if (compares(s)) {
      const id = hooks.recurrentId();
      // Done before, and no comparison of the learner's in the card: what to press.
      if (!id && stepDone(app.progress, s))
        return {
          wait:
            "Your comparison from before is not open here: this server no longer keeps it, or you ran it in " +
            "another browser. Press Run comparison to run it again: it takes about a minute.",
        };
      if (!id) return { wait: "", start: true };
      return { key: `recurrent:${id}:${Date.now() - (Date.now() % POLL_MS)}`, body: { recurrent: id } };
    }
    const run = hooks.trainRun();
    const mine = labOf(s); // a step that continues another checks that step's run
    if (!run && s.continues)
      return {
        wait:
          `Train the run of step ${mine} first: this step reads the run you trained there, and ` +
          `you have none yet. Open step ${mine}, press Start training, then come back: the run opens here by itself.`,
      };
    if (!run) return { wait: "", start: true };
    if (!app.runSteps.has(run.id)) app.runSteps.set(run.id, mine); // trained (or opened) in this step
    const of = /** @type {number} */ (app.runSteps.get(run.id));
    if (of !== mine)
      return {
        wait:
          `The run in view ${of ? `was trained in step ${of}` : "was trained before this step opened"}. ` +
          "The form below now holds this step's settings: " +
          "press Start training in the Run card, and the page checks that run as it trains and when it ends.",
      };
    const view = hooks.trainView();
    // The tasks found done earlier on this run, with their heads: the answers name those heads.
    const found = [...(app.found.get(`${s.id} ${run.id}`) ?? [])].map(([task, h]) => ({ task, ...h }));
    return { key: trainCheckKey(run, view), body: trainCheckBody(run, view, found) };
  }

  /** Whether the lab holds the learner's work of the step open: the comparison in its card
   * (step 1), or a run trained (or reopened) for the step. */
  function holdsWork() {
    const s = step();
    if (s.lab !== "train") return false;
    if (compares(s)) return Boolean(hooks.recurrentId());
    const run = hooks.trainRun();
    return Boolean(run && app.runSteps.get(run.id) === labOf(s));
  }

  /**
   * After any change of the lab open (a trace drawn, a view chosen, a run's news): ask again,
   * after `delay` ms without another change.
   * @param {number} [delay]
   */
  function labChanged(delay = CHECK_DELAY) {
    if (!app.active || !app.steps) return;
    if (app.seeking === app.n) return; // the learner's run opens first (seekRun asks then)
    const q = question();
    const n = app.n;
    const first = app.startKey.get(n);
    if ("key" in q) {
      if (app.linked.get(n) === null) app.linked.set(n, q.key); // the link's state, as loaded
      if (first === undefined) app.startKey.set(n, q.key);
      else if (first !== q.key) change({ tried: plus(app.tried, n) }, { quiet: true });
      keepLab(q.key);
    } else if (q.start && first === undefined) app.startKey.set(n, "");
    if ("wait" in q) {
      clearTimeout(app.timer);
      hooks.setPending(false);
      // An answer in flight is now stale; what to do first is the answer shown.
      change({ seq: app.seq + 1, answer: null, shown: null, waiting: null, problem: q.wait || null });
      hooks.checked(); // what to do first is the answer shown
      keepPolling();
      return;
    }
    if (q.key === app.waiting) return; // asked already
    clearTimeout(app.timer);
    app.seq++;
    if (q.key === app.shown) {
      // back to the question answered: its answer stands
      app.waiting = null;
      hooks.setPending(false);
      return;
    }
    const seq = app.seq;
    app.waiting = q.key;
    hooks.setPending(true);
    app.timer = setTimeout(() => ask(q.key, q.body, seq), delay);
  }

  /** @param {string} key @param {object} body @param {number} seq */
  async function ask(key, body, seq) {
    const s = step();
    /** @type {Partial<typeof app>} */
    let got;
    try {
      // The link's state unchanged is no work of this learner's; the operator's tab is no learner.
      const sent = app.linked.get(app.n) === key ? { ...body, from_link: true } : body;
      const answer = await checkLearn(s.id, sent, undefined, heldToken());
      if (seq !== app.seq) return;
      remember(s, /** @type {{run?: string, view?: TrainView}} */ (body), answer.tasks);
      // Only the learner's own work is kept (not a link's lab, not a classmate's run).
      const kept = answer.credited ? { progress: recordTasks(app.progress, s.id, answer.tasks) } : {};
      got = { answer, shown: key, problem: null, ...kept };
      hooks.markCell(answer.tasks.find((t) => t.cell)?.cell ?? null);
    } catch (err) {
      if (seq !== app.seq) return;
      const e = /** @type {Error & {status?: number}} */ (err);
      // Asked again on the next change. A run or comparison gone is said without its id (the
      // server's words name it).
      const problem =
        e.status === 404
          ? `The page could not check this step: the ${compares(s) ? "comparison" : "run"} it reads is no longer on ` +
            "this server (its owner forgot it, or the server made room for newer ones). Run it again."
          : `The page could not check this step: ${e.message}`;
      got = { answer: null, shown: null, problem };
    }
    hooks.setPending(false);
    change({ ...got, waiting: null });
    keepPolling();
    hooks.checked();
  }

  /**
   * The tasks a train step's check found done, kept with the head it was asked of (for the
   * step's link).
   * @param {LearnStep} s @param {{run?: string, view?: {variant: number, layer: number, head: number}}} body
   * @param {LearnAnswer["tasks"]} tasks
   */
  function remember(s, body, tasks) {
    if (s.lab !== "train" || !body.run || !body.view) return;
    const key = `${s.id} ${body.run}`;
    const heads = app.found.get(key) ?? new Map();
    const { variant, layer, head } = body.view;
    for (const t of tasks) if (t.done) heads.set(t.id, { variant, layer, head });
    if (heads.size) app.found.set(key, heads);
  }

  /** The answer shown: the check's of the head in view, with a task done on the head a link
   * carried for it (its own check's words) shown done. */
  function shownAnswer() {
    const c = app.carried;
    if (!app.answer || !c || c.n !== app.n || hooks.trainRun()?.id !== c.run) return app.answer;
    const tasks = app.answer.tasks.map((t) => (t.done ? t : (c.tasks.find((o) => o.id === t.id) ?? t)));
    return { ...app.answer, tasks };
  }

  /**
   * A link's tasks done with a head of their own: each head checked on the link's run (from_link:
   * the server credits it to no one), and the task's answer taken from its own head's check.
   * @param {number} n @param {string} run @param {import("./progress.js").LearnFound[]} found
   */
  async function checkFound(n, run, found) {
    const s = step();
    const answers = await Promise.all(
      found.map(async ({ task, variant, layer, head }) => {
        const view = { variant, layer, head, chosen: true };
        try {
          const answer = await checkLearn(s.id, { run, view, from_link: true }, undefined, heldToken());
          remember(s, { run, view }, answer.tasks);
          return answer.tasks.filter((t) => t.id === task && t.done);
        } catch {
          return []; // not checked: the task shows the head in view's answer
        }
      }),
    );
    if (app.n !== n) return; // another step open: its answers are its own (true of the run all the same)
    change({ carried: { n, run, tasks: answers.flat() } });
    hooks.checked();
  }

  /** Step 1's comparison is started and runs in its own card: looked at again while the
   * step is open and its tasks are not all done. */
  function keepPolling() {
    const waiting =
      app.active && app.steps && step().id === "rnn" && !(app.answer && app.answer.tasks.every((t) => t.done));
    if (waiting && !app.poll) app.poll = setInterval(() => labChanged(), POLL_MS);
    if (!waiting && app.poll) {
      clearInterval(app.poll);
      app.poll = undefined;
    }
  }

  /** The guide closes (another tab, or the class view): no check asked, no cell marked. */
  function leaveGuide() {
    clearTimeout(app.timer);
    change({ active: false, seq: app.seq + 1, waiting: null }, { quiet: true });
    hooks.markCell(null);
    hooks.setPending(false);
    outline();
    keepPolling();
  }

  return {
    /**
     * Show the guide: a link's step (`{n}`; null: the learner's last step, or the first), with
     * its lab's state when the link carries one.
     * @param {{n: number | null, bad?: string, lab?: import("./progress.js").LearnLab,
     *   found?: import("./progress.js").LearnFound[], class?: boolean} | null} [link]
     */
    async activate(link = null) {
      if (link?.class) {
        // The class view: no step open, no lab beneath, no check (open first: the address
        // bar is then the class view's, not the step's).
        classView.show(document.activeElement?.closest("#learn-mode") !== null);
        showClass(true);
        leaveGuide();
        hooks.setError(null);
        hooks.linked();
        return;
      }
      classView.hide();
      showClass(false);
      change({ active: true }, { quiet: true });
      container.dataset.ready = "0";
      if (!app.steps && !(await loadSteps())) return;
      if (!app.active) return;
      loadKept();
      const steps = /** @type {LearnStep[]} */ (app.steps);
      const { n, said } = stepToOpen(link ?? { n: null }, app.progress, steps.length);
      const lab = link?.lab && link.n === n ? hooks.labOfLink(steps[n - 1].lab, link.lab) : null;
      hooks.setError(lab && "problem" in lab ? lab.problem : said);
      const given = lab && "state" in lab ? lab.state : null;
      open(n, {
        focus: link !== null && link.n !== null && document.activeElement?.closest("#learn-mode") !== null,
        given,
      });
      const run = given && "run" in given ? given.run : null;
      if (run && link?.found?.length) checkFound(n, run, link.found);
      container.dataset.ready = "1";
    },
    deactivate() {
      classView.hide();
      leaveGuide();
    },
    /** The lab beneath the guide (null until the path is loaded, and in the class view). @returns {"toy" | "train" | null} */
    lab: () => (app.steps && !classView.open() ? step().lab : null),
    /** Whether the class view is open (in the guide's place). */
    classOpen: () => classView.open(),
    /** The step open (1-based), null before the first opens and in the class view. */
    current: () => (app.opened && !classView.open() ? app.n : null),
    /** The lab open changed: ask again (debounced). */
    labChanged: () => labChanged(),
    /** Whether the step's link carries the lab's state: the learner has changed the lab since
     * the step opened, or the lab holds their work of this step (step 1's comparison, the run
     * trained or reopened for the step), which a teacher opening the link should see. */
    carries: () => app.opened && (app.tried.has(app.n) || holdsWork()),
    /** The tasks of the step open done with a head other than the one in view, on the run in
     * view (a train step of several tasks): what its link carries beside that head.
     * @returns {import("./progress.js").LearnFound[]} */
    found() {
      const run =
        app.opened && app.steps && step().lab === "train" && step().tasks.length > 1 ? hooks.trainRun() : null;
      const heads = run ? app.found.get(`${step().id} ${run.id}`) : undefined;
      if (!heads) return [];
      const v = hooks.trainView();
      return [...heads]
        .filter(([, h]) => h.variant !== v.variant || h.layer !== v.layer || h.head !== v.head)
        .map(([task, h]) => ({ task, ...h }));
    },
  };
}

/** `set` with `n` in it, a new set. @param {Set<number>} set @param {number} n */
const plus = (set, n) => new Set(set).add(n);
/** `set` without `n`, a new set. @param {Set<number>} set @param {number} n */
function minus(set, n) {
  const out = new Set(set);
  out.delete(n);
  return out;
}

/** A card heading's own words, without the parts the page fills in (marked by data-role, such
 * as the Run card's run id). @param {Element} h2 */
function headingName(h2) {
  const own = /** @type {Element} */ (h2.cloneNode(true));
  for (const filled of own.querySelectorAll("[data-role]")) filled.remove();
  return (own.textContent ?? "").replace(/\s+/g, " ").trim();
}
