// Token labels on a 2-D Plotly plot that never overprint one another. Plotly places a scatter's
// text at one of nine fixed spots around its point and does not look at the other labels
// (plotly.js 4 has no collision avoidance: plotly/plotly.js#4674), so close tokens wrote over
// each other. Here each label is a layout annotation at its point, placed in pixel space:
// placeLabels (pure) tries eight spots around the point, then the same further out with a
// leader line back to it, keeping clear of the labels already placed, the points and the
// legend; a label with no free spot is left off, and the text box under the plot names it
// (its token is still on hover, the keyboard cursor and the numbers table). A view draws its
// labels with labelAnnotations (placed for the axes as they are, when the plot is drawn
// already), then hands them to labelPlot, which places them again for the axes as drawn, and
// after every resize, zoom or pan.

import { el } from "./dom.js";
import { onPlot, plotlyOf } from "./plotly.js";
import { readableOnWhite } from "./theme.js";

/**
 * @typedef {{left: number, top: number, right: number, bottom: number}} Box pixels, y down
 * @typedef {{x: number, y: number, w: number, h: number}} Sized a label's point and its box's size
 * @typedef {{dx: number, dy: number, state: "near" | "leader" | "crowded" | "outside"}} Placement
 *   dx, dy: the box's centre from its point; near: beside it; leader: further out, joined to it
 *   by a line; crowded: left off (no free spot); outside: its point is out of the plot's area
 */

/** The spots around a point, in the order tried: above first, then clockwise. */
export const DIRECTIONS = /** @type {const} */ ([
  [0, -1],
  [1, -1],
  [1, 0],
  [1, 1],
  [0, 1],
  [-1, 1],
  [-1, 0],
  [-1, -1],
]);

/** @param {number} cx @param {number} cy @param {number} w @param {number} h @returns {Box} */
const boxAt = (cx, cy, w, h) => ({ left: cx - w / 2, top: cy - h / 2, right: cx + w / 2, bottom: cy + h / 2 });

/** Whether two boxes come closer than `gap`. @param {Box} a @param {Box} b @param {number} gap */
export const overlaps = (a, b, gap = 0) =>
  a.left < b.right + gap && b.left < a.right + gap && a.top < b.bottom + gap && b.top < a.bottom + gap;

/** @param {Box} inner @param {Box} outer */
const within = (inner, outer) =>
  inner.left >= outer.left && inner.right <= outer.right && inner.top >= outer.top && inner.bottom <= outer.bottom;

/**
 * Where each label goes, in the order given (the first keeps the best spot): beside its point
 * (`near` px away) in the first of DIRECTIONS where the box stays inside `area`, clear of the
 * labels placed before it (by `gap`) and of `blocks`; else `step` px further out, ring by ring
 * (`rings` in all), joined by a leader line. On each ring a spot clear of `marks` (the points,
 * radius `radius`) is taken before one over a point. A label with no spot is `crowded`.
 * @param {Sized[]} labels
 * @param {Box} area
 * @param {{marks?: {x: number, y: number}[], blocks?: Box[], gap?: number, near?: number,
 *   step?: number, rings?: number, radius?: number}} [options]
 * @returns {Placement[]}
 */
export function placeLabels(labels, area, options = {}) {
  const { marks = [], blocks = [], gap = 2, near = 5, step = 14, rings = 5, radius = 4 } = options;
  /** @type {Box[]} */
  const placed = [];
  const free = (/** @type {Box} */ b) =>
    within(b, area) && !placed.some((p) => overlaps(p, b, gap)) && !blocks.some((k) => overlaps(k, b, 0));
  const onMark = (/** @type {Box} */ b) =>
    marks.some(
      (m) => m.x > b.left - radius && m.x < b.right + radius && m.y > b.top - radius && m.y < b.bottom + radius,
    );
  return labels.map((label) => {
    const { x, y, w, h } = label;
    const seen = x >= area.left && x <= area.right && y >= area.top && y <= area.bottom;
    if (!seen || !Number.isFinite(x + y)) return { dx: 0, dy: 0, state: "outside" };
    for (let ring = 0; ring < rings; ring++) {
      const reach = near + ring * step;
      /** @type {{dx: number, dy: number, box: Box} | null} */
      let fallback = null;
      for (const [ux, uy] of DIRECTIONS) {
        const dx = ux * (w / 2 + reach);
        const dy = uy * (h / 2 + reach);
        const box = boxAt(x + dx, y + dy, w, h);
        if (!free(box)) continue;
        if (onMark(box)) {
          fallback ??= { dx, dy, box };
          continue;
        }
        fallback = { dx, dy, box };
        break;
      }
      if (fallback) {
        placed.push(fallback.box);
        return { dx: fallback.dx, dy: fallback.dy, state: ring === 0 ? "near" : "leader" };
      }
    }
    return { dx: 0, dy: 0, state: "crowded" };
  });
}

