// The pure parts of the views: which state feeds which view, number formatting, and which keys
// the query-key view shows.
import assert from "node:assert/strict";
import { test } from "node:test";

import { SENTENCE_FEEDS, TOY_FEEDS, TRAIN_FEEDS, viewsFed } from "../../static/js/core/feeds.js";
import { exact, fmt, readable, readableCount } from "../../static/js/core/numbers.js";
import { sinkNote } from "../../static/js/views/modelview.js";
import { KEYS_MAX, TOP_KEYS, headNotes, keyRows } from "../../static/js/views/qkview.js";
import { logTicks } from "../../static/js/modes/train/views/traingrads.js";
import { defaultSentence, defaultTrainView, fromPreset, normalize } from "../../static/js/core/state.js";

test("every piece of view state feeds a view, and only views that exist", () => {
  const toyView = normalize(
    fromPreset(
      { id: "p", tokens: ["a", "b"], axes: ["x"], embeddings: [[1], [2]], config: {} },
      { layers: 1, heads: 1, projections: "identity", weights: null },
    ),
    { max_layers: 12, max_heads: 16, max_tokens: 64, max_dim: 64 },
  ).view;
  const fed = (feeds) => new Set(Object.values(feeds).flat());
  assert.deepEqual([...fed(TOY_FEEDS)].sort(), Object.keys(toyView).sort());
  // Sentence state: model, text, its images, generate and the knock-out make a new trace (every
  // view); the rest feed views.
  // `more` opens cards (More views), drawn as they open.
  const traced = ["model", "text", "images", "generate", "ablate", "ablateMode", "ablateSource", "more"];
  const sentenceKeys = Object.keys(defaultSentence()).filter((k) => !traced.includes(k));
  assert.deepEqual([...fed(SENTENCE_FEEDS)].sort(), sentenceKeys.sort());
  assert.deepEqual(Object.keys(TOY_FEEDS), ["attention", "vectors", "beforeAfter", "distances"]);
  // issue 30: Attention on the picture, after the model view
  assert.deepEqual(Object.keys(SENTENCE_FEEDS), [
    "model",
    "picture",
    "why",
    "gen",
    "head",
    "qk",
    "traj",
    "lens",
    "knock",
  ]);
  // a long text's paths start at the query; the predictions are the query's; the model view's
  // large heatmap frames the query's row (issue 28: it kept framing an old one)
  // (and, issue 30, the picture card draws the query's row over the image)
  assert.deepEqual(viewsFed(SENTENCE_FEEDS, ["query"]), ["model", "picture", "why", "head", "qk", "traj", "lens"]);
  // Why this score (issue 29): a key picked there, or in the heatmap, redraws it and the
  // heatmap that marks its cell
  assert.deepEqual(viewsFed(SENTENCE_FEEDS, ["key"]), ["model", "why"]);
  assert.deepEqual(viewsFed(SENTENCE_FEEDS, ["mergeWords"]), ["model", "head", "qk", "traj"]); // options reach every view
  assert.deepEqual(viewsFed(TOY_FEEDS, ["vlayer"]), ["vectors", "beforeAfter", "distances"]);
  assert.deepEqual(viewsFed(TOY_FEEDS, ["nothing"]), []);
  // Train mode: every view choice feeds a view; the run's own events feed the rest.
  // (and a run renamed by its owner, "title", the views that name it)
  const runKeys = ["title"];
  const trainFed = [...fed(TRAIN_FEEDS)].filter((k) => !runKeys.includes(k));
  assert.deepEqual(trainFed.sort(), Object.keys(defaultTrainView()).sort());
  assert.deepEqual(viewsFed(TRAIN_FEEDS, ["title"]), ["progress", "models"]);
  assert.deepEqual(Object.keys(TRAIN_FEEDS), ["progress", "loss", "grads", "heads", "why", "models", "decoded"]);
  assert.deepEqual(viewsFed(TRAIN_FEEDS, ["checkpoint"]), ["heads", "why"]);
  assert.deepEqual(viewsFed(TRAIN_FEEDS, ["key"]), ["why"]); // the Why panel's key alone
});

