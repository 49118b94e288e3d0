// The model view's card: every head's thumbnail (views/modelview.js), the chosen head or an
// aggregate of its layer large (views/heatcanvas.js), the legend and notes, and the card's
// controls (aggregate, measure, peak, PNG and CSV downloads).

import { sub } from "../../../core/compact.js";
import { CSV_TYPE, partCsv } from "../../../core/csv.js";
import { byId, download } from "../../../core/dom.js";
import { setTermText } from "../../../core/glossary.js";
import { readable } from "../../../core/numbers.js";
import { WEIGHT_GRADIENT } from "../../../core/theme.js";
import * as heatcanvas from "../../../views/heatcanvas.js";
import * as modelview from "../../../views/modelview.js";
import { COLLAPSE_RULE, collapseMatrix, collapsedNote } from "../blocks.js";
import { imagePlan } from "../imageinput.js";
import { thumbsOf, tokenView } from "../parts.js";
import { showMeasure, wireMeasure } from "./measure.js";

/** @typedef {import("../cards.js").CardContext} CardContext */
/** @typedef {import("../../../core/types.js").Compact} Compact */
/** @typedef {import("../../../core/types.js").Aggregate} Aggregate */

/** Draw the card. @param {CardContext} ctx */
export async function draw(ctx) {
  const { app, p, ticket, chooseHead, pickQuery, pickPair, showCount } = ctx;
  const current = ticket("model");
  const meta = /** @type {Compact} */ (app.first).meta;
  const thumbs = await p.thumbsPart();
  if (!current()) return;
  const grid = byId("mv-grid");
  const sel = { layer: app.s.layer, head: app.s.head, peak: app.s.peak };
  const data = { layers: meta.layers, heads: meta.heads, thumbs: thumbsOf(thumbs), entropy: app.entropy };
  const tv = tokenView(thumbs.meta);
  // Value-weighted norms are not weights: the grid is coloured from 0 to the largest of every
  // head's (heads compared on one scale), unless each head goes to its own peak.
  const value = thumbs.meta.measure === "value_weighted";
  const top = value ? modelview.thumbsTop(data.thumbs) : 1;
  showMeasure(app, meta, value);
  // Past 64 rows the chosen head gets the card's whole width, below the grid (whose cells
  // are then as wide as thumbSize() says).
  /** @type {HTMLElement} */ (byId("model-view-card").querySelector(".mv-split")).classList.toggle(
    "stacked",
    tv.labels.length > 64,
  );
  modelview.render(
    grid,
    data,
    { ...sel, top, unit: value ? "value-weighted" : undefined },
    { onSelect: ctx.pickCell ?? chooseHead },
  );
  byId("mv-shape").textContent = `${meta.layers} layers × ${meta.heads} heads`;
  showCount(meta.n, tv);
  byId("s-note").textContent = tv.note; // what the token options did, in the server's words
  byId("s-note").hidden = !tv.note;
  const { pool, size } = data.thumbs;
  const poolNote = byId("mv-pool");
  poolNote.hidden = pool === 1;
  poolNote.textContent =
    pool === 1
      ? ""
      : `${tv.labels.length} tokens in ` +
        `${size} pixels: each thumbnail pixel is the largest ${value ? "value" : "weight"} of a ${pool} × ${pool} block.`;
  byId("mv-legend-max").textContent = app.s.peak ? "peak" : value ? readable(top) : "1";
  byId("mv-legend-unit").textContent = value ? "value-weighted norm ‖a v W_O‖" : "attention weight";
  const agg = app.s.aggregate;
  // The chosen head's cells explain themselves (Why this score) where that card is drawn.
  const whyCells = agg === "head" && pickPair !== undefined;
  const head = await p.headPart();
  if (!current()) return;
  const hv = tokenView(head.meta);
  // Each image a labelled block of rows and columns; collapsed, one row (the mean of its rows)
  // and one column (the sum over its columns) of the part's own numbers.
  const iv = imagePlan(app, hv);
  const shownMatrix = agg === "head" ? sub(head.arrays.view, 0, 0) : sub(head.arrays[agg], 0);
  const matrix = collapseMatrix(shownMatrix, iv.plan.groups);
  const groups = iv.plan.groups.map((g) => g.flatMap((r) => hv.groups[r])); // drawn row -> original tokens
  const blocks = iv.blocks.map((b) => {
    const from = iv.row(hv.groups[b.rows[0]][0]);
    return { from, to: iv.collapsed ? from + 1 : from + b.rows.length, label: b.label };
  });
  // What the large heatmap's cells are: weights (rollout's rows always sum to 1), or norms.
  const norms = agg === "value_weighted_sum" || (head.meta.measure === "value_weighted" && agg !== "rollout");
  const vw = head.meta.measure === "value_weighted" ? ", value-weighted" : "";
  const what = {
    head: `head ${app.s.head + 1}${vw}`,
    head_mean: `mean of ${meta.heads} heads${vw}`,
    head_max: `max of ${meta.heads} heads${vw}`,
    rollout: `rollout through it${vw}`,
    value_weighted_sum: `norm of ${meta.heads} heads' summed contributions`,
  }[agg];
  heatcanvas.render(
    byId("mv-large"),
    {
      labels: iv.plan.labels,
      matrix,
      title: `Layer ${app.s.layer + 1}, ${what}`,
      unit: norms ? "value-weighted norm" : "weight",
      causal: Boolean(meta.causal),
      ...(blocks.length ? { blocks } : {}),
      ...(iv.collapsed && blocks.length
        ? {
            cellNote: (/** @type {number} */ i, /** @type {number} */ j) => collapsedNote(iv.plan, i, j),
            rule: COLLAPSE_RULE,
          }
        : {}),
    },
    {
      query: iv.row(p.queryIndex()),
      cell: whyCells && app.s.key !== null ? [iv.row(p.queryIndex()), iv.row(app.s.key)] : null,
      peak: app.s.peak || agg === "head_max" || norms,
    },
    whyCells
      ? {
          onPickCell: (row, col) => pickPair(iv.token(row), iv.token(col)),
          pickCell:
            "makes the row's token the query and the column's the key, whose score Why this score, below, explains",
        }
      : { onPick: (row) => pickQuery(iv.token(row)) },
  );
  const clickWords = whyCells
    ? "click a cell to see why the head gives its key that score (Why this score, below)."
    : "click a row to make its token the query.";
  const cell = norms
    ? "value-weighted norm (what the key adds to the query's output)"
    : agg === "head"
      ? "weight"
      : "value";
  byId("mv-caption").textContent =
    agg === "head"
      ? `The chosen head: hover a cell for its ${cell}; ${clickWords}`
      : `The chosen layer's heads together: hover a cell for its ${cell}; ${clickWords}`;
  byId("mv-why").hidden = !whyCells;
  const rule = byId("mv-rule");
  // The chosen head's value-weighted rule is the measure's note above it, said once.
  const ruleKey = agg === "head" ? "value_weighted" : agg;
  const said = ruleKey === "value_weighted" && !byId("mv-measure-note").hidden;
  const ruleText = said ? "" : (head.meta.rules?.[ruleKey] ?? "");
  rule.hidden = !ruleText;
  rule.textContent = ruleText;
  const sink = modelview.sinkNote(
    matrix,
    iv.plan.labels,
    !norms && (agg === "head" || agg === "head_mean"),
    groups,
    meta.special ?? null,
  );
  byId("mv-sink").hidden = !sink;
  setTermText(byId("mv-sink"), sink, ["sink"]);
}

