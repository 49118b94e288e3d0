// The pure parts of the "Many texts" card (views/corpus.js, views/headclusters.js,
// modes/sentence/cards/corpus.js), on a hand-made answer shaped as the API's CorpusResponse: the
// map's frame keeps one scale on both axes and every point inside, the nearest keys are the
// nearest by brute force, the summary and the live region say the API's numbers as given, the
// keyboard's cursor walks as documented, and the clusters' runs and lists follow `order`.
import assert from "node:assert/strict";
import { test } from "node:test";

import { CORPUS_FEEDS, viewsFed } from "../../static/js/core/feeds.js";
import { charCount, corpusBody, defaultCorpusState } from "../../static/js/modes/sentence/cards/corpus.js";
import {
  axisTitle,
  contextText,
  corpusSummary,
  frame,
  mapTitle,
  moveCorpusCursor,
  nearest,
  niceTicks,
  pointWords,
  userNearest,
  userPoints,
} from "../../static/js/views/corpus.js";
import {
  closestPair,
  clustersSummary,
  headName,
  members,
  runs,
  similarityColour,
} from "../../static/js/views/headclusters.js";

/** An answer of 3 texts: the user's ("the cat sat"), then two of the set. */
function answer() {
  const texts = [
    { text: "the cat sat", tokens: ["the", "cat", "sat"], user: true },
    { text: "a dog ran far", tokens: ["a", "dog", "ran", "far"], user: false },
    { text: "it rained", tokens: ["it", "rained"], user: false },
  ];
  return {
    model: "m",
    layer: 1,
    head: 2,
    source: "docs",
    projection: "pca",
    seed: 0,
    texts,
    points: {
      text: [0, 0, 0, 1, 1, 1, 1, 2, 2],
      pos: [0, 1, 2, 0, 1, 2, 3, 0, 1],
      qx: [0, 1, 2, -1, 1.1, 3, 0.5, -2, 4],
      qy: [0, 1, 0.5, 2, 1, -1, 0.25, 0, -0.5],
      kx: [0.1, 0.9, 2.2, -1.2, 1.2, 3.1, 0.4, -2.5, 3.9],
      ky: [0.2, 1.5, 0.1, 1.8, 0.9, -1.1, 0.3, 0.1, -0.4],
    },
    unavailable: null,
    explained: [0.2346, 0.118],
    transform: { key_shift: 0.5, scale: 1.2, note: "n" },
    tokens: 9,
    dropped: 0,
    cut: false,
    clusters: {
      layers: 2,
      heads: 3,
      measure: "cosine similarity",
      order: [4, 1, 0, 3, 5, 2],
      similarity: [
        [1, 0.9, 0.2, 0.1, 0.3, 0.2],
        [0.9, 1, 0.3, 0.2, 0.1, 0.1],
        [0.2, 0.3, 1, 0.8, 0.2, 0.4],
        [0.1, 0.2, 0.8, 1, 0.3, 0.2],
        [0.3, 0.1, 0.2, 0.3, 1, 0.95],
        [0.2, 0.1, 0.4, 0.2, 0.95, 1],
      ],
      labels: [1, 0, 2, 1, 0, 2],
      merges: [],
    },
    seconds: { run: 1, project: 0.1, cluster: 0.01 },
    cached: false,
  };
}

test("ticks are round, inside the range, and never -0", () => {
  assert.deepEqual(niceTicks(-0.93, 1.27, 4), [-0.5, 0, 0.5, 1]);
  assert.deepEqual(niceTicks(0, 100, 5), [0, 20, 40, 60, 80, 100]);
  assert.deepEqual(niceTicks(-3e-4, 2e-4, 5), [-0.0003, -0.0002, -0.0001, 0, 0.0001, 0.0002]);
  for (const t of niceTicks(-1, 1, 7)) assert.ok(!Object.is(t, -0));
  assert.deepEqual(niceTicks(2, 2, 5), [2]);
});

