// static/js/core/still3d.js: the still picture of a 3-D scene. Its camera is an orthographic
// projection seen from Plotly's scene.camera.eye with +z up; its frame is the cube's back
// walls, ticks and titles.
import assert from "node:assert/strict";
import { test } from "node:test";

import { camera, frame, niceTicks } from "../../static/js/core/still3d.js";

const EYE = [1.45, -1.5, 0.75]; // views/vectors.js's camera
const close = (a, b, tol = 1e-12) => assert.ok(Math.abs(a - b) <= tol, `${a} != ${b}`);

test("ticks are 1, 2 or 5 times a power of ten, inside the range", () => {
  assert.deepEqual(niceTicks(-0.05, 1.1), { ticks: [0, 0.2, 0.4, 0.6, 0.8, 1], step: 0.2 });
  assert.deepEqual(niceTicks(-3, 7).ticks, [-2, 0, 2, 4, 6]);
  assert.deepEqual(niceTicks(0, 0.003).ticks, [0, 0.0005, 0.001, 0.0015, 0.002, 0.0025, 0.003]);
});

test("the camera projects along the eye: the centre at the middle, z up, a linear map", () => {
  const cam = camera([-1, 3], EYE);
  const [cx, cy] = cam.at([1, 1, 1]);
  close(cx, 0);
  close(cy, 0);
  // +z straight up the picture; x to the right and down, y to the right and up (as Plotly's
  // scene shows this eye).
  const [zx, zy] = cam.at([1, 1, 3]);
  close(zx, 0);
  assert.ok(zy > 0);
  const [xx, xy] = cam.at([3, 1, 1]);
  assert.ok(xx > 0 && xy < 0);
  const [yx, yy] = cam.at([1, 3, 1]);
  assert.ok(yx > 0 && yy > 0);
  // Orthographic: a point along the eye lands on the centre.
  const n = Math.hypot(...EYE);
  const along = cam.at(EYE.map((e) => 1 + e / n)); // (the cube's unit is half the range: 2)
  close(along[0], 0);
  close(along[1], 0);
  // Every corner of the cube within sqrt(3) of the centre.
  for (const x of [-1, 3])
    for (const y of [-1, 3])
      for (const z of [-1, 3]) assert.ok(Math.hypot(...cam.at([x, y, z])) <= Math.sqrt(3) + 1e-12);
  // The walls farther from this eye: x low, y high, z low.
  assert.deepEqual(cam.back, [-1, 3, -1]);
  assert.deepEqual(cam.front, [3, -1, 3]);
});

test("the frame names every tick of each axis and each axis's title", () => {
  const cam = camera([-0.05, 1.1], EYE);
  const traces = frame(cam, ["tech", "fruit", "grammar"]);
  const ticks = traces.find((t) => t.uid === "ticks");
  const each = ["0", "0.2", "0.4", "0.6", "0.8", "1"];
  assert.deepEqual(ticks.text, [...each, ...each, ...each]);
  assert.deepEqual(traces.find((t) => t.uid === "axis-titles").text, ["tech", "fruit", "grammar"]);
  assert.ok(traces.every((t) => t.hoverinfo === "skip" && t.showlegend === false));
});