/** The card's controls, wired once. @param {CardContext} ctx */
export function wire(ctx) {
  const { app, p, change, setError } = ctx;
  byId("mv-aggregate").addEventListener("change", (e) => {
    change({ aggregate: /** @type {Aggregate} */ (/** @type {HTMLSelectElement} */ (e.target).value) });
  });
  wireMeasure(ctx, "mv-measure");
  byId("mv-peak").addEventListener("change", (e) => {
    change({ peak: /** @type {HTMLInputElement} */ (e.target).checked });
  });
  byId("mv-legend").style.background = WEIGHT_GRADIENT;
  byId("mv-png").addEventListener("click", async () => {
    if (!app.first) return;
    const meta = app.first.meta;
    const thumbs = thumbsOf(await p.thumbsPart());
    const top = p.valueWeighted() ? modelview.thumbsTop(thumbs) : 1;
    download(
      modelview.gridPng({ layers: meta.layers, heads: meta.heads, thumbs }, app.s.peak, top),
      "attnviz-model-view.png",
    );
  });
  byId("mv-why").addEventListener("click", () => {
    byId("why-card").scrollIntoView({ block: "start" });
    /** @type {HTMLElement | null} */ (byId("why-view").querySelector(".why-matrix"))?.focus();
  });
  byId("mv-large-png").addEventListener("click", () => {
    const png = heatcanvas.heatPng(byId("mv-large"));
    if (png) download(png, `attnviz-layer${app.s.layer + 1}-head${app.s.head + 1}.png`);
  });
  // CSV of the chosen head, its layer's mean, and the hidden states after that layer: the
  // parts' exact numbers, as Python's trace.to_csv writes them for the same selection. A part
  // that cannot be had (the server refused it, a saved file does not hold it) is said in the
  // error line.
  /** @param {"attention" | "layer_mean" | "hidden_states"} what @param {string} name */
  async function saveCsv(what, name) {
    if (!app.parts) return;
    const layer = app.s.layer;
    try {
      const part = await p.csvPart(what);
      download(partCsv(what, part, layer + 1), `attnviz-layer${layer + 1}-${name}.csv`, CSV_TYPE);
    } catch (err) {
      setError(`The CSV could not be made: ${/** @type {Error} */ (err).message}`);
    }
  }
  byId("mv-csv-head").addEventListener("click", () => saveCsv("attention", `head${app.s.head + 1}`));
  byId("mv-csv-mean").addEventListener("click", () => saveCsv("layer_mean", "mean"));
  byId("mv-csv-states").addEventListener("click", () => saveCsv("hidden_states", "hidden-states"));
}
