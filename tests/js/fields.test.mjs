// core/fields.js: the trace fields as the server declares them (generated/fields.js, made by
// attnviz/jsgen.py): a part asked for by the parameters its fields read, a row cut as the
// server cuts it, a kind of numbers in a reader's words.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ask, field, rowCut, words } from "../../static/js/core/fields.js";

test("a part carries the choices its fields read and no others", () => {
  const choices = { layer: 1, head: 2, query: 3, hide_special: true, merge_words: false, measure: "value_weighted" };
  assert.deepEqual(ask("view", choices), { fields: "view", ...choices });
  // a layer's aggregate reads no head or query; the value-weighted sum no measure either
  assert.deepEqual(ask("rollout", choices), {
    fields: "rollout",
    layer: 1,
    hide_special: true,
    merge_words: false,
    measure: "value_weighted",
  });
  assert.deepEqual(ask("value_weighted_sum", choices), {
    fields: "value_weighted_sum",
    layer: 1,
    hide_special: true,
    merge_words: false,
  });
  // several fields: what any of them reads; null and undefined left out
  assert.deepEqual(ask("queries,keys,view", { layer: 0, head: null, hide_special: true, thumb: 9 }), {
    fields: "queries,keys,view",
    layer: 0,
    hide_special: true,
  });
  assert.deepEqual(ask("entropy_mean", choices), { fields: "entropy_mean" });
  assert.throws(() => ask("nope", {}), /no trace field nope/);
});

test("per-query arrays are cut to a row, a drawn one at the row that shows the query", () => {
  assert.equal(rowCut("attentions"), "row");
  assert.equal(rowCut("scores"), "row");
  assert.equal(rowCut("value_weighted"), "row");
  assert.equal(rowCut("view"), "shown");
  for (const name of ["queries", "thumbs.values", "head_mean", "qk_attribution"]) assert.equal(rowCut(name), null);
});

test("each field's kind of numbers in words; the declaration as the server gives it", () => {
  assert.equal(words("view"), "exact weights");
  assert.equal(words("top_k"), words("lens"));
  assert.equal(words("hidden_states"), "hidden states");
  assert.equal(words("thumbs.values"), "thumbs.values");
  assert.deepEqual(field("vision").params, ["image", "tile", "layer", "head"]);
  assert.equal(field("vision").tower, true);
});
