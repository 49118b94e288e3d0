// The Train tab's copy of a run, kept by its server-sent events, and the reader's choices of
// what its views show: a pure reducer, reduce(state, event) -> state, that never changes what
// it is given (no DOM; the Node tests run it), and the only way the tab's state changes (a Node
// test finds any other write). The state is the run as the server last told it, the view's choices that an event
// moves (the checkpoint shown, the variant), and whether the slider keeps to the newest
// checkpoint. The events are the server's (`state` first, then `queue` while it waits for a
// slot, then `steps`, `checkpoint`, `variant`, `claims`, `end`), each applied as the server applies it to its own copy, so that
// after every event the page's run equals what the server would send for it.

import { defaultTrainView } from "../../core/state.js";
import { shownSteps } from "../../core/trainrun.js";

/** @typedef {import("../../core/types.js").TrainRun} TrainRun */
/** @typedef {import("../../core/types.js").TrainView} TrainView */
/** @typedef {import("../../core/types.js").TrainCheckpoint} TrainCheckpoint */
/** @typedef {TrainRun["variants"][number]} Variant */

/**
 * @typedef {object} TrainState
 * @property {TrainRun | null} run the run as its events have told it, null before the first
 * @property {TrainView} view the views' choices
 * @property {boolean} follow the checkpoint shown keeps to the newest until the reader moves it
 * @property {boolean} picked the reader has chosen a head of this run (not the first one shown)
 */

/**
 * One event of a run's stream, as the server names it, with its data.
 * @typedef {{type: "state", data: TrainRun}
 *   | {type: "queue", data: {state: "queued" | "running", place: number | null, wait_s: number | null}}
 *   | {type: "steps", data: {variant: number, step: number[], loss: number[], grad_norms: number[][], seconds: number[]}}
 *   | {type: "checkpoint", data: {variant: number, checkpoint: TrainCheckpoint}}
 *   | {type: "variant", data: {variant: number} & Partial<Variant>}
 *   | {type: "claims", data: {claims: NonNullable<TrainRun["claims"]>}}
 *   | {type: "end", data: {state: TrainRun["state"], reason: string | null}}} TrainEvent
 */

/**
 * What the page itself does to the state: a run opened whole (`open`, as its `state` event),
 * its events about to be followed (`watch`: the views' defaults, following), the reader's
 * choices (`choose`: a head chosen marks the run's views as picked), the slider kept to the
 * newest checkpoint or let go (`follow`), the run renamed by its owner (`renamed`).
 * @typedef {{type: "open", data: TrainRun}
 *   | {type: "watch"}
 *   | {type: "choose", data: Partial<TrainView>}
 *   | {type: "follow", data: boolean}
 *   | {type: "renamed", data: Pick<TrainRun, "id" | "title" | "named">}} TrainAction
 */

/** The event names a run's stream sends, in the order a run sends them first. */
export const EVENTS = /** @type {const} */ (["state", "queue", "steps", "checkpoint", "variant", "claims", "end"]);

/** Nothing open yet: the views' defaults, following. @returns {TrainState} */
export const initialState = () => ({ run: null, view: defaultTrainView(), follow: true, picked: false });

/**
 * A run opened whole (its `state` event, or as fetchRun gives it): shown at its newest
 * checkpoint, of the last variant that has one; an encoder-decoder's cross-attention first.
 * @param {TrainRun} run
 * @returns {TrainState}
 */
export function opened(run) {
  const view = {
    ...defaultTrainView(),
    attention: run.probe.source ? /** @type {const} */ ("cross") : /** @type {const} */ ("self"),
  };
  let newest = run.variants.length - 1;
  while (newest >= 0 && !run.variants[newest].checkpoints.length) newest--;
  if (newest >= 0) {
    const v = run.variants[newest];
    view.variant = newest;
    view.checkpoint = shownSteps(run).indexOf(v.checkpoints[v.checkpoints.length - 1].step);
  }
  return { run, view, follow: true, picked: false };
}

