// The Learn mode's pure parts: its links, the progress the browser keeps (read back from
// anything), the check's bodies, the article's numbers beside the engine's, and the MathML
// allow-list importer (its reader and check; the elements built on a stand-in document).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ATTRIBUTES,
  buildMath,
  checkMath,
  ELEMENTS,
  importMath,
  MATHML_NS,
  parseMarkup,
} from "../../static/js/modes/learn/mathml.js";
import {
  articleRows,
  decodeFound,
  decodeLearnHash,
  emptyProgress,
  encodeFound,
  encodeLearnHash,
  fixed,
  MAX_FOUND,
  PROGRESS_VERSION,
  readProgress,
  recordTasks,
  setLab,
  setLast,
  stepDone,
  stepLabel,
  stepsDone,
  stepToOpen,
  stepToyState,
  taskLines,
  toyCheckBody,
  trainCheckBody,
  trainCheckKey,
  writeProgress,
} from "../../static/js/modes/learn/progress.js";

const DEFAULTS = {
  layers: 1,
  heads: 1,
  projections: "identity",
  weights: null,
  scale: true,
  mask: "none",
  positional: "none",
  residual: false,
  norm: "none",
  ffn: false,
  seed: 0,
};

const step = (n, id, tasks = ["a"]) => ({
  n,
  id,
  title: `Step ${id}`,
  lab: "toy",
  text: [],
  formula: "",
  formula_text: "",
  toy: null,
  train: null,
  focus: [],
  article: [],
  tasks: tasks.map((t) => ({ id: t, prompt: `do ${t}`, hint: "", finding: false })),
});

// ---- links -----------------------------------------------------------------------------------

test("a Learn link is #learn or #learn/N; anything else is another mode's", () => {
  assert.deepEqual(decodeLearnHash("#learn"), { n: null });
  assert.deepEqual(decodeLearnHash("#learn/"), { n: null });
  assert.deepEqual(decodeLearnHash("#learn/4"), { n: 4 });
  assert.deepEqual(decodeLearnHash("#learn/16"), { n: 16 });
  assert.deepEqual(decodeLearnHash("#learn/0"), { n: null, bad: "0" });
  assert.deepEqual(decodeLearnHash("#learn/x"), { n: null, bad: "x" });
  assert.deepEqual(decodeLearnHash("#learn/-2"), { n: null, bad: "-2" });
  assert.deepEqual(decodeLearnHash("#learn/4.5"), { n: null, bad: "4.5" });
  for (const other of ["", "#", "#train", "#train/abc", "#s=eyJ2IjozfQ", "#learning", "#learn4"]) {
    assert.equal(decodeLearnHash(other), null, other);
  }
  for (let n = 1; n <= 16; n++) assert.deepEqual(decodeLearnHash(encodeLearnHash(n)), { n });
});

test("a Learn link carries the lab's state as the learner left it (issue 41)", () => {
  const toy = { toy: "eyJ2IjozLCJtb2RlIjoidG95In0" };
  assert.equal(encodeLearnHash(4, toy), "#learn/4?toy=eyJ2IjozLCJtb2RlIjoidG95In0");
  assert.deepEqual(decodeLearnHash(encodeLearnHash(4, toy)), { n: 4, lab: toy });
  const train = { train: "#train/abc?task=induction&at=0.1.3" };
  const hash = encodeLearnHash(12, train);
  assert.ok(!hash.slice(1).includes("#"), hash); // one fragment: the Train link's own # escaped
  assert.deepEqual(decodeLearnHash(hash), { n: 12, lab: train });
  assert.deepEqual(decodeLearnHash("#learn/4?other=1"), { n: 4 });
  assert.deepEqual(decodeLearnHash("#learn?toy=x"), { n: null, lab: { toy: "x" } });
});

