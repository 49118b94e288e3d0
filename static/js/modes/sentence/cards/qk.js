// The query-key card: one head's query and key vectors and the scores between them
// (views/qkview.js), with its layer, head and query pickers. None for a model without q and k.
// For a model with multimodal rotary (meta.mrope) it says the three position indices of the
// query and of a key (Why this score's, else the query's largest weight) and how each rotary
// section turns between them (views/mrope.js).

import { sub } from "../../../core/compact.js";
import { byId, fillIndexSelect, fillOptions } from "../../../core/dom.js";
import { shownToken } from "../../../core/tokens.js";
import { chosenKey, mropeSentence } from "../../../views/mrope.js";
import * as qkview from "../../../views/qkview.js";

/** @typedef {import("../cards.js").CardContext} CardContext */
/** @typedef {import("../../../core/types.js").Compact} Compact */

/** Draw the card. @param {CardContext} ctx */
export async function draw({ app, p, ticket, pickQuery, change }) {
  const current = ticket("qk");
  const meta = /** @type {Compact} */ (app.first).meta;
  fillIndexSelect(/** @type {HTMLSelectElement} */ (byId("qk-layer")), meta.layers, "layer", app.s.layer);
  fillIndexSelect(/** @type {HTMLSelectElement} */ (byId("qk-head")), meta.heads, "head", app.s.head);
  // Queries and keys belong to the model's tokens: the hidden special tokens are left out.
  const hide = app.s.hideSpecial;
  const keys = meta.tokens.map((_, i) => i).filter((i) => !(hide && meta.special?.[i]));
  fillOptions(
    /** @type {HTMLSelectElement} */ (byId("qk-query")),
    keys.map((i) => [i, `${i + 1}. ${shownToken(meta.tokens[i])}`]),
    p.queryIndex(),
  );
  if (meta.unavailable?.queries) return qkview.renderUnavailable(byId("qk-view"), meta);
  const part = await p.queryPart();
  if (!current()) return;
  const input = {
    ...qkview.headInput(meta.tokens, part.arrays, p.queryIndex(), qkview.scoreRule(meta)),
    about: [...qkview.headNotes(meta, app.s.head, app.s.layer), ...optionNotes(app, p.queryIndex(), meta)],
    causal: Boolean(meta.causal),
  };
  if (hide) {
    // The server's row of the query without the special tokens: each weight renormalised
    // over the keys shown (the softmax of their scores alone).
    const row = sub(part.arrays.view, 0, 0, 0);
    const weights = new Float64Array(meta.n).fill(NaN);
    keys.forEach((j, r) => {
      weights[j] = row.data[r];
    });
    Object.assign(input, { shown: keys, weights: { dtype: row.dtype, shape: [meta.n], data: weights } });
  }
  if (meta.mrope) {
    const q = p.queryIndex();
    const { key, which } = chosenKey(input.weights.data, app.s.key, Boolean(meta.causal), q);
    input.about.push(mropeSentence(meta.mrope, q, key, meta.tokens, which));
  }
  return qkview.render(
    byId("qk-view"),
    input,
    { layer: app.s.layer, head: app.s.head, allKeys: app.s.allKeys },
    {
      onPick: pickQuery,
      onAllKeys: (all) => {
        change({ allKeys: all });
      },
    },
  );
}

/** What the token options mean for the query-key view, whose vectors are the model's tokens'.
 * @param {import("../parts.js").SentenceApp} app @param {number} q the query (original index)
 * @param {import("../../../core/types.js").TraceMeta} meta @returns {string[]} */
function optionNotes(app, q, meta) {
  const notes = [];
  if (app.s.hideSpecial) {
    notes.push(
      "Special tokens hidden: each weight is renormalised over the keys shown, which is " +
        "the softmax of their scores alone; the scores are the model's.",
    );
  }
  if (app.s.mergeWords) {
    const w = meta.words?.[q];
    const word = [];
    for (let i = q; i >= 0 && w != null && meta.words?.[i] === w; i--) word.unshift(i);
    for (let i = q + 1; i < meta.n && w != null && meta.words?.[i] === w; i++) word.push(i);
    const why =
      "Word pieces are not merged in this view: each piece has its own query and key " +
      "vectors, and a word has none. The model and head views merge them (a word's row there is " +
      "the mean of its pieces' rows, its column the sum of theirs).";
    if (word.length > 1) {
      const off = meta.offsets;
      const text = off && meta.text ? meta.text.slice(off[word[0]][0], off[word[word.length - 1]][1]) : "";
      notes.push(
        `${why} “${text}” is ${word.length} pieces, tokens ${word[0] + 1}–${word[word.length - 1] + 1} ` +
          `(${word.map((i) => meta.tokens[i]).join(" ")}): pick each as the query.`,
      );
    } else {
      notes.push(why);
    }
  }
  return notes;
}

/** The card's controls, wired once. @param {CardContext} ctx */
export function wire({ app, chooseHead, pickQuery }) {
  /** @param {string} id */
  const picked = (id) => Number(/** @type {HTMLSelectElement} */ (byId(id)).value);
  byId("qk-layer").addEventListener("change", () => chooseHead(picked("qk-layer"), app.s.head));
  byId("qk-head").addEventListener("change", () => chooseHead(app.s.layer, picked("qk-head")));
  byId("qk-query").addEventListener("change", () => pickQuery(picked("qk-query")));
}
