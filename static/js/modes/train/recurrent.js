// The Train tab's "Why not an RNN?" card: starts a comparison of the transformer with an LSTM
// and a GRU on the server (startRecurrent), reads it again every POLL_MS while it waits in line
// or runs, and
// draws it (views/trainrecurrent.js). Its task and seed come from the card's form, their choices
// and defaults from the server (fetchRecurrentOptions). A comparison the server keeps opens by
// its id (a link's, the learner's last: `open(id)`), its task and seed then in the form. The
// Learn mode asks it which comparison is shown (`id()`); the page hears when that changes
// (hooks.compared). The id is never shown: it is the card's data and the link's.

import { cancelRecurrent, fetchRecurrent, fetchRecurrentOptions, startRecurrent } from "../../core/api.js";
import * as trainrecurrent from "./views/trainrecurrent.js";

/** @typedef {import("../../core/types.js").RecurrentRun} RecurrentRun */
/** @typedef {import("../../core/types.js").RecurrentOptions} RecurrentOptions */

const POLL_MS = 500; // how often a comparison waiting or running is read again
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
    /** @type {ReturnType<typeof setTimeout> | undefined} */ timer: undefined,
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
      poll(app.run.id);
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
      if (going(r)) poll(id);
      else compared();
    } catch (err) {
      hooks.setError(`The comparison could not be cancelled: ${unreachable(err)}`);
    }
  }

  /** Read the comparison again after POLL_MS, and again while it waits or runs. @param {string} id */
  function poll(id) {
    clearTimeout(app.timer);
    app.timer = setTimeout(async () => {
      if (app.run?.id !== id) return;
      try {
        const r = await fetchRecurrent(id);
        if (app.run?.id !== id) return;
        const ended = r.state !== app.run.state;
        app.run = r;
        draw();
        if (going(r)) poll(id);
        if (ended) compared();
      } catch (err) {
        // Said by its task and seed, never its id (a learner never reads one).
        const was = app.run ? ` (${app.run.task}, seed ${app.run.seed})` : "";
        hooks.setError(`Lost the comparison${was}: ${unreachable(err)}`);
      }
    }, POLL_MS);
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
    if (going(app.run)) poll(id);
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
