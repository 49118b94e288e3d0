// Train mode: train a tiny transformer on the server and watch it learn. The form (form.js)
// says what to train; a run starts, its server-sent events keep one copy of its state through
// a pure reducer (reducer.js), and the views (views/, its own) draw the run, the loss, the
// gradient norms, every head at the chosen checkpoint and the trained models. A finished model
// opens in sentence mode; an encoder-decoder is asked here. Lists the runs the server keeps, to
// open again, and makes the tab's link: the run open and the form's settings (link.js).
// Given a run's state (createTrain(hooks, { run }): a saved file, offline/run.js), it shows that
// run with the same views and asks no server for anything: no form, no runs, no model to ask.

import { cancelRun, decodeRun, fetchRun, fetchRuns, fetchTrainOptions, modelFolderUrl, runEvents,
  runHtmlUrl, startRun } from "../../core/api.js";
import { createStatus, drawViews } from "../../core/controller.js";
import { byId } from "../../core/dom.js";
import { TRAIN_FEEDS, viewsFed } from "../../core/feeds.js";
import { defaultTrainView } from "../../core/state.js";
import { shownSteps } from "../../core/trainrun.js";
import * as trainask from "./views/trainask.js";
import * as traindecoded from "./views/traindecoded.js";
import * as traingrads from "./views/traingrads.js";
import * as trainheads from "./views/trainheads.js";
import * as trainloss from "./views/trainloss.js";
import * as trainmodels from "./views/trainmodels.js";
import * as trainprogress from "./views/trainprogress.js";
import * as trainruns from "./views/trainruns.js";
import { createForm, settingsOf } from "./form.js";
import { encodeTrainLink, TRAIN_HASH } from "./link.js";
import { createRecurrent } from "./recurrent.js";
import { EVENTS, initialState, opened, reduce } from "./reducer.js";

/** @typedef {import("../../core/types.js").TrainRun} TrainRun */
/** @typedef {import("../../core/types.js").TrainView} TrainView */
/** @typedef {import("../../core/types.js").TrainDecoded} TrainDecoded */
/** @typedef {import("../../core/types.js").TrainRunSummary} TrainRunSummary */
/** @typedef {import("./link.js").TrainLink} TrainLink */
/** @typedef {import("./reducer.js").TrainEvent} TrainEvent */

const PLAY_MS = 450; // one checkpoint per this many milliseconds while playing

/** What each event changes, as changed() takes it. */
const CHANGES = { state: "run", steps: "steps", checkpoint: "checkpoint", variant: "variant", claims: "variant", end: "end" };

/**
 * @param {{setError: (m: string | null) => void, setStatus: (t: string) => void,
 *   setPending: (p: boolean) => void, viewsDrawn: () => void, changed: () => void,
 *   linked: () => void, openModel: (name: string, text: string) => void}} hooks openModel: show
 *   a trained model in sentence mode on a text; changed: a run started or ended (the header's
 *   Export JSON); linked: another run is open (the address bar's link)
 * @param {{run?: TrainRun | null}} [given] run: a run's state (as fetchRun gives it, as a saved
 *   file holds it) to show instead of a server's runs: nothing is fetched, started or asked
 */
