// The head atlas view's pure parts: every cell colour keeps its number readable (WCAG AA, 4.5:1
// at least, on every level of the weight scale), and the text alternative names the strongest
// heads in order, with a positional head's offset.
import assert from "node:assert/strict";
import { test } from "node:test";

import { cellColours, cellText, headWords, mostVaried, spread, strongest } from "../../static/js/views/atlas.js";

/** @param {string} css "rgb(r,g,b)" or "#rrggbb" */
function luminance(css) {
  const rgb = css.startsWith("#")
    ? [1, 3, 5].map((i) => parseInt(css.slice(i, i + 2), 16))
    : css.slice(4, -1).split(",").map(Number);
  const [r, g, b] = rgb.map((c) => (c / 255 <= 0.03928 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4));
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

test("every level of the scale keeps the cell's number at 4.5:1 or more", () => {
  let worst = Infinity;
  for (let i = 0; i <= 255; i++) {
    const { background, color } = cellColours(i / 255);
    const [a, b] = [luminance(background), luminance(color)];
    worst = Math.min(worst, (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05));
  }
  assert.ok(worst >= 4.5, `lowest contrast ${worst.toFixed(2)}`);
  assert.equal(cellColours(0).color, "#000000"); // black on the lightest
  assert.equal(cellColours(1).color, "#ffffff"); // white on the darkest
  assert.deepEqual(cellColours(2), cellColours(1)); // clamped
});

test("the strongest heads in words, best first, ties in layer and head order", () => {
  const score = {
    name: "induction",
    title: "induction",
    definition: "",
    offsets: null,
    grid: [
      [0.1, 0.82],
      [0.82, 0.3],
    ],
  };
  assert.equal(strongest(score, 3), "induction: layer 1 head 2 0.82, layer 2 head 1 0.82, layer 2 head 2 0.3");
  const positional = {
    ...score,
    title: "positional",
    offsets: [
      [0, 1],
      [-2, 3],
    ],
  };
  assert.equal(headWords(positional, 1, 0), "layer 2 head 1 0.82 at offset -2");
});

test("the atlas opens on the score that varies most over the heads, the first on a tie", () => {
  const score = (/** @type {string} */ name, /** @type {number[][]} */ grid) => ({
    name,
    title: name,
    definition: "",
    offsets: null,
    grid,
  });
  const flat = score("induction", [
    [0.01, 0.02],
    [0.01, 0.0],
  ]);
  const sink = score("first_token", [
    [0.9, 0.1],
    [0.5, 0.2],
  ]);
  assert.equal(spread(score("same", [[0.3, 0.3]])), 0);
  assert.ok(Math.abs(spread(score("two", [[0, 1]])) - 0.5) < 1e-12);
  assert.equal(mostVaried([flat, sink]).name, "first_token");
  assert.equal(mostVaried([sink, score("again", sink.grid)]).name, "first_token");
});

test("a score reads by the readable rules: 3 significant digits, never 1 short of it nor 0 above it", () => {
  const score = {
    name: "previous_token",
    title: "previous token",
    definition: "",
    offsets: null,
    grid: [[0.9996, 0.997, 0.00004, 0, 1, 0.123456]],
  };
  assert.equal(
    strongest(score, 6),
    "previous token: layer 1 head 5 1, layer 1 head 1 over 0.999, layer 1 head 2 0.997, " +
      "layer 1 head 6 0.123, layer 1 head 3 under 0.001, layer 1 head 4 0",
  );
  assert.equal(headWords(score, 0, 0, cellText), "layer 1 head 1 >0.99"); // the button's name
  // A cell keeps 2 decimals, but never "1.00" short of 1 nor "0.00" above 0 (they read so before).
  assert.deepEqual(score.grid[0].map(cellText), [">0.99", ">0.99", "<0.01", "0.00", "1.00", "0.12"]);
});
