// Each token's hidden state from layer 0 (the embeddings) to the last layer, as a path through
// the trace's one PCA (fitted on every layer together, so the layers share axes). Up to
// PALETTE_SIZE paths each has a colour of its own; more are coloured by their position in the
// text, on a scale shown under the plot. Up to LEGEND_MAX paths each is its own trace with a
// legend entry; past it the paths share one trace per band of positions (POSITION_BANDS), so 512
// tokens draw as fast as eight. A long text starts with a few (defaultRows). The plot takes
// focus: the arrow keys move along a path's layers (left, right) and between the paths (up,
// down), a live region reading each point as the hover writes it; under it a summary and, up to
// TABLE_MAX paths, each path's coordinates in a table. Each path's label is at its end, kept
// apart from the others by core/labels.js (in 3-D for the camera at rest, paths that end close
// together sharing one: sceneGroups). render(container, data, sel, callbacks).

import { el } from "../core/dom.js";
import { exact, readable, readablePercent, readableProse } from "../core/numbers.js";
import { labelAnnotations, labelPlot, labelScene, sceneAnnotations, sceneGroups, sceneLabel } from "../core/labels.js";
import { onPlot, plotlyOf } from "../core/plotly.js";
import { PALETTE_SIZE, baseLayout, draw, plotText, plotToken, tokenColor } from "../core/theme.js";
import { shownToken, spokenToken } from "../core/tokens.js";
import { describe, keyCursor } from "./access.js";
import { farthest } from "./describe.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */
/**
 * @typedef {{tokens: string[], projection: {components: number, ratio: number[], coords: NDArray} | null,
 *   positions?: number[], unit?: string, defaulted?: boolean}} TrajData
 *   tokens: a label per row of coords [L+1][n][k]; positions: each row's token index in the
 *   text (default: the row's own); unit: what a row is ("tokens", "words"); defaulted: the rows
 *   shown are the default choice (defaultRows), not the reader's
 */

const AXES = ["x", "y", "z"];
export const LEGEND_MAX = 24;
/** Past this many rows a text starts with FEW_ROWS of them shown, from the query on. */
export const FEW_ROWS = 8;
export const POSITION_BANDS = 8;
export const TABLE_MAX = 16; // paths: more get the summary line only
/** Position in the text, first to last: plasma up to 0.6, every stop at least 3:1 on white. */
export const POSITION_SCALE = ["#0d0887", "#41049d", "#6a00a8", "#8f0da4", "#b12a90", "#cc4778", "#e16462"];

/**
 * The rows to show: the reader's pick (original token indices; a row is picked when any of its
 * tokens is), every row ("all"), or by default every row of a short text and FEW_ROWS of a long
 * one, from the query's row on.
 * @param {number[][]} groups the original tokens of each row
 * @param {number[] | "all" | null} picked @param {number} query an original token index
 * @returns {number[]}
 */
export function defaultRows(groups, picked, query) {
  const every = groups.map((_, r) => r);
  if (picked === "all" || (picked === null && groups.length <= LEGEND_MAX)) return every;
  if (Array.isArray(picked)) return every.filter((r) => groups[r].some((i) => picked.includes(i)));
  const at = Math.max(
    0,
    groups.findIndex((g) => g.includes(query)),
  );
  const start = Math.max(0, Math.min(at, groups.length - FEW_ROWS));
  return every.slice(start, start + FEW_ROWS);
}

/** The colour at t in [0, 1] of POSITION_SCALE. @param {number} t */
export function positionColor(t) {
  const x = Math.max(0, Math.min(1, t)) * (POSITION_SCALE.length - 1);
  const k = Math.min(POSITION_SCALE.length - 2, Math.floor(x));
  const rgb = (/** @type {string} */ h) => [1, 3, 5].map((o) => parseInt(h.slice(o, o + 2), 16));
  const [a, b] = [rgb(POSITION_SCALE[k]), rgb(POSITION_SCALE[k + 1])];
  const f = x - k;
  return (
    "#" +
    a
      .map((v, c) =>
        Math.round(v + (b[c] - v) * f)
          .toString(16)
          .padStart(2, "0"),
      )
      .join("")
  );
}

/** Each row's token index in the text. @param {TrajData} trace */
const positionsOf = (trace) => trace.positions ?? trace.tokens.map((_, i) => i);

/**
 * The colour of each picked row: its own (few paths), or its position in the text.
 * @param {TrajData} trace @param {number[]} picked @returns {Map<number, string>}
 */