/**
 * The run with variant `i` replaced by `change(variant)`.
 * @param {TrainRun} run @param {number} i @param {(v: Variant) => Variant} change
 * @returns {TrainRun}
 */
const withVariant = (run, i, change) => ({ ...run, variants: run.variants.map((v, j) => (j === i ? change(v) : v)) });

/**
 * The state after one event. An event before the run's `state` (none is sent so), or of a
 * variant the run does not have, leaves the state as it was.
 * @param {TrainState} state
 * @param {TrainEvent | TrainAction} event
 * @returns {TrainState}
 */
export function reduce(state, event) {
  switch (event.type) {
    case "state":
    case "open":
      return opened(event.data);
    case "watch":
      return { ...state, view: defaultTrainView(), follow: true };
    case "choose": {
      const picked = state.picked || "layer" in event.data || "head" in event.data;
      return { ...state, picked, view: { ...state.view, ...event.data } };
    }
    case "follow":
      return { ...state, follow: event.data };
    case "renamed": {
      const { id, title, named } = event.data;
      return state.run?.id === id ? { ...state, run: { ...state.run, title, named } } : state;
    }
    default:
      return reduceRun(state, event);
  }
}

/**
 * The state after one of the run's own events (`state` aside).
 * @param {TrainState} state
 * @param {Exclude<TrainEvent, {type: "state"}>} event
 * @returns {TrainState}
 */
function reduceRun(state, event) {
  const run = state.run;
  if (!run) return state;
  switch (event.type) {
    case "queue": {
      // Its place in line and the estimate changed (a run ahead started, ended or was
      // cancelled), or it started (state running, no place).
      const { state: s, place, wait_s } = event.data;
      return { ...state, run: { ...run, state: s, place, wait_s } };
    }
    case "steps": {
      const d = event.data;
      if (!run.variants[d.variant]) return state;
      return {
        ...state,
        run: withVariant(run, d.variant, (v) => ({
          ...v,
          history: {
            step: [...v.history.step, ...d.step],
            loss: [...v.history.loss, ...d.loss],
            grad_norms: [...v.history.grad_norms, ...d.grad_norms],
            seconds: [...v.history.seconds, ...d.seconds],
          },
        })),
      };
    }
    case "checkpoint": {
      const d = event.data;
      if (!run.variants[d.variant]) return state;
      const next = withVariant(run, d.variant, (v) => ({ ...v, checkpoints: [...v.checkpoints, d.checkpoint] }));
      if (!state.follow) return { ...state, run: next };
      // Following: the new checkpoint is shown; a variant's first (step 0) moves the views to it.
      const view = { ...state.view, checkpoint: shownSteps(next).indexOf(d.checkpoint.step) };
      if (d.variant !== view.variant && d.checkpoint.step === 0) view.variant = d.variant;
      return { ...state, run: next, view };
    }
    case "variant": {
      const { variant, ...d } = event.data;
      if (!run.variants[variant]) return state;
      return { ...state, run: withVariant(run, variant, (v) => ({ ...v, ...d })) };
    }
    case "claims":
      return { ...state, run: { ...run, claims: event.data.claims } };
    case "end": {
      // Once ended, the slider runs over the checkpoints the run has (fewer when cancelled):
      // the newest when following, else the same step (or the one before it). A variant still
      // waiting or running is cancelled, as the server's copy says.
      const step = shownSteps(run)[state.view.checkpoint];
      const next = {
        ...run,
        ...event.data,
        variants: run.variants.map((v) =>
          v.state === "waiting" || v.state === "running" ? { ...v, state: "cancelled" } : v,
        ),
      };
      const steps = shownSteps(next);
      const at = steps.filter((s) => s <= step).length - 1;
      return {
        ...state,
        run: next,
        view: { ...state.view, checkpoint: state.follow || at < 0 ? steps.length - 1 : at },
      };
    }
    default:
      return state;
  }
}
