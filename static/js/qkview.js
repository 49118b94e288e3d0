// How one query's scores are built in one head: q, every key k_j, their elementwise products
// q ⊙ k_j as aligned heatmaps, and per key Σ(q ⊙ k_j), the score and the softmax weight.

import { MASKED_GREY, SCORE_SCALE, baseLayout, draw, exact, fmt, plotText, tokenAxis } from "./theme.js";

const clamp = (v, hi) => Math.max(0, Math.min(Number(v) || 0, hi));
const maxAbs = (rows) => Math.max(1e-9, ...rows.flat().filter((v) => v !== null).map(Math.abs));

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Everything the view shows, computed from the trace for layer l, head h, query i. */
export function queryKeyData(trace, l, h, i) {
  const q = trace.queries[l][h][i];
  const keys = trace.keys[l][h];
  const hd = q.length;
  // Toy traces may be unscaled (config.scale false); model traces always divide by √head_dim.
  const scaled = !(trace.config && trace.config.scale === false);
  const divisor = scaled ? Math.sqrt(hd) : 1;
  const products = keys.map((k) => k.map((v, c) => q[c] * v));
  const sums = products.map((row) => row.reduce((a, b) => a + b, 0));
  const scores = trace.scores[l][h][i];
  const weights = trace.attentions[l][h][i];
  const masked = scores.map((s) => s === null);
  let mismatch = 0;
  scores.forEach((s, j) => {
    if (s !== null) mismatch = Math.max(mismatch, Math.abs(sums[j] / divisor - s));
  });
  return { q, keys, hd, scaled, divisor, products, sums, scores, weights, masked, mismatch };
}

function heat(z, yaxis, coloraxis, customdata, hovertemplate, uid) {
  return {
    type: "heatmap", uid, z, x: z[0].map((_, c) => c), y: z.map((_, r) => r), xaxis: "x", yaxis,
    coloraxis, customdata, hovertemplate, xgap: 1, ygap: 1, hoverongaps: false,
  };
}

/** Columns from the right in pixels (bars, score, Σ, colour bar), the heatmaps take the rest. */
function columns(width) {
  const f = (px) => px / Math.max(320, width - 116);
  const bars = [1 - f(140), 1];
  const score = [bars[0] - f(104), bars[0] - f(8)];
  const sums = [score[0] - f(76), score[0] - f(4)];
  const bar = sums[0] - f(62);
  return { heat: [0, bar - f(10)], bar, sums, score, bars };
}

/** Row blocks stacked top to bottom (q, keys, products): [lo, hi] domains and the height. */
function geometry(n, width) {
  const row = n <= 8 ? 26 : n <= 16 ? 20 : n <= 32 ? 14 : n <= 64 ? 10 : 8;
  const gap = 34;
  const top = 34;
  const bottom = 40;
  const body = (1 + 2 * n) * row + 2 * gap;
  const height = top + body + bottom;
  const frac = (px) => px / body;
  const q = [1 - frac(row), 1];
  const k = [q[0] - frac(gap + n * row), q[0] - frac(gap)];
  const p = [0, frac(n * row)];
  return { height, q, k, p, margin: { t: top, b: bottom }, cols: columns(width) };
}

const TOKEN = "<b>%{customdata[0]}</b>";

