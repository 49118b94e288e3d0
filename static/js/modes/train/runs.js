// The Train tab's runs: start one, follow its events (its state kept by the reducer), open a
// run the server keeps or a link's, list the runs, ask a finished encoder-decoder, cancel.
// Each takes the tab's context (app.js TrainContext).

import { cancelRun, decodeRun, fetchRun, fetchRuns, runEvents, startRun } from "../../core/api.js";
import { byId } from "../../core/dom.js";
import { settingsOf } from "./form.js";
import { EVENTS, reduce } from "./reducer.js";
import * as trainask from "./views/trainask.js";
import * as trainruns from "./views/trainruns.js";

/** @typedef {import("./app.js").TrainContext} TrainContext */
/** @typedef {import("../../core/types.js").TrainRun} TrainRun */
/** @typedef {import("./link.js").TrainLink} TrainLink */
/** @typedef {import("./reducer.js").TrainEvent} TrainEvent */

/** What each event changes, as changed() takes it. */
const CHANGES = {
  state: "run",
  queue: "run",
  steps: "steps",
  checkpoint: "checkpoint",
  variant: "variant",
  claims: "variant",
  end: "end",
};

/** Start a run of the form's settings, and follow it. @param {TrainContext} ctx */
export async function start(ctx) {
  const { app, hooks, status } = ctx;
  let body;
  try {
    body = /** @type {NonNullable<typeof app.form>} */ (app.form).body();
  } catch (err) {
    hooks.setError(/** @type {Error} */ (err).message);
    return;
  }
  hooks.setError(null);
  stopFollowing(ctx);
  status.waiting("start", true);
  try {
    const accepted = await startRun(body);
    follow(ctx, accepted.id);
    hooks.linked();
    refreshRuns(ctx);
  } catch (err) {
    hooks.setError(`Training could not start: ${/** @type {Error} */ (err).message}`);
  } finally {
    status.waiting("start", false);
  }
}

/** Show a run whole (fetchRun's, or its events' first) at its newest checkpoint.
 * @param {TrainContext} ctx @param {TrainRun} r */
export function show(ctx, r) {
  const { app } = ctx;
  app.t = reduce(app.t, { type: "open", data: r });
  app.decoded = null;
  app.refused = null;
  ctx.changed(["run"]);
  showRuns(ctx);
}

/** Follow a run's events: its state first, then what happens. @param {TrainContext} ctx @param {string} id */
function follow(ctx, id) {
  const { app, hooks } = ctx;
  app.t = reduce(app.t, { type: "watch" });
  const source = runEvents(id);
  app.source = source;
  for (const type of EVENTS) {
    source.addEventListener(type, (e) => {
      if (app.source !== source) return;
      const data = JSON.parse(/** @type {MessageEvent} */ (e).data);
      if (type === "state") return show(ctx, data);
      app.t = reduce(app.t, /** @type {TrainEvent} */ ({ type, data }));
      if (type === "end") {
        source.close();
        app.source = null;
      }
      ctx.changed([CHANGES[type]]);
      if (type === "end" || (type === "queue" && data.state === "running")) refreshRuns(ctx);
    });
  }
  source.onerror = () => {
    // The browser reconnects by itself (with Last-Event-ID) unless the server said no.
    if (source.readyState === EventSource.CLOSED && app.source === source) {
      hooks.setError("Lost the run's events: its server went away. Start it again.");
      app.source = null;
      ctx.changed(["end"]);
    }
  };
}

/** @param {TrainContext} ctx */
function stopFollowing({ app }) {
  app.source?.close();
  app.source = null;
}

/**
 * Open a run the server keeps: followed while it trains, else shown as it ended.
 * @param {TrainContext} ctx @param {string} id
 * @returns {Promise<TrainRun | Error>} the run, or why it could not be opened
 */
async function openRun(ctx, id) {
  const { hooks, status } = ctx;
  status.waiting("run", true);
  try {
    const r = /** @type {TrainRun} */ (await fetchRun(id));
    stopFollowing(ctx);
    if (r.state === "running" || r.state === "queued") follow(ctx, r.id);
    else show(ctx, r);
    hooks.linked();
    return r;
  } catch (err) {
    return /** @type {Error} */ (err);
  } finally {
    status.waiting("run", false);
  }
}

