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

test("the cell open and the comparison in view travel too, and read back the same", () => {
  // Issue 41: a teacher opens step 13's cell and step 1's comparison as the learner left them.
  const link = {
    run: "0a1b",
    settings: { task: "induction" },
    view: { variant: 0, layer: 1, head: 2, query: 13, key: 2 },
  };
  const hash = encodeTrainLink(link);
  assert.equal(hash, "#train/0a1b?task=induction&at=0.1.2&cell=13.2");
  assert.deepEqual(decodeTrainLink(hash), link);
  // A cell without a head is none; a malformed cell leaves the head.
  assert.deepEqual(decodeTrainLink("#train/0a1b?task=induction&cell=13.2"), { ...link, view: null });
  assert.deepEqual(decodeTrainLink("#train/0a1b?task=induction&at=0.1.2&cell=13"), {
    ...link,
    view: { variant: 0, layer: 1, head: 2 },
  });
  const compared = { run: null, settings: { task: "copy" }, view: null, comparison: "r1-ff00" };
  assert.equal(encodeTrainLink(compared), "#train?task=copy&comparison=r1-ff00");
  assert.deepEqual(decodeTrainLink(encodeTrainLink(compared)), compared);
  // None of the link's own names is taken for a setting of the form.
  assert.deepEqual(decodeTrainLink("#train?comparison=&at=&cell=").settings, {});
});