test("a train step's link carries the head each task was done with, read back within bounds (issue 41)", () => {
  const train = { train: "#train/abc?task=induction&at=0.1.3" };
  const found = [{ task: "previous-token-head", variant: 0, layer: 0, head: 2 }];
  const hash = encodeLearnHash(12, train, found);
  assert.equal(new URLSearchParams(hash.split("?")[1]).get("found"), "previous-token-head:0.0.2");
  assert.deepEqual(decodeLearnHash(hash), { n: 12, lab: train, found });
  const two = [...found, { task: "induction-head", variant: 1, layer: 1, head: 0 }];
  assert.deepEqual(decodeLearnHash(encodeLearnHash(12, train, two)), { n: 12, lab: train, found: two });
  assert.equal(encodeFound(two), "previous-token-head:0.0.2,induction-head:1.1.0");
  // None: no part; a toy lab carries none; without a train lab the part is not read.
  assert.equal(encodeLearnHash(12, train, []), encodeLearnHash(12, train));
  assert.equal(encodeLearnHash(4, { toy: "x" }, found), "#learn/4?toy=x");
  assert.deepEqual(decodeLearnHash("#learn/12?found=a:0.0.1"), { n: 12 });
  // Untrusted text: what cannot be read is left out, a task named twice is read once, and at
  // most MAX_FOUND are kept.
  assert.deepEqual(decodeFound("A:0.0.1,a:x.0.1,a:0.0,a:0.0.1.2,-a:0.0.1,a:100.0.1,b:0.0.1000,,a"), []);
  assert.deepEqual(decodeFound("a:0.1.2,a:0.3.4,b:1.0.0"), [
    { task: "a", variant: 0, layer: 1, head: 2 },
    { task: "b", variant: 1, layer: 0, head: 0 },
  ]);
  assert.deepEqual(decodeFound(null), []);
  const many = Array.from({ length: 40 }, (_, i) => `t${i}:0.0.${i}`).join(",");
  assert.equal(decodeFound(many).length, MAX_FOUND);
  assert.deepEqual(decodeFound(many)[MAX_FOUND - 1], {
    task: `t${MAX_FOUND - 1}`,
    variant: 0,
    layer: 0,
    head: MAX_FOUND - 1,
  });
});

test("the step to open: the link's, else the last one open, else the first; out of range is said", () => {
  const p = { ...emptyProgress(), last: 5 };
  assert.deepEqual(stepToOpen({ n: 3 }, p, 17), { n: 3, said: null });
  assert.deepEqual(stepToOpen({ n: null }, p, 16), { n: 5, said: null });
  assert.deepEqual(stepToOpen({ n: null }, emptyProgress(), 16), { n: 1, said: null });
  assert.deepEqual(stepToOpen({ n: null }, { ...p, last: 40 }, 16), { n: 1, said: null });
  const over = stepToOpen({ n: 99 }, p, 16);
  assert.equal(over.n, 16);
  assert.match(over.said, /no step 99: the path has 16 steps/);
  const bad = stepToOpen({ n: null, bad: "x" }, p, 16);
  assert.equal(bad.n, 5);
  assert.match(bad.said, /no step "x": steps are numbered 1 to 16/);
});

// ---- progress --------------------------------------------------------------------------------

test("progress round-trips, and what cannot be read is left out without throwing", () => {
  let p = emptyProgress();
  p = recordTasks(p, "dot-products", [{ id: "apple-to-banana", done: true }]);
  p = setLast(p, 2);
  assert.deepEqual(readProgress(writeProgress(p)), p);
  for (const junk of [null, undefined, "", "{", "[]", "42", '"x"', '{"v":3,"last":3}', '{"v":1,"done":[1,2]}']) {
    assert.deepEqual(readProgress(junk), emptyProgress(), String(junk));
  }
  const mixed = readProgress(
    JSON.stringify({
      v: 2,
      last: 2.5,
      done: { "ok-step": ["t1", 7, "t1", "<b>"], "BAD STEP": ["t"], other: "nope", empty: [] },
      labs: { "ok-step": "eyJ2IjozfQ", "BAD STEP": "eyJ2IjozfQ", other: 7, html: "<b>x</b>" },
    }),
    100,
  );
  assert.deepEqual(mixed, { v: 2, last: null, done: { "ok-step": ["t1"] }, labs: { "ok-step": "eyJ2IjozfQ" } });
  assert.equal(readProgress('{"v":2,"last":0,"done":{},"labs":{}}').last, null);
  assert.equal(readProgress('{"v":2,"last":7,"done":{},"labs":{}}').last, 7);
});

