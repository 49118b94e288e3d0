// The token vectors: dashed ghosts where they start, solid where a layer leaves them, and
// their paths across layers. Raw axes when d <= 3, the API's PCA projection when d > 3.
// render(card, data, sel, callbacks): the card holds the [data-role=layer] slider and its
// [data-role=layer-out], the [data-role=trails] box, the [data-role=plot] and its caption. The
// plot takes focus: the arrow keys move over the tokens (left, right) at the start and after
// the layer (up, down), a live region reading each as the hover writes it; under it a summary
// (which token moved farthest) and the coordinates in a table. In 2-D and the still picture the
// token labels are kept apart by core/labels.js, in the live scene for its camera at rest, where
// tokens close in 3-D share one label (sceneGroups).

import { nested, sub } from "../core/compact.js";
import { setTermText } from "../core/glossary.js";
import { exact, readable, readablePercent, readableProse } from "../core/numbers.js";
import { plotlyOf, prefetch3d } from "../core/plotly.js";
import { camera, frame } from "../core/still3d.js";
import { labelAnnotations, labelPlot, labelScene, sceneAnnotations, sceneGroups, sceneLabel } from "../core/labels.js";
import { baseLayout, draw, plotText, plotToken, tokenColor } from "../core/theme.js";
import { shownToken, spokenToken } from "../core/tokens.js";
import { describe, keyCursor } from "./access.js";
import { farthest } from "./describe.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */
/** @typedef {import("../core/types.js").TraceMeta} TraceMeta */
/**
 * @typedef {{meta: TraceMeta, hidden: NDArray,
 *   projection: {components: number, ratio: number[], coords: NDArray} | null,
 *   still?: boolean}} VectorData still: three coordinates drawn as a still picture only (a page
 *   without Plotly's 3-D bundle: no rotate button)
 * @typedef {{k: number, arrows: boolean, titles: string[], dtype: string,
 *   at: (l: number) => number[][]}} Frames
 */

/**
 * The PCA axes' titles, each component's share of the variance a whole percentage:
 * "PC1 (47% var)" (readablePercent: "under 1%", never "0%"; "over 99%", never "100%").
 * @param {number[]} ratio
 */
export const pcaTitles = (ratio) => ratio.map((r, i) => `PC${i + 1} (${readablePercent(r)} var)`);

/**
 * What to draw: k coordinates per token per layer, arrows from the origin or points.
 * @param {VectorData} data
 * @returns {Frames}
 */
function frames(data) {
  const { d, axes } = data.meta;
  /** @type {Map<number, number[][]>} */
  const memo = new Map();
  /** @param {NDArray} arr */
  const layerOf = (arr) => (/** @type {number} */ l) => {
    if (!memo.has(l)) memo.set(l, nested(sub(arr, l)));
    return /** @type {number[][]} */ (memo.get(l));
  };
  const p = data.projection;
  if (d <= 3 || !p) {
    const k = Math.min(d, 3);
    return {
      k,
      arrows: true,
      titles: axes.slice(0, Math.min(d, 3)),
      dtype: data.hidden.dtype,
      at: layerOf(data.hidden),
    };
  }
  const titles = pcaTitles(p.ratio);
  return { k: Math.min(p.components, 3), arrows: false, titles, dtype: p.coords.dtype, at: layerOf(p.coords) };
}

/** One [lo, hi] for every axis over all layers (and the origin), so nothing jumps. */
function sharedRange(f, layers) {
  let lo = f.arrows ? 0 : Infinity;
  let hi = f.arrows ? 0 : -Infinity;
  for (let l = 0; l <= layers; l++)
    for (const row of f.at(l))
      for (const v of row) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
  const pad = Math.max((hi - lo) * 0.08, 0.05);
  return [lo - pad, hi + pad];
}

const column = (rows, c) => rows.map((r) => r[c]);

/** Segments origin -> point for every token, joined by nulls, with a colour per vertex. */
function segments(points, k) {
  /** @type {Record<string, any[]>} */
  const out = { x: [], y: [], z: [], color: [] };
  points.forEach((p, i) => {
    const c = tokenColor(i);
    for (const [axis, j] of [
      ["x", 0],
      ["y", 1],
      ["z", 2],
    ].slice(0, k))
      out[axis].push(0, p[j], null);
    out.color.push(c, c, c);
  });
  return out;
}