/**
 * A link's head, chosen in the run it opened (one that has it: a head past the run's is left
 * as the view's first), and its cell whose Why this score is open (one of the probe's that a
 * query sees: another is left closed).
 * @param {TrainContext} ctx @param {TrainRun} run
 * @param {import("./link.js").TrainLinkView | null} view
 */
function choose(ctx, run, view) {
  const v = view && run.variants[view.variant];
  if (!view || !v || view.layer >= v.arch.layers || view.head >= v.arch.heads) return;
  const { variant, layer, head, query, key } = view;
  const n = run.probe.tokens.length;
  const cell =
    query !== undefined && key !== undefined && query < n && key <= query ? { query, key } : { query: null, key: null };
  ctx.app.t = reduce(ctx.app.t, { type: "choose", data: { variant, layer, head, ...cell } });
  ctx.changed(["variant", "layer", "head", "query", "key"]);
}

/** Open a run from the list, its settings in the form. @param {TrainContext} ctx @param {string} id */
async function openListed(ctx, id) {
  const { app, hooks } = ctx;
  const r = await openRun(ctx, id);
  if (r instanceof Error) {
    hooks.setError(`Could not open that run: ${r.message}`);
    refreshRuns(ctx);
    return;
  }
  hooks.setError(null);
  app.form?.apply(settingsOf(r));
  hooks.linked();
}

/**
 * Open a link: its settings in the form, then its run; a run the server no longer has is
 * said plainly, the form keeping the link's settings.
 * @param {TrainContext} ctx @param {TrainLink} link
 */
export async function openLink(ctx, link) {
  const { app, hooks } = ctx;
  const problems = /** @type {NonNullable<typeof app.form>} */ (app.form).apply(link.settings);
  const kept = problems.length ? ` Not all of the link's settings could be kept: ${problems.join("; ")}.` : "";
  if (!link.run) {
    if (kept) hooks.setError(kept.trim());
    return;
  }
  const err = await openRun(ctx, link.run);
  if (!(err instanceof Error)) {
    if (kept) hooks.setError(kept.trim());
    choose(ctx, err, link.view ?? null);
    refreshRuns(ctx); // opened by its link, the run is now in this visitor's list
    return;
  }
  const gone = /** @type {Error & {status?: number}} */ (err).status === 404;
  hooks.setError(
    gone
      ? "This link's run is no longer on this server: its owner forgot it, or the server keeps " +
          `only so many runs and made room for newer ones. The form holds the link's settings: ` +
          `press Start training to train it again.${kept}`
      : `Could not open this link's run: ${err.message}${kept}`,
  );
}

/** Read the server's runs again, and list them. @param {TrainContext} ctx */
export async function refreshRuns(ctx) {
  try {
    ctx.app.runs = (await fetchRuns()).runs;
  } catch (err) {
    ctx.hooks.setError(`Could not list this server's runs: ${/** @type {Error} */ (err).message}`);
  }
  showRuns(ctx);
}

/** @param {TrainContext} ctx */
function showRuns(ctx) {
  const { app } = ctx;
  trainruns.render(
    byId("t-runs"),
    { runs: app.runs, presets: app.options?.presets },
    { open: app.t.run?.id ?? null },
    { onOpen: (id) => openListed(ctx, id) },
  );
}

/** Ask a finished encoder-decoder variant to write its answer for the letters typed. @param {TrainContext} ctx */
export async function ask(ctx) {
  const { app, status } = ctx;
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
  ctx.changed(["decoded"]);
  trainask.asked(byId("t-try-card"), { run: app.t.run, refused: app.refused });
}

/** Cancel the run open. @param {TrainContext} ctx */
export async function cancel({ app, hooks }) {
  if (!app.t.run) return;
  try {
    await cancelRun(app.t.run.id);
  } catch (err) {
    hooks.setError(`Could not cancel: ${/** @type {Error} */ (err).message}`);
  }
}
