// core/glossary.js: where a sentence a view writes names a glossary term (findTerms, pure), and
// views/why.js's labelKey, the line that reads the components' labels with their terms.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { findTerms } from "../../static/js/core/glossary.js";
import { labelKey } from "../../static/js/views/why.js";

// A few entries standing for the glossary the server sends (attnviz/glossary.py), their words
// as written there (the last test checks).
const TABLE = new Map(
  [
    { id: "causal", words: ["causal model", "causal attention", "causal mask", "causal"] },
    { id: "encoder", words: ["encoder", "bidirectional"] },
    { id: "sink", words: ["attention sink", "sink"] },
    { id: "logit", words: ["logits", "logit"] },
    { id: "attribution", words: ["direct contribution", "attribution"] },
    { id: "layernorm", words: ["final norm", "LayerNorm", "layer norm", "norm"] },
    { id: "variance", words: ["Var(q · k)", "Var(q·k)", "variance"] },
    { id: "warm-up", words: ["warm-up", "warmup", "warm up"] },
  ].map((t) => [t.id, { ...t, name: t.id, text: "" }]),
);

/** The marked words of `text`. @param {string} text @param {string[]} ids */
const marked = (text, ids) => findTerms(text, ids, TABLE).map(([s, e, id]) => [text.slice(s, e), id]);

test("each term is marked once, at its first occurrence, by its longest words there", () => {
  const note = "Generate needs a causal model; MiniLM is an encoder. This server has no causal model.";
  assert.deepEqual(marked(note, ["causal", "encoder"]), [
    ["causal model", "causal"],
    ["encoder", "encoder"],
  ]);
  assert.deepEqual(findTerms(note, ["causal"], TABLE), [[17, 29, "causal"]]);
});

test("a word matches whole: not inside a longer word, and its case as written", () => {
  assert.deepEqual(marked("sinks and a sinkhole", ["sink"]), []);
  assert.deepEqual(marked("An attention sink: …", ["sink"]), [["attention sink", "sink"]]);
  assert.deepEqual(marked("Causal attention", ["causal"]), []);
  assert.deepEqual(marked("an encoder-decoder", ["encoder"]), [["encoder", "encoder"]]);
  assert.deepEqual(marked("Post-norm, the original", ["layernorm"]), []); // not the end of a longer word
});

test("terms come in the text's order, never overlapping; an unknown id marks nothing", () => {
  const about = "Each bar is one part of the model's direct contribution to the logit of “ the”.";
  assert.deepEqual(marked(about, ["logit", "attribution", "nope"]), [
    ["direct contribution", "attribution"],
    ["logit", "logit"],
  ]);
});

test("words with brackets, dots and hyphens match as written (Var(q · k), warm-up)", () => {
  const caption = "scaled: softmax(q · k / √d_k),  unscaled: softmax(q · k),  Var(q · k) = d_k";
  assert.deepEqual(marked(caption, ["variance"]), [["Var(q · k)", "variance"]]);
  assert.deepEqual(marked("so Var(q·k)=64", ["variance"]), [["Var(q·k)", "variance"]]);
  assert.deepEqual(marked("the variance, Var(q · k)", ["variance"]), [["variance", "variance"]]);
  assert.deepEqual(marked("Var(q · k)2 and CoVar(q · k)", ["variance"]), []); // whole, as written
  assert.deepEqual(marked("Var(q · v)", ["variance"]), []); // its brackets are not a pattern
  assert.deepEqual(marked("a large learning rate and no warm-up.", ["warm-up"]), [["warm-up", "warm-up"]]);
});

test("the components' labels are read once each, with their terms", () => {
  const c = (kind, layer = null, head = null) => ({ kind, layer, head, name: kind });
  const pieces = labelKey([c("embed"), c("head", 0, 3), c("head", 2, 1), c("mlp", 4), c("mlp", 5), c("rest")]);
  assert.equal(
    pieces.map(([t]) => t).join(""),
    "Labels: L1 H4 is layer 1’s head 4; L5 MLP is layer 5’s MLP; the rest sums the smaller components.",
  );
  assert.deepEqual(
    pieces.filter(([, id]) => id),
    [
      ["L1 H4", "head"],
      ["L5 MLP", "mlp"],
      ["the rest", "rest"],
    ],
  );
  assert.deepEqual(labelKey([c("embed"), c("pos"), c("bias")]), []);
  // BERT's token type (issue 41: a large part of the default example's scores) is read and marked.
  const bert = labelKey([c("embed"), c("type"), c("head", 1, 0)]);
  assert.equal(
    bert.map(([t]) => t).join(""),
    "Labels: token type is the vector added to every token for its segment; L2 H1 is layer 2’s head 1.",
  );
  assert.deepEqual(bert[1], ["token type", "token-type"]);
});

test("the words stand for attnviz/glossary.py's", () => {
  const py = readFileSync(new URL("../../attnviz/glossary.py", import.meta.url), "utf8");
  for (const t of TABLE.values()) assert.ok(py.includes(`"${t.words.join("|")}"`), t.id);
});
