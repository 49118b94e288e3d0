// The Predictions card: the top-k after the query and the logit lens around it (views/lens.js).
// None for an encoder, whose trace says why, with a button to the model that predicts
// (showwith.js).

import { byId } from "../../../core/dom.js";
import * as lensview from "../../../views/lens.js";
import { showWith } from "../showwith.js";
import { drawNone, drawPushed } from "./pushed.js";

/** @typedef {import("../cards.js").CardContext} CardContext */
/** @typedef {import("../../../core/types.js").Compact} Compact */
/** @typedef {import("../../../core/types.js").LensPartMeta} LensPartMeta */

/** Draw the card. @param {CardContext} ctx */
export async function draw(ctx) {
  const { app, p, ticket, pickQuery } = ctx;
  const current = ticket("lens");
  const meta = /** @type {Compact} */ (app.first).meta;
  const box = byId("lens-view");
  const lacking = meta.unavailable?.lens;
  if (lacking) {
    lensview.renderUnavailable(box, lacking);
    const offer = showWith(app.models, app.s.model, app.s.text, "lens-h");
    if (offer) box.append(offer); // one click to a model that predicts, the text kept
    return drawNone(ctx);
  }
  const part = await p.lensPart();
  if (!current()) return;
  const m = /** @type {LensPartMeta} */ (part.meta);
  const a = part.arrays;
  lensview.render(
    box,
    {
      tokens: meta.tokens,
      start: m.lens.start,
      predicts: m.lens.predicts,
      top: { k: m.top_k.k, ids: a["top_k.ids"], probs: a["top_k.probs"], vocab: m.top_k.vocab },
      lens: {
        rows: m.lens.rows,
        ids: a["lens.ids"],
        probs: a["lens.probs"],
        targets: a["lens.targets"],
        target_ranks: a["lens.target_ranks"],
        target_probs: a["lens.target_probs"],
        vocab: m.lens.vocab,
      },
    },
    { query: p.queryIndex() },
    { onPick: pickQuery },
  );
  // What pushed this, at the query: asked for now that the rest of the card is drawn.
  const q = p.queryIndex();
  const j = Math.max(0, Math.min(q - m.lens.start, a["lens.targets"].data.length - 1));
  const top = a["top_k.ids"].data[j * m.top_k.k];
  const target = a["lens.targets"].data[j];
  /** @param {number} id */
  const choice = (id) => ({ id, label: m.top_k.vocab[String(id)] ?? m.lens.vocab[String(id)] ?? "?" });
  await drawPushed(ctx, current, {
    q,
    predicts: m.lens.predicts ?? "next",
    top: choice(top),
    next: target < 0 ? null : choice(target),
  });
}