function colours(trace, picked) {
  const pos = positionsOf(trace);
  const last = Math.max(1, pos[pos.length - 1] ?? 1);
  return new Map(
    picked.map((r, k) => [r, picked.length <= PALETTE_SIZE ? tokenColor(k) : positionColor(pos[r] / last)]),
  );
}

/**
 * The token indices to draw: sel.tokens (valid, unique, in order) or every token.
 * @param {{tokens: string[]}} trace @param {number[] | null | undefined} tokens
 */
export function pickedTokens(trace, tokens) {
  const n = trace.tokens.length;
  if (!Array.isArray(tokens)) return trace.tokens.map((_, i) => i);
  return [...new Set(tokens.map(Number))].filter((i) => Number.isInteger(i) && i >= 0 && i < n).sort((a, b) => a - b);
}

/** The axes' titles, each component's share of the variance a whole percentage ("PC1 (47%)"; readablePercent). */
export const titles = (/** @type {{ratio: number[]}} */ p) =>
  p.ratio.map((r, c) => `PC${c + 1} (${readablePercent(r)})`);

/** Legend names: the token's text, with its token number (1-based) when the text occurs more
 * than once. @param {TrajData} trace @param {number[]} picked */
function names(trace, picked) {
  const count = new Map();
  const pos = positionsOf(trace);
  for (const t of trace.tokens) count.set(t, (count.get(t) || 0) + 1);
  return new Map(
    picked.map((i) => {
      const t = trace.tokens[i];
      return [i, count.get(t) > 1 ? `${shownToken(t)} (token ${pos[i] + 1})` : shownToken(t)];
    }),
  );
}

/**
 * The k coordinates of token i at every layer.
 * @param {NDArray} coords [L+1][n][k] @param {number} i
 * @returns {number[][]}
 */
function pointsOf(coords, i) {
  const [L1, n, K] = coords.shape;
  return Array.from({ length: L1 }, (_, l) => Array.from(coords.data.subarray((l * n + i) * K, (l * n + i + 1) * K)));
}

/**
 * @param {TrajData} trace @param {number} i @param {number} k @param {string} name @param {string[]} ax
 * @param {string} color
 */
function path(trace, i, k, name, ax, color) {
  const coords = /** @type {NonNullable<TrajData["projection"]>} */ (trace.projection).coords;
  const pts = pointsOf(coords, i);
  const dtype = coords.dtype;
  const L = pts.length - 1;
  const layers = pts.map((_, l) => l);
  const t = {
    type: k === 3 ? "scatter3d" : "scatter",
    uid: `traj-${i}`,
    name: plotText(name),
    legendgroup: `traj-${i}`,
    mode: "lines+markers",
    line: { color, width: k === 3 ? 5 : 2.5 },
    marker: {
      color: layers.map((l) => (l === 0 ? "#ffffff" : color)),
      size: layers.map((l) => (k === 3 ? 3 + l * (4 / L) : 5 + l * (5 / L))),
      line: { color, width: 1.5 },
    },
    customdata: layers.map((l) => [
      plotText(name),
      l === 0 ? "0 (embeddings)" : String(l),
      ...pts[l].slice(0, k).map((v, c) => `${ax[c]} = ${readable(v, dtype)}`),
    ]),
    hovertemplate:
      "<b>%{customdata[0]}</b> · layer %{customdata[1]}<br>" +
      ax
        .slice(0, k)
        .map((_, c) => `%{customdata[${c + 2}]}`)
        .join("<br>") +
      "<extra></extra>",
  };
  AXES.slice(0, k).forEach((a, c) => {
    /** @type {any} */ (t)[a] = layers.map((l) => pts[l][c]);
  });
  return t;
}

/**
 * Many tokens: their paths in one trace per band of positions in the text (joined by gaps),
 * coloured by the band's middle, the token and layer on hover.
 * @param {TrajData} trace @param {number[]} picked @param {number} k @param {string[]} ax
 */
