// The distance between two chosen tokens at every layer: a readout and a line plot.

import { baseLayout, draw, exact, fmt, plotText } from "./theme.js";

const $ = (id) => document.getElementById(id);

function fillTokens(select, tokens, value) {
  const labels = tokens.map((t, i) => `${i + 1}. ${t}`);
  const same = select.options.length === tokens.length &&
    [...select.options].every((o, i) => o.textContent === labels[i]);
  if (!same) {
    select.replaceChildren(...labels.map((text, i) => {
      const o = document.createElement("option");
      o.value = String(i);
      o.textContent = text;
      return o;
    }));
  }
  select.value = String(value);
}

function span(text, className, title) {
  const s = document.createElement("span");
  s.textContent = text;
  if (className) s.className = className;
  if (title) s.title = title;
  return s;
}

/** Readout "apple ↔ banana: 0.700 → 0.059" and the plot of distances[l][a][b] over l. */
export function renderDistances(trace, view) {
  const n = trace.n;
  const a = Math.min(view.a, n - 1);
  const b = Math.min(view.b, n - 1);
  fillTokens($("dist-a"), trace.tokens, a);
  fillTokens($("dist-b"), trace.tokens, b);
  const series = trace.distances.map((layer) => layer[a][b]);
  const current = Math.min(view.vlayer, trace.layers);

  const readout = $("dist-readout");
  const parts = [span(`${trace.tokens[a]} ↔ ${trace.tokens[b]}`, "pair"), span(": ")];
  series.forEach((v, l) => {
    if (l > 0) parts.push(span(" → "));
    parts.push(span(fmt(v, 3), l === current ? "value current" : "value", `layer ${l}: ${exact(v)}`));
  });
  readout.replaceChildren(...parts);

  const layers = series.map((_, l) => l);
  const pair = `${plotText(trace.tokens[a])} ↔ ${plotText(trace.tokens[b])}`;
  return draw($("distances-plot"), [{
    type: "scatter", mode: "lines+markers", uid: "distance", name: pair, x: layers, y: series,
    // User text goes through customdata: a template would read "%{...}" in a token label.
    customdata: series.map((v) => [pair, exact(v)]),
    hovertemplate: "%{customdata[0]}<br>layer %{x}: %{customdata[1]}<extra></extra>",
    line: { color: "#1f5fbf", width: 2.5 }, marker: { size: 7 },
  }], baseLayout({
    margin: { l: 60, r: 20, t: 16, b: 46 },
    showlegend: false,
    xaxis: { title: { text: "layer (0 = input)" }, tickmode: "array", tickvals: layers,
      range: [-0.3, trace.layers + 0.3], zeroline: false },
    yaxis: { title: { text: "distance" }, rangemode: "tozero" },
    shapes: [{ type: "line", xref: "x", yref: "paper", x0: current, x1: current, y0: 0, y1: 1,
      line: { color: "#9aa3b2", width: 1, dash: "dot" } }],
  }), "attnviz-distance");
}
