// The pure parts of the views: which state feeds which view, number formatting, and which keys
// the query-key view shows.
import assert from "node:assert/strict";
import { test } from "node:test";

import { SENTENCE_FEEDS, SENTENCE_TRACE, TOY_FEEDS, TRAIN_FEEDS, viewsFed } from "../../static/js/core/feeds.js";
import {
  exact,
  exactChange,
  fmt,
  readable,
  readableCell,
  readableCount,
  readableProse,
  readableSigned,
  readableWeight,
} from "../../static/js/core/numbers.js";
import { sinkNote } from "../../static/js/views/modelview.js";
import {
  KEYS_MAX,
  TOP_KEYS,
  geometry,
  headNotes,
  keyNumbers,
  keyRows,
  weightLine,
} from "../../static/js/views/qkview.js";
import { gradsSummary, logTicks } from "../../static/js/modes/train/views/traingrads.js";
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
  // view); the rest feed views, but for `more`, which opens cards (More views), drawn as they open.
  assert.deepEqual(SENTENCE_TRACE, ["model", "text", "images", "generate", "ablate", "ablateMode", "ablateSource"]);
  const traced = [...SENTENCE_TRACE, "more"];
  const sentenceKeys = Object.keys(defaultSentence()).filter((k) => !traced.includes(k));
  assert.deepEqual([...fed(SENTENCE_FEEDS)].sort(), sentenceKeys.sort());
  assert.ok(SENTENCE_TRACE.every((k) => k in defaultSentence()));
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