test("the kept progress has a version: version 1's (no labs) is migrated, nothing lost", () => {
  assert.equal(PROGRESS_VERSION, 2);
  assert.equal(emptyProgress().v, PROGRESS_VERSION);
  const v1 = JSON.stringify({ v: 1, last: 7, done: { "dot-products": ["apple-to-banana"] } });
  assert.deepEqual(readProgress(v1, 100), {
    v: 2,
    last: 7,
    done: { "dot-products": ["apple-to-banana"] },
    labs: {},
  });
  // Written back, it is version 2's, and reads the same.
  assert.deepEqual(readProgress(writeProgress(readProgress(v1, 100)), 100), readProgress(v1, 100));
  assert.equal(readProgress('{"v":1,"last":0}').last, null);
  assert.equal(readProgress('{"v":1,"last":7}').last, 7);
});

test("a toy step's lab is kept as the learner leaves it, within its cap, and forgotten at its start", () => {
  const cap = 16;
  let p = emptyProgress();
  const kept = setLab(p, "dot-products", "eyJ2IjozfQ", cap);
  assert.deepEqual(kept.labs, { "dot-products": "eyJ2IjozfQ" });
  assert.equal(setLab(kept, "dot-products", "eyJ2IjozfQ", cap), kept, "the same lab: nothing to save");
  p = setLab(kept, "dot-products", "x".repeat(cap + 1), cap);
  assert.equal(p, kept, "a lab over the cap is not kept: the one before stays");
  assert.equal(setLab(kept, "dot-products", "not base64!", cap), kept);
  assert.equal(setLab(kept, "BAD STEP", "eyJ2IjozfQ", cap), kept);
  p = setLab(kept, "dot-products", null, cap);
  assert.deepEqual(p.labs, {}, "back at the start: none kept");
  assert.equal(setLab(p, "dot-products", null, cap), p);
  // Read back within the cap only (a lab written under a larger cap is dropped, not cut).
  const text = writeProgress(setLab(emptyProgress(), "scaling", "abcdefghij", cap));
  assert.deepEqual(readProgress(text, cap).labs, { scaling: "abcdefghij" });
  assert.deepEqual(readProgress(text, 5).labs, {});
  assert.deepEqual(readProgress(text).labs, {}, "no cap given: no lab read");
  // Steps' progress and labs travel together through the other changes.
  p = setLast(recordTasks(kept, "scaling", [{ id: "t", done: true }]), 3);
  assert.deepEqual(p.labs, kept.labs);
});

test("a task once done stays done; a step is done when all its tasks have been", () => {
  const s = step(2, "heads", ["first", "second"]);
  let p = emptyProgress();
  assert.equal(stepDone(p, s), false);
  p = recordTasks(p, "heads", [
    { id: "first", done: true },
    { id: "second", done: false },
  ]);
  assert.deepEqual(p.done.heads, ["first"]);
  assert.equal(stepDone(p, s), false);
  const same = recordTasks(p, "heads", [
    { id: "first", done: false },
    { id: "second", done: false },
  ]);
  assert.equal(same, p, "nothing new: the same object (nothing to save)");
  p = recordTasks(p, "heads", [
    { id: "first", done: false },
    { id: "second", done: true },
  ]);
  assert.deepEqual(p.done.heads, ["first", "second"]);
  assert.equal(stepDone(p, s), true);
  assert.equal(stepDone(p, step(3, "none", [])), false, "a step without tasks is never done");
  assert.equal(stepsDone([s, step(3, "x")], p), 1);
  assert.equal(stepLabel(s, p), "2. Step heads, done");
  assert.equal(stepLabel(step(3, "x"), p), "3. Step x");
});

