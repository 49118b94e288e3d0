// The label layout of the token vectors and the trajectories (static/js/core/labels.js): each
// label beside its point where it is free, further out with a leader line where it is not,
// left off where nothing is free; never two over each other, never outside the plot's area.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  DIRECTIONS,
  SCENE_NAMES,
  labelAnnotation,
  overlaps,
  placeLabels,
  sceneGroups,
  sceneLabel,
} from "../../static/js/core/labels.js";

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

test("a live 3-D scene: tokens within a tenth of the span share one label, the same at any order", () => {
  // The apple/banana example after layer 1 (An and a on one point, and near them; apple near
  // banana), on axes spanning 1.16.
  const points = [
    [0.1, 0.23, 0.61],
    [0.21, 0.42, 0.39],
    [0.12, 0.27, 0.56],
    [0.1, 0.23, 0.61],
    [0.17, 0.39, 0.42],
  ];
  const groups = sceneGroups(points, [1.16, 1.16, 1.16]);
  assert.deepEqual(
    groups.map((g) => g.members),
    [
      [0, 2, 3],
      [1, 4],
    ],
  );
  groups[1].at.forEach((v, a) => assert.ok(Math.abs(v - (points[1][a] + points[4][a]) / 2) < 1e-12));
  // Each axis scaled by its own span: 0.05 apart on an axis spanning 0.2 is a quarter of it.
  assert.equal(
    sceneGroups(
      [
        [0, 0, 0],
        [0.05, 0, 0],
      ],
      [0.2, 10, 10],
    ).length,
    2,
  );
  assert.equal(
    sceneGroups(
      [
        [0, 0, 0],
        [0.05, 0, 0],
      ],
      [1, 10, 10],
    ).length,
    1,
  );
  // A chain of close points does not make one long group: each joins a group by its first point.
  const chain = Array.from({ length: 10 }, (_, i) => [i * 0.06, 0, 0]);
  for (const g of sceneGroups(chain, [1, 1, 1])) {
    const xs = g.members.map((i) => chain[i][0]);
    assert.ok(Math.max(...xs) - Math.min(...xs) < 0.2, String(xs));
  }
});

test("a live 3-D scene's label names its tokens in their colours, then how many more", () => {
  const tokens = ["the", "cat", "sat", "on", "the", "mat"].map((t, i) => ({
    text: t,
    shown: t,
    name: `${t} (${i + 1})`,
    color: i % 2 ? "#edc948" : "#4e79a7",
  }));
  const two = sceneLabel([1, 2, 3], tokens.slice(0, 2));
  assert.equal(two.shown, "the, cat");
  assert.deepEqual([two.x, two.y, two.z], [1, 2, 3]);
  assert.deepEqual(two.more, []);
  assert.match(
    two.text,
    /^<span style="color:#[0-9a-f]{6}">the<\/span>, <span style="color:#[0-9a-f]{6}">cat<\/span>$/,
  );
  assert.ok(!two.text.includes("#edc948")); // the yellow darkened to read on white
  const six = sceneLabel([0, 0, 0], tokens);
  assert.equal(six.shown, `the, cat, sat, on +${6 - SCENE_NAMES} more`);
  assert.deepEqual(
    six.names,
    tokens.map((t) => t.name),
  );
  assert.deepEqual(six.more, ["the (5)", "mat (6)"]);
  // As a scene annotation: its point's z, none of a 2-D plot's axis references.
  const ann = labelAnnotation(six, null);
  assert.equal(ann.z, 0);
  assert.equal("xref" in ann, false);
});
