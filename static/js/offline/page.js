// A saved file's page (templates/standalone.html; offline/loader.js imports it): sentence mode's
// own controller and views, fed from the parts in the file (source.js) instead of a server,
// with the trace's model as the only model. The input card shows the model and the text, read
// only: there is no model here to read another text. The trajectories are 2-D only: the file
// carries Plotly's basic bundle, which has no 3-D scatter (a third of the size of the whole).

import { byId } from "../core/dom.js";
import { installGlossary } from "../core/glossary.js";
import { fileHooks, plainPanel } from "./file.js";
import { defaultSentence } from "../core/state.js";
import { createSentence } from "../modes/sentence/index.js";
import { openEmbedded, unpack } from "./source.js";

/** @typedef {import("../core/api.js").Params} Params */
/**
 * @typedef {{selection: {layer: number, head: number, query: number, key?: number | null,
 *   hide_special: boolean, merge_words: boolean, views: string[]}, models: any, request: {model: string, text: string},
 *   glossary?: import("../core/glossary.js").Term[], entry: string}} OfflineConfig
 */

/**
 * Draw the saved trace: the first part (the thumbnails) as the first response, in the views
 * the file was made for (the others' cards stay hidden, never drawn).
 * @param {OfflineConfig} config @param {ArrayBuffer} block the parts (gunzipped)
 */
export async function start(config, block) {
  const root = document.documentElement;
  const entries = unpack(block);
  const parts = openEmbedded(entries, config.request);
  const { hooks, drawn } = fileHooks("traceDrawn");
  const sel = config.selection;
  installGlossary(config.glossary); // the terms the markup and the views mark open offline too
  const sentence = createSentence(hooks, { openParts: () => parts, models: config.models, views: sel.views });
  plainPanel("sentence-mode");
  // With its models given the controller asks for no trace: the file's first part is shown
  // as the first response.
  const state = Object.assign(defaultSentence(config.request.model, config.request.text), {
    layer: sel.layer,
    head: sel.head,
    heads: [sel.head],
    query: sel.query,
    key: sel.key ?? null,
    hideSpecial: sel.hide_special,
    mergeWords: sel.merge_words,
    dims: 2,
  });
  await sentence.activate(state);
  readOnly(entries.length);
  const first = entries[0].params;
  sentence.show(await parts.get(first), { body: config.request, params: first });
  await drawn;
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
  byId("offline-note").textContent =
    `A saved trace (${count} parts of it, in this file): pick heads, layers ` +
    "and queries; a view whose numbers the file does not hold says so. The 3-D trajectories need the live page.";
}