function paths(f, layers, k) {
  /** @type {Record<string, any[]>} */
  const out = { x: [], y: [], z: [], color: [] };
  const n = f.at(0).length;
  for (let i = 0; i < n; i++) {
    for (let l = 0; l <= layers; l++) {
      const p = f.at(l)[i];
      for (const [axis, j] of [
        ["x", 0],
        ["y", 1],
        ["z", 2],
      ].slice(0, k))
        out[axis].push(p[j]);
      out.color.push(tokenColor(i));
    }
    for (const axis of ["x", "y", "z"].slice(0, k)) out[axis].push(null);
    out.color.push(tokenColor(i));
  }
  return out;
}

function hover(trace, f, l) {
  return f
    .at(l)
    .map(
      (p, i) =>
        `<b>${plotToken(trace.tokens[i])}</b> · layer ${l}<br>` +
        p.map((v, j) => `${plotText(f.titles[j])} = ${readable(v, f.dtype)}`).join("<br>"),
    );
}

function tips(trace, f, l, k, role) {
  const pts = f.at(l);
  const after = role === "after";
  const t = {
    type: k === 3 ? "scatter3d" : "scatter",
    mode: "markers",
    name: after ? `after layer ${l}` : "start (layer 0)",
    uid: role,
    x: column(pts, 0),
    y: k >= 2 ? column(pts, 1) : pts.map((_, i) => i),
    hovertext: hover(trace, f, l),
    hoverinfo: "text",
    showlegend: !(f.arrows && k === 3) && (after || !f.arrows),
    marker: {
      size: after ? 5 : 4,
      color: after || k === 3 ? trace.tokens.map((_, i) => tokenColor(i)) : "#ffffff",
      line: { width: 2, color: trace.tokens.map((_, i) => tokenColor(i)) },
      symbol: k === 3 && !after ? "circle-open" : "circle",
    },
  };
  if (k === 3) t.z = column(pts, 2);
  return t;
}

/** Tokens that land on the same point share one label ("An, a") instead of overprinting.
 * @param {number[][]} points @returns {[number[], number[]][]} each point and its tokens */
function labelGroups(points) {
  const groups = new Map();
  points.forEach((p, i) => {
    const key = p.map((v) => v.toPrecision(6)).join(",");
    if (!groups.has(key)) groups.set(key, [p, []]);
    groups.get(key)[1].push(i);
  });
  return [...groups.values()];
}

function cones(points) {
  return points.flatMap((p, i) => {
    const len = Math.hypot(...p);
    if (len < 1e-9) return [];
    const c = tokenColor(i);
    const u = p.map((v) => v / len);
    return [
      {
        type: "cone",
        x: [p[0]],
        y: [p[1]],
        z: [p[2]],
        u: [u[0]],
        v: [u[1]],
        w: [u[2]],
        anchor: "tip",
        sizemode: "absolute",
        sizeref: 0.09,
        showscale: false,
        colorscale: [
          [0, c],
          [1, c],
        ],
        hoverinfo: "skip",
        showlegend: false,
        name: "",
      },
    ];
  });
}

/** The layout both pictures of the 3-D scene share: no margin, the legend at the top left. */
const SCENE_FRAME = {
  margin: { l: 0, r: 0, t: 10, b: 0 },
  showlegend: true,
  legend: { x: 0.01, y: 0.99, bgcolor: "rgba(255,255,255,0.8)" },
};

/** A 2-D arrow (an annotation in data coordinates) from `tail` to `tip`. */
function arrow(tip, tail, color, width) {
  const [x, y] = tip;
  const [ax, ay] = tail;
  return {
    x,
    y,
    ax,
    ay,
    xref: "x",
    yref: "y",
    axref: "x",
    ayref: "y",
    showarrow: true,
    arrowhead: 2,
    arrowsize: 1.15,
    arrowwidth: width,
    arrowcolor: color,
    text: "",
  };
}