test("numbers: short without -0.00, exact as the JSON trace spells them", () => {
  assert.equal(fmt(-0.0001), "0.00");
  assert.equal(fmt(0.7, 3), "0.700");
  assert.equal(fmt(null), "–");
  const f32 = Math.fround(0.0123456789);
  assert.equal(String(f32), "0.012345679104328156");
  assert.equal(exact(f32, "F32"), "0.012345679"); // the fewest digits that give it back
  assert.equal(Math.fround(Number(exact(f32, "F32"))), f32);
  assert.equal(exact(Math.fround(0.1), "F32"), "0.1");
  assert.equal(exact(Math.fround(0.0006274592), "F32"), "0.0006274592");
  // Never more than 9 digits, and always the float32 back, over many values.
  for (let i = 1; i < 2000; i++) {
    const x = Math.fround(Math.sin(i) * 10 ** ((i % 13) - 6));
    const s = exact(x, "F32");
    assert.equal(Math.fround(Number(s)), x, s);
    const digits = s
      .replace(/e.*$/, "")
      .replace(/[-.]/g, "")
      .replace(/^0+|0+$/g, "").length;
    assert.ok(digits <= 9, s);
    if (digits > 1) assert.notEqual(Math.fround(Number(x.toPrecision(digits - 1))), x, s); // fewest
  }
  assert.equal(exact(1 / 3), String(1 / 3)); // float64 in full
  assert.equal(exact(-Infinity, "F32"), "masked");
  assert.equal(exact(null), "masked");
  assert.equal(exact(0, "F32"), "0");
});

test("numbers: readable to 3 significant digits, whole from 1000, masked as exact says it", () => {
  assert.equal(readable(14.620398596252752), "14.6");
  assert.equal(readable(0.6524058041842772), "0.652");
  assert.equal(readable(0.36950417228136057), "0.37"); // 0.370: no trailing zero
  assert.equal(readable(0.000123456), "0.000123");
  assert.equal(readable(-0.00001234), "-0.0000123");
  assert.equal(readable(1.2345e-7), "1.23e-7"); // under 0.000001: JavaScript's exponent form
  assert.equal(readable(999.4), "999");
  assert.equal(readable(999.7), "1000");
  assert.equal(readable(1234.5), "1235"); // 1000 and more: a whole number, halves away from 0
  assert.equal(readable(-1234.5), "-1235");
  assert.equal(readable(123456.789), "123457");
  assert.equal(readable(0.125), "0.125");
  assert.equal(readable(0.0625), "0.0625");
  assert.equal(readable(2.675), "2.67"); // the float's own value, 2.67499999...
  assert.equal(readable(0), "0");
  assert.equal(readable(-0), "0");
  assert.equal(readable(-0.0000001), "-1e-7");
  assert.equal(readable(-0.1234), "-0.123");
  for (const v of [null, undefined, -Infinity]) assert.equal(readable(v), "masked");
  assert.equal(readable(-Infinity, "F32"), exact(-Infinity, "F32"));
  // A float32 is read as the JSON trace spells it, then rounded: the API's number, rounded.
  const f32 = Math.fround(0.1235); // 0.12349999696...; the trace spells it 0.1235
  assert.equal(exact(f32, "F32"), "0.1235");
  assert.equal(readable(f32, "F32"), readable(0.1235));
  assert.equal(readable(Math.fround(14.620398596252752), "F32"), "14.6");
  // Never more than 3 significant digits below 1000, nor a "-0", over many values.
  for (let i = 1; i < 2000; i++) {
    const x = Math.sin(i) * 10 ** ((i % 11) - 5);
    const s = readable(x);
    assert.notEqual(s, "-0", String(x));
    if (Math.abs(x) < 999.5) {
      const digits = s.replace(/e.*$/, "").replace(/[-.]/g, "").replace(/^0+/, "").length;
      assert.ok(digits <= 3, `${x} -> ${s}`);
      assert.ok(Math.abs(Number(s) - x) <= Math.abs(x) * 5e-3, `${x} -> ${s}`);
    } else assert.equal(s, String(Math.sign(x) * Math.round(Math.abs(x))));
  }
});