test("the frame has one scale on both axes and holds every query and key", () => {
  const a = answer();
  const f = frame(a.points, 400, 200);
  assert.ok(Math.abs((f.x1 - f.x0) * f.scale - 400) < 1e-9 && Math.abs((f.y1 - f.y0) * f.scale - 200) < 1e-9);
  for (const [xs, ys] of [
    [a.points.qx, a.points.qy],
    [a.points.kx, a.points.ky],
  ]) {
    xs.forEach((x, i) => {
      assert.ok(x > f.x0 && x < f.x1, `x ${x}`);
      assert.ok(ys[i] > f.y0 && ys[i] < f.y1, `y ${ys[i]}`);
    });
  }
  const one = frame({ text: [0], pos: [0], qx: [1], qy: [1], kx: [1], ky: [1] }, 100, 100);
  assert.ok(Number.isFinite(one.scale) && one.x0 < 1 && one.x1 > 1);
});

test("nearest: the brute-force nearest, nearest first, skipping what it is told to", () => {
  const a = answer().points;
  for (let i = 0; i < a.qx.length; i++) {
    const got = nearest(a.kx, a.ky, a.qx[i], a.qy[i], 3);
    const want = a.kx
      .map((x, j) => ({ j, d: (x - a.qx[i]) ** 2 + (a.ky[j] - a.qy[i]) ** 2 }))
      .sort((u, v) => u.d - v.d || u.j - v.j)
      .slice(0, 3)
      .map((u) => u.j);
    assert.deepEqual(got, want);
  }
  assert.deepEqual(
    nearest(a.kx, a.ky, 0, 0, 2, (j) => j < 3),
    [6, 4],
  );
});

test("the summary and the live region say the API's numbers as given", () => {
  const a = answer();
  assert.deepEqual(userPoints(a), [0, 1, 2]);
  // the user's queries' nearest keys among the other texts' keys
  assert.deepEqual(
    userNearest(a).map((p) => p.key),
    [6, 4, 4],
  );
  assert.equal(
    corpusSummary(a),
    "9 tokens from 3 texts; your 3 tokens' queries sit nearest keys of " +
      "the → “far” (text 2 of 3), cat → “dog” (text 2 of 3), sat → “dog” (text 2 of 3).",
  );
  const words = pointWords(a, 1, "q");
  assert.ok(
    words.startsWith(
      "“cat” query, your sentence, token 2: x 1, y 1. Nearest keys: “dog” (text 2 of 3), “cat” (your sentence)",
    ),
    words,
  );
  assert.ok(words.endsWith("In context: the [cat] sat"), words);
  assert.ok(pointWords(a, 8, "k").startsWith("“rained” key, text 3 of 3, token 2: x 3.9, y -0.4. Nearest queries:"));
  assert.equal(axisTitle(a, 0), "PC1 (23%)"); // a whole percentage, as every share is said
  assert.equal(axisTitle({ ...a, explained: [0.996, 0.004] }, 0), "PC1 (over 99%)");
  assert.equal(axisTitle({ ...a, explained: [0.996, 0.004] }, 1), "PC2 (under 1%)");
  assert.equal(axisTitle({ ...a, projection: "umap", explained: null }, 1), "UMAP 2");
  assert.equal(mapTitle(a), "Queries and keys of layer 2 head 3: 9 tokens from 3 texts, PCA");
  const none = { ...a, points: null, unavailable: "an ALiBi model bridged through transformers" };
  assert.equal(
    corpusSummary(none),
    "9 tokens from 3 texts; no queries and keys: an ALiBi model bridged through transformers",
  );
  assert.equal(contextText("a b c d e f g h i j k".split(" "), 5), "… b c d e [f] g h i j …");
  assert.equal(contextText(["x"], 0), "[x]");
});

