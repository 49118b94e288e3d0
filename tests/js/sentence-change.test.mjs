// modes/sentence/change.js: the one way sentence mode's state changes, and what each key feeds.
import assert from "node:assert/strict";
import { test } from "node:test";

import { defaultSentence } from "../../static/js/core/state.js";
import { createChange } from "../../static/js/modes/sentence/change.js";

function setup() {
  const calls = [];
  const app = /** @type {any} */ ({ s: defaultSentence("m", "a b") });
  const { change, replace } = createChange({
    app,
    edited: (delay) => calls.push(["edited", delay]),
    viewChanged: (keys) => calls.push(["views", keys]),
    changed: () => calls.push(["link"]),
  });
  return { app, change, replace, calls };
}

test("a view's key redraws what it feeds; a trace's key asks for a trace; `more` writes the link", () => {
  const { app, change, calls } = setup();
  assert.deepEqual(change({ layer: 2, query: 3 }), ["layer", "query"]);
  assert.equal(app.s.layer, 2);
  change({ text: "x y" });
  change({ ablate: [], step: null }, { delay: 0 }); // a trace's key among them: the trace
  change({ more: ["qk"] });
  assert.deepEqual(calls, [["views", ["layer", "query"]], ["edited", undefined], ["edited", 0], ["link"]]);
  assert.deepEqual(app.s.more, ["qk"]);
});

test("quiet changes the state alone; fit keeps the choices inside a model's shape", () => {
  const { app, change, replace, calls } = setup();
  change({ layer: 9, head: 7, query: 12 }, { quiet: true, fit: [4, 6, 10] });
  assert.deepEqual([app.s.layer, app.s.head, app.s.query], [3, 5, null]);
  assert.deepEqual(calls, []);
  replace({ ...defaultSentence("n", "c"), layer: 8 }, [2, 2]);
  assert.equal(app.s.model, "n");
  assert.equal(app.s.layer, 1);
  assert.deepEqual(calls, []);
});