/**
 * The 2-D plot's token labels (core/labels.js keeps them apart): one per drawn point `xy`,
 * tokens drawn on the same point sharing it ("An, a").
 * @param {TraceMeta} trace @param {number[][]} xy
 * @returns {import("../core/labels.js").LabelSpec[]}
 */
function labelSpecs(trace, xy) {
  const name = namer(trace);
  return labelGroups(xy).map(([p, members]) => ({
    x: p[0],
    y: p[1],
    text: members.map((i) => plotToken(trace.tokens[i])).join(", "),
    shown: members.map((i) => shownToken(trace.tokens[i])).join(", "),
    names: members.map(name),
    color: tokenColor(members[0]),
  }));
}

/** How the text box names token i: as it reads, with its number when the text repeats it.
 * @param {TraceMeta} trace */
function namer(trace) {
  const count = new Map();
  for (const t of trace.tokens) count.set(t, (count.get(t) || 0) + 1);
  return (/** @type {number} */ i) => {
    const t = trace.tokens[i];
    return count.get(t) > 1 ? `${shownToken(t)} (token ${i + 1})` : shownToken(t);
  };
}

function draw3d(el, trace, f, l, view) {
  const data = [];
  // Lines coloured per token; Plotly cannot draw a legend swatch from a colour array, so each
  // gets a grey legend-only twin (an empty trace) that carries its name and dash.
  const line = (seg, dash, width, name, uid) => [
    {
      type: "scatter3d",
      mode: "lines",
      name,
      uid,
      x: seg.x,
      y: seg.y,
      z: seg.z,
      line: { color: seg.color, width, dash },
      hoverinfo: "skip",
      connectgaps: false,
      showlegend: false,
      legendgroup: uid,
    },
    {
      type: "scatter3d",
      mode: "lines",
      name,
      uid: `${uid}-legend`,
      x: [null],
      y: [null],
      z: [null],
      line: { color: "#7b8494", width: Math.min(width, 4), dash },
      hoverinfo: "skip",
      legendgroup: uid,
    },
  ];
  if (view.trails && trace.layers >= 1) data.push(...line(paths(f, trace.layers, 3), "dot", 3, "trajectory", "trails"));
  if (f.arrows && l > 0) data.push(...line(segments(f.at(0), 3), "dash", 4, "start (dashed)", "ghosts"));
  if (f.arrows) data.push(...line(segments(f.at(l), 3), "solid", 7, `after layer ${l}`, "arrows"));
  if (f.arrows && trace.n <= 24) data.push(...cones(f.at(l)));
  data.push(tips(trace, f, 0, 3, "before"), tips(trace, f, l, 3, "after"));
  // Labels as scene annotations: drawn in SVG at a steady size (WebGL text is not), placed
  // apart for the camera at rest (core/labels.js labelScene); tokens close in 3-D share one.
  const range = sharedRange(f, trace.layers);
  const span = range[1] - range[0];
  const name = namer(trace);
  const labels = sceneGroups(f.at(l), [span, span, span]).map(({ at, members }) =>
    sceneLabel(
      at,
      members.map((i) => ({
        text: plotToken(trace.tokens[i]),
        shown: shownToken(trace.tokens[i]),
        name: name(i),
        color: tokenColor(i),
      })),
    ),
  );
  const marks = [...f.at(0), ...f.at(l)];
  const axis = (i) => ({
    title: { text: plotText(f.titles[i]) },
    range,
    autorange: false,
    zeroline: true,
    zerolinecolor: "#8a93a3",
    gridcolor: "#e3e6eb",
    backgroundcolor: "#fbfcfd",
  });
  const drawn = draw(
    el,
    data,
    baseLayout({
      ...SCENE_FRAME,
      uirevision: `3d-${trace.d}`,
      scene: {
        xaxis: axis(0),
        yaxis: axis(1),
        zaxis: axis(2),
        aspectmode: "cube",
        annotations: sceneAnnotations(el, labels, marks),
        camera: { eye: { x: 1.45, y: -1.5, z: 0.75 } },
        uirevision: `3d-${trace.d}`,
      },
    }),
    "attnviz-vectors",
  );
  return drawn.then(() => labelScene(el, labels, marks));
}

