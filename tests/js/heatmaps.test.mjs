// The toy lab's heatmaps' key axis: level labels only where every one fits its column.
import { test } from "node:test";
import assert from "node:assert/strict";

const { keyTickAngle } = await import("../../static/js/views/heatmaps.js");

test("key labels stay level where they fit their columns, else slant", () => {
  const apple = ["An", "apple", "and", "a", "banana"];
  // 1280 px: 5 columns of about 45 px; "banana" at 13 px is about 48 px wide.
  assert.equal(keyTickAngle(apple, 70), 0);
  assert.equal(keyTickAngle(apple, 40), -60, "banana does not fit 40 px");
  // Step 7's sentence at 480 px: 11 columns of about 23 px ("because" cannot fit).
  const street = "The animal didn't cross the street because it was too tired".split(" ");
  assert.equal(keyTickAngle(street, 23), -60);
  assert.equal(keyTickAngle(street, 80), 0);
  // Past 12 tokens: always slanted.
  assert.equal(
    keyTickAngle(
      Array.from({ length: 13 }, () => "a"),
      500,
    ),
    -60,
  );
});