function groupedPaths(trace, picked, k, ax) {
  const coords = /** @type {NonNullable<TrajData["projection"]>} */ (trace.projection).coords;
  const dtype = coords.dtype;
  const pos = positionsOf(trace);
  const last = Math.max(1, pos[pos.length - 1] ?? 1);
  const band = (/** @type {number} */ r) => Math.min(POSITION_BANDS - 1, Math.floor((pos[r] / last) * POSITION_BANDS));
  return Array.from({ length: POSITION_BANDS }, (_, c) => {
    const color = positionColor((c + 0.5) / POSITION_BANDS);
    /** @type {Record<string, (number | null)[]>} */
    const xyz = { x: [], y: [], z: [] };
    /** @type {(string[] | null)[]} */
    const custom = [];
    for (const i of picked) {
      if (band(i) !== c) continue;
      pointsOf(coords, i).forEach((p, l) => {
        AXES.slice(0, k).forEach((a, d) => xyz[a].push(p[d]));
        custom.push([
          plotToken(trace.tokens[i]),
          `${i}`,
          l === 0 ? "0 (embeddings)" : String(l),
          ...p.slice(0, k).map((v, d) => `${ax[d]} = ${readable(v, dtype)}`),
          `${pos[i] + 1}`,
        ]);
      });
      AXES.slice(0, k).forEach((a) => xyz[a].push(null));
      custom.push(null);
    }
    const t = {
      // Lines only: a marker is an element of its own, and 512 tokens have 3,584 points.
      type: k === 3 ? "scatter3d" : "scatter",
      uid: `traj-band-${c}`,
      mode: "lines",
      showlegend: false,
      line: { color, width: k === 3 ? 3 : 1.5 },
      customdata: custom,
      connectgaps: false,
      hovertemplate:
        `<b>%{customdata[0]}</b> (token %{customdata[${k + 3}]}) · layer %{customdata[2]}<br>` +
        ax
          .slice(0, k)
          .map((_, d) => `%{customdata[${d + 3}]}`)
          .join("<br>") +
        "<extra></extra>",
    };
    AXES.slice(0, k).forEach((a) => {
      /** @type {any} */ (t)[a] = xyz[a];
    });
    return t;
  });
}

/**
 * The 2-D paths' labels, each at its path's end (the last layer), kept apart by core/labels.js;
 * and every point of the paths, which they keep off.
 * @param {TrajData} trace @param {number[]} picked @param {Map<number, string>} nm
 * @param {Map<number, string>} colour
 * @returns {{labels: import("../core/labels.js").LabelSpec[], marks: number[][]}}
 */
function endLabels(trace, picked, nm, colour) {
  const coords = /** @type {NonNullable<TrajData["projection"]>} */ (trace.projection).coords;
  const paths = picked.map((i) => pointsOf(coords, i));
  const labels = picked.map((i, r) => {
    const end = paths[r][paths[r].length - 1];
    return {
      x: end[0],
      y: end[1],
      text: plotToken(trace.tokens[i]),
      shown: shownToken(trace.tokens[i]),
      names: [/** @type {string} */ (nm.get(i))],
      color: /** @type {string} */ (colour.get(i)),
    };
  });
  return { labels, marks: paths.flat() };
}