/** The camera of the 3-D scene (draw3d) and of its still picture (drawStill). */
const EYE = /** @type {[number, number, number]} */ ([1.45, -1.5, 0.75]);

/**
 * The 3-D scene as a still picture (core/still3d.js): the same camera, marks and hover (each
 * point's coordinates) in the page's 2-D Plotly, drawn at once. The live scene, which a
 * machine without a GPU takes a second or more to make, comes when asked (the rotate button,
 * or a press on the picture). Each token's lines are a trace of their own (2-D lines take one
 * colour), under legend-only twins as in draw3d.
 */
function drawStill(el, trace, f, l, view) {
  const range = sharedRange(f, trace.layers);
  const cam = camera(/** @type {[number, number]} */ (range), EYE);
  const data = frame(cam, f.titles.map(plotText));
  const origin = cam.at([0, 0, 0]);
  /** @param {number[][]} rows @param {string} dash @param {number} width @param {string} name @param {string} uid @param {(i: number) => number[][]} points */
  const lines = (rows, dash, width, name, uid, points) => {
    rows.forEach((_, i) => {
      const xy = points(i).map(cam.at);
      data.push({
        type: "scatter",
        mode: "lines",
        uid: `${uid}-${i}`,
        x: xy.map((p) => p[0]),
        y: xy.map((p) => p[1]),
        line: { color: tokenColor(i), width, dash },
        hoverinfo: "skip",
        showlegend: false,
        legendgroup: uid,
      });
    });
    data.push({
      type: "scatter",
      mode: "lines",
      name,
      uid: `${uid}-legend`,
      x: [null],
      y: [null],
      line: { color: "#7b8494", width: Math.min(width, 3), dash },
      hoverinfo: "skip",
      legendgroup: uid,
    });
  };
  const start = f.at(0);
  if (view.trails && trace.layers >= 1) {
    const path = (/** @type {number} */ i) => Array.from({ length: trace.layers + 1 }, (_, k) => f.at(k)[i]);
    lines(start, "dot", 2, "trajectory", "trails", path);
  }
  if (f.arrows && l > 0) lines(start, "dash", 2, "start (dashed)", "ghosts", (i) => [[0, 0, 0], start[i]]);
  const after = f.at(l);
  if (f.arrows) lines(after, "solid", 3, `after layer ${l}`, "arrows", (i) => [[0, 0, 0], after[i]]);
  for (const role of ["before", "after"]) {
    const pts = f.at(role === "after" ? l : 0);
    const tip = tips(trace, f, role === "after" ? l : 0, 3, role);
    const xy = pts.map(cam.at);
    data.push({
      ...tip,
      type: "scatter",
      x: xy.map((p) => p[0]),
      y: xy.map((p) => p[1]),
      z: undefined,
      customdata: pts, // the coordinates themselves (the hover text writes them)
      showlegend: false,
    });
  }
  /** @type {any[]} */
  const annotations = [];
  if (f.arrows)
    after.forEach((p, i) => {
      if (Math.hypot(...p) < 1e-9) return;
      annotations.push(arrow(cam.at(p), origin, tokenColor(i), 3));
    });
  const labels = labelSpecs(trace, after.map(cam.at));
  const marks = [...start, ...after].map(cam.at);
  annotations.push(...labelAnnotations(el, labels, marks));
  const hidden = { visible: false, fixedrange: true };
  const drawn = draw(
    el,
    data,
    baseLayout({
      ...SCENE_FRAME,
      dragmode: false,
      hovermode: "closest",
      annotations,
      xaxis: { ...hidden, range: [-2.3, 1.8] }, // (room on the left for the vertical axis's title)
      yaxis: { ...hidden, range: [-1.8, 1.8], scaleanchor: "x" },
      meta: { still: true, axes: f.titles, range },
    }),
    "attnviz-vectors",
  );
  return drawn.then(() => labelPlot(el, labels, marks));
}

