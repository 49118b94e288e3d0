// A saved toy lab's page (templates/standalone.html with modes/toy.html; offline/loader.js
// imports it): the toy lab's own controller and views, fed from the parts in the file
// (source.js: the first screen's arrays and every head's scores and weights, all exact) instead
// of a server. The table and the model are a record of what was traced, read only (changing
// them takes the live page, which computes the trace). The token vectors in three dimensions
// are the still picture (views/vectors.js): the file carries Plotly's cartesian bundle, which
// has no 3-D scene to turn; each point's hover names every coordinate.

import { byId } from "../core/dom.js";
import { installGlossary } from "../core/glossary.js";
import { fileHooks, plainPanel } from "./file.js";
import { normalize } from "../core/state.js";
import { createToy } from "../modes/toy/index.js";
import { openEmbedded, unpack } from "./source.js";

/**
 * @typedef {{request: {tokens: string[], axes: string[], embeddings: number[][], config: any},
 *   view: import("../core/types.js").ToyView, preset: string | null, presets: any[],
 *   limits: import("../core/types.js").Limits, defaults: import("../core/types.js").ToyConfig,
 *   glossary?: import("../core/glossary.js").Term[], entry: string}} ToyFileConfig
 */

/**
 * Draw the saved toy trace: the file's first part as the first response, every view.
 * @param {ToyFileConfig} config @param {ArrayBuffer} block the parts (gunzipped)
 */
export async function start(config, block) {
  const root = document.documentElement;
  const entries = unpack(block);
  const parts = openEmbedded(entries, config.request);
  // The toy lab's markup has an error line of its own (the live page moves one between the
  // modes): here the file's one line serves.
  for (const line of document.querySelectorAll("#toy-mode #error")) line.remove();
  installGlossary(config.glossary); // the terms the markup and the views mark open offline too
  const { hooks, drawn } = fileHooks("traceDrawn");
  const { limits, defaults } = config;
  const toy = createToy(
    {
      ...hooks,
      limits,
      defaults,
      presets: config.presets,
    },
    { openParts: () => parts, fixed: true, still: true },
  );
  plainPanel("toy-mode");
  const { tokens, axes, embeddings, config: cfg } = config.request;
  const state = normalize(
    { preset: config.preset, tokens, axes, embeddings, config: { ...defaults, ...cfg }, view: config.view },
    limits,
  );
  await toy.activate(state);
  const first = entries[0].params;
  const part = await parts.get(first);
  toy.show(part, { body: config.request, params: first });
  const heads = part.meta.layers * part.meta.heads; // the first part and one per other head
  byId("offline-note").textContent =
    `A saved toy trace: its first screen and the exact scores and weights of ` +
    `${heads === 1 ? "its one head" : `all ${heads} heads`} are in this file. Pick layers, heads and tokens; the table ` +
    "and the model are what was traced (editing them takes the live page). The token vectors are a " +
    "still picture here (the live page can turn them in 3-D).";
  await drawn;
  root.dataset.traces = "1"; // every view is drawn (the tests wait for it)
}