test("each task's line: the check's answer, and a task done before but not now", () => {
  const s = step(2, "heads", ["first", "second"]);
  const p = recordTasks(emptyProgress(), "heads", [{ id: "first", done: true }]);
  assert.deepEqual(
    taskLines(s, null, p).map((t) => [t.id, t.done, t.before, t.says]),
    [
      ["first", false, true, ""],
      ["second", false, false, ""],
    ],
  );
  const answer = {
    step: "heads",
    tasks: [
      { id: "first", done: true, says: "yes: 0.9" },
      { id: "second", done: false, says: "no: 0.1" },
    ],
  };
  assert.deepEqual(
    taskLines(s, answer, p).map((t) => [t.id, t.done, t.before, t.says]),
    [
      ["first", true, false, "yes: 0.9"],
      ["second", false, false, "no: 0.1"],
    ],
  );
});

test("a finding done before stays done while another head is in view", () => {
  const s = step(12, "circuit", ["prev", "induction"]);
  s.tasks[0].finding = true;
  const p = recordTasks(emptyProgress(), "circuit", [{ id: "prev", done: true }]);
  const answer = {
    step: "circuit",
    tasks: [
      { id: "prev", done: false, says: "this head: 0.05" },
      { id: "induction", done: true, says: "yes: 0.8" },
    ],
  };
  assert.deepEqual(
    taskLines(s, answer, p).map((t) => [t.id, t.done, t.before, t.found, t.says]),
    [
      ["prev", false, false, true, "this head: 0.05"],
      ["induction", true, false, false, "yes: 0.8"],
    ],
  );
  s.tasks[0].finding = false;
  assert.deepEqual(
    taskLines(s, answer, p).map((t) => [t.id, t.before, t.found]),
    [
      ["prev", true, false],
      ["induction", false, false],
    ],
    "a state's task: done before, not now",
  );
});

test("a task passed on someone else's work is shown, not done, unless the learner did it before", () => {
  const s = step(12, "circuit", ["prev", "induction"]);
  const tasks = [
    { id: "prev", done: true, says: "this head: 0.9" },
    { id: "induction", done: false, says: "this head: 0.1" },
  ];
  const lines = (answer, p = emptyProgress()) =>
    taskLines(s, answer, p).map((t) => [t.id, t.done, t.shown, t.before, t.says]);
  // A shared link's lab as it came (the server credits it to no one).
  const shared = { step: "circuit", tasks, credited: false, seen: "This is the shared link's lab" };
  assert.deepEqual(lines(shared), [
    ["prev", false, true, false, "this head: 0.9"],
    ["induction", false, false, false, "this head: 0.1"],
  ]);
  // The learner's own change: credited, done.
  assert.deepEqual(lines({ ...shared, credited: true, seen: null }), [
    ["prev", true, false, false, "this head: 0.9"],
    ["induction", false, false, false, "this head: 0.1"],
  ]);
  // Done before by the learner (their progress): done, on their lab or a link's.
  const p = recordTasks(emptyProgress(), "circuit", [{ id: "prev", done: true }]);
  assert.deepEqual(lines(shared, p)[0], ["prev", true, false, false, "this head: 0.9"]);
  // An answer that does not say (none before the server had it): as it says.
  assert.deepEqual(lines({ step: "circuit", tasks })[0], ["prev", true, false, false, "this head: 0.9"]);
});

// ---- bodies ----------------------------------------------------------------------------------

test("a toy step's state: the server's config over the defaults, the view over a default view", () => {
  const toy = {
    preset: "apple-banana",
    tokens: ["a", "b", "c"],
    axes: ["x", "y"],
    embeddings: [
      [1, 0],
      [0, 1],
      [1, 1],
    ],
    config: { layers: 2, scale: false },
    view: { head: 0, a: 0 },
  };
  const s = stepToyState(toy, DEFAULTS);
  assert.deepEqual(s.config, { ...DEFAULTS, layers: 2, scale: false });
  assert.deepEqual(s.view, { layer: 0, head: 0, vlayer: 2, a: 0, b: 2, trails: true, measure: "weights" });
  s.embeddings[0][0] = 9;
  assert.equal(toy.embeddings[0][0], 1, "a copy: the lab's edits leave the step alone");
  const body = toyCheckBody(s, DEFAULTS);
  assert.deepEqual(Object.keys(body), ["toy", "view"]);
  assert.deepEqual(body.toy.tokens, ["a", "b", "c"]);
  assert.deepEqual(body.toy.config, { ...DEFAULTS, layers: 2, scale: false });
  assert.deepEqual(body.view, { layer: 0, head: 0, vlayer: 2, a: 0, b: 2 });
});