function draw2d(el, trace, f, l, view) {
  const { k } = f;
  const data = [];
  const annotations = [];
  const yOf = (p, i) => (k === 2 ? p[1] : i);
  if (view.trails && trace.layers >= 1 && k === 2) {
    const p = paths(f, trace.layers, 2);
    data.push({
      type: "scatter",
      mode: "lines",
      uid: "trails",
      name: "trajectory",
      x: p.x,
      y: p.y,
      line: { color: "#9aa3b2", width: 1.5, dash: "dot" },
      hoverinfo: "skip",
    });
  }
  if (f.arrows && l > 0) {
    /** @type {Record<string, any[]>} */
    const ghost = { x: [], y: [] };
    f.at(0).forEach((p, i) => {
      ghost.x.push(0, p[0], null);
      ghost.y.push(k === 2 ? 0 : i, yOf(p, i), null);
    });
    data.push({
      type: "scatter",
      mode: "lines",
      uid: "ghosts",
      name: "start (dashed)",
      ...ghost,
      line: { color: "#7b8494", width: 2, dash: "dash" },
      hoverinfo: "skip",
    });
  }
  if (f.arrows) {
    f.at(l).forEach((p, i) => annotations.push(arrow([p[0], yOf(p, i)], [0, k === 2 ? 0 : i], tokenColor(i), 2.5)));
  }
  data.push(tips(trace, f, 0, k, "before"), tips(trace, f, l, k, "after"));
  const labels = labelSpecs(
    trace,
    f.at(l).map((p, i) => [p[0], yOf(p, i)]),
  );
  const marks = [0, l].flatMap((layer) => f.at(layer).map((p, i) => [p[0], yOf(p, i)]));
  annotations.push(...labelAnnotations(el, labels, marks));
  const range = sharedRange(f, trace.layers);
  const yaxis =
    k === 2
      ? { title: { text: plotText(f.titles[1]) }, range, scaleanchor: "x", zerolinecolor: "#8a93a3" }
      : {
          tickmode: "array",
          tickvals: trace.tokens.map((_, i) => i),
          ticktext: trace.tokens.map(plotToken),
          autorange: "reversed",
          showgrid: false,
          zeroline: false,
        };
  const drawn = draw(
    el,
    data,
    baseLayout({
      // The legend above the plot: under it, it met the x axis's title on a narrow screen.
      margin: { l: 70, r: 20, t: 44, b: 50 },
      legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
      annotations,
      xaxis: { title: { text: plotText(f.titles[0]) }, range, zerolinecolor: "#8a93a3" },
      yaxis,
    }),
    "attnviz-vectors",
  );
  return drawn.then(() => labelPlot(el, labels, marks));
}

/**
 * Draw the vectors after layer sel.vlayer (0 = the input) and sync the slider.
 * @param {HTMLElement} card
 * @param {VectorData} data
 * @param {{vlayer: number, trails: boolean}} sel
 * @param {{onSelect: (change: {vlayer?: number, trails?: boolean}) => void}} callbacks
 */