test("numbers: a count in a sentence whole to 9,999, then to 3 significant digits", () => {
  // The counts: a trained model's and the recurrent comparison's parameters.
  assert.equal(readableCount(54976), "55,000");
  assert.equal(readableCount(36480), "36,500");
  assert.equal(readableCount(38464), "38,500");
  assert.equal(readableCount(0), "0");
  assert.equal(readableCount(-0), "0");
  assert.equal(readableCount(24), "24");
  assert.equal(readableCount(9999), "9,999"); // small counts stay exact
  assert.equal(readableCount(10050), "10,100"); // halves away from zero
  assert.equal(readableCount(-10050), "-10,100");
  assert.equal(readableCount(99949), "99,900");
  assert.equal(readableCount(351168), "351,000");
  assert.equal(readableCount(999500), "1 million");
  assert.equal(readableCount(1234567), "1.23 million");
  assert.equal(readableCount(6313472), "6.31 million");
  assert.equal(readableCount(2.5e9), "2.5 billion");
  // Never more than 3 significant digits from 10,000, and within half a unit of the third.
  for (let i = 1; i < 2000; i++) {
    const n = Math.round(Math.abs(Math.sin(i)) * 10 ** (4 + (i % 6)));
    const s = readableCount(n);
    if (n < 10000) {
      assert.equal(s, n.toLocaleString("en-US"));
      continue;
    }
    const words = /^([\d.]+) (million|billion)$/.exec(s);
    const shown = words ? words[1].replace(".", "").replace(/^0+/, "") : s.replace(/,/g, "").replace(/0+$/, "");
    assert.ok(shown.length <= 3, `${n} -> ${s}`);
    const value = words ? Number(words[1]) * (words[2] === "million" ? 1e6 : 1e9) : Number(s.replace(/,/g, ""));
    assert.ok(Math.abs(value - n) <= n * 5e-3, `${n} -> ${s}`);
  }
});

test("the query-key view shows every key, or the strongest in text order past KEYS_MAX", () => {
  const n = 200;
  const weights = new Float32Array(n).map((_, j) => (j % 7) / 100);
  const data = { tokens: Array(n).fill("t"), query: 7, weights: { data: weights } }; // weight 0
  const rows = keyRows(/** @type {any} */ (data), false);
  assert.equal(rows.length, TOP_KEYS + 1); // and the query itself
  assert.ok(rows.includes(7));
  assert.deepEqual(
    rows,
    [...rows].sort((a, b) => a - b),
  );
  const least = Math.min(...rows.filter((j) => j !== 7).map((j) => weights[j]));
  assert.ok(rows.every((j) => j === 7 || weights[j] >= least));
  assert.ok([...weights].filter((w, j) => !rows.includes(j) && w > least).length === 0);
  assert.equal(keyRows(/** @type {any} */ (data), true).length, n);
  const short = { ...data, tokens: Array(KEYS_MAX).fill("t") };
  assert.equal(keyRows(/** @type {any} */ (short), false).length, KEYS_MAX);
});

test("a sliding layer's note says what the trace says its window does, or words true of any", () => {
  // The words come from the server (meta.attention.window_notes): a bidirectional window is
  // never "the last" keys. A trace saved before it sent them reads a rule true of both.
  const note = "a query sees only the 8 tokens on each side of it, and itself";
  const meta = { heads: 2, attention: { windows: [null, 9], window_notes: [null, note], qk_norm: "none" } };
  assert.deepEqual(headNotes(meta, 0, 0), []);
  assert.deepEqual(headNotes(meta, 0, 1), [`This layer slides a window: ${note}.`]);
  const older = { heads: 2, attention: { windows: [null, 9], qk_norm: "none" } };
  assert.deepEqual(headNotes(older, 0, 1), [
    "This layer slides a window: a query sees only the keys fewer than 9 positions away, itself included.",
  ]);
});