test("a train step's check: the run and the head in view; asked again only when they change", () => {
  const variant = (state, steps) => ({
    state,
    checkpoints: steps.map((step) => ({ step })),
    induction: null,
    alignment: null,
  });
  const run = { id: "r1", state: "running", claims: null, variants: [variant("running", [0, 50])] };
  const view = { variant: 0, layer: 1, head: 0, checkpoint: 1, attention: "self" };
  // The head shown first, not chosen by the learner: sent as not chosen (issue 41); the
  // attention the card shows with it (step 11 asks for cross-attention).
  assert.deepEqual(trainCheckBody(run, view), {
    run: "r1",
    view: { variant: 0, layer: 1, head: 0, chosen: false, attention: "self" },
  });
  assert.notEqual(trainCheckKey(run, { ...view, attention: "cross" }), trainCheckKey(run, view));
  assert.equal(trainCheckBody(run, { ...view, picked: true }).view.chosen, true);
  const key = trainCheckKey(run, view);
  assert.notEqual(trainCheckKey(run, { ...view, picked: true }), key, "the same head, chosen: asked again");
  assert.equal(trainCheckKey({ ...run }, { ...view, checkpoint: 0 }), key, "the checkpoint scrubbed: same question");
  assert.notEqual(trainCheckKey(run, { ...view, head: 1 }), key);
  assert.notEqual(trainCheckKey({ ...run, variants: [variant("running", [0, 50, 100])] }, view), key);
  assert.notEqual(trainCheckKey({ ...run, state: "done", variants: [variant("done", [0, 50])] }, view), key);
  assert.notEqual(trainCheckKey({ ...run, claims: [{ claim: "x", value: 1, holds: true }] }, view), key);
});

test("a train step's check sends the heads its tasks were found with, so its answers name them", () => {
  // Issue 41 (step 12): task 1 found with layer 1, head 1, then the induction head shown: the
  // check is told which head task 1 was found with, and names that one, not the strongest.
  const run = { id: "r1", state: "done", claims: null, variants: [] };
  const view = { variant: 0, layer: 1, head: 2, checkpoint: 1, attention: "self", picked: true };
  const found = [{ task: "previous-token-head", variant: 0, layer: 0, head: 0 }];
  const body = trainCheckBody(run, view, found);
  assert.deepEqual(body.found, found);
  assert.deepEqual(body.view, trainCheckBody(run, view).view);
  // None found: no field (the body as before).
  assert.equal("found" in trainCheckBody(run, view, []), false);
  assert.equal("found" in trainCheckBody(run, view), false);
});

test("a train step's check sends the cell whose Why this score is open, if a query sees it", () => {
  const run = { id: "r1", state: "done", claims: null, variants: [] };
  const view = { variant: 0, layer: 1, head: 2, checkpoint: 1, attention: "self", query: null, key: null };
  const chosen = false;
  const attention = "self";
  assert.deepEqual(trainCheckBody(run, view).view, { variant: 0, layer: 1, head: 2, chosen, attention });
  const open = { ...view, query: 13, key: 2 };
  assert.deepEqual(trainCheckBody(run, open).view, {
    variant: 0,
    layer: 1,
    head: 2,
    chosen,
    attention,
    query: 13,
    key: 2,
  });
  assert.deepEqual(trainCheckBody(run, { ...view, query: 13, key: 0 }).view.key, 0, "key 0 is a key");
  // A key after the query (no causal query sees it) is no cell: none is sent.
  assert.deepEqual(trainCheckBody(run, { ...view, query: 2, key: 13 }).view, {
    variant: 0,
    layer: 1,
    head: 2,
    chosen,
    attention,
  });
  assert.notEqual(trainCheckKey(run, open), trainCheckKey(run, view));
  assert.notEqual(trainCheckKey(run, open), trainCheckKey(run, { ...open, key: 3 }));
});