/** @param {string[]} ax @param {object[]} empty */
function layout2d(ax, empty) {
  const axis = (c) => ({ title: { text: ax[c] }, zerolinecolor: "#c3c9d3", gridcolor: "#eef0f3" });
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

/**
 * The 3-D paths' labels, each at its path's end, as scene annotations (SVG, at a steady size;
 * WebGL text is not), placed apart for the camera at rest (core/labels.js labelScene): paths
 * that end close together share one (sceneGroups). None past LEGEND_MAX paths. And every point
 * of the paths, which they keep off.
 * @param {TrajData} trace @param {number[]} picked @param {Map<number, string>} nm
 * @param {Map<number, string>} colour
 * @returns {{labels: import("../core/labels.js").LabelSpec[], marks: number[][]}}
 */
function sceneLabels(trace, picked, nm, colour) {
  if (!picked.length || picked.length > LEGEND_MAX) return { labels: [], marks: [] };
  const coords = /** @type {NonNullable<TrajData["projection"]>} */ (trace.projection).coords;
  const paths = picked.map((i) => pointsOf(coords, i).map((p) => p.slice(0, 3)));
  const marks = paths.flat();
  // Each axis's span over every point drawn, as Plotly's autorange takes it.
  const spans = [0, 1, 2].map((a) => Math.max(...marks.map((p) => p[a])) - Math.min(...marks.map((p) => p[a])));
  const groups = sceneGroups(
    paths.map((p) => p[p.length - 1]),
    spans,
  );
  const labels = groups.map(({ at, members }) =>
    sceneLabel(
      at,
      members.map((r) => ({
        text: plotToken(trace.tokens[picked[r]]),
        shown: shownToken(trace.tokens[picked[r]]),
        name: /** @type {string} */ (nm.get(picked[r])),
        color: /** @type {string} */ (colour.get(picked[r])),
      })),
      12,
    ),
  );
  return { labels, marks };
}

/** @param {string[]} ax @param {object[]} empty @param {object[]} labels the scene's */
function layout3d(ax, empty, labels) {
  const axis = (c) => ({
    title: { text: ax[c] },
    gridcolor: "#e3e6eb",
    zerolinecolor: "#c3c9d3",
    backgroundcolor: "#fbfcfd",
    showbackground: true,
  });
  return baseLayout({
    margin: { l: 0, r: 0, t: 8, b: 0 },
    legend: { title: { text: "token" }, itemclick: false, itemdoubleclick: false },
    uirevision: "traj-3d",
    annotations: empty,
    scene: {
      xaxis: axis(0),
      yaxis: axis(1),
      zaxis: axis(2),
      aspectmode: "cube",
      annotations: labels,
      camera: { eye: { x: 1.45, y: -1.4, z: 0.75 } },
      uirevision: "traj-3d",
    },
  });
}

/**
 * Draw the paths of sel.tokens (null = all) in sel.dims = 2 or 3 into container;
 * callbacks.onPick(i), if given, is called when the path of token i is clicked.
 * @param {HTMLElement} container
 * @param {TrajData} data
 * @param {{tokens: number[] | null, dims: number}} sel
 * @param {{onPick?: (i: number) => void}} [callbacks]
 */
export function render(container, data, sel, callbacks = {}) {
  const p = data.projection;
  let root = /** @type {HTMLElement} */ (container.firstElementChild);
  if (!root || !root.classList.contains("traj") || container.childElementCount !== 1) {
    root = el("div", { className: "traj" }, [
      el("p", { className: "traj-note" }),
      el("div", { className: "traj-plot" }),
      el("p", { className: "traj-scale", hidden: true }),
    ]);
    container.replaceChildren(root);
  }
  const note = /** @type {HTMLElement} */ (root.querySelector(".traj-note"));
  const plot = /** @type {HTMLElement & {_trajPick?: any, _trajBound?: boolean, on?: any}} */ (
    root.querySelector(".traj-plot")
  );
  const scale = /** @type {HTMLElement} */ (root.querySelector(".traj-scale"));
  if (!p || !p.coords) {
    note.textContent = "This trace has no projection to draw.";
    plot.hidden = true;
    scale.hidden = true;
    return Promise.resolve();
  }
  plot.hidden = false;
  const k = sel.dims === 3 && p.components >= 3 ? 3 : 2;
  const L = p.coords.shape[0] - 1;
  const picked = pickedTokens(data, sel.tokens);
  const ax = titles(p);
  const shown = p.ratio.slice(0, k).reduce((a, b) => a + b, 0);
  const grouped = picked.length > LEGEND_MAX;
  const unit = data.unit ?? "tokens";
  const many = picked.length > PALETTE_SIZE;
  const start =
    data.defaulted && picked.length < data.tokens.length
      ? ` A long text starts with ${picked.length} ${unit} from the query on: pick more below, or all.`
      : "";
  note.textContent =
    `One PCA fitted on the hidden states of all ${L + 1} layers together ` +
    `(${ax.slice(0, k).join(", ")}: ${readablePercent(shown)} of the variance). Each path runs from ` +
    `layer 0 (the embeddings${grouped ? "" : ", open marker"}) to layer ${L}` +
    `${grouped ? "; hover a path for its token" : ", the label at its end"}; ` +
    `${picked.length} of ${data.tokens.length} ${unit} shown` +
    `${many ? ", coloured by position in the text (the scale below the plot)" : ""}.${start}`;
  // The colour scale of positions, in words and colour, when colour stands for position.
  scale.hidden = !many;
  if (many) {
    const pos = positionsOf(data);
    const gradient = `linear-gradient(to right, ${POSITION_SCALE.join(", ")})`;
    scale.replaceChildren(
      el("span", { textContent: "token 1" }),
      el("span", { className: "traj-scale-bar", "aria-hidden": "true", style: `background: ${gradient}` }),
      el("span", { textContent: `token ${(pos[pos.length - 1] ?? 0) + 1}` }),
      el("span", { className: "traj-scale-about", textContent: "colour: position in the text" }),
    );
  }
  plot.classList.toggle("traj-3d", k === 3);
  plot.dataset.dims = String(k);

  const nm = names(data, picked);
  const colour = colours(data, picked);
  /** @type {any[]} */
  const traces = grouped
    ? groupedPaths(data, picked, k, ax)
    : picked.map((i) => path(data, i, k, /** @type {string} */ (nm.get(i)), ax, /** @type {string} */ (colour.get(i))));
  const empty = picked.length
    ? []
    : [
        {
          xref: "paper",
          yref: "paper",
          x: 0.5,
          y: 0.5,
          text: `No ${unit} picked`,
          showarrow: false,
          font: { size: 15, color: "#5b6475" },
        },
      ];
  if (k === 2 && !picked.length) traces.push({ type: "scatter", x: [], y: [], showlegend: false });
  // Each path (up to LEGEND_MAX) is labelled at its end: in 2-D a layout annotation, in 3-D
  // a scene annotation.
  const ends =
    k === 3
      ? sceneLabels(data, picked, nm, colour)
      : grouped
        ? { labels: [], marks: [] }
        : endLabels(data, picked, nm, colour);
  const layout = /** @type {any} */ (
    k === 3 ? layout3d(ax, empty, sceneAnnotations(plot, ends.labels, ends.marks)) : layout2d(ax, empty)
  );
  if (k === 2) layout.annotations = [...layout.annotations, ...labelAnnotations(plot, ends.labels, ends.marks)];
  layout.showlegend = picked.length > 0 && !grouped; // also for a single token
  plot._trajPick = callbacks.onPick || null;
  accessible(plot, data, picked, k, ax, nm, grouped);
  return draw(plot, traces, layout, "attnviz-trajectories").then(() => {
    const placed = (k === 3 ? labelScene : labelPlot)(plot, ends.labels, ends.marks);
    if (plot._trajBound) return placed;
    plot._trajBound = true;
    // Clicking a path makes its token the query of the other views (when the page asks).
    onPlot(plot, "plotly_click", (/** @type {any} */ ev) => {
      const point = ev?.points?.[0];
      const m = /^traj-(\d+)$/.exec(point?.data?.uid || "");
      const i = m ? Number(m[1]) : Number(point?.customdata?.[1]);
      if (Number.isInteger(i) && plot._trajPick) plot._trajPick(i);
    });
    return placed;
  });
}

/**
 * The plot's text alternative and keyboard cursor: a row per picked path, a column per layer.
 * The hover label marks the cursor when each path is its own 2-D trace.
 * @param {HTMLElement} plot @param {TrajData} data @param {number[]} picked @param {number} k
 * @param {string[]} ax @param {Map<number, string>} nm @param {boolean} grouped
 */
function accessible(plot, data, picked, k, ax, nm, grouped) {
  const coords = /** @type {NonNullable<TrajData["projection"]>} */ (data.projection).coords;
  const L = coords.shape[0] - 1;
  const paths = picked.map((i) => pointsOf(coords, i).map((p) => p.slice(0, k)));
  const far = farthest(
    paths.map((p) => p[0]),
    paths.map((p) => p[L]),
  );
  const point = (/** @type {number[]} */ p) => `(${p.map((v) => exact(v, coords.dtype)).join(", ")})`;
  const text = describe(plot, {
    summary: !picked.length
      ? "No path shown."
      : `${picked.length} path${picked.length === 1 ? "" : "s"} from layer 0 to layer ${L} in ` +
        `${ax.slice(0, k).join(", ")}` +
        (far && picked.length > 1
          ? `; the farthest from its start: ${nm.get(picked[far.i])} (${readableProse(far.d)}).`
          : "."),
    table:
      picked.length && picked.length <= TABLE_MAX
        ? {
            caption: `Each path's point (${ax.slice(0, k).join(", ")}) at every layer`,
            head: ["token", ...Array.from({ length: L + 1 }, (_, l) => `layer ${l}`)],
            rows: picked.map((i, r) => [/** @type {string} */ (nm.get(i)), ...paths[r].map(point)]),
          }
        : null,
  });
  const dtype = coords.dtype;
  keyCursor(plot, text.live, {
    rows: picked.length,
    cols: L + 1,
    describedBy: text.summary.id,
    label:
      `Trajectories of ${picked.length} token${picked.length === 1 ? "" : "s"} through the layers, ` +
      `${k === 3 ? "3-D" : "2-D"} plot. Left and right arrows move along a path's layers, up and down between the paths.`,
    text: (r, l) =>
      `${spokenToken(data.tokens[picked[r]])} · layer ${l}: ` +
      paths[r][l].map((v, c) => `${ax[c]} = ${readable(v, dtype)}`).join(", "),
    show:
      k === 3 || grouped ? undefined : (r, l) => plotlyOf(plot).Fx.hover(plot, [{ curveNumber: r, pointNumber: l }]),
    hide: () => plotlyOf(plot).Fx.unhover(plot),
  });
}