function traces(trace, i, d) {
  const n = trace.tokens.length;
  const toks = trace.tokens.map(plotText);
  const who = (j) => `${toks[j]} (${j})`;
  const qRow = heat([d.q], "y", "coloraxis", [d.q.map((v) => [who(i), exact(v)])],
    `query ${TOKEN} · dim %{x}<br>q = %{customdata[1]}<extra></extra>`, "q");
  const kRows = heat(d.keys, "y2", "coloraxis",
    d.keys.map((row, j) => row.map((v) => [who(j), exact(v)])),
    `key ${TOKEN} · dim %{x}<br>k = %{customdata[1]}<extra></extra>`, "k");
  const pRows = heat(d.products.map((row, j) => (d.masked[j] ? row.map(() => null) : row)),
    "y3", "coloraxis2",
    d.products.map((row, j) => row.map((v, c) => [who(j), `${exact(d.q[c])} × ${exact(d.keys[j][c])}`,
      exact(v)])),
    `key ${TOKEN} · dim %{x}<br>q·k = %{customdata[1]}<br>= %{customdata[2]}<extra></extra>`, "qk");
  const out = [qRow, kRows, pRows];
  if (d.masked.some(Boolean)) {
    out.push({
      type: "heatmap", uid: "masked", z: d.masked.map((m) => d.q.map(() => (m ? 1 : null))),
      x: d.q.map((_, c) => c), y: d.masked.map((_, j) => j), xaxis: "x", yaxis: "y3",
      colorscale: [[0, MASKED_GREY], [1, MASKED_GREY]], showscale: false, xgap: 1, ygap: 1,
      hoverongaps: false, customdata: d.masked.map((_, j) => d.q.map(() => [who(j)])),
      hovertemplate: `key ${TOKEN}: masked (after the query)<extra></extra>`,
    });
  }
  const rows = trace.tokens.map((_, j) => j);
  const info = rows.map((j) => [who(j), exact(d.sums[j]), exact(d.masked[j] ? null : d.sums[j] / d.divisor),
    exact(d.scores[j]), d.masked[j] ? "masked" : exact(d.weights[j])]);
  const div = d.scaled ? `÷ √${d.hd}` : "(unscaled)";
  const hover = `key ${TOKEN}<br>Σ q⊙k = %{customdata[1]}<br>${div} = %{customdata[2]}` +
    "<br>score (model) = %{customdata[3]}<br>weight = %{customdata[4]}<extra></extra>";
  const column = (uid, xaxis, text) => ({
    type: "scatter", mode: "text", uid, x: rows.map(() => 0), y: rows, xaxis, yaxis: "y3", text,
    customdata: info, hovertemplate: hover, textfont: { size: n <= 32 ? 12 : n <= 64 ? 9 : 7 }, cliponaxis: false,
  });
  out.push(
    column("sums", "x2", rows.map((j) => (d.masked[j] ? "–" : fmt(d.sums[j], 2)))),
    column("scores", "x3", rows.map((j) => (d.masked[j] ? "masked" : fmt(d.scores[j], 3)))),
    {
      type: "bar", uid: "weights", orientation: "h", xaxis: "x4", yaxis: "y3", y: rows,
      x: rows.map((j) => (d.masked[j] ? 0 : d.weights[j])),
      text: rows.map((j) => (d.masked[j] ? "masked" : fmt(d.weights[j], 3))),
      textposition: "outside", cliponaxis: false, textfont: { size: n <= 32 ? 12 : n <= 64 ? 9 : 7 },
      marker: { color: rows.map((j) => (j === i ? "#1f5fbf" : "#6baed6")) },
      customdata: info, hovertemplate: hover,
    },
  );
  return out;
}

function layoutFor(trace, i, d, g) {
  const n = trace.tokens.length;
  const ticks = trace.tokens.map((t, j) => (j === i ? `<b>${plotText(t)}</b>` : plotText(t)));
  const rowsAxis = (domain) => ({
    ...tokenAxis(trace.tokens, { ticktext: ticks }), domain, anchor: "x", autorange: "reversed",
    ticks: "", automargin: true,
  });
  const hidden = (domain) => ({ domain, anchor: "y3", visible: false, fixedrange: true, range: [-1, 1] });
  const wmax = Math.max(1e-9, ...d.weights.map((w, j) => (d.masked[j] ? 0 : w)));
  const head = (x, text, at = 0.5) => ({ xref: x, yref: "y3 domain", x: at, xanchor: at ? "center" : "left",
    y: 1, yanchor: "bottom", yshift: 4, text, showarrow: false, font: { size: 12, color: "#5b6475" } });
  const label = (yref, text) => ({ xref: "x domain", yref, x: 0, y: 1, xanchor: "left",
    yanchor: "bottom", yshift: 3, text, showarrow: false, font: { size: 12, color: "#5b6475" } });
  const bar = (y, len) => ({ thickness: 10, len, lenmode: "fraction", y, yanchor: "top",
    x: g.cols.bar, xanchor: "left", outlinewidth: 0, tickfont: { size: 10 } });
  const qk = maxAbs([d.q, ...d.keys]);
  const pm = maxAbs(d.products.filter((_, j) => !d.masked[j]));
  return baseLayout({
    height: g.height,
    margin: { l: 70, r: 46, t: g.margin.t, b: g.margin.b },
    showlegend: false,
    hovermode: "closest",
    xaxis: { domain: g.cols.heat, anchor: "y3", automargin: true, showgrid: false, zeroline: false,
      ticks: "", tickfont: { size: 10 },
      title: { text: `dimension (0–${d.hd - 1}) of the head`, font: { size: 12 }, standoff: 4 } },
    yaxis: { domain: g.q, anchor: "x", tickmode: "array", tickvals: [0], ticktext: ["q"],
      fixedrange: true, showgrid: false, zeroline: false },
    yaxis2: rowsAxis(g.k),
    yaxis3: rowsAxis(g.p),
    xaxis2: hidden(g.cols.sums),
    xaxis3: hidden(g.cols.score),
    xaxis4: { domain: g.cols.bars, anchor: "y3", range: [0, wmax * 1.25], visible: false, fixedrange: true },
    bargap: n <= 32 ? 0.25 : 0.1,
    coloraxis: { colorscale: SCORE_SCALE, cmin: -qk, cmax: qk,
      colorbar: bar(g.q[1], g.q[1] - g.k[0]) },
    coloraxis2: { colorscale: SCORE_SCALE, cmin: -pm, cmax: pm,
      colorbar: bar(g.p[1], g.p[1] - g.p[0]) },
    annotations: [
      label("y domain", `<b>q</b> · query ${plotText(trace.tokens[i])} (${i})`),
      label("y2 domain", "<b>k</b> · every key"),
      label("y3 domain", "<b>q ⊙ k</b> · elementwise products, one row per key"),
      head("x2 domain", "Σ q⊙k"),
      head("x3 domain", d.scaled ? `score (÷ √${d.hd})` : "score"),
      head("x4 domain", "softmax weight", 0),
    ],
  });
}

