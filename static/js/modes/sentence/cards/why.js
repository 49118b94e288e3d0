// The "Why this score" card, right after the model view: the chosen head's score of one key at
// the chosen query split into what each side's residual stream carries (views/why.js, from
// the trace's qk_attribution part, parts.js whyPart). The key is the one picked (a cell of the
// large heatmap, or a key in the card's key view); with none picked, the query's winning key
// (its largest weight), so the card is never empty. Its request waits for the card to come
// near the window (or a key to be picked) and for the parts of the views above it (the first
// screen is not slowed); a model that cannot split its scores (one
// run through transformers, heads knocked out) says why in the card, and so does a refused
// pair (a key after the query), the card then showing the winning key.

import { byId, whenNear } from "../../../core/dom.js";
import { quotedToken } from "../../../core/tokens.js";
import { headRoles } from "../../../views/composition.js";
import * as view from "../../../views/why.js";

/** @typedef {import("../cards.js").CardContext} CardContext */
/** @typedef {import("../../../core/types.js").Compact} Compact */

/** Where the key view's focus goes on the next draw (a key picked there by keyboard). */
let refocus = /** @type {"keys" | null} */ (null);

/** The largest weight's key in a row of weights. @param {Compact} part @returns {number} */
function winner(part) {
  const row = part.arrays.attentions.data; // [1][1][1][n]: the query's row, later keys 0
  let best = 0;
  for (let j = 1; j < row.length; j++) if (row[j] > row[best]) best = j;
  return best;
}

/** Draw the card: at once what needs no request; the attribution in the background (the
 * views' draw, and the first screen, never wait for it), once the card is near the window or
 * a key was picked. Each draw ends by counting itself in the view box's data-drawn. @param {CardContext} ctx */
export function draw(ctx) {
  const current = ctx.ticket("why");
  const box = byId("why-view");
  explain(ctx, current)
    .catch((err) => {
      if (!current()) return;
      box.replaceChildren();
      byId("why-note").textContent = `Why this score could not be computed: ${/** @type {Error} */ (err).message}`;
    })
    .finally(() => {
      if (current()) box.dataset.drawn = String(Number(box.dataset.drawn ?? 0) + 1);
    });
  return Promise.resolve();
}

/** @param {CardContext} ctx @param {() => boolean} current */
async function explain(ctx, current) {
  const { app, p } = ctx;
  const meta = /** @type {Compact} */ (app.first).meta;
  const box = byId("why-view");
  const note = byId("why-note");
  const hint = byId("why-hint");
  hint.textContent =
    app.s.aggregate === "head"
      ? "Click a cell of the heatmap above, or press Enter on it, to explain that query's score of that key."
      : "Show “the chosen head” large in the model view, then click a cell of its heatmap to explain it here.";
  const lacking = meta.unavailable?.qk_attribution?.replace(/^qk_attribution: /, "");
  const knocked = meta.ablated?.length ?? 0;
  if (lacking || knocked) {
    box.replaceChildren();
    note.textContent = lacking
      ? `This model's scores cannot be split here: ${lacking}.`
      : `${knocked === 1 ? "A head is" : `${knocked} heads are`} knocked out: the split is of the clean run's ` +
        "scores, so put them back (Knock-out card) to see it.";
    return;
  }
  // The views above first: their parts are asked for (prefetch) before this one.
  if (app.s.key === null) await whenNear(byId("why-card"));
  await Promise.allSettled([p.thumbsPart(), p.headPart()]);
  if (!current()) return;
  const focus = refocus;
  refocus = null;
  const query = p.queryIndex();
  /** @type {string[]} */
  const said = [];
  let key = app.s.key;
  let part;
  if (key !== null && meta.causal && key > query) {
    said.push(
      `Key ${quotedToken(meta.tokens[key])} (${key + 1}) comes after query ${quotedToken(meta.tokens[query])} ` +
        `(${query + 1}): a causal model's query sees no later key.`,
    );
    key = null;
  }
  if (key !== null) {
    try {
      part = await p.whyPart(key);
    } catch (err) {
      said.push(`${/** @type {Error} */ (err).message}.`);
      key = null;
    }
  }
  if (key === null) {
    key = winner(await p.weightRowPart());
    if (!current()) return;
    part = await p.whyPart(key);
    said.push(`Showing the winning key of query ${quotedToken(meta.tokens[query])}, its largest weight.`);
  }
  if (!current()) return;
  const attribution = view.attributionOf(/** @type {Compact} */ (part));
  const atlas = ctx.atlas?.() ?? null;
  view.render(
    box,
    {
      tokens: meta.tokens,
      attribution,
      roles: headRoles(atlas && atlas.model === app.s.model ? atlas : null),
    },
    { focus },
    {
      onPickKey(k) {
        refocus = box.contains(document.activeElement) ? "keys" : null;
        ctx.change({ key: k });
      },
    },
  );
  note.textContent = said.join(" ");
}
