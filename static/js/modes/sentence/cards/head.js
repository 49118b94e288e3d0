// The head view's card: the chosen layer's heads as lines from each token to the tokens it
// attends to (views/headview.js), with its layer and head pickers, measure switch and SVG
// download. A long text draws the query's exact rows first, every token's lines on demand.

import { sub } from "../../../core/compact.js";
import { byId, download, fillIndexSelect } from "../../../core/dom.js";
import * as headview from "../../../views/headview.js";
import { collapseLayer } from "../blocks.js";
import { imagePlan } from "../imageinput.js";
import { tokenView } from "../parts.js";
import { showMeasure, wireMeasure } from "./measure.js";

/** @typedef {import("../cards.js").CardContext} CardContext */
/** @typedef {import("../../../core/types.js").Compact} Compact */

/** Draw the card. @param {CardContext} ctx */
export async function draw({ app, p, ticket, pickQuery, change }) {
  const current = ticket("head");
  const meta = /** @type {Compact} */ (app.first).meta;
  fillIndexSelect(/** @type {HTMLSelectElement} */ (byId("hv-layer")), meta.layers, "layer", app.s.layer);
  headview.renderHeadChips(byId("hv-heads"), meta.heads, app.s.heads, (heads) => {
    change({ heads });
  });
  const box = byId("head-view");
  const meta0 = /** @type {Compact} */ (app.first).meta;
  const value = p.valueWeighted();
  showMeasure(app, meta0, value);
  const unit = value ? "value-weighted norm" : undefined;
  /** @param {import("../../../core/types.js").TraceMeta} partMeta @param {import("../../../views/headview.js").HeadViewData} data */
  const draw = (partMeta, data) => {
    // Each image collapsed to one token (its weights summed over its keys, averaged over its
    // queries) when the switch says so.
    const iv = imagePlan(app, tokenView(partMeta));
    const layer = data.values && data.scale ? collapseLayer(data.values, data.scale, iv.plan.groups) : {};
    headview.render(
      box,
      { ...data, ...layer, labels: iv.plan.labels },
      { layer: app.s.layer, heads: app.s.heads, query: iv.row(p.queryIndex()), unit },
      { onPick: (row) => pickQuery(iv.token(row)) },
    );
  };
  if (!p.readsRows()) {
    const part = await p.layerPart();
    if (current()) draw(part.meta, { labels: tokenView(part.meta).labels, values: part.values, scale: part.scale });
    return;
  }
  // A long text: the chosen query's lines from its exact rows (small, quick); every token's
  // weights (megabytes) only when the pointer comes to the view.
  const q = p.queryIndex();
  const part = await p.rowsPart();
  if (!current()) return;
  const rows = sub(part.arrays[value ? "value_weighted" : "attentions"], 0);
  headview.render(
    box,
    { labels: meta.tokens, rows: { query: q, weights: rows } },
    { layer: app.s.layer, heads: app.s.heads, query: q, unit },
    {
      onPick: pickQuery,
      onNeedAll: () =>
        p.layerPart().then(
          (full) => {
            if (current())
              draw(full.meta, { labels: tokenView(full.meta).labels, values: full.values, scale: full.scale });
          },
          () => {},
        ),
    },
  );
}

/** The card's controls, wired once. @param {CardContext} ctx */
export function wire(ctx) {
  const { app, change } = ctx;
  wireMeasure(ctx, "hv-measure");
  byId("hv-layer").addEventListener("change", () => {
    change({ layer: Number(/** @type {HTMLSelectElement} */ (byId("hv-layer")).value) });
  });
  byId("hv-all").addEventListener("click", () => {
    change({ heads: Array.from({ length: app.first?.meta.heads ?? 0 }, (_, h) => h) });
  });
  byId("hv-none").addEventListener("click", () => {
    change({ heads: [] });
  });
  byId("hv-svg").addEventListener("click", () => {
    const text = headview.headViewSvg(byId("head-view"));
    if (text) download(text, "attnviz-head-view.svg", "image/svg+xml");
  });
}
