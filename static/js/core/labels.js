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
// after every resize, zoom or pan. A live 3-D scene's labels are its scene annotations, placed
// the same way where its camera draws their points (sceneAnnotations, labelScene), again after
// each turn; tokens close in 3-D share one label (sceneGroups), which no turn pulls apart.

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
 * @typedef {{x: number, y: number, z?: number, text: string, shown: string, names: string[],
 *   more?: string[], color: string, size?: number}} LabelSpec a label at data point (x, y) of a
 *   2-D plot, or (x, y, z) of a 3-D scene: text as Plotly takes it (escaped), shown as it reads
 *   (to measure it), names: the tokens it names, for the text box; more: those of its point it
 *   leaves unnamed (the text box names them too)
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
    ...(spec.z === undefined ? { xref: "x", yref: "y" } : { z: spec.z }), // a scene's: its own axes
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

/** @type {WeakMap<HTMLElement, {labels: LabelSpec[], marks: number[][], scene?: boolean}>} each
 * plot's labels, and whether they are its 3-D scene's */
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
  const where = mine && (mine.scene ? placeInScene : placeOn)(plot, mine.labels, mine.marks);
  if (!mine || !where) return Promise.resolve();
  const full = /** @type {any} */ (plot)._fullLayout;
  plot.dataset.labelsAt = `${full.width}x${full.height}`; // the size they were placed for
  unlabelledNote(plot, [
    ...mine.labels.filter((_, i) => where[i].state === "crowded").flatMap((l) => l.names),
    ...mine.labels.flatMap((l) => l.more ?? []),
  ]);
  const layout = /** @type {any} */ (plot).layout;
  const current = (mine.scene ? layout?.scene?.annotations : layout?.annotations) ?? [];
  const next = [
    ...current.filter((/** @type {any} */ a) => a?.name !== LABEL_NAME),
    ...mine.labels.map((l, i) => labelAnnotation(l, where[i])),
  ];
  const done = () => {
    plot.dataset.labelsPlaced = String(Number(plot.dataset.labelsPlaced ?? 0) + 1); // tests wait on it
  };
  if (JSON.stringify(next) === JSON.stringify(current)) return Promise.resolve().then(done);
  const update = mine.scene ? { "scene.annotations": next } : { annotations: next };
  return plotlyOf(plot).relayout(plot, update).then(done);
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
  return keep(plot, labels, marks, false);
}

/**
 * Keep `labels` of `plot` (its scene's, when `scene`) and place them now, then after each
 * relayout that is not their own (a resize, a zoom, a turn of the scene).
 * @param {HTMLElement} plot @param {LabelSpec[]} labels @param {number[][]} marks
 * @param {boolean} scene @returns {Promise<void>}
 */
function keep(plot, labels, marks, scene) {
  if (!labels.length) {
    kept.delete(plot);
    unlabelledNote(plot, []);
    return Promise.resolve();
  }
  kept.set(plot, { labels, marks, scene });
  if (!bound.has(plot)) {
    bound.add(plot);
    // A relayout of the labels alone (place's own) is not a new layout of the axes.
    onPlot(plot, "plotly_relayout", (/** @type {Record<string, unknown>} */ ev) => {
      const own = (/** @type {string} */ k) => k.startsWith("annotations") || k.startsWith("scene.annotations");
      if (Object.keys(ev ?? {}).every(own)) return;
      // A turn of a scene is drawn on the next frame: its camera is read after it.
      const again = () => void place(plot).catch(() => undefined);
      if (kept.get(plot)?.scene) requestAnimationFrame(again);
      else again();
    });
  }
  return place(plot);
}

// ---- A live 3-D scene ---------------------------------------------------------------------

/** Tokens closer than this share a live 3-D scene's label: a share of each axis's span. */
export const SCENE_NEAR = 0.1;
/** Most tokens one scene label names (then "+2 more"; all of them on hover and in the table). */
export const SCENE_NAMES = 4;

/**
 * Which tokens share a label in a live 3-D scene. Its labels are placed apart for the camera at
 * rest (labelScene), and move with their points while it turns; tokens whose points are close
 * in 3-D are close on screen from every side, where their labels overprinted ("An, a" over
 * "and", "apple" over "banana") or were pushed far out on lines. So each point, in order, joins
 * the first group whose first point lies within `near` of it (each axis scaled by its span),
 * else starts a group of its own: a group is at most 2 × near across, whatever the order, and
 * the same points always group the same way. Pure.
 * @param {number[][]} points @param {number[]} spans each axis's span (hi − lo)
 * @param {number} [near]
 * @returns {{at: number[], members: number[]}[]} at: the group's mean point; members: its token
 *   indices, in order; the groups in the order of their first token
 */
export function sceneGroups(points, spans, near = SCENE_NEAR) {
  /** @type {{first: number[], members: number[]}[]} */
  const groups = [];
  points.forEach((p, i) => {
    const q = p.map((v, a) => v / (spans[a] || 1));
    const home = groups.find((g) => Math.hypot(...g.first.map((v, a) => v - q[a])) < near);
    if (home) home.members.push(i);
    else groups.push({ first: q, members: [i] });
  });
  return groups.map(({ members }) => ({
    at: points[members[0]].map((_, a) => members.reduce((s, i) => s + points[i][a], 0) / members.length),
    members,
  }));
}