test("the keyboard's cursor: sentence tokens, query and key, a text at a time, the ends", () => {
  const mine = [0, 1, 2];
  const texts = [0, 0, 0, 1, 1, 2, 2, 2, 3]; // the sentence (0), then three texts of the set
  assert.deepEqual(moveCorpusCursor("ArrowRight", 0, "q", texts, mine), { i: 1, kind: "q" });
  assert.deepEqual(moveCorpusCursor("ArrowRight", 2, "q", texts, mine), { i: 2, kind: "q" }); // the last
  assert.deepEqual(moveCorpusCursor("ArrowLeft", 6, "k", texts, mine), { i: 2, kind: "k" }); // back into the sentence
  assert.deepEqual(moveCorpusCursor("ArrowDown", 1, "q", texts, mine), { i: 1, kind: "k" });
  assert.deepEqual(moveCorpusCursor("ArrowUp", 1, "k", texts, mine), { i: 1, kind: "q" });
  assert.deepEqual(moveCorpusCursor("PageDown", 1, "q", texts, mine), { i: 3, kind: "q" }); // the next text
  assert.deepEqual(moveCorpusCursor("PageDown", 5, "k", texts, mine), { i: 8, kind: "k" });
  assert.deepEqual(moveCorpusCursor("PageDown", 8, "q", texts, mine), { i: 8, kind: "q" }); // the last text
  assert.deepEqual(moveCorpusCursor("PageUp", 6, "q", texts, mine), { i: 5, kind: "q" }); // this text's first
  assert.deepEqual(moveCorpusCursor("PageUp", 5, "q", texts, mine), { i: 3, kind: "q" }); // the previous one's
  assert.deepEqual(moveCorpusCursor("PageUp", 0, "q", texts, mine), { i: 0, kind: "q" });
  assert.deepEqual(moveCorpusCursor("End", 0, "k", texts, mine), { i: 8, kind: "k" });
  assert.deepEqual(moveCorpusCursor("Home", 5, "k", texts, mine), { i: 0, kind: "k" });
  assert.deepEqual(moveCorpusCursor("ArrowRight", 3, "q", texts, []), { i: 4, kind: "q" }); // no sentence: every point
  assert.equal(moveCorpusCursor("a", 0, "q", texts, mine), null);
});

test("the clusters: runs along the order, members, the closest pair, the summary", () => {
  const c = answer().clusters;
  assert.equal(headName(5, 3), "L2 H3");
  assert.deepEqual(runs(c), [
    { label: 0, start: 0, end: 2 },
    { label: 1, start: 2, end: 4 },
    { label: 2, start: 4, end: 6 },
  ]);
  assert.deepEqual(members(c), [
    [4, 1],
    [0, 3],
    [5, 2],
  ]);
  assert.deepEqual(closestPair(c), { i: 4, j: 5, v: 0.95 });
  assert.equal(
    clustersSummary(c, { layer: 0, head: 1 }),
    "6 heads in 3 clusters by cosine similarity; L1 H2, " +
      "shown in the map, is in cluster 1 with L2 H2; the most similar pair: L2 H3 and L1 H3 (0.95).",
  );
  // The server sends each similarity unrounded (a float32): one short of 1 never reads "1".
  const near = structuredClone(c);
  near.similarity[4][5] = near.similarity[5][4] = 0.9996;
  assert.match(clustersSummary(near, null), /the most similar pair: L2 H3 and L1 H3 \(over 0\.999\)\.$/);
  near.similarity[4][5] = near.similarity[5][4] = 0.95349;
  assert.match(clustersSummary(near, null), /\(0\.953\)\.$/);
  assert.deepEqual(similarityColour(2, false), similarityColour(1, false)); // clamped
  assert.notDeepEqual(similarityColour(-0.5, true), similarityColour(0.5, true));
});

test("the card's state feeds both views, and its request body follows the contract", () => {
  const s = defaultCorpusState();
  const fed = new Set(Object.values(CORPUS_FEEDS).flat());
  assert.deepEqual([...fed].sort(), Object.keys(s).sort()); // every key feeds a view
  assert.deepEqual(viewsFed(CORPUS_FEEDS, ["clusters"]), ["headclusters"]);
  assert.deepEqual(viewsFed(CORPUS_FEEDS, ["projection"]), ["corpus"]);
  assert.deepEqual(viewsFed(CORPUS_FEEDS, ["head"]), ["corpus", "headclusters"]);
  Object.assign(s, { max_tokens: 600, layer: 2, head: 5 });
  assert.deepEqual(corpusBody(s, "the cat"), {
    source: "docs",
    text: "the cat",
    layer: 2,
    head: 5,
    projection: "pca",
    seed: 0,
    max_tokens: 600,
    clusters: 6,
  });
  assert.equal("text" in corpusBody(s, "  "), false);
  assert.equal(corpusBody({ ...s, source: "upload", upload: "a\nb" }, "x").upload, "a\nb");
  assert.equal(charCount("a😀b"), 3); // code points, as the server counts
});
