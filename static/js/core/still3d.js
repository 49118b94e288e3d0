// A 3-D scene drawn as a still picture with the page's 2-D Plotly: points projected along one
// camera (orthographic), in a cube whose three back walls carry the grid, the zero lines and
// the ticks, as Plotly's own 3-D scene draws them. It costs what any 2-D plot costs (no WebGL,
// no 3-D bundle), so a view can open on it and draw the live scene when asked.

import { AXIS, GRID, TEXT_DIM } from "./theme.js";

/** @typedef {[number, number, number]} Vec3 */

/** @param {Vec3} a @param {Vec3} b @returns {Vec3} */
const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
/** @param {Vec3} a @param {Vec3} b */
const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
/** @param {Vec3} a @returns {Vec3} */
const unit = (a) => {
  const n = Math.hypot(...a);
  return [a[0] / n, a[1] / n, a[2] / n];
};

/** Ticks at 1, 2 or 5 times a power of ten, about `count` of them within [lo, hi]. */
export function niceTicks(lo, hi, count = 6) {
  const raw = (hi - lo) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const out = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    out.push(Math.abs(t) < step * 1e-9 ? 0 : Number(t.toPrecision(12)));
  }
  return { ticks: out, step };
}

/**
 * A camera on the cube [lo, hi]³ (every axis the same range, as the views' shared one), seen
 * from `eye` (Plotly's scene.camera.eye: +z up).
 * @param {[number, number]} range @param {Vec3} eye
 */
export function camera(range, eye) {
  const [lo, hi] = range;
  const forward = unit(/** @type {Vec3} */ ([-eye[0], -eye[1], -eye[2]]));
  const right = unit(cross(forward, [0, 0, 1]));
  const up = cross(right, forward);
  /** The point in the cube's own units, -1 to 1 per axis. @param {number[]} p @returns {Vec3} */
  const cube = (p) => /** @type {Vec3} */ (p.map((v) => ((v - lo) / (hi - lo)) * 2 - 1));
  return {
    range,
    /** Where a point lands on the picture (x right, y up). @param {number[]} p @returns {[number, number]} */
    at: (p) => {
      const c = cube(p);
      return [dot(c, right), dot(c, up)];
    },
    /** The cube's wall on each axis farther from the camera: its value there. */
    back: /** @type {Vec3} */ (eye.map((e) => (e > 0 ? lo : hi))),
    /** And the nearer one. */
    front: /** @type {Vec3} */ (eye.map((e) => (e > 0 ? hi : lo))),
  };
}

/**
 * The cube's frame as 2-D traces, drawn under everything else: the back walls' grid and zero
 * lines, their edges, each axis's ticks along a front edge and its title beyond them.
 * @param {ReturnType<typeof camera>} cam @param {string[]} titles
 * @returns {any[]}
 */
export function frame(cam, titles) {
  const [lo, hi] = cam.range;
  const { ticks } = niceTicks(lo, hi);
  const { back, front } = cam;
  /** @type {{x: (number|null)[], y: (number|null)[]}} */
  const grid = { x: [], y: [] };
  const zero = { x: /** @type {(number|null)[]} */ ([]), y: /** @type {(number|null)[]} */ ([]) };
  const edges = { x: /** @type {(number|null)[]} */ ([]), y: /** @type {(number|null)[]} */ ([]) };
  /** @param {typeof grid} into @param {number[]} a @param {number[]} b */
  const segment = (into, a, b) => {
    const [x0, y0] = cam.at(a);
    const [x1, y1] = cam.at(b);
    into.x.push(x0, x1, null);
    into.y.push(y0, y1, null);
  };
  // Each back wall: the plane where axis `w` is at its back value; on it, lines along the two
  // other axes at every tick of the other.
  for (let w = 0; w < 3; w++) {
    const [a, b] = [0, 1, 2].filter((i) => i !== w);
    for (const [along, across] of [
      [a, b],
      [b, a],
    ]) {
      for (const t of [lo, ...ticks, hi]) {
        const start = [0, 0, 0];
        const end = [0, 0, 0];
        start[w] = end[w] = back[w];
        start[across] = end[across] = t;
        start[along] = lo;
        end[along] = hi;
        segment(t === lo || t === hi ? edges : t === 0 ? zero : grid, start, end);
      }
    }
  }
  const line = (/** @type {typeof grid} */ seg, /** @type {string} */ color, /** @type {number} */ width) => ({
    type: "scatter",
    mode: "lines",
    ...seg,
    line: { color, width },
    hoverinfo: "skip",
    showlegend: false,
  });
  /** @type {any[]} */
  const traces = [line(grid, GRID, 1), line(zero, AXIS, 1.5), line(edges, "#c9ced6", 1)];
  // Ticks along the edge of each axis that lies on the floor (or, for the vertical axis, on
  // the left), the labels pushed out from the cube's middle.
  const middle = cam.at([(lo + hi) / 2, (lo + hi) / 2, (lo + hi) / 2]);
  // (the vertical axis's labels end at their point, left of the edge; the others centre on it)
  /** @type {{x: number[], y: number[], text: string[], textposition: string[]}} */
  const labels = { x: [], y: [], text: [], textposition: [] };
  /** @type {{x: number[], y: number[], text: string[], textposition: string[]}} */
  const names = { x: [], y: [], text: [], textposition: [] };
  for (let axis = 0; axis < 3; axis++) {
    const edge = [0, 0, 0];
    if (axis === 2) {
      // the vertical edge farthest left on the picture
      const corners = [
        [lo, lo],
        [lo, hi],
        [hi, lo],
        [hi, hi],
      ];
      const left = corners.reduce((best, c) =>
        cam.at([c[0], c[1], lo])[0] < cam.at([best[0], best[1], lo])[0] ? c : best,
      );
      [edge[0], edge[1]] = left;
    } else {
      const other = 1 - axis;
      edge[other] = front[other];
      edge[2] = back[2];
    }
    const out = (/** @type {number} */ t, /** @type {number} */ far) => {
      const p = [...edge];
      p[axis] = t;
      const [x, y] = cam.at(p);
      const dx = x - middle[0];
      const dy = axis === 2 ? 0 : y - middle[1];
      const n = Math.hypot(dx, dy) || 1;
      return [x + (far * dx) / n, y + (far * dy) / n];
    };
    const where = axis === 2 ? "middle left" : "middle center";
    for (const t of ticks) {
      const [x, y] = out(t, axis === 2 ? 0.06 : 0.12);
      labels.x.push(x);
      labels.y.push(y);
      labels.text.push(String(t));
      labels.textposition.push(where);
    }
    const [x, y] = out((lo + hi) / 2, axis === 2 ? 0.26 : 0.32);
    names.x.push(x);
    names.y.push(y);
    names.text.push(titles[axis] ?? "");
    names.textposition.push(where);
  }
  const text = (/** @type {typeof labels} */ t, /** @type {number} */ size, /** @type {string} */ uid) => ({
    type: "scatter",
    mode: "text",
    uid,
    ...t,
    textfont: { size, color: TEXT_DIM },
    hoverinfo: "skip",
    showlegend: false,
  });
  traces.push(text(labels, 11, "ticks"), text(names, 14, "axis-titles"));
  return traces;
}
