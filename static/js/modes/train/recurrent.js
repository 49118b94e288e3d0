// The Train tab's "Why not an RNN?" card: starts a comparison of the transformer with an LSTM
// and a GRU on the server (startRecurrent), follows its events while it waits in line or runs
// (recurrentEvents: the whole comparison first, then as it changes, then its end), and draws it
// (views/trainrecurrent.js). Its task and seed come from the card's form, their choices
// and defaults from the server (fetchRecurrentOptions). A comparison the server keeps opens by
// its id (a link's, the learner's last: `open(id)`), its task and seed then in the form. The
// Learn mode asks it which comparison is shown (`id()`); the page hears when that changes
// (hooks.compared). The id is never shown: it is the card's data and the link's.

import {
  cancelRecurrent,
  fetchRecurrent,
  fetchRecurrentOptions,
  recurrentEvents,
  startRecurrent,
} from "../../core/api.js";
import * as trainrecurrent from "./views/trainrecurrent.js";

/** @typedef {import("../../core/types.js").RecurrentRun} RecurrentRun */
/** @typedef {import("../../core/types.js").RecurrentOptions} RecurrentOptions */

/** @param {RecurrentRun} r */
const going = (r) => r.state === "running" || r.state === "queued";

/**
 * @param {HTMLElement} card the card (#recurrent-card), hidden until the tab first shows it
 * @param {{setError: (m: string | null) => void, compared?: () => void}} hooks compared: the
 *   comparison shown changed (started, opened, or its state: it ended)
 */
export function createRecurrent(card, hooks) {
  const app = {
    /** @type {RecurrentOptions | null} */ options: null,
    /** @type {RecurrentRun | null} */ run: null,
    sel: { task: "", seed: 0 },
    starting: false,
    active: false,
    /** @type {EventSource | null} */ source: null, // the events of the comparison shown
    /** @type {Promise<void> | null} */ ready: null, // the options read (once)
  };
  const compared = () => hooks.compared?.();

  function draw() {
    if (!app.active || !app.options) return;
    trainrecurrent
      .render(card, { options: app.options, run: app.run, starting: app.starting }, app.sel, {
        onSelect(change) {
          app.sel = { ...app.sel, ...change };
          draw();
        },
        onStart: start,
        onCancel: cancel,
      })
      .catch((/** @type {Error} */ err) => hooks.setError(`The comparison could not be drawn (${err.message}).`));
  }

  async function start() {
    const { task, seed } = app.sel;
    if (!Number.isInteger(seed) || seed < 0) {
      hooks.setError("seed: a whole number, 0 or more");
      return;
    }
    hooks.setError(null);
    app.starting = true;
    draw();
    try {
      app.run = await startRecurrent({ task, seed });
      follow(app.run.id);
      compared();
    } catch (err) {
      hooks.setError(`The comparison could not start: ${/** @type {Error} */ (err).message}`);
    } finally {
      app.starting = false;
      draw();
    }
  }

  /** Stop the comparison shown (one waiting in line ends there); it is then drawn as it is. */
  async function cancel() {
    const id = app.run?.id;
    if (!id) return;
    try {
      const r = await cancelRecurrent(id);
      if (app.run?.id !== id) return;
      app.run = r;
      hooks.setError(null);
      draw();
      if (going(r)) follow(id);
      else {
        app.source?.close();
        app.source = null;
        compared();
      }
    } catch (err) {
      hooks.setError(`The comparison could not be cancelled: ${unreachable(err)}`);
    }
  }

  /**
   * Follow the comparison's events until its end: each (`state` first, then `progress`, then
   * `end`) is the whole comparison; the caller's own fields (yours, can_cancel) come with the
   * first and stay. @param {string} id
   */
  function follow(id) {
    app.source?.close();
    const source = recurrentEvents(id);
    app.source = source;
    for (const type of ["state", "progress", "end"]) {
      source.addEventListener(type, (e) => {
        if (app.source !== source || app.run?.id !== id) return;
        const data = JSON.parse(/** @type {MessageEvent} */ (e).data);
        const moved = data.state !== app.run.state;
        /** @type {RecurrentRun} */
        const run = type === "state" ? data : { ...app.run, ...data };
        app.run = run;
        if (type === "end" || !going(run)) {
          source.close();
          app.source = null;
        }
        draw();
        if (moved) compared();
      });
    }
    source.onerror = () => {
      // The browser reconnects by itself (with Last-Event-ID) unless the server said no.
      if (source.readyState === EventSource.CLOSED && app.source === source) {
        app.source = null;
        // Said by its task and seed, never its id (a learner never reads one).
        const was = app.run ? ` (${app.run.task}, seed ${app.run.seed})` : "";
        hooks.setError(`Lost the comparison${was}: its server went away. Press Run comparison to run one again.`);
      }
    };
  }

  /** The options, read once (a failure is said, and read again at the next call). */
  function loadOptions() {
    app.ready ??= fetchRecurrentOptions().then(
      (options) => {
        app.options = options;
        app.sel = { task: options.default, seed: 0 };
      },
      (err) => {
        app.ready = null;
        throw err;
      },
    );
    return app.ready;
  }

  /**
   * Show a comparison the server keeps, by its id: its task and seed in the form, read again
   * while it runs. One that is gone (or cannot be read) is said, without its id; the card then
   * shows what it showed before.
   * @param {string} id
   * @returns {Promise<boolean>} whether it is shown
   */
  async function open(id) {
    if (app.run?.id === id) return true;
    try {
      const [r] = await Promise.all([fetchRecurrent(id), loadOptions()]);
      app.run = r;
      app.sel = { task: r.task, seed: r.seed };
    } catch (err) {
      hooks.setError(`This link's comparison could not be opened: ${unreachable(err)}`);
      return false;
    }
    hooks.setError(null);
    draw();
    if (going(app.run)) follow(id);
    compared();
    return true;
  }

  return {
    /** Show the card; its options the first time. */
    async activate() {
      app.active = true;
      try {
        await loadOptions();
      } catch (err) {
        hooks.setError(`Could not load the comparison's options: ${/** @type {Error} */ (err).message}`);
        return;
      }
      card.hidden = false;
      draw();
    },
    deactivate() {
      app.active = false;
    },
    open,
    /** The id of the comparison shown, or null. */
    id: () => app.run?.id ?? null,
  };
}

/**
 * Why a comparison could not be read, in words without its id, and what to press.
 * @param {unknown} err
 */
function unreachable(err) {
  const e = /** @type {Error & {status?: number}} */ (err);
  return e.status === 404
    ? "it is no longer on this server (its owner forgot it, or the server keeps only so many and made room for " +
        "newer ones). Press Run comparison to run one again."
    : `the server did not answer (${e.status ? `status ${e.status}` : "no connection"}). Press Run comparison to run one.`;
}
