// A saved file's page (templates/standalone.html; offline/loader.js imports it): sentence mode's
// own controller and views, fed from the parts in the file (source.js) instead of a server,
// with the trace's model as the only model. The input card shows the model and the text, read
// only: there is no model here to read another text. The trajectories are 2-D only: the file
// carries Plotly's basic bundle, which has no 3-D scatter (a third of the size of the whole).

import { byId } from "../core/dom.js";
import { defaultSentence } from "../core/state.js";
import { createSentence } from "../modes/sentence/index.js";
import { openEmbedded, unpack } from "./source.js";

/** @typedef {import("../core/api.js").Params} Params */
/**
 * @typedef {{selection: {layer: number, head: number, query: number, hide_special: boolean,
 *   merge_words: boolean, views: string[]}, models: any, request: {model: string, text: string},
 *   entry: string}} OfflineConfig
 */

/** The cards of sentence mode's views, by the controller's names for them. */
const CARDS = /** @type {Record<string, string>} */ ({
  model: "model-view-card", gen: "gen-card", head: "head-view-card", qk: "qk-card", traj: "traj-card",
});

/**
 * Draw the saved trace: the first part (the thumbnails) as the first response, every view.
 * @param {OfflineConfig} config @param {ArrayBuffer} block the parts (gunzipped)
 */
export async function start(config, block) {
  const root = document.documentElement;
  const entries = unpack(block);
  const parts = openEmbedded(entries, config.request);
  const status = byId("status");
  const error = byId("error");
  /** @type {() => void} */
  let drawn = () => {};
  const traceDrawn = new Promise((resolve) => { drawn = () => resolve(undefined); });
  const hooks = {
    /** @param {string | null} message */
    setError(message) {
      error.textContent = message || "";
      error.hidden = !message;
    },
    /** @param {string} text */
    setStatus(text) { status.textContent = text; },
    /** @param {boolean} pending */
    setPending(pending) { root.dataset.pending = pending ? "1" : "0"; },
    traceDrawn: () => drawn(),
    viewsDrawn() { root.dataset.views = String(+(root.dataset.views || 0) + 1); },
    changed() {},
  };
  const sentence = createSentence(hooks, { openParts: () => parts, models: config.models });
  const sel = config.selection;
  const { model, text } = config.request;
  const panel = byId("sentence-mode");
  panel.hidden = false;
  // The live page's tab panel, alone here: no tab labels it (the page's tabs are not in the
  // file), so it is a plain container of the cards, each named by its heading.
  panel.removeAttribute("role");
  panel.removeAttribute("aria-labelledby");
  // Activated on an empty text, the controller asks for no trace (there is no server to ask);
  // then the text goes in and the file's first part is shown as the first response.
  const state = Object.assign(defaultSentence(model, ""), {
    layer: sel.layer, head: sel.head, heads: [sel.head], query: sel.query,
    hideSpecial: sel.hide_special, mergeWords: sel.merge_words, dims: 2,
  });
  await sentence.activate(state);
  // The views not asked for: hidden (the controller still draws them, from their first parts).
  for (const [name, id] of Object.entries(CARDS)) {
    if (!sel.views.includes(name)) byId(id).hidden = true;
  }
  state.text = text;
  /** @type {HTMLTextAreaElement} */ (byId("s-text")).value = text;
  /** @type {HTMLInputElement} */ (byId("s-hide-special")).checked = sel.hide_special;
  /** @type {HTMLInputElement} */ (byId("s-merge-words")).checked = sel.merge_words;
  readOnly(entries.length);
  const first = entries[0].params;
  sentence.show(await parts.get(first), { body: config.request, params: first });
  await traceDrawn;
  root.dataset.traces = "1"; // every view is drawn (the tests wait for it)
}

/** The input card as a record of what was traced: nothing to edit, nothing to ask for. @param {number} count */
function readOnly(count) {
  const text = /** @type {HTMLTextAreaElement} */ (byId("s-text"));
  text.readOnly = true;
  for (const id of ["s-model", "s-hide-special", "s-merge-words"]) {
    /** @type {HTMLInputElement} */ (byId(id)).disabled = true;
  }
  for (const id of ["s-gen-row", "s-gen-note", "s-examples", "s-install", "s-pointer"]) {
    const e = document.getElementById(id);
    if (e) e.hidden = true;
  }
  const three = /** @type {HTMLInputElement | null} */ (document.getElementById("traj-3d"));
  if (three) {
    three.disabled = true;
    const label = three.closest("label");
    if (label) label.title = "3-D needs Plotly's full bundle; this file carries the basic one (2-D) to stay small";
  }
  byId("offline-note").textContent = `A saved trace (${count} parts of it, in this file): pick heads, layers ` +
    "and queries; a view whose numbers the file does not hold says so. The 3-D trajectories need the live page.";
}