/**
 * The label of one group of a live 3-D scene (sceneGroups), at its point `at`: each token's name
 * in its colour darkened to AA on white, up to SCENE_NAMES of them, then how many more.
 * @param {number[]} at @param {{text: string, shown: string, name: string, color: string}[]} tokens
 *   each token's name as Plotly takes it (escaped), as it reads, as the text box names it, and
 *   its colour
 * @param {number} [size]
 * @returns {LabelSpec}
 */
export function sceneLabel(at, tokens, size = SIZE) {
  const named = tokens.slice(0, SCENE_NAMES);
  const left = tokens.length - named.length;
  const more = left ? ` +${left} more` : "";
  return {
    x: at[0],
    y: at[1],
    z: at[2],
    text:
      named.map((t) => `<span style="color:${readableOnWhite(t.color)}">${t.text}</span>`).join(", ") +
      (more ? `<span style="color:${MUTED}">${more}</span>` : ""),
    shown: named.map((t) => t.shown).join(", ") + more,
    names: tokens.map((t) => t.name),
    more: tokens.slice(SCENE_NAMES).map((t) => t.name),
    color: tokens[0].color,
    size,
  };
}
const MUTED = "#5b6475"; // the page's muted text, AA on white

/** A 4-vector through a 4 × 4 matrix in WebGL's (column-major) order.
 * @param {ArrayLike<number>} m @param {number[]} v */
const transform = (m, v) => [0, 1, 2, 3].map((j) => v.reduce((sum, x, i) => sum + m[4 * i + j] * x, 0));

/**
 * Where the live 3-D scene of `plot` draws a point now, in the plot's pixels (y down), as Plotly
 * places a scene annotation (plots/gl3d/project.js: its camera's model, view and projection; the
 * scene's domain), and the scene's box; null before the scene is drawn.
 * @param {HTMLElement} plot
 */
function scenePixels(plot) {
  const full = /** @type {any} */ (plot)._fullLayout;
  const layout = full?.scene;
  const cam = layout?._scene?.glplot?.cameraParams;
  const scale = layout?._scene?.dataScale;
  const size = full?._size;
  if (!cam?.projection || !scale || !size || !layout.domain) return null;
  const { x: dx, y: dy } = layout.domain;
  const left = size.l + dx[0] * size.w;
  const top = size.t + (1 - dy[1]) * size.h;
  const width = (dx[1] - dx[0]) * size.w;
  const height = (dy[1] - dy[0]) * size.h;
  return {
    /** @type {Box} */ area: { left, top, right: left + width, bottom: top + height },
    /** @param {number[]} p @returns {{x: number, y: number}} */
    at: (p) => {
      const v = [cam.model, cam.view, cam.projection].reduce(
        (u, m) => transform(m, u),
        [p[0] * scale[0], p[1] * scale[1], p[2] * scale[2], 1],
      );
      return { x: left + 0.5 * (1 + v[0] / v[3]) * width, y: top + 0.5 * (1 - v[1] / v[3]) * height };
    },
  };
}

/**
 * Where `labels` go in the live 3-D scene of `plot`, for its camera now; null before it is drawn.
 * @param {HTMLElement} plot @param {LabelSpec[]} labels @param {number[][]} marks 3-D points
 * @returns {Placement[] | null}
 */
function placeInScene(plot, labels, marks) {
  const px = scenePixels(plot);
  if (!px) return null;
  const font = /** @type {any} */ (plot)._fullLayout.font?.family ?? "sans-serif";
  const sized = labels.map((l) => ({
    ...px.at([l.x, l.y, l.z ?? 0]),
    ...measure(l.shown, l.size ?? SIZE, font),
  }));
  return placeLabels(sized, px.area, { marks: marks.map(px.at), blocks: legendBoxes(plot) });
}

/**
 * The scene annotations of `labels` for a draw of the live 3-D scene of `plot` about to be made:
 * placed for its camera as it is (a redraw keeps the camera), or just above their points
 * before the scene is first drawn. labelScene places them again once it is drawn.
 * @param {HTMLElement} plot @param {LabelSpec[]} labels @param {number[][]} [marks]
 */
export function sceneAnnotations(plot, labels, marks = []) {
  const where = placeInScene(plot, labels, marks);
  return labels.map((l, i) => labelAnnotation(l, where ? where[i] : null));
}

/**
 * Keep `labels` of the live 3-D scene of `plot` apart as labelPlot keeps a 2-D plot's: placed
 * where its camera draws their points now (after a draw), and again after each turn of the
 * scene or resize; one with no room is left off, and the text box names it (and the tokens a
 * shared label leaves unnamed). `marks`: the scene's points [x, y, z] the labels should not
 * cover. Empty `labels` stop it.
 * @param {HTMLElement} plot @param {LabelSpec[]} labels @param {number[][]} [marks]
 * @returns {Promise<void>}
 */
export function labelScene(plot, labels, marks = []) {
  return keep(plot, labels, marks, true);
}