test("an attention sink is named when one token takes at least half of every other row", () => {
  const m = (rows) => ({ dtype: "F64", shape: [rows.length, rows.length], data: Float64Array.from(rows.flat()) });
  const labels = ["<s>", "a", "b", "c"];
  // Rows 1..3 give 0.9, 0.6 and 0.5 to the first token: a mean of 2/3.
  const sink = m([
    [1, 0, 0, 0],
    [0.9, 0.1, 0, 0],
    [0.6, 0.2, 0.2, 0],
    [0.5, 0.2, 0.2, 0.1],
  ]);
  const note = sinkNote(sink, labels, true);
  assert.match(note, /^An attention sink: on average 67% of each other row's weight goes to the first token, “<s>”/);
  assert.equal(sinkNote(sink, labels, false), ""); // max over heads: not weights of one row
  // Just under one half: no note.
  const spread = m([
    [1, 0, 0, 0],
    [0.49, 0.51, 0, 0],
    [0.49, 0.3, 0.21, 0],
    [0.49, 0.2, 0.2, 0.11],
  ]);
  assert.equal(sinkNote(spread, labels, true), "");
  // A sink elsewhere (BERT's [SEP]) is named by its place, counted from 1 as every label is.
  const sep = m([
    [0, 0, 0, 1],
    [0, 0.2, 0, 0.8],
    [0, 0, 0.3, 0.7],
    [0, 0, 0, 1],
  ]);
  const special = [true, false, false, true];
  assert.match(sinkNote(sep, labels, true, null, special), /^An attention sink: .*goes to token 4, “c”/);
  // Under the token options a row is a group: the note counts the text's tokens, not rows.
  const eight = [false, false, false, false, false, true, true, true];
  assert.match(sinkNote(sep, labels, true, [[1], [2], [3], [5, 6]], eight), /goes to tokens 6–7, “c”/);
  assert.match(sinkNote(sep, labels, true, [[1], [2], [3], [7]], eight), /goes to token 8, “c”/);
  // A word of the text that draws the rows ("it" → "animal") is no sink (issue 28, 5.8); a
  // punctuation mark is, special or not.
  const word = sinkNote(sep, ["it", "was", "the", "animal"], true, null, [false, false, false, false]);
  assert.match(word, /^One token draws this head: on average 83% .*goes to token 4, “animal”/);
  assert.doesNotMatch(word, /^An attention sink/);
  assert.match(sinkNote(sep, ["it", "was", "the", "."], true, null, null), /^An attention sink/);
});

test("trajectories: a long text starts with a few rows from the query on; 'all' and [] as asked", async () => {
  const { defaultRows, FEW_ROWS, LEGEND_MAX, positionColor, POSITION_SCALE } =
    await import("../../static/js/views/trajectories.js");
  const groups = (n) => Array.from({ length: n }, (_, i) => [i + 1]); // [CLS] hidden: rows start at token 1
  assert.deepEqual(defaultRows(groups(LEGEND_MAX), null, 5), [...Array(LEGEND_MAX).keys()]);
  assert.deepEqual(defaultRows(groups(469), null, 1), [...Array(FEW_ROWS).keys()]);
  assert.deepEqual(defaultRows(groups(469), null, 101), [100, 101, 102, 103, 104, 105, 106, 107]);
  assert.deepEqual(defaultRows(groups(469), null, 469), [461, 462, 463, 464, 465, 466, 467, 468]); // the end
  assert.equal(defaultRows(groups(469), "all", 1).length, 469);
  assert.deepEqual(defaultRows(groups(469), [], 1), []);
  // A row is picked when any of its tokens is (a word of pieces).
  assert.deepEqual(defaultRows([[1], [2, 3], [4]], [3], 1), [1]);
  assert.equal(positionColor(0), POSITION_SCALE[0]);
  assert.equal(positionColor(1), POSITION_SCALE[POSITION_SCALE.length - 1]);
});

test("the gradient norms' log axis is labelled within one decade, in full", () => {
  assert.deepEqual(logTicks(0.26, 2.9), { tickvals: [0.5, 1, 2], ticktext: ["0.5", "1", "2"] });
  const narrow = logTicks(0.31, 0.58);
  assert.deepEqual(narrow.tickvals, [0.3, 0.4, 0.5, 0.6], "1 to 9 when 1, 2, 5 give fewer than three");
  assert.deepEqual(narrow.ticktext, ["0.3", "0.4", "0.5", "0.6"]);
  assert.deepEqual(logTicks(0.001, 3), { dtick: 1 }, "a tick a decade over two or more");
  assert.deepEqual(logTicks(Infinity, -Infinity), { dtick: 1 }, "no values");
});

test("a label in its token's colour reads on white at AA: darkened, its hue kept", async () => {
  const { contrastOnWhite, readableOnWhite, tokenColor, PALETTE_SIZE } = await import("../../static/js/core/theme.js");
  for (let i = 0; i < PALETTE_SIZE; i++) {
    const c = tokenColor(i);
    const text = readableOnWhite(c);
    assert.ok(contrastOnWhite(text) >= 4.5, `${c} -> ${text}`);
    if (contrastOnWhite(c) >= 4.5) assert.equal(text, c); // dark enough already: unchanged
  }
  assert.equal(readableOnWhite("#edc948") === "#edc948", false); // the yellow is too light as text
  assert.ok(Math.abs(contrastOnWhite("#000000") - 21) < 1e-9 && Math.abs(contrastOnWhite("#ffffff") - 1) < 1e-9);
});