export function render(card, data, sel, callbacks) {
  const trace = data.meta;
  const l = Math.min(sel.vlayer, trace.layers);
  const slider = /** @type {HTMLInputElement} */ (card.querySelector("[data-role=layer]"));
  const trails = /** @type {HTMLInputElement} */ (card.querySelector("[data-role=trails]"));
  slider.max = String(trace.layers);
  slider.value = String(l);
  /** @type {HTMLElement} */ (card.querySelector("[data-role=layer-out]")).textContent = String(l);
  trails.checked = sel.trails;
  slider.oninput = () => callbacks.onSelect({ vlayer: Number(slider.value) });
  trails.onchange = () => callbacks.onSelect({ trails: trails.checked });
  const f = frames(data);
  const plot = /** @type {HTMLElement} */ (card.querySelector("[data-role=plot]"));
  const caption = f.arrows
    ? `Arrows from the origin in (${trace.axes.slice(0, f.k).join(", ")}). Dashed: the input (layer 0). ` +
      `Solid: after layer ${l}. Dotted: each token's path over all layers.`
    : `d = ${trace.d}, shown by PCA fitted once on every layer's vectors. Axes: ` +
      `${f.titles.join(", ")}, var being each axis's share of the variance. ` +
      `Open circles: layer 0. Filled: after layer ${l}.`;
  // PCA marked where its axes are named: "PC1 (33% var)" is explained there (core/glossary.js).
  setTermText(/** @type {HTMLElement} */ (card.querySelector("[data-role=caption]")), caption, ["pca"]);
  const rotate = /** @type {HTMLButtonElement | null} */ (card.querySelector("[data-role=rotate]"));
  const live = f.k === 3 && !data.still && spun.has(plot);
  if (rotate) {
    rotate.hidden = f.k !== 3 || Boolean(data.still);
    rotate.setAttribute("aria-pressed", String(live));
    const redraw = () => void render(card, data, sel, callbacks);
    rotate.onclick = () => {
      if (spun.has(plot)) spun.delete(plot);
      else spun.add(plot);
      redraw();
    };
    rotate.onpointerenter = rotate.onfocus = () => prefetch3d(plot);
    // A press on the still picture (to turn it) makes it the live scene.
    plot.onpointerdown =
      live || rotate.hidden
        ? null
        : (ev) => {
            if (ev.button !== 0) return;
            spun.add(plot);
            redraw();
          };
  }
  const drawn =
    f.k !== 3
      ? draw2d(plot, trace, f, l, sel)
      : live
        ? draw3d(plot, trace, f, l, sel)
        : drawStill(plot, trace, f, l, sel);
  accessible(plot, trace, f, l, live);
  return drawn;
}

/** @type {WeakSet<HTMLElement>} the plots turned into their live 3-D scene (the rotate button) */
const spun = new WeakSet();

export const TABLE_MAX = 32; // tokens: more get the summary line only

/**
 * The plot's text alternative and keyboard cursor: row 0 the start (layer 0), row 1 after
 * layer l; a column per token. The hover label marks the cursor on a 2-D plot or the still
 * picture (Plotly has none to show on a live 3-D scene).
 * @param {HTMLElement} plot @param {TraceMeta} trace @param {Frames} f @param {number} l
 * @param {boolean} live
 */
function accessible(plot, trace, f, l, live) {
  const where = f.arrows ? `(${f.titles.join(", ")})` : `the PCA coordinates (${f.titles.join(", ")})`;
  const far = farthest(f.at(0), f.at(l));
  const coords = (/** @type {number[]} */ p) => `(${p.map((v) => exact(v, f.dtype)).join(", ")})`;
  const text = describe(plot, {
    summary:
      l === 0 || !far
        ? `${trace.n} token vectors at the input, in ${where}.`
        : `${trace.n} token vectors after layer ${l}, in ${where}: farthest from its start, ` +
          `${shownToken(trace.tokens[far.i])} (${readableProse(far.d)}).`,
    table:
      trace.n <= TABLE_MAX
        ? {
            caption: `Each token's coordinates in ${where}, at the start and after layer ${l}`,
            head: ["token", "start (layer 0)", `after layer ${l}`],
            rows: trace.tokens.map((t, i) => [shownToken(t), coords(f.at(0)[i]), coords(f.at(l)[i])]),
          }
        : null,
  });
  const layers = [0, l];
  keyCursor(plot, text.live, {
    rows: 2,
    cols: trace.n,
    describedBy: text.summary.id,
    label:
      `Token vectors ${f.k === 3 ? "in 3-D" : "in 2-D"}: each token at the start and after layer ${l}. ` +
      "Left and right arrows move between tokens, up and down between the start and the layer.",
    text: (r, i) => {
      const point = f.at(layers[r])[i];
      return (
        `${spokenToken(trace.tokens[i])} · layer ${layers[r]}: ` +
        point.map((v, j) => `${f.titles[j]} = ${readable(v, f.dtype)}`).join(", ")
      );
    },
    show: live
      ? undefined
      : (r, i) => {
          const data = /** @type {any} */ (plot).data ?? [];
          const curve = data.findIndex((/** @type {any} */ t) => t.uid === (r === 0 ? "before" : "after"));
          if (curve >= 0) plotlyOf(plot).Fx.hover(plot, [{ curveNumber: curve, pointNumber: i }]);
        },
    hide: () => plotlyOf(plot).Fx.unhover(plot),
  });
}
