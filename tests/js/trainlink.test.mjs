// modes/train/link.js: a Train tab link, `#train/<run id>?<the form's settings>`, both ways.
import assert from "node:assert/strict";
import { test } from "node:test";

import { decodeTrainLink, encodeTrainLink } from "../../static/js/modes/train/link.js";

test("a run and the form's settings make a link that reads back the same", () => {
  const link = { run: "r1-0a1b2c3d4e", settings: { task: "induction", layers: "2", lr: "0.003", scale: "1" } };
  const hash = encodeTrainLink(link);
  assert.equal(hash, "#train/r1-0a1b2c3d4e?task=induction&layers=2&lr=0.003&scale=1");
  assert.deepEqual(decodeTrainLink(hash), { ...link, view: null });
  // The head the reader chose travels too (a teacher opens the learner's view), 0-based.
  const chosen = { ...link, view: { variant: 1, layer: 0, head: 3 } };
  assert.equal(encodeTrainLink(chosen), `${hash}&at=1.0.3`);
  assert.deepEqual(decodeTrainLink(encodeTrainLink(chosen)), chosen);
  assert.deepEqual(decodeTrainLink(`${hash}&at=1.x.3`), { ...link, view: null }, "a malformed head is none");
});

test("without a run, or without settings, the link is shorter; old #train links still read", () => {
  assert.equal(encodeTrainLink({ run: null, settings: { task: "copy" } }), "#train?task=copy");
  assert.deepEqual(decodeTrainLink("#train?task=copy"), { run: null, settings: { task: "copy" }, view: null });
  assert.equal(encodeTrainLink({ run: "abc", settings: {} }), "#train/abc");
  assert.deepEqual(decodeTrainLink("#train"), { run: null, settings: {}, view: null });
  assert.deepEqual(decodeTrainLink("#train/"), { run: null, settings: {}, view: null });
});

test("an id with odd characters is escaped, and another mode's link is not a Train link", () => {
  const hash = encodeTrainLink({ run: "a/b?c", settings: {} });
  assert.equal(hash, "#train/a%2Fb%3Fc");
  assert.equal(decodeTrainLink(hash)?.run, "a/b?c");
  assert.equal(decodeTrainLink("#train/%E0%A4%A")?.run, "%E0%A4%A"); // kept as it came
  for (const other of ["", "#", "#s=abc", "#trainer", "#toy"]) assert.equal(decodeTrainLink(other), null, other);
});