test("numbers: a change in a numbers table is the exact difference of the two as exact spells them", () => {
  const f = Math.fround;
  assert.notEqual(String(f(0.652) - f(0.305)), "0.347"); // what plain subtraction would write
  assert.equal(exactChange(f(0.652), f(0.305), "F32"), "+0.347");
  assert.equal(exactChange(f(0.305), f(0.652), "F32"), "−0.347");
  assert.equal(exactChange(f(0.25), f(0.25), "F32"), "0");
  assert.equal(exactChange(f(1.25e-7), 0, "F32"), "+0.000000125"); // plain, never "1.25e-7"
  assert.equal(exactChange(f(0.5), f(1.25e-8), "F32"), "+0.4999999875");
  assert.equal(exactChange(0.7, 0.1), "+0.6"); // float64: its own shortest spelling
  assert.equal(exactChange(-Infinity, 0.5, "F32"), "masked");
  assert.equal(exactChange(0.5, null), "masked");
  // Random float32 pairs: the string is the exact decimal difference of the two spellings.
  let seed = 7;
  const rand = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
  for (let k = 0; k < 2000; k++) {
    const [a, b] = [f(rand() * 10 ** -(k % 9)), f(rand())];
    const s = exactChange(a, b, "F32");
    assert.ok(/^([+−]\d+(\.\d*[1-9])?|0)$/.test(s), s);
    const back = Number(s.replace("−", "-"));
    assert.ok(Math.abs(back - (Number(exact(a, "F32")) - Number(exact(b, "F32")))) <= 1e-15, s);
  }
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

test("numbers: a signed change and a small cell never read as a value they are not", () => {
  // readableSigned: as attnviz.numbers.signed says it by default; a sentence's words keep their place.
  assert.equal(readableSigned(10.6412), "+10.6");
  assert.equal(readableSigned(-0.052349), "−0.0523");
  assert.equal(readableSigned(0), "0");
  assert.equal(readableSigned(-0), "0");
  assert.equal(readableSigned(0.3466, readableProse), "+0.347");
  assert.equal(readableSigned(-0.0000759, readableProse), "about −0.00008");
  assert.equal(readableSigned(5.33e-10, readableProse), "practically zero");
  assert.equal(readableSigned(0.9996, readableWeight), "over +0.999");
  // readableCell: fixed decimals, but 0.997 never "1.00" nor 0.003 "0.00".
  assert.deepEqual(
    [0.997, 0.9996, 1, 0.003, -0.003, 0, -0, 0.456, 2.997, 12.5].map((v) => readableCell(v, 2)),
    [">0.99", ">0.99", "1.00", "<0.01", ">-0.01", "0.00", "0.00", "0.46", "3.00", "12.50"],
  );
  assert.equal(readableCell(0.03, 1), "<0.1");
  assert.equal(readableCell(0.3, 0), "<1");
  assert.equal(readableCell(null), "–");
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

test("the query-key canvas writes each key's numbers by the readable rules, never 1 short of it", () => {
  const d = {
    sums: [14.620398596252752, -0.00123456, 0.5, 2],
    scores: [2.5844, -0.000218, 0.0883883, null],
    weights: Float32Array.from([0.9996, 0.000052, 0.997, 0]),
    masked: [false, false, false, true],
    dtype: "F32",
  };
  assert.deepEqual(keyNumbers(d), [
    { sum: "14.6", score: "2.58", weight: "over 0.999" }, // was "14.62", "2.584", "1.000"
    { sum: "-0.00123", score: "-0.000218", weight: "under 0.001" }, // was "-0.00", "-0.000", "0.000"
    { sum: "0.5", score: "0.0884", weight: "0.997" },
    { sum: "–", score: "masked", weight: "masked" },
  ]);
  assert.equal(weightLine("0.997"), "weight = 0.997");
  assert.equal(weightLine("over 0.999"), "weight over 0.999");
  assert.equal(weightLine("masked"), "weight = masked");
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

test("windows a trace could not read are said unknown on every layer, not none", () => {
  // A model on NDIF whose masks could not be computed here: meta.attention.windows_unread.
  const unread = "not read over NDIF: its forward could not be run here without its weights to read its masks";
  const meta = { heads: 2, attention: { windows: [null, null], windows_unread: unread, qk_norm: "none" } };
  for (const layer of [0, 1]) {
    assert.deepEqual(headNotes(meta, 0, layer), [`This layer's sliding window, if it has one, was ${unread}.`]);
  }
  const read = { heads: 2, attention: { windows: [null, null], windows_unread: null, qk_norm: "none" } };
  assert.deepEqual(headNotes(read, 0, 1), []);
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

test("the PCA axes say each component's share of the variance as a whole percentage", async () => {
  const { pcaTitles } = await import("../../static/js/views/vectors.js");
  const { titles } = await import("../../static/js/views/trajectories.js");
  // Was "PC1 (47.1%)", "PC2 (0.0%)": a share that is not none never reads "0%", nor short of all "100%".
  assert.deepEqual(pcaTitles([0.4712, 0.004, 0.9996]), ["PC1 (47% var)", "PC2 (under 1% var)", "PC3 (over 99% var)"]);
  assert.deepEqual(titles({ ratio: [0.4712, 0.004] }), ["PC1 (47%)", "PC2 (under 1%)"]);
});

test("a colour bar's ticks and a time read by the readable rules, never 1 short of it nor 0.0", async () => {
  const { barTicks } = await import("../../static/js/views/heatcanvas.js");
  const { ms } = await import("../../static/js/modes/train/views/trainrecurrent.js");
  assert.deepEqual(barTicks(1), ["0", "0.5", "1"]);
  assert.deepEqual(barTicks(0.9996, "F32"), ["0", "0.5", "over 0.999"]); // was "1.000"
  assert.deepEqual(barTicks(0.3127), ["0", "0.156", "0.313"]);
  assert.equal(ms(0.012345), "12.3 ms");
  assert.equal(ms(0.00004), "0.04 ms"); // was "0.0 ms"
  assert.equal(ms(2.5), "2500 ms");
});

test("the recurrent comparison's numbers tables: each value exactly as the API sent it", async () => {
  const { numbersTable } = await import("../../static/js/modes/train/views/trainrecurrent.js");
  const models = /** @type {any[]} */ ([
    { name: "transformer", accuracy: [1, 0.9921875], step_seconds: [0.0012345678901234567, 0.004] },
    { name: "lstm", accuracy: [0.96875, 0.51171875], step_seconds: [0.00098765] },
  ]);
  const accuracy = numbersTable(models, {
    caption: "Share predicted right (0 to 1), by letters",
    corner: "letters",
    xs: [4, 12],
    ys: (m) => m.accuracy,
  });
  assert.deepEqual(accuracy?.head, ["letters", "transformer", "LSTM"]);
  // Not "99%" nor "51%" (the summary's readablePercent): the share itself.
  assert.deepEqual(accuracy?.rows, [
    ["4", "1", "0.96875"],
    ["12", "0.9921875", "0.51171875"],
  ]);
  const time = numbersTable(models, {
    caption: "Seconds per training step, by sequence length (tokens)",
    corner: "tokens",
    xs: [16, 32],
    ys: (m) => m.step_seconds,
  });
  // Seconds as sent, never milliseconds to 3 digits; a length not timed yet reads "–".
  assert.deepEqual(time?.rows, [
    ["16", String(0.0012345678901234567), "0.00098765"],
    ["32", "0.004", "–"],
  ]);
  assert.equal(numbersTable([], { caption: "", corner: "", xs: [1], ys: () => [] }), null);
});

test("the toy lab's before and after: read as the article's tables, 3 significant digits", async () => {
  const { vectorText } = await import("../../static/js/views/beforeafter.js");
  const v = (/** @type {number[]} */ data) => ({ dtype: "F64", shape: [data.length], data: Float64Array.from(data) });
  // The article's apple after one pass, as the float64 toy engine computes it.
  const apple = [0.21109974822233568, 0.42306655278876526, 0.392639007511703];
  assert.deepEqual(vectorText(v(apple)), { text: "[0.211, 0.423, 0.393]", title: "[0.211, 0.423, 0.393]" });
  assert.deepEqual(vectorText(v([0.7, 0.8, -0])), { text: "[0.7, 0.8, 0]", title: "[0.7, 0.8, 0]" });
  // A longer vector: its first three, then "…"; the tooltip has them all.
  const long = vectorText(v([1 / 3, 0.1 + 0.2, 2, 0.000012345]));
  assert.equal(long.text, "[0.333, 0.3, 2, …]");
  assert.equal(long.title, "[0.333, 0.3, 2, 0.0000123]");
});

test("the gradient norms' log axis is labelled within one decade, in full", () => {
  assert.deepEqual(logTicks(0.26, 2.9), { tickvals: [0.5, 1, 2], ticktext: ["0.5", "1", "2"] });
  const narrow = logTicks(0.31, 0.58);
  assert.deepEqual(narrow.tickvals, [0.3, 0.4, 0.5, 0.6], "1 to 9 when 1, 2, 5 give fewer than three");
  assert.deepEqual(narrow.ticktext, ["0.3", "0.4", "0.5", "0.6"]);
  // Two decades or more: a tick a decade, in full (never Plotly's "1μ" or an exponent).
  assert.deepEqual(logTicks(0.0012, 3), {
    tickvals: [0.001, 0.01, 0.1, 1, 10],
    ticktext: ["0.001", "0.01", "0.1", "1", "10"],
  });
  const wide = logTicks(3e-9, 40);
  assert.deepEqual(wide.ticktext, ["10⁻⁹", "10⁻⁷", "10⁻⁵", "0.001", "0.1", "10"], "every second past 8 decades");
  assert.deepEqual(wide.tickvals, [1e-9, 1e-7, 1e-5, 1e-3, 0.1, 10]);
  assert.deepEqual(logTicks(2, 5e7).ticktext, ["1", "100", "10000", "10⁶", "10⁸"]);
  assert.deepEqual(logTicks(0.00002, 0.03).ticktext, ["10⁻⁵", "0.0001", "0.001", "0.01", "0.1"]);
  assert.deepEqual(logTicks(Infinity, -Infinity), { dtick: 1 }, "no values");
  assert.deepEqual(logTicks(0, 3), { dtick: 1 }, "no positive values");
});

test("the query-key view fits its card: side by side where there is room, else the numbers stacked", () => {
  // A 1280 px page's card: each key's numbers right of its products, on their rows.
  const wide = geometry(8, 32, 1214, 60);
  assert.equal(wide.stacked, false);
  assert.equal(wide.nTop, wide.pTop);
  assert.ok(wide.xSum > wide.x0 + wide.heatW && wide.width <= 1214);
  // A 480 px page's card (429 px): the numbers under the heatmaps' axis title, from the labels'
  // column, and nothing wider than the card (it ran 640 px wide, its right part out of sight).
  for (const [hd, labelW] of [
    [32, 60],
    [64, 60],
    [128, 60],
  ]) {
    const g = geometry(14, hd, 429, labelW);
    assert.equal(g.stacked, true);
    assert.ok(g.nTop > g.dimY && g.dimY > g.pTop, JSON.stringify(g));
    assert.equal(g.xSum, g.left);
    assert.ok(g.width <= 429, `${hd} dimensions: ${g.width} px`);
    assert.ok(g.cell >= 2);
  }
  // Only a head too wide even so (128 dimensions beside the longest labels) runs past the card,
  // its cells 2 px each, and scrolls inside it.
  const widest = geometry(14, 128, 429, 150);
  assert.ok(widest.stacked && widest.cell === 2 && widest.width > 429);
});

test("the gradient norms' summary says each layer's first and last norm in words, never an exponent", () => {
  const layer = (/** @type {number} */ l) => `layer ${l + 1}`;
  const run = (/** @type {number[][]} */ grad_norms, more = false) =>
    /** @type {any} */ ({
      variants: [
        { label: "small", history: { step: grad_norms.map((_, i) => i + 1), grad_norms } },
        ...(more ? [{ label: "other", history: { step: [], grad_norms: [] } }] : []),
      ],
    });
  // A vanishing gradient: JavaScript writes 3.2e-9 and 0.0000759 as "3.2e-9" and "0.0000759".
  assert.equal(
    gradsSummary(run([[1.0614, 0.0000759], ...Array(9998).fill([1, 1]), [0.98765, 3.2e-9]]), 0, layer),
    "Gradient norm, step 1 → 10,000: layer 1 1.06 → 0.988, layer 2 about 0.00008 → practically zero.",
  );
  assert.equal(
    gradsSummary(run([[2, 0.5]], true), 0, layer),
    "Gradient norm of small, step 1 → 1: layer 1 2 → 2, layer 2 0.5 → 0.5.",
  );
  assert.equal(gradsSummary(run([], true), 1, layer), "Gradient norms: no steps yet.");
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
