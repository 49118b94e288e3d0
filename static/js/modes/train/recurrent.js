// The Train tab's "Why not an RNN?" card: starts a comparison of the transformer with an LSTM
// and a GRU on the server (startRecurrent), reads it again every POLL_MS while it runs, and
// draws it (views/trainrecurrent.js). Its task and seed come from the card's form, their choices
// and defaults from the server (fetchRecurrentOptions). The Learn mode asks it which comparison
// is shown (`id()`).

import { fetchRecurrent, fetchRecurrentOptions, startRecurrent } from "../../core/api.js";
import * as trainrecurrent from "./views/trainrecurrent.js";

/** @typedef {import("../../core/types.js").RecurrentRun} RecurrentRun */
/** @typedef {import("../../core/types.js").RecurrentOptions} RecurrentOptions */

const POLL_MS = 500; // how often a running comparison is read again

/**
 * @param {HTMLElement} card the card (#recurrent-card), hidden until the tab first shows it
 * @param {{setError: (m: string | null) => void}} hooks
 */
export function createRecurrent(card, hooks) {
  const app = {
    /** @type {RecurrentOptions | null} */ options: null,
    /** @type {RecurrentRun | null} */ run: null,
    sel: { task: "", seed: 0 },
    starting: false,
    active: false,
    /** @type {ReturnType<typeof setTimeout> | undefined} */ timer: undefined,
  };

  function draw() {
    if (!app.active || !app.options) return;
    trainrecurrent
      .render(card, { options: app.options, run: app.run, starting: app.starting }, app.sel, {
        onSelect(change) {
          app.sel = { ...app.sel, ...change };
          draw();
        },
        onStart: start,
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
    } catch (err) {
      hooks.setError(`The comparison could not start: ${/** @type {Error} */ (err).message}`);
    } finally {
      app.starting = false;
      draw();
    }
  }

  /** Read the comparison again after POLL_MS, and again while it runs. @param {string} id */
  function poll(id) {
    clearTimeout(app.timer);
    app.timer = setTimeout(async () => {
      if (app.run?.id !== id) return;
      try {
        const r = await fetchRecurrent(id);
        if (app.run?.id !== id) return;
        app.run = r;
        draw();
        if (r.state === "running") poll(id);
      } catch (err) {
        hooks.setError(`Lost the comparison ${id}: ${/** @type {Error} */ (err).message}`);
      }
    }, POLL_MS);
  }

  return {
    /** Show the card; its options the first time. */
    async activate() {
      app.active = true;
      if (!app.options) {
        try {
          app.options = await fetchRecurrentOptions();
        } catch (err) {
          hooks.setError(`Could not load the comparison's options: ${/** @type {Error} */ (err).message}`);
          return;
        }
        const options = /** @type {RecurrentOptions} */ (app.options);
        app.sel = { task: options.default, seed: 0 };
      }
      card.hidden = false;
      draw();
    },
    deactivate() {
      app.active = false;
    },
    /** The id of the comparison shown, or null. */
    id: () => app.run?.id ?? null,
  };
}
