// The Predictions card's "What pushed this" (views/pushed.js): asked for after the card's
// top-k and lens are drawn (fields=logit_attribution at the query, for the chosen token: the
// top prediction, the true next token, or the difference). A model that cannot (an encoder
// without an unembedding, a model served through transformers) or a trace with heads knocked
// out says why instead.

import { byId } from "../../../core/dom.js";
import * as pushedview from "../../../views/pushed.js";
import { showWith } from "../showwith.js";

/** @typedef {import("../cards.js").CardContext} CardContext */
/** @typedef {import("../../../core/types.js").Compact} Compact */
/** @typedef {import("../../../core/types.js").Pushed} Pushed */

/**
 * Draw the panel at the query `q`, whose top prediction and next token the card read.
 * @param {CardContext} ctx @param {() => boolean} current the card's draw is still the newest
 * @param {{q: number, predicts: "next" | "masked", top: pushedview.Choice,
 *   next: pushedview.Choice | null}} at
 */
export async function drawPushed({ app, p, change }, current, at) {
  const meta = /** @type {Compact} */ (app.first).meta;
  const box = byId("pushed-view");
  const lacking = meta.unavailable?.logit_attribution;
  if (lacking) {
    pushedview.renderUnavailable(box, lacking);
    // The model cannot (one served through transformers): one click to one that can.
    const offer = showWith(app.models, app.s.model, app.s.text, "lens-h");
    if (offer) box.append(offer);
    return;
  }
  if (meta.ablated?.length) {
    return pushedview.renderUnavailable(
      box,
      "it decomposes the clean run, and this trace knocks heads out: put them back (the Knock-out card) to see it",
    );
  }
  const choices = { next: at.next, top: at.top };
  const selection = { query: at.q, choice: app.s.pushed };
  const data = { tokens: meta.tokens, predicts: at.predicts, choices, attribution: null };
  const callbacks = {
    /** @param {Pushed} choice */
    onChoose: (choice) => {
      change({ pushed: choice });
    },
  };
  // While it is asked for, bars already drawn stay (dimmed) rather than the card jumping.
  if (box.querySelector(".pushed-chart")) box.classList.add("stale");
  else pushedview.render(box, data, selection, callbacks);
  let part;
  try {
    part = await p.attributionPart(at.q, pushedview.targetOf(app.s.pushed, choices));
  } catch (err) {
    if (current()) pushedview.renderUnavailable(box, /** @type {Error} */ (err).message);
    return;
  } finally {
    if (current()) box.classList.remove("stale");
  }
  if (!current()) return;
  pushedview.render(box, { ...data, attribution: pushedview.attributionOf(part) }, selection, callbacks);
}

/** The panel of a card without predictions: why. @param {CardContext} ctx */
export function drawNone({ app }) {
  const meta = /** @type {Compact} */ (app.first).meta;
  const why = meta.unavailable?.logit_attribution ?? meta.unavailable?.lens ?? "this model predicts no token";
  pushedview.renderUnavailable(byId("pushed-view"), why);
}