/**
 * @typedef {{x: number, y: number, text: string, shown: string, names: string[], color: string,
 *   size?: number}} LabelSpec a label at data point (x, y) of a 2-D plot: text as Plotly takes it
 *   (escaped), shown as it reads (to measure it), names: the tokens it names, for the text box
 */

export const LABEL_NAME = "token-label"; // each label annotation's `name`
const SIZE = 13;
const PAD = 2; // Plotly's annotation box: borderpad 1 and borderwidth 1 each side

/** @type {CanvasRenderingContext2D | null} */
let ruler = null;

/** A label's box size in px, in the plot's font. @param {string} text @param {number} size @param {string} font */
function measure(text, size, font) {
  ruler ??= document.createElement("canvas").getContext("2d");
  if (!ruler) return { w: text.length * size * 0.6 + 2 * PAD, h: size * 1.3 + 2 * PAD };
  ruler.font = `${size}px ${font}`;
  return { w: Math.ceil(ruler.measureText(text).width) + 2 * PAD, h: Math.ceil(size * 1.3) + 2 * PAD };
}

/**
 * The annotation of a label placed at `at` (before it is placed: just above its point).
 * @param {LabelSpec} spec @param {Placement | null} at
 */
export function labelAnnotation(spec, at) {
  const size = spec.size ?? SIZE;
  const base = {
    name: LABEL_NAME,
    x: spec.x,
    y: spec.y,
    xref: "x",
    yref: "y",
    text: spec.text,
    xanchor: "center",
    yanchor: "middle",
    font: { size, color: readableOnWhite(spec.color) }, // text in its point's colour, AA on white
    bgcolor: "rgba(255,255,255,0.7)",
  };
  if (!at) return { ...base, showarrow: false, yshift: Math.round(size * 0.65) + PAD + 5 };
  if (at.state === "near") return { ...base, showarrow: false, xshift: at.dx, yshift: -at.dy };
  if (at.state === "leader")
    return {
      ...base,
      showarrow: true,
      arrowhead: 0,
      arrowwidth: 1,
      arrowcolor: spec.color,
      standoff: 4,
      axref: "pixel",
      ayref: "pixel",
      ax: at.dx,
      ay: at.dy,
    };
  return { ...base, showarrow: false, visible: false };
}

/** @type {WeakMap<HTMLElement, {labels: LabelSpec[], marks: number[][]}>} each plot's labels */
const kept = new WeakMap();
/** @type {WeakSet<HTMLElement>} plots whose relayout is listened to */
const bound = new WeakSet();

/** The legend's box in the plot's pixels, when it is drawn. @param {HTMLElement} plot @returns {Box[]} */
function legendBoxes(plot) {
  const legend = plot.querySelector(".legend");
  if (!legend) return [];
  const r = legend.getBoundingClientRect();
  const o = plot.getBoundingClientRect();
  if (!r.width || !r.height) return [];
  return [{ left: r.left - o.left, top: r.top - o.top, right: r.right - o.left, bottom: r.bottom - o.top }];
}

/**
 * Where `labels` go on `plot` with its axes as drawn now; null before its first draw.
 * @param {HTMLElement} plot @param {LabelSpec[]} labels @param {number[][]} marks
 * @returns {Placement[] | null}
 */
