// The label layout of the token vectors and the trajectories (static/js/core/labels.js): each
// label beside its point where it is free, further out with a leader line where it is not,
// left off where nothing is free; never two over each other, never outside the plot's area.
import assert from "node:assert/strict";
import { test } from "node:test";

import { DIRECTIONS, labelAnnotation, overlaps, placeLabels } from "../../static/js/core/labels.js";

const AREA = { left: 0, top: 0, right: 400, bottom: 300 };

/** The box each placed label takes. */
function boxes(labels, placed) {
  return labels.flatMap((l, i) => {
    const p = placed[i];
    if (p.state !== "near" && p.state !== "leader") return [];
    const cx = l.x + p.dx;
    const cy = l.y + p.dy;
    return [{ left: cx - l.w / 2, right: cx + l.w / 2, top: cy - l.h / 2, bottom: cy + l.h / 2 }];
  });
}

function assertApartAndInside(labels, placed, area = AREA) {
  const b = boxes(labels, placed);
  for (let i = 0; i < b.length; i++) {
    assert.ok(b[i].left >= area.left && b[i].right <= area.right, `box ${i} inside across`);
    assert.ok(b[i].top >= area.top && b[i].bottom <= area.bottom, `box ${i} inside down`);
    for (let j = i + 1; j < b.length; j++) assert.ok(!overlaps(b[i], b[j]), `boxes ${i} and ${j} overlap`);
  }
}

test("a lone label sits just above its point", () => {
  const [p] = placeLabels([{ x: 200, y: 150, w: 40, h: 20 }], AREA);
  assert.equal(p.state, "near");
  assert.equal(p.dx, 0);
  assert.ok(p.dy < -10 && p.dy > -20, `dy ${p.dy}`);
});

test("two labels of one point take two spots beside it, the first keeps the top", () => {
  const labels = [
    { x: 200, y: 150, w: 40, h: 20 },
    { x: 200, y: 150, w: 40, h: 20 },
  ];
  const placed = placeLabels(labels, AREA);
  assert.deepEqual(
    placed.map((p) => p.state),
    ["near", "near"],
  );
  assert.equal(placed[0].dx, 0);
  assert.ok(placed[1].dx > 0, "the second goes to the right");
  assertApartAndInside(labels, placed);
});

test("a label at the top edge goes below its point, inside the area", () => {
  const labels = [{ x: 200, y: 5, w: 40, h: 20 }];
  const [p] = placeLabels(labels, AREA);
  assert.equal(p.state, "near");
  assert.ok(p.dy >= 0, "not above the area");
  assertApartAndInside(labels, [p]);
});

test("a label keeps off the points, and off a block (the legend)", () => {
  const above = placeLabels([{ x: 200, y: 150, w: 40, h: 20 }], AREA, { marks: [{ x: 200, y: 135 }] });
  assert.notEqual(above[0].dx, 0, "not on the point above");
  const legend = { left: 150, top: 100, right: 250, bottom: 145 };
  const [p] = placeLabels([{ x: 200, y: 150, w: 40, h: 20 }], AREA, { blocks: [legend] });
  assert.ok(p.dy > 0, "below, clear of the legend");
});

test("a crowd: the first labels beside the point, then leader lines, then left off; none overlap", () => {
  const labels = Array.from({ length: 60 }, (_, i) => ({ x: 200 + (i % 3), y: 150 + (i % 2), w: 30 + i, h: 18 }));
  const placed = placeLabels(labels, AREA);
  const states = placed.map((p) => p.state);
  assert.equal(states[0], "near");
  assert.ok(states.includes("leader") && states.includes("crowded"), states.join());
  assert.equal(states.filter((s) => s === "near").length <= DIRECTIONS.length, true);
  assertApartAndInside(labels, placed);
});

test("random layouts: placed labels never overlap and stay inside", () => {
  let seed = 7;
  const rand = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  for (let round = 0; round < 40; round++) {
    const labels = Array.from({ length: 5 + Math.floor(rand() * 40) }, () => ({
      x: rand() * 400,
      y: rand() * 300,
      w: 12 + rand() * 60,
      h: 17,
    }));
    const marks = labels.map((l) => ({ x: l.x, y: l.y }));
    assertApartAndInside(labels, placeLabels(labels, AREA, { marks }));
  }
});

test("a point outside the area (zoomed away) gets no label", () => {
  const [p] = placeLabels([{ x: 500, y: 150, w: 40, h: 20 }], AREA);
  assert.equal(p.state, "outside");
});

test("the annotation of each placement: shifted, on a leader line, or hidden", () => {
  const spec = { x: 1, y: 2, text: "a&amp;b", shown: "a&b", names: ["a&b"], color: "#4e79a7" };
  const near = labelAnnotation(spec, { dx: 10, dy: -12, state: "near" });
  assert.deepEqual([near.showarrow, near.xshift, near.yshift], [false, 10, 12]);
  const far = labelAnnotation(spec, { dx: -30, dy: 25, state: "leader" });
  assert.deepEqual([far.showarrow, far.ax, far.ay, far.arrowhead], [true, -30, 25, 0]);
  assert.equal(labelAnnotation(spec, { dx: 0, dy: 0, state: "crowded" }).visible, false);
  assert.equal(labelAnnotation(spec, null).text, "a&amp;b");
});
