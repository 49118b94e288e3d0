// modes/sentence/showwith.js: where the chosen model predicts nothing, the model offered
// (the server's `predicting`), how it is named, and the characters of a text it cannot read,
// listed in words.
import assert from "node:assert/strict";
import { test } from "node:test";

import { listed, modelName, offered, unreadable } from "../../static/js/modes/sentence/showwith.js";

const shipped = {
  name: "charlm-pydoc",
  title: "Tiny character model (Python's help text)",
  characters: "\n !\"'.,abcdefghijklmnopqrstuvwxyzIT",
};
const minilm = { name: "all-MiniLM-L6-v2", title: null, characters: null };
const models = /** @type {any} */ ({ models: [minilm, shipped], predicting: "charlm-pydoc" });

test("the model offered is the server's predicting one, unless it is the one chosen", () => {
  assert.equal(offered(models, "all-MiniLM-L6-v2"), shipped);
  assert.equal(offered(models, "charlm-pydoc"), null);
  assert.equal(offered({ ...models, predicting: null }, "all-MiniLM-L6-v2"), null);
  assert.equal(offered({ ...models, predicting: "gone" }, "all-MiniLM-L6-v2"), null);
  assert.equal(offered(null, "all-MiniLM-L6-v2"), null);
});

test("a model is named by its title when it has one and no run, else by its name", () => {
  assert.equal(modelName(/** @type {any} */ (shipped)), "Tiny character model (Python's help text)");
  assert.equal(modelName(/** @type {any} */ (minilm)), "all-MiniLM-L6-v2");
  const run = { name: "r0123abcd", title: "induction, 2 layers", run: "r0123abcd", created: null };
  assert.equal(modelName(/** @type {any} */ (run)), "induction, 2 layers"); // never the id
});

test("the characters a character model cannot read, each once, in order of first use", () => {
  assert.deepEqual(unreadable(/** @type {any} */ (shipped), "It\u2019s a caf\u00e9, it\u2019s $5."), [
    "\u2019",
    "\u00e9",
    "$",
    "5",
  ]);
  assert.deepEqual(unreadable(/** @type {any} */ (shipped), "It's a cafe."), []);
  assert.deepEqual(unreadable(/** @type {any} */ (minilm), "anything \u00e9"), []); // not a character model
});

test("characters listed as a sentence says them", () => {
  assert.equal(listed(["\u2019"]), "“\u2019”");
  assert.equal(listed(["\u2019", "\u00e9"]), "“\u2019” and “\u00e9”");
  assert.equal(listed(["$", "\n", " "]), "“$”, a line break and a space");
});
