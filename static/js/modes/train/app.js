// The Train tab's state and what its parts share: the controller (index.js), its runs
// (runs.js: start, follow, open, list, ask, cancel) and its views' draws (draw.js).

import { initialState } from "./reducer.js";

/** @typedef {import("../../core/types.js").TrainDecoded} TrainDecoded */
/** @typedef {import("../../core/types.js").TrainRunSummary} TrainRunSummary */
/** @typedef {import("./link.js").TrainLink} TrainLink */

/**
 * The tab's hooks (main.js's): openModel: show a trained model in sentence mode on a text,
 * with the query on a token (the probe's own, the server's); changed: a run started or ended
 * (the header's Export JSON and Export HTML); linked: another run is open (the address bar's link);
 * renamed: a run was renamed (sentence mode reads its model list again, names and all);
 * compared: the comparison shown in the card Why not an RNN? changed (started, opened, ended).
 * @typedef {{setError: (m: string | null) => void, setStatus: (t: string) => void,
 *   setPending: (p: boolean) => void, viewsDrawn: () => void, changed: () => void,
 *   linked: () => void, openModel: (name: string, text: string, query: number) => void,
 *   renamed?: () => void, compared?: () => void}} TrainHooks
 */

/** The tab's state, before anything is shown. */
export function createApp() {
  return {
    /** @type {import("../../core/types.js").TrainOptions | null} */ options: null,
    /** @type {ReturnType<typeof import("./form.js").createForm> | null} */ form: null,
    /** The run, the views' choices, following: what the run's events change (reducer.js). */
    t: initialState(),
    /** @type {TrainDecoded | null} */ decoded: null, // what an encoder-decoder last wrote when asked
    /** @type {number[] | null} */ target: null, // a cell a Learn task points at (query, key)
    /** @type {string | null} */ refused: null, // why the model could not write what was asked
    /** @type {TrainRunSummary[] | null} */ runs: null, // the server's runs (fetchRuns)
    /** @type {TrainLink | null} */ link: null, // a link's, until the options are in to apply it
    /** @type {EventSource | null} */ source: null,
    active: false,
    /** @type {ReturnType<typeof setInterval> | undefined} */ player: undefined,
    /** @type {Set<string>} */ dirty: new Set(),
    frame: 0,
  };
}

/** @typedef {ReturnType<typeof createApp>} TrainApp */

/**
 * What the tab's parts are given: its state, hooks and status line; live: the live page's (a
 * server to ask), not a saved run's.
 * @typedef {{app: TrainApp, hooks: TrainHooks, live: boolean,
 *   status: ReturnType<typeof import("../../core/controller.js").createStatus>}} TrainBase
 */

/**
 * TrainBase and changed(what): what changed (a run, its steps, a checkpoint, a choice), so the
 * views it feeds are drawn (draw.js).
 * @typedef {TrainBase & {changed: (what: string[]) => void}} TrainContext
 */