// ---- the article's numbers -------------------------------------------------------------------

test("the engine's numbers at the article's rounding, beside the article's", () => {
  assert.equal(fixed(0.6524, 2), "0.65");
  assert.equal(fixed(-0.0001, 2), "0.00", "no minus zero");
  assert.equal(fixed(-0.004, 2), "0.00");
  assert.equal(fixed(-0.3, 1), "-0.3");
  assert.equal(fixed(0.3695, 2), "0.37");
  const rows = articleRows({
    caption: "c",
    columns: ["An", "apple"],
    decimals: 2,
    rows: [
      { label: "apple", article: [0, 0.65], engine: [0.0, 0.6524] },
      { label: "and", article: [0.5, 0.2], engine: [0.5, 0.2151] },
    ],
  });
  assert.deepEqual(rows, [
    {
      label: "apple",
      cells: [
        { article: "0.00", engine: "0.00", agrees: true },
        { article: "0.65", engine: "0.65", agrees: true },
      ],
    },
    {
      label: "and",
      cells: [
        { article: "0.50", engine: "0.50", agrees: true },
        { article: "0.20", engine: "0.22", agrees: false },
      ],
    },
  ]);
});

// ---- MathML ----------------------------------------------------------------------------------

const FORMULA =
  '<math display="block"><mrow><mi>w</mi><mo>=</mo><mtext>softmax</mtext><mo stretchy="false">(</mo>' +
  "<mfrac><mrow><mi>q</mi><mo>&#x22C5;</mo><msup><mi>k</mi><mi>T</mi></msup></mrow><msqrt><mi>d</mi></msqrt></mfrac>" +
  '<mo stretchy="false">)</mo><mspace width="0.5em"/><mtext>a &lt; b &amp; c</mtext></mrow></math>';

test("a formula is read into a tree, entities replaced", () => {
  const tree = checkMath(parseMarkup(FORMULA));
  assert.equal(tree.name, "math");
  assert.deepEqual(tree.attrs, { display: "block" });
  const row = tree.children[0];
  assert.deepEqual(
    row.children.map((c) => c.name),
    ["mi", "mo", "mtext", "mo", "mfrac", "mo", "mspace", "mtext"],
  );
  assert.deepEqual(row.children[4].children[0].children[1].children, [{ text: "⋅" }]);
  assert.deepEqual(row.children[6], { name: "mspace", attrs: { width: "0.5em" }, children: [] });
  assert.deepEqual(row.children[7].children, [{ text: "a < b & c" }]);
  assert.equal(parseMarkup("  <math><mn>1</mn></math>\n").name, "math", "white space around the root");
  assert.deepEqual(parseMarkup("<math><mi mathvariant='bold'>x</mi></math>").children[0].attrs, {
    mathvariant: "bold",
  });
});

