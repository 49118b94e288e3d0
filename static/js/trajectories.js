// Each token's hidden state from layer 0 (the embeddings) to the last layer, as a path through
// the trace's one PCA (fitted on every layer together, so the layers share axes).

import { baseLayout, draw, exact, fmt, plotText, tokenColor } from "./theme.js";

const AXES = ["x", "y", "z"];

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The token indices to draw: sel.tokens (valid, unique, in order) or every token. */
export function pickedTokens(trace, tokens) {
  const n = trace.tokens.length;
  if (!Array.isArray(tokens)) return trace.tokens.map((_, i) => i);
  return [...new Set(tokens.map(Number))].filter((i) => Number.isInteger(i) && i >= 0 && i < n)
    .sort((a, b) => a - b);
}

const titles = (p) => p.explained_variance_ratio.map((r, c) => `PC${c + 1} (${fmt(100 * r, 1)}%)`);

/** Legend names: the token's text, with its position when the text occurs more than once. */
function names(trace, picked) {
  const count = new Map();
  for (const t of trace.tokens) count.set(t, (count.get(t) || 0) + 1);
  return new Map(picked.map((i) => {
    const t = trace.tokens[i];
    return [i, count.get(t) > 1 ? `${t} (${i})` : t];
  }));
}

function path(trace, i, k, name, ax) {
  const coords = trace.projection.coords;
  const L = coords.length - 1;
  const layers = coords.map((_, l) => l);
  const color = tokenColor(i);
  const t = {
    type: k === 3 ? "scatter3d" : "scatter",
    uid: `traj-${i}`,
    name: plotText(name),
    legendgroup: `traj-${i}`,
    mode: k === 3 ? "lines+markers" : "lines+markers+text",
    line: { color, width: k === 3 ? 5 : 2.5 },
    marker: {
      color: layers.map((l) => (l === 0 ? "#ffffff" : color)),
      size: layers.map((l) => (k === 3 ? 3 + l * (4 / L) : 5 + l * (5 / L))),
      line: { color, width: 1.5 },
    },
    // The label sits at the end of the path (the last layer).
    text: layers.map((l) => (l === L ? plotText(trace.tokens[i]) : "")),
    textposition: "top right",
    textfont: { color, size: 13 },
    customdata: layers.map((l) => [plotText(name), l === 0 ? "0 (embeddings)" : String(l),
      ...coords[l][i].slice(0, k).map((v, c) => `${ax[c]} = ${exact(v)}`)]),
    hovertemplate: "<b>%{customdata[0]}</b> · layer %{customdata[1]}<br>" +
      ax.slice(0, k).map((_, c) => `%{customdata[${c + 2}]}`).join("<br>") + "<extra></extra>",
  };
  AXES.slice(0, k).forEach((a, c) => { t[a] = layers.map((l) => coords[l][i][c]); });
  if (k === 2) t.cliponaxis = false; // the end label may sit past the axis range
  return t;
}

function layout2d(ax, empty) {
  const axis = (c) => ({ title: { text: ax[c] }, zerolinecolor: "#c3c9d3",
    gridcolor: "#eef0f3" });
  return baseLayout({
    margin: { l: 64, r: 16, t: 12, b: 52 },
    hovermode: "closest",
    legend: { title: { text: "token" }, itemclick: false, itemdoubleclick: false },
    uirevision: "traj-2d",
    xaxis: axis(0),
    yaxis: axis(1),
    annotations: empty,
  });
}

function layout3d(trace, picked, ax, empty) {
  const coords = trace.projection.coords;
  const L = coords.length - 1;
  const axis = (c) => ({ title: { text: ax[c] },
    gridcolor: "#e3e6eb", zerolinecolor: "#c3c9d3", backgroundcolor: "#fbfcfd", showbackground: true });
  // Scene annotations: SVG labels at a steady size (WebGL text is not).
  const labels = picked.map((i) => ({
    x: coords[L][i][0], y: coords[L][i][1], z: coords[L][i][2], text: plotText(trace.tokens[i]),
    showarrow: false, yshift: 11, font: { size: 12, color: tokenColor(i) },
    bgcolor: "rgba(255,255,255,0.65)",
  }));
  return baseLayout({
    margin: { l: 0, r: 0, t: 8, b: 0 },
    legend: { title: { text: "token" }, itemclick: false, itemdoubleclick: false },
    uirevision: "traj-3d",
    annotations: empty,
    scene: {
      xaxis: axis(0), yaxis: axis(1), zaxis: axis(2), aspectmode: "cube", annotations: labels,
      camera: { eye: { x: 1.45, y: -1.4, z: 0.75 } }, uirevision: "traj-3d",
    },
  });
}

/** Draw the paths of sel.tokens (null = all) in sel.dims = 2 or 3 into container;
 * sel.onPick(i), if given, is called when the path of token i is clicked. */
export function renderTrajectories(container, trace, sel) {
  const p = trace.projection;
  let root = container.firstElementChild;
  if (!root || !root.classList.contains("traj") || container.childElementCount !== 1) {
    root = el("div", "traj");
    root.append(el("p", "traj-note"), el("div", "traj-plot"));
    container.replaceChildren(root);
  }
  const note = root.querySelector(".traj-note");
  const plot = root.querySelector(".traj-plot");
  if (!p || !p.coords) {
    note.textContent = "This trace has no projection to draw.";
    plot.hidden = true;
    return Promise.resolve();
  }
  plot.hidden = false;
  const k = sel.dims === 3 && p.components >= 3 ? 3 : 2;
  const L = p.coords.length - 1;
  const picked = pickedTokens(trace, sel.tokens);
  const ax = titles(p);
  const shown = p.explained_variance_ratio.slice(0, k).reduce((a, b) => a + b, 0);
  note.textContent = `One PCA fitted on the hidden states of all ${L + 1} layers together ` +
    `(${ax.slice(0, k).join(", ")}: ${fmt(100 * shown, 1)}% of the variance). Each path runs from ` +
    `layer 0 (the embeddings, open marker) to layer ${L}, the label at its end; ` +
    `${picked.length} of ${trace.tokens.length} tokens shown.`;
  plot.classList.toggle("traj-3d", k === 3);
  plot.dataset.dims = String(k);

  const nm = names(trace, picked);
  const data = picked.map((i) => path(trace, i, k, nm.get(i), ax));
  const empty = picked.length ? [] : [{ xref: "paper", yref: "paper", x: 0.5, y: 0.5,
    text: "No tokens picked", showarrow: false, font: { size: 15, color: "#5b6475" } }];
  if (k === 2 && !picked.length) data.push({ type: "scatter", x: [], y: [], showlegend: false });
  const layout = k === 3 ? layout3d(trace, picked, ax, empty) : layout2d(ax, empty);
  layout.showlegend = picked.length > 0; // also for a single token
  plot._trajPick = sel.onPick || null;
  return draw(plot, data, layout, "attnviz-trajectories").then(() => {
    if (plot._trajBound) return;
    plot._trajBound = true;
    // Clicking a path makes its token the query of the other views (when the page asks).
    plot.on("plotly_click", (ev) => {
      const m = /^traj-(\d+)$/.exec(ev?.points?.[0]?.data?.uid || "");
      if (m && plot._trajPick) plot._trajPick(Number(m[1]));
    });
  });
}
