// Heatmaps of the scores and the attention weights of one layer and head.

import {
  MASKED_GREY, SCORE_SCALE, WEIGHT_SCALE, baseLayout, draw, exact, fmt, plotText, tokenAxis,
} from "./theme.js";

const $ = (id) => document.getElementById(id);
const ANNOTATE_MAX = 12; // write the values in the cells up to this many tokens
const SIDE_BY_SIDE_MAX = 7; // more tokens: scores above weights, each the full width

function fillSelect(select, count, label, value) {
  if (select.options.length !== count) {
    select.replaceChildren(...Array.from({ length: count }, (_, i) => {
      const o = document.createElement("option");
      o.value = String(i);
      o.textContent = `${label} ${i + 1}`;
      return o;
    }));
  }
  select.value = String(value);
}

/** The largest |score| over every layer and head, so that all heads share one colour range. */
function scoreRange(scores) {
  let m = 0;
  for (const layer of scores) for (const head of layer) for (const row of head) {
    for (const v of row) if (v !== null && Math.abs(v) > m) m = Math.abs(v);
  }
  return m > 0 ? m : 1;
}

/** Cell text with about three significant digits: "%{z:.2f}" up to 10, then fewer decimals. */
function cellFormat(z) {
  let m = 0;
  for (const row of z) for (const v of row) if (v !== null) m = Math.max(m, Math.abs(v));
  return m >= 100 ? "%{z:.0f}" : m >= 10 ? "%{z:.1f}" : "%{z:.2f}";
}

function heatmap(tokens, z, kind, colorbar, extra) {
  const n = tokens.length;
  const customdata = z.map((row, i) => row.map((v, j) => [
    plotText(tokens[i]), plotText(tokens[j]),
    v === null ? "masked (−∞ before the softmax)" : `${kind} ${exact(v)}`,
  ]));
  return {
    type: "heatmap",
    z,
    x: tokens.map((_, j) => j),
    y: tokens.map((_, i) => i),
    customdata,
    hovertemplate: "query <b>%{customdata[0]}</b><br>key <b>%{customdata[1]}</b><br>" +
      "%{customdata[2]}<extra></extra>",
    hoverongaps: true,
    texttemplate: n <= ANNOTATE_MAX ? cellFormat(z) : "",
    textfont: { size: n <= 6 ? 13 : 11 },
    colorbar: { thickness: 12, len: 1, title: { text: colorbar, side: "right", font: { size: 12 } } },
    ...extra,
  };
}

function layoutFor(tokens, title) {
  return baseLayout({
    title: { text: title, font: { size: 14 }, x: 0.02, xanchor: "left" },
    plot_bgcolor: MASKED_GREY, // masked cells are gaps: they show this grey
    margin: { l: 80, r: 10, t: 40, b: 70 },
    xaxis: tokenAxis(tokens, { title: { text: "key" }, automargin: true,
      tickangle: tokens.length > 12 ? -60 : 0 }),
    yaxis: tokenAxis(tokens, { title: { text: "query" }, autorange: "reversed", automargin: true }),
  });
}

/** Sync the layer/head pickers to the trace and draw both heatmaps for view.layer/head. */
export function renderAttention(trace, view) {
  const layer = Math.min(view.layer, trace.layers - 1);
  const head = Math.min(view.head, trace.heads - 1);
  fillSelect($("att-layer"), trace.layers, "layer", layer);
  fillSelect($("att-head"), trace.heads, "head", head);
  $("att-head").disabled = trace.heads === 1;
  $("att-layer").disabled = trace.layers === 1;

  const tokens = trace.tokens;
  const n = tokens.length;
  const height = `${Math.max(380, Math.min(760, 160 + n * 10))}px`;
  $("attention-grid").classList.toggle("stacked", n > SIDE_BY_SIDE_MAX);
  const where = `layer ${layer + 1}, head ${head + 1}`;
  const m = scoreRange(trace.scores);
  const scoreTitle = trace.config.scale
    ? `score = q·k / √d<sub>h</sub> (d<sub>h</sub> = ${trace.head_dim})`
    : "score = q·k (unscaled)";
  const scoresEl = $("scores-plot");
  const weightsEl = $("weights-plot");
  scoresEl.style.height = height;
  weightsEl.style.height = height;
  const masked = trace.config.mask === "causal" ? " · grey = masked" : "";
  const entropy = fmt(trace.entropy_mean[layer][head], 2);
  return Promise.all([
    draw(scoresEl,
      [heatmap(tokens, trace.scores[layer][head], "score", scoreTitle,
        { colorscale: SCORE_SCALE, zmin: -m, zmax: m, uid: "scores" })],
      layoutFor(tokens, `Scores · ${where}${masked}`),
      "attnviz-scores"),
    draw(weightsEl,
      [heatmap(tokens, trace.attentions[layer][head], "weight",
        "attention weight (softmax), rows sum to 1",
        { colorscale: WEIGHT_SCALE, zmin: 0, zmax: 1, uid: "weights" })],
      layoutFor(tokens, `Weights · ${where} · mean entropy ${entropy} nats`),
      "attnviz-weights"),
  ]);
}