function header(trace, l, h, i, d) {
  const title = el("p", "qk-title");
  title.append("Query ", el("span", "qk-token", trace.tokens[i]),
    el("span", "qk-dim", ` token ${i} · layer ${l + 1}, head ${h + 1}`));
  const formula = el("p", "qk-formula",
    d.scaled ? `score = Σ qₖ·kₖ / √${d.hd}` : "score = Σ qₖ·kₖ (unscaled)");
  formula.append(el("span", "qk-dim", " · weight = softmax of the scores over the keys"));
  const head = el("div", "qk-head");
  head.append(title, formula);
  return head;
}

/** Draw the query-key view of sel = {layer, head, query, onPick?} into container. */
export function renderQueryKey(container, trace, sel) {
  const l = clamp(sel.layer, trace.layers - 1);
  const h = clamp(sel.head, trace.heads - 1);
  const i = clamp(sel.query, trace.tokens.length - 1);
  const d = queryKeyData(trace, l, h, i);

  let root = container.firstElementChild;
  if (!root || !root.classList.contains("qk") || container.childElementCount !== 1) {
    root = el("div", "qk");
    const plot = el("div", "qk-plot");
    plot.setAttribute("role", "img");
    const scroll = el("div", "qk-scroll");
    scroll.append(plot);
    root.append(el("div", "qk-head"), scroll, el("p", "qk-note"));
    container.replaceChildren(root);
  }
  const plot = root.querySelector(".qk-plot");
  const g = geometry(trace.tokens.length, plot.clientWidth || container.clientWidth || 800);
  root.querySelector(".qk-head").replaceWith(header(trace, l, h, i, d));
  plot.setAttribute("aria-label", `Query ${trace.tokens[i]}: q, keys, q ⊙ k, scores and weights`);
  plot.style.height = `${g.height}px`;
  plot.dataset.query = String(i);
  const picks = sel.onPick ? "Click a key row to make that token the query. " : "";
  const off = d.mismatch > 1e-3 * Math.max(1, ...d.sums.map(Math.abs))
    ? ` Note: the model's scores differ from Σ/√d by up to ${fmt(d.mismatch, 4)}.` : "";
  root.querySelector(".qk-note").textContent =
    `${picks}Hover any cell or number for its exact value. Colours: blue negative, red positive.${off}`;

  plot._qkPick = sel.onPick || null;
  return draw(plot, traces(trace, i, d), layoutFor(trace, i, d, g), "attnviz-query-key").then(() => {
    if (plot._qkBound) return;
    plot._qkBound = true;
    plot.on("plotly_click", (ev) => {
      const pt = ev && ev.points && ev.points[0];
      if (!pt || !plot._qkPick || pt.data.uid === "q") return;
      const j = Number(pt.y);
      if (Number.isInteger(j)) plot._qkPick(j);
    });
  });
}
