// Sentence mode's state changes here and nowhere else (a Node test checks that no other module
// of the mode writes it): change(patch) merges the patch into the state, then does what its keys
// feed. A key of SENTENCE_TRACE (the model, the text, the pictures, generation, knock-outs)
// asks for a new trace; the others redraw the views they feed (SENTENCE_FEEDS) and write the
// link; a key that feeds no view (which cards More views opens) writes the link alone. The toy
// lab's viewChanged(patch) and the Train tab's reducer are the same idea.

import { SENTENCE_FEEDS, SENTENCE_TRACE, viewsFed } from "../../core/feeds.js";
import { clampSentence } from "../../core/state.js";

/** @typedef {import("../../core/types.js").SentenceState} SentenceState */

/**
 * How a change is made: `delay`, a new trace's wait (the text box's while it is typed, "link"
 * for a link's state); `fit`, the layers, heads (and tokens) the choices are kept inside
 * (clampSentence: a model or a trace of another shape); `quiet`, the state alone, its caller
 * draws (a new trace shown, the More views bar made whole).
 * @typedef {{delay?: number | "link", fit?: [number, number, number?], quiet?: boolean}} How
 */

/**
 * @param {{app: import("./parts.js").SentenceApp, edited: (delay?: number | "link") => void,
 *   viewChanged: (keys: string[]) => void, changed: () => void}} ctx edited: a new trace;
 *   viewChanged: redraw the views the keys feed, write the link; changed: write the link
 */
export function createChange({ app, edited, viewChanged, changed }) {
  /**
   * Change the state by `patch`; the keys it changed.
   * @param {Partial<SentenceState>} patch @param {How} [how]
   * @returns {string[]}
   */
  function change(patch, how = {}) {
    Object.assign(app.s, patch);
    if (how.fit) clampSentence(app.s, ...how.fit);
    const keys = Object.keys(patch);
    if (how.quiet) return keys;
    if (keys.some((k) => SENTENCE_TRACE.includes(k))) edited(how.delay);
    else if (viewsFed(SENTENCE_FEEDS, keys).length) viewChanged(keys);
    else changed();
    return keys;
  }

  /**
   * A whole new state (a link's, or the mode opened on a model), kept inside `fit`; the caller
   * asks for its trace. @param {SentenceState} state @param {How["fit"]} [fit]
   */
  function replace(state, fit) {
    app.s = state;
    if (fit) clampSentence(app.s, ...fit);
  }

  return { change, replace };
}
