// The Predictions card: the top-k after the query and the logit lens around it (views/lens.js).
// None for an encoder, whose trace says why.

import { byId } from "../../../core/dom.js";
import * as lensview from "../../../views/lens.js";

/** @typedef {import("../cards.js").CardContext} CardContext */
/** @typedef {import("../../../core/types.js").Compact} Compact */
/** @typedef {import("../../../core/types.js").LensPartMeta} LensPartMeta */

/** Draw the card. @param {CardContext} ctx */
export async function draw({ app, p, ticket, pickQuery }) {
  const current = ticket("lens");
  const meta = /** @type {Compact} */ (app.first).meta;
  const box = byId("lens-view");
  const lacking = meta.unavailable?.lens;
  if (lacking) return lensview.renderUnavailable(box, lacking);
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
}