function placeOn(plot, labels, marks) {
  const full = /** @type {any} */ (plot)._fullLayout;
  const xa = full?.xaxis;
  const ya = full?.yaxis;
  if (!xa || !ya || typeof xa.l2p !== "function" || typeof ya.l2p !== "function") return null;
  const font = full.font?.family ?? "sans-serif";
  const px = (/** @type {number} */ v) => xa._offset + xa.l2p(v);
  const py = (/** @type {number} */ v) => ya._offset + ya.l2p(v);
  const area = { left: xa._offset, top: ya._offset, right: xa._offset + xa._length, bottom: ya._offset + ya._length };
  const sized = labels.map((l) => ({ x: px(l.x), y: py(l.y), ...measure(l.shown, l.size ?? SIZE, font) }));
  const points = marks.map(([x, y]) => ({ x: px(x), y: py(y) }));
  return placeLabels(sized, area, { marks: points, blocks: legendBoxes(plot) });
}

/**
 * The annotations of `labels` for a draw of `plot` about to be made: placed for its axes as
 * they are (a new layer on the same axes then needs no second pass), or just above their
 * points before its first draw. labelPlot places them again once it is drawn.
 * @param {HTMLElement} plot @param {LabelSpec[]} labels @param {number[][]} [marks]
 */
export function labelAnnotations(plot, labels, marks = []) {
  const where = placeOn(plot, labels, marks);
  return labels.map((l, i) => labelAnnotation(l, where ? where[i] : null));
}

/**
 * Place the labels of `plot` for its axes as drawn now, and draw them (only when they moved).
 * @param {HTMLElement} plot @returns {Promise<void>}
 */
function place(plot) {
  const mine = kept.get(plot);
  const where = mine && placeOn(plot, mine.labels, mine.marks);
  if (!mine || !where) return Promise.resolve();
  const full = /** @type {any} */ (plot)._fullLayout;
  plot.dataset.labelsAt = `${full.width}x${full.height}`; // the size they were placed for
  unlabelledNote(
    plot,
    mine.labels.filter((_, i) => where[i].state === "crowded").flatMap((l) => l.names),
  );
  const current = /** @type {any} */ (plot).layout?.annotations ?? [];
  const next = [
    ...current.filter((/** @type {any} */ a) => a?.name !== LABEL_NAME),
    ...mine.labels.map((l, i) => labelAnnotation(l, where[i])),
  ];
  if (JSON.stringify(next) === JSON.stringify(current)) return Promise.resolve();
  return plotlyOf(plot).relayout(plot, { annotations: next });
}

/** Most tokens the note names one by one. */
const NOTE_MAX = 24;

/**
 * The line of the plot's text box that names the tokens left unlabelled (hidden when none).
 * @param {HTMLElement} plot @param {string[]} names
 */
function unlabelledNote(plot, names) {
  const box = plot.nextElementSibling;
  if (!box || !box.classList.contains("plot-text")) return;
  let note = /** @type {HTMLElement | null} */ (box.querySelector(".plot-unlabelled"));
  if (!note) {
    note = el("p", { className: "plot-unlabelled" });
    box.querySelector(".plot-summary")?.after(note);
  }
  note.hidden = !names.length;
  const more = names.length > NOTE_MAX ? ` and ${names.length - NOTE_MAX} more` : "";
  note.textContent = names.length
    ? `No room for the label of ${names.slice(0, NOTE_MAX).join(", ")}${more}: hover a point, ` +
      "or Tab to the plot and use the arrow keys, to read its token."
    : "";
}

/**
 * Keep `labels` on the 2-D plot `plot` apart: placed now (after a draw) and again after each
 * resize, zoom or pan. `marks`: the plot's points [x, y] the labels should not cover. An empty
 * `labels` (a 3-D scene) stops it.
 * @param {HTMLElement} plot @param {LabelSpec[]} labels @param {number[][]} [marks]
 * @returns {Promise<void>}
 */
export function labelPlot(plot, labels, marks = []) {
  if (!labels.length) {
    kept.delete(plot);
    unlabelledNote(plot, []);
    return Promise.resolve();
  }
  kept.set(plot, { labels, marks });
  if (!bound.has(plot)) {
    bound.add(plot);
    // A relayout of the labels alone (place's own) is not a new layout of the axes.
    onPlot(plot, "plotly_relayout", (/** @type {Record<string, unknown>} */ ev) => {
      if (Object.keys(ev ?? {}).every((k) => k.startsWith("annotations"))) return;
      void place(plot).catch(() => undefined);
    });
  }
  return place(plot);
}
