// views/knockout.js's numbers: each position's loss is -ln p of the next token, the change is
// knocked out - clean, a changed top prediction is one whose id differs, and the largest
// attention change is the cell of largest |knocked out - clean|, named in the summary.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  changeText,
  knockedWords,
  largestChange,
  lossOf,
  lossRows,
  movedRows,
  movedText,
  summaryText,
} from "../../static/js/views/knockout.js";

const arr = (shape, values) => ({ dtype: "F32", shape, data: Float32Array.from(values) });
const pred = (target, ids, probs) => ({
  target: arr([target.length], target),
  ids: arr([ids.length, 1], ids),
  probs: arr([probs.length, 1], probs),
  k: 1,
  vocab: { 5: "cat", 6: "dog", 7: "sat" },
});

const DATA = {
  tokens: ["the", "cat", "sat"],
  what: "layer 1 head 2 (zero)",
  predictions: {
    clean: pred([0.5, 0.25, 0], [5, 7, 5], [0.5, 0.3, 0.2]),
    knocked: pred([0.25, 0.25, 0], [6, 7, 5], [0.4, 0.3, 0.2]),
  },
  diff: {
    layer: 1,
    head: 0,
    clean: arr([3, 3], [1, 0, 0, 0.5, 0.5, 0, 0.2, 0.3, 0.5]),
    knocked: arr([3, 3], [1, 0, 0, 0.9, 0.4, 0, 0.2, 0.3, 0.5]),
  }, // (not weights: one change stands out)
};

test("losses are -ln p, clean and knocked out, for every position with a next token", () => {
  const rows = lossRows(DATA);
  assert.equal(rows.length, 2); // the last token has no next
  assert.equal(rows[0].clean, Math.log(2));
  assert.equal(rows[0].knocked, Math.log(4));
  assert.equal(rows[0].change, Math.log(4) - Math.log(2));
  assert.equal(rows[1].change, 0);
  assert.deepEqual([rows[0].topClean.label, rows[0].topKnocked.label, rows[1].topKnocked.label], ["cat", "dog", "sat"]);
  assert.equal(lossOf(1), -0);
  assert.deepEqual(lossRows({ ...DATA, predictions: null }), []);
});

test("the largest change and the summary name the cell and the head", () => {
  const big = largestChange(DATA.diff.clean, DATA.diff.knocked);
  assert.deepEqual([big.i, big.j], [1, 0]);
  assert.ok(Math.abs(big.value - 0.4) < 1e-6);
  assert.equal(changeText(DATA), "Largest change: layer 2 head 1, “cat” → “the” +0.4.");
  const text = summaryText(DATA);
  assert.ok(
    text.startsWith(
      "Knocked out layer 1 head 2 (zero). Mean loss 1.04 → 1.39 (+0.347) over 2 positions; " +
        "1 of 2 top predictions changed.",
    ),
    text,
  );
  const same = { ...DATA, diff: { ...DATA.diff, knocked: DATA.diff.clean } };
  assert.equal(changeText(same), "Layer 2 head 1's attention did not change.");
});

test("with no later layer there is no map; the output's move is named where it is largest", () => {
  const last = { ...DATA, diff: null, noDiff: "Layer 2 is the model's last.", moved: [0.01, 0.125, 0] };
  assert.equal(changeText(last), "");
  assert.equal(movedText(last), "The output moved most at “cat”: by 13% of its length.");
  const text = summaryText(last);
  assert.ok(text.endsWith("changed. The output moved most at “cat”: by 13% of its length."), text);
  assert.equal(movedText({ ...last, moved: [0, 0, 0] }), "No token's output changed.");
  // A move that is not none never reads "0%", nor one short of the whole length "100%".
  assert.equal(
    movedText({ ...last, moved: [0.004, 0.001, 0] }),
    "The output moved most at “the”: by under 1% of its length.",
  );
  assert.equal(
    movedText({ ...last, moved: [0, 0.996, 0] }),
    "The output moved most at “cat”: by over 99% of its length.",
  );
  assert.equal(movedText({ ...last, moved: [0, 0, 1.25] }), "The output moved most at “sat”: by 125% of its length.");
});

test("the summary's numbers read by the rules: 3 significant digits, never 1 short of it, no exponent", () => {
  // A knock-out that changes almost nothing: the mean loss's change is said, never "+0.000".
  const near = {
    ...DATA,
    predictions: {
      clean: pred([0.5, 0.25, 0], [5, 7, 5], [0.9996, 0.997, 0.2]),
      knocked: pred([0.49999, 0.25, 0], [5, 7, 5], [0.9996, 0.997, 0.2]),
    },
    diff: {
      layer: 1,
      head: 0,
      clean: arr([2, 2], [1, 0, 0.5, 0.5]),
      knocked: arr([2, 2], [1, 0, 0.50003, 0.5]),
    },
  };
  const text = summaryText(near);
  assert.match(text, /^Knocked out layer 1 head 2 \(zero\)\. Mean loss 1\.04 → 1\.04 \(about \+0\.00001\) over 2/);
  const change = changeText(near);
  assert.match(change, /^Largest change: layer 2 head 1, “cat” → “the” about \+0\.00003\.$/);
  // A weight's change short of 1 never reads "1".
  const most = { ...near, diff: { ...near.diff, knocked: arr([2, 2], [0.0002, 0.9998, 0.5, 0.5]) } };
  assert.equal(changeText(most), "Largest change: layer 2 head 1, “the” → “cat” over +0.999.");
  assert.doesNotMatch(summaryText(most), /\b1\.0+\b|[+−]1\b|e-\d/);
});

test("knockedWords: the heads and how, in words, never the setting's name (issue 41)", () => {
  assert.equal(knockedWords([{ layer: 5, head: 11 }], "zero"), "layer 6 head 12 by zeroing its output");
  assert.equal(
    knockedWords(
      [
        { layer: 0, head: 1 },
        { layer: 1, head: 3 },
      ],
      "mean",
    ),
    "layer 1 head 2, layer 2 head 4 by replacing their outputs with their means over the text",
  );
  assert.equal(
    knockedWords([{ layer: 0, head: 0 }], "patch", "a dog"),
    "layer 1 head 1 by replacing its output with its output on “a dog”",
  );
});

test("how far each output moved: a list read as prose, each share as the summary says it", () => {
  const data = { ...DATA, tokens: ["the", "cat", "sat", "on", "mat"], moved: [0.125, 0.004, 0, 0.9996, 1.5] };
  const rows = movedRows(data);
  assert.deepEqual(
    rows.map((r) => [r.token, r.said]),
    [
      ["the", "13%"],
      ["cat", "under 1%"], // never "0.4%" to a fixed decimal, nor "0%" for a move that is not none
      ["sat", "0%"],
      ["on", "over 99%"], // never "100%" short of all of it
      ["mat", "150%"],
    ],
  );
  assert.deepEqual(
    rows.map((r) => r.value),
    data.moved,
  ); // the exact share stays with the row
  // The row that moved most reads as the summary's sentence says it.
  assert.ok(movedText(data).endsWith(`by ${rows[4].said} of its length.`), movedText(data));
  assert.deepEqual(movedRows({ ...DATA, moved: undefined }), []);
});
