// Train mode: train a tiny transformer on the server and watch it learn. The form (form.js)
// says what to train; a run starts, its server-sent events keep one copy of its state through
// a pure reducer (reducer.js; runs.js follows them), and the views (views/, its own; draw.js
// draws them) show the run, the loss, the gradient norms, every head at the chosen checkpoint
// and the trained models. A finished model opens in sentence mode; an encoder-decoder is asked
// here. Lists the runs the server keeps, to open again, and makes the tab's link: the run open,
// the form's settings, the head and cell chosen, the comparison in its card (link.js). The tab's
// state and what its parts share: app.js.
// Given a run's state (createTrain(hooks, { run }): a saved file, offline/run.js), it shows that
// run with the same views and asks no server for anything: no form, no runs, no model to ask.

import { exportRunHtml, fetchRun, fetchTrainOptions } from "../../core/api.js";
import { createStatus } from "../../core/controller.js";
import { byId } from "../../core/dom.js";
import { inView } from "./draw.js";
import { createApp } from "./app.js";
import { createDrawing } from "./draw.js";
import { createForm } from "./form.js";
import { encodeTrainLink, TRAIN_HASH } from "./link.js";
import { createRecurrent } from "./recurrent.js";
import { wireRename } from "./rename.js";
import { cellOf } from "./why.js";
import { ask, cancel, openLink, refreshRuns, show, start } from "./runs.js";

/** @typedef {import("../../core/types.js").TrainRun} TrainRun */
/** @typedef {import("./link.js").TrainLink} TrainLink */

/**
 * @param {import("./app.js").TrainHooks} hooks openModel: show a trained model in sentence
 *   mode on a text, the query on a token; changed: a run started or ended (the header's Export
 *   JSON and Export HTML); linked: another run is open (the address bar's link)
 * @param {{run?: TrainRun | null}} [given] run: a run's state (as fetchRun gives it, as a saved
 *   file holds it) to show instead of a server's runs: nothing is fetched, started or asked
 */
export function createTrain(hooks, { run: saved = null } = {}) {
  const app = createApp();
  const status = createStatus(hooks);
  const live = !saved;
  // "Why not an RNN?": the header says so when its comparison is what the tab shows.
  const recurrent = live
    ? createRecurrent(byId("recurrent-card"), {
        ...hooks,
        compared: () => {
          hooks.compared?.();
          idle();
        },
      })
    : null;
  const base = { app, hooks, status, live };
  const { changed, play } = createDrawing(base);
  /** @type {import("./app.js").TrainContext} */
  const ctx = { ...base, changed };

  function wire() {
    byId("t-start").addEventListener("click", () => start(ctx));
    byId("t-cancel").addEventListener("click", () => cancel(ctx));
    byId("t-play").addEventListener("click", play);
    byId("t-try").addEventListener("submit", (e) => {
      e.preventDefault();
      ask(ctx);
    });
    wireRename(ctx);
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
        show(ctx, saved);
      } else changed(["run"]);
      return;
    }
    if (link) app.link = link;
    if (recurrent) {
      // The page is busy until the comparison's card is shown (its options read), and a
      // link's comparison in it.
      status.waiting("comparison", true);
      const shown = link?.comparison ? recurrent.open(link.comparison) : null;
      Promise.all([recurrent.activate(), shown]).finally(() => status.waiting("comparison", false));
    }
    if (!app.options) {
      status.waiting("options", true);
      let options;
      try {
        options = await fetchTrainOptions();
      } catch (err) {
        hooks.setError(`Could not load the training options: ${/** @type {Error} */ (err).message}`);
        return;
      } finally {
        status.waiting("options", false);
      }
      app.options = options;
      app.form = createForm(options);
      wire();
      if (!options.slots) hooks.setError("This server does not train models: its operator turned training off.");
      /** @type {HTMLButtonElement} */ (byId("t-start")).disabled = !options.slots;
    }
    const pending = app.link;
    app.link = null;
    if (pending) await openLink(ctx, pending);
    if (app.t.run) changed(["run"]);
    else idle();
    refreshRuns(ctx);
  }

  /** The header's words while no run is in view (none open, or its card set aside by a Learn
   * step): the comparison in view, or nothing yet. */
  function idle() {
    if (!app.active || (app.t.run && inView("t-run-card"))) return;
    status.set(
      recurrent?.id() && inView("recurrent-card") ? "a comparison in view (Why not an RNN?)" : "nothing trained yet",
    );
  }

  return {
    activate,
    deactivate() {
      app.active = false;
      recurrent?.deactivate();
    },
    hasRun: () => Boolean(app.t.run),
    /** Say again what the tab shows (the header's words), once a Learn step set cards aside. */
    shown() {
      if (app.t.run && inView("t-run-card"))
        changed(["steps"]); // the run card redrawn, its words said
      else idle();
    },
    /** The id of the recurrent comparison shown ("Why not an RNN?"), or null. */
    recurrentId: () => recurrent?.id() ?? null,
    /**
     * Show a comparison the server keeps in its card, by its id (the Learn path's step 1
     * reopens the learner's last). @param {string} id @returns {Promise<boolean>} whether shown
     */
    openComparison: (id) => recurrent?.open(id) ?? Promise.resolve(false),
    /** The run open (the page's copy, kept up to date by its events), or null. */
    currentRun: () => app.t.run,
    /** What the views show of it: the variant, the head, the checkpoint. */
    /**
     * Mark a cell of the large heatmap a Learn task points at (null: none).
     * @param {number[] | null} cell [query, key]
     */
    target(cell) {
      if (JSON.stringify(cell) === JSON.stringify(app.target)) return;
      app.target = cell;
      if (app.t.run) changed(["target"]);
    },
    /** The views' choices, and whether the learner has chosen a head of the run (a Learn step's finding is theirs only then). */
    view: () => ({ ...app.t.view, picked: app.t.picked }),
    /** The tab's link: the run open, the form's settings, the head and the cell of its
     * heatmap the reader chose, and the comparison shown in its card. */
    link() {
      if (!app.form) return app.link ? encodeTrainLink(app.link) : TRAIN_HASH;
      const { variant, layer, head } = app.t.view;
      const cell = cellOf(app.t.view);
      // The head the reader chose, and the cell whose Why this score is open in it.
      const view = app.t.picked ? { variant, layer, head, ...(cell ?? {}) } : null;
      const comparison = recurrent?.id() ?? null;
      return encodeTrainLink({ run: app.t.run?.id ?? null, settings: app.form.settings(), view, comparison });
    },
    /** The run open has ended (done, cancelled, failed): the header's Export HTML can save it. */
    hasEnded: () => Boolean(app.t.run) && app.t.run?.state !== "running" && app.t.run?.state !== "queued",
    /** The run open as one HTML file that opens offline (the header's Export HTML), or null. */
    exportHtml: () => (app.t.run ? exportRunHtml(app.t.run.id) : null),
    /** The run as fetchRun gives it (the server's copy, not the page's). */
    async exportJson() {
      if (!app.t.run) return null;
      const r = app.t.run;
      return { text: JSON.stringify(await fetchRun(r.id), null, 1), name: `attnviz-run-${r.id}.json`, note: "" };
    },
  };
}