export function createTrain(hooks, { run: saved = null } = {}) {
  const app = {
    /** @type {any} */ options: null,
    /** @type {ReturnType<typeof createForm> | null} */ form: null,
    /** The run, the views' choices, following: what the run's events change (reducer.js). */
    t: initialState(),
    /** @type {TrainDecoded | null} */ decoded: null, // what an encoder-decoder last wrote when asked
    /** @type {string | null} */ refused: null, // why the model could not write what was asked
    /** @type {TrainRunSummary[] | null} */ runs: null, // the server's runs (fetchRuns)
    /** @type {TrainLink | null} */ link: null, // a link's, until the options are in to apply it
    /** @type {EventSource | null} */ source: null,
    active: false,
    /** @type {ReturnType<typeof setInterval> | undefined} */ player: undefined,
    /** @type {Set<string>} */ dirty: new Set(),
    frame: 0,
  };
  const status = createStatus(hooks);
  const run = () => /** @type {TrainRun} */ (app.t.run);
  const live = !saved;
  const recurrent = live ? createRecurrent(byId("recurrent-card"), hooks) : null; // "Why not an RNN?"

  // ---- A run --------------------------------------------------------------------------------

  async function start() {
    let body;
    try {
      body = /** @type {ReturnType<typeof createForm>} */ (app.form).body();
    } catch (err) {
      hooks.setError(/** @type {Error} */ (err).message);
      return;
    }
    hooks.setError(null);
    stopFollowing();
    status.waiting("start", true);
    try {
      const accepted = await startRun(body);
      follow(accepted.id);
      hooks.linked();
      refreshRuns();
    } catch (err) {
      hooks.setError(`Training could not start: ${/** @type {Error} */ (err).message}`);
    } finally {
      status.waiting("start", false);
    }
  }

  /** Show a run whole (fetchRun's, or its events' first) at its newest checkpoint. @param {TrainRun} r */
  function show(r) {
    app.t = opened(r);
    app.decoded = null;
    app.refused = null;
    changed(["run"]);
    showRuns();
  }

  /** Follow a run's events: its state first, then what happens. @param {string} id */
  function follow(id) {
    app.t = { ...app.t, view: defaultTrainView(), follow: true };
    const source = runEvents(id);
    app.source = source;
    for (const type of EVENTS) {
      source.addEventListener(type, (e) => {
        if (app.source !== source) return;
        const data = JSON.parse(/** @type {MessageEvent} */ (e).data);
        if (type === "state") return show(data);
        app.t = reduce(app.t, /** @type {TrainEvent} */ ({ type, data }));
        if (type === "end") {
          source.close();
          app.source = null;
        }
        changed([CHANGES[type]]);
        if (type === "end") refreshRuns();
      });
    }
    source.onerror = () => {
      // The browser reconnects by itself (with Last-Event-ID) unless the server said no.
      if (source.readyState === EventSource.CLOSED && app.source === source) {
        hooks.setError("Lost the run's events: its server went away. Start it again.");
        app.source = null;
        changed(["end"]);
      }
    };
  }

  function stopFollowing() {
    app.source?.close();
    app.source = null;
  }

  /**
   * Open a run the server keeps: followed while it trains, else shown as it ended.
   * @param {string} id
   * @returns {Promise<TrainRun | Error>} the run, or why it could not be opened
   */
  async function openRun(id) {
    status.waiting("run", true);
    try {
      const r = /** @type {TrainRun} */ (await fetchRun(id));
      stopFollowing();
      if (r.state === "running") follow(r.id);
      else show(r);
      hooks.linked();
      return r;
    } catch (err) {
      return /** @type {Error} */ (err);
    } finally {
      status.waiting("run", false);
    }
  }

  /** Open a run from the list, its settings in the form. @param {string} id */
  async function openListed(id) {
    const r = await openRun(id);
    if (r instanceof Error) {
      hooks.setError(`Could not open run ${id}: ${r.message}`);
      refreshRuns();
      return;
    }
    hooks.setError(null);
    app.form?.apply(settingsOf(r));
    hooks.linked();
  }

  /**
   * Open a link: its settings in the form, then its run; a run the server no longer has is
   * said plainly, the form keeping the link's settings.
   * @param {TrainLink} link
   */
  async function openLink(link) {
    const problems = /** @type {ReturnType<typeof createForm>} */ (app.form).apply(link.settings);
    const kept = problems.length ? ` Not all of the link's settings could be kept: ${problems.join("; ")}.` : "";
    if (!link.run) {
      if (kept) hooks.setError(kept.trim());
      return;
    }
    const err = await openRun(link.run);
    if (!(err instanceof Error)) {
      if (kept) hooks.setError(kept.trim());
      return;
    }
    const gone = /** @type {any} */ (err).status === 404;
    hooks.setError(gone
      ? `This link's run ${link.run} is no longer on this server: runs live in the server's memory, ` +
        `it keeps only the last few, and a restart forgets them. The form holds the link's settings: ` +
        `press Train to train it again.${kept}`
      : `Could not open this link's run ${link.run}: ${err.message}${kept}`);
  }

  /** Read the server's runs again, and list them. */
  async function refreshRuns() {
    try {
      app.runs = (await fetchRuns()).runs;
    } catch (err) {
      hooks.setError(`Could not list this server's runs: ${/** @type {Error} */ (err).message}`);
    }
    showRuns();
  }

  function showRuns() {
    trainruns.render(byId("t-runs"), { runs: app.runs }, { open: app.t.run?.id ?? null }, { onOpen: openListed });
  }

  /** Ask a finished encoder-decoder variant to write its answer for the letters typed. */
  async function ask() {
    const r = app.t.run;
    if (!r) return;
    const text = /** @type {HTMLInputElement} */ (byId("t-try-text")).value.trim();
    const variant = Number(/** @type {HTMLSelectElement} */ (byId("t-try-variant")).value || 0);
    status.waiting("decode", true);
    try {
      app.decoded = await decodeRun(r.id, { source: text, variant });
      app.refused = null;
    } catch (err) {
      // Said beside the box, in the server's words (which name the field and the rule).
      app.refused = /** @type {Error} */ (err).message;
      app.decoded = null;
    } finally {
      status.waiting("decode", false);
    }
    changed(["decoded"]);
    trainask.asked(byId("t-try-card"), { run: app.t.run, refused: app.refused });
  }

  async function cancel() {
    if (!app.t.run) return;
    try {
      await cancelRun(app.t.run.id);
    } catch (err) {
      hooks.setError(`Could not cancel: ${/** @type {Error} */ (err).message}`);
    }
  }

  // ---- Views --------------------------------------------------------------------------------

  /** What changed -> the views to draw, at most once per animation frame. @param {string[]} what */
  function changed(what) {
    const views = what.some((w) => ["run", "end", "variant"].includes(w)) ? Object.keys(VIEWS)
      : what.includes("checkpoint") ? ["loss", "heads", "progress"]
        : what.includes("steps") ? ["loss", "grads", "progress"]
          : what.includes("decoded") ? ["decoded"] : viewsFed(TRAIN_FEEDS, what);
    for (const v of views) app.dirty.add(v);
    if (!app.frame && app.active) app.frame = requestAnimationFrame(flush);
  }

  async function flush() {
    app.frame = 0;
    const which = [...app.dirty];
    app.dirty.clear();
    if (!app.t.run || !which.length) return;
    await status.drawing(drawViews(VIEWS, which, hooks.setError), hooks.viewsDrawn);
  }

  /** @type {Record<keyof TRAIN_FEEDS, () => unknown>} */
  const VIEWS = {
    progress() {
      const r = run();
      trainprogress.render(byId("t-run-card"), { run: r, exportUrl: live ? runHtmlUrl(r.id) : null });
      status.set(r.state === "running" ? `training ${r.id}` : `run ${r.id}: ${r.state}`);
      hooks.changed();
      byId("train-mode").dataset.run = r.state;
    },
    loss: () => trainloss.render(byId("t-loss"), { run: run() }, app.t.view),
    grads: () => traingrads.render(byId("t-grads-card"), { run: run() }, app.t.view, { onSelect: choose }),
    heads: () => trainheads.render(byId("t-heads-card"), { run: run(), live }, app.t.view, {
      onSelect: choose,
      onCheckpoint(index) {
        app.t = { ...app.t, follow: index >= shownSteps(run()).length - 1 };
        choose({ checkpoint: index });
      },
    }),
    models() {
      const r = run();
      trainmodels.render(byId("t-models-card"), { run: r, folder: live ? (i) => modelFolderUrl(r.id, i) : null }, {},
        { onOpen: hooks.openModel });
      // An encoder-decoder is asked in its own card, not in sentence mode (on the live page).
      if (live) trainask.render(byId("t-try-card"), { run: r, refused: app.refused }, app.t.view);
    },
    decoded: () => traindecoded.render(byId("t-try-view"), { decoded: app.decoded }, app.t.view),
  };

  /** @param {Partial<TrainView>} change */
  function choose(change) {
    app.t = { ...app.t, view: { ...app.t.view, ...change } };
    changed(Object.keys(change));
  }

  function play() {
    const button = byId("t-play");
    if (app.player) {
      clearInterval(app.player);
      app.player = undefined;
      button.setAttribute("aria-pressed", "false");
      button.textContent = "▶ play";
      return;
    }
    if (!app.t.run) return;
    app.t = { ...app.t, follow: false };
    if (app.t.view.checkpoint >= shownSteps(run()).length - 1) app.t = { ...app.t, view: { ...app.t.view, checkpoint: -1 } };
    button.setAttribute("aria-pressed", "true");
    button.textContent = "❚❚ pause";
    app.player = setInterval(() => {
      const last = shownSteps(run()).length - 1;
      if (app.t.view.checkpoint >= last) return play();
      choose({ checkpoint: app.t.view.checkpoint + 1 });
    }, PLAY_MS);
  }

  function wire() {
    byId("t-start").addEventListener("click", start);
    byId("t-cancel").addEventListener("click", cancel);
    byId("t-play").addEventListener("click", play);
    byId("t-try").addEventListener("submit", (e) => {
      e.preventDefault();
      ask();
    });
  }

  /**
   * Show the tab; a link's run and settings, when it comes from one.
   * @param {TrainLink | null} [link]
   */
  async function activate(link = null) {
    app.active = true;
    if (saved) {
      if (!app.t.run) {
        byId("t-play").addEventListener("click", play);
        show(saved);
      } else changed(["run"]);
      return;
    }
    if (link) app.link = link;
    recurrent?.activate();
    if (!app.options) {
      status.waiting("options", true);
      try {
        app.options = await fetchTrainOptions();
      } catch (err) {
        hooks.setError(`Could not load the training options: ${/** @type {Error} */ (err).message}`);
        return;
      } finally {
        status.waiting("options", false);
      }
      app.form = createForm(app.options);
      wire();
      if (!app.options.slots) hooks.setError("This server does not train models (ATTNVIZ_TRAIN_SLOTS=0).");
      /** @type {HTMLButtonElement} */ (byId("t-start")).disabled = !app.options.slots;
    }
    const pending = app.link;
    app.link = null;
    if (pending) await openLink(pending);
    if (app.t.run) changed(["run"]);
    else status.set("choose a task and train");
    refreshRuns();
  }

  return {
    activate,
    deactivate() {
      app.active = false;
      recurrent?.deactivate();
    },
    hasRun: () => Boolean(app.t.run),
    /** The id of the recurrent comparison shown ("Why not an RNN?"), or null. */
    recurrentId: () => recurrent?.id() ?? null,
    /** The run open (the page's copy, kept up to date by its events), or null. */
    currentRun: () => app.t.run,
    /** What the views show of it: the variant, the head, the checkpoint. */
    view: () => app.t.view,
    /** The tab's link: the run open, and the form's settings. */
    link() {
      if (!app.form) return app.link ? encodeTrainLink(app.link) : TRAIN_HASH;
      return encodeTrainLink({ run: app.t.run?.id ?? null, settings: app.form.settings() });
    },
    /** The run as fetchRun gives it (the server's copy, not the page's). */
    async exportJson() {
      if (!app.t.run) return null;
      const r = app.t.run;
      return { text: JSON.stringify(await fetchRun(r.id), null, 1), name: `attnviz-run-${r.id}.json`, note: "" };
    },
  };
}