test("only allow-listed presentation MathML passes: anything else throws, naming it", () => {
  const bad = {
    "<math><script>alert(1)</script></math>": /<script> is not an allowed/,
    '<math><mi onclick="x()">a</mi></math>': /attribute onclick of <mi> is not allowed/,
    '<math><mi href="https://example.org">a</mi></math>': /attribute href/,
    '<math><mi style="color:red">a</mi></math>': /attribute style/,
    "<math><semantics><mi>a</mi><annotation-xml>x</annotation-xml></semantics></math>": /<semantics> is not an allowed/,
    "<math><mi>a</mi><foreignObject/></math>": /<foreignObject>/,
    "<svg><mi>a</mi></svg>": /root element must be <math>/,
    "<math><math><mi>a</mi></math></math>": /<math> inside <math>/,
  };
  for (const [text, why] of Object.entries(bad)) assert.throws(() => checkMath(parseMarkup(text)), why, text);
  const unreadable = {
    "<math><mi>a</mi>": /<math> is not closed/,
    "<math><mi>a</mo></math>": /<\/mo> closes <mi>/,
    "<math><mi>a</mi></math><math></math>": /more than one root/,
    "x<math></math>": /text outside/,
    "<math><!-- c --><mi>a</mi></math>": /cannot read the markup/,
    "<math><![CDATA[<x>]]></math>": /cannot read the markup/,
    '<?xml version="1.0"?><math/>': /cannot read the markup/,
    "<math><mi a=b>x</mi></math>": /cannot read the markup/,
    "<math><mi>&nbsp;</mi></math>": /entity &nbsp; is not one of/,
    "<math><mi>&#xD800;</mi></math>": /not a character/,
    "<math><mi>a & b</mi></math>": /not a complete entity/,
    '<math><mi display="1" display="2">a</mi></math>': /display twice/,
    "": /no element/,
  };
  for (const [text, why] of Object.entries(unreadable)) assert.throws(() => parseMarkup(text), why, text);
  assert.throws(() => parseMarkup(`<math>${"<mrow>".repeat(5000)}`), /longer than|not closed/);
  assert.throws(
    () => checkMath(parseMarkup(`<math>${"<mrow>".repeat(70)}${"</mrow>".repeat(70)}</math>`)),
    /nested too deeply/,
  );
  assert.ok(
    !ELEMENTS.has("annotation") && !ELEMENTS.has("maction") && !ATTRIBUTES.has("href") && !ATTRIBUTES.has("class"),
  );
});

/** A stand-in document: elements as plain objects, recording what was made. */
function fakeDocument() {
  const made = [];
  const node = (ns, name) => ({
    ns,
    name,
    attrs: {},
    kids: [],
    setAttribute(k, v) {
      this.attrs[k] = v;
    },
    append(...k) {
      this.kids.push(...k);
    },
  });
  return {
    made,
    createElementNS(ns, name) {
      const n = node(ns, name);
      made.push(n);
      return n;
    },
    createTextNode(text) {
      return { text };
    },
  };
}

test("the checked tree is built as MathML elements, text as text nodes", () => {
  const doc = fakeDocument();
  const math = importMath(
    '<math display="block"><msup><mi>x</mi><mn>2</mn></msup><mtext>&lt;b&gt;</mtext></math>',
    doc,
  );
  assert.equal(math.name, "math");
  assert.ok(doc.made.every((n) => n.ns === MATHML_NS));
  assert.deepEqual(
    doc.made.map((n) => n.name),
    ["math", "msup", "mi", "mn", "mtext"],
  );
  assert.deepEqual(math.attrs, { display: "block" });
  assert.deepEqual(math.kids[1].kids, [{ text: "<b>" }], "markup in text stays text");
  assert.throws(() => importMath("<math><img/></math>", fakeDocument()), /<img> is not an allowed/);
  const none = fakeDocument();
  assert.throws(() => importMath("<math><mi>a</mi><script/></math>", none));
  assert.equal(none.made.length, 0, "nothing is built from a formula that fails the check");
  assert.ok(buildMath({ text: "t" }, doc).text === "t");
});

test("the answer note's cover: how far a box reaches under it, none beside or above it", async () => {
  const { underNote } = await import("../../static/js/modes/learn/guide.js");
  /** @param {number} top @param {number} bottom @param {number} left @param {number} right */
  const box = (top, bottom, left, right) => /** @type {DOMRect} */ ({ top, bottom, left, right });
  const note = box(600, 780, 700, 1260);
  assert.equal(underNote(box(200, 900, 430, 1260), note), 180); // a tall card: the note's height
  assert.equal(underNote(box(200, 650, 430, 1260), note), 50); // its last 50 px
  assert.equal(underNote(box(200, 600, 430, 1260), note), 0); // ends where the note begins
  assert.equal(underNote(box(200, 900, 20, 700), note), 0); // beside it, to its left
  assert.equal(underNote(box(790, 900, 430, 1260), note), 0); // below it
});
