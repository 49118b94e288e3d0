// CSV in and out (static/js/core/csv.js) and the toy lab's parser over it (modes/toy/paste.js):
// RFC 4180 quoting both ways, exact numbers, and a table exported then imported is the same
// table, label for label and number for number.
import assert from "node:assert/strict";
import { test } from "node:test";

import { arrayCsv, csvByteCap, partCsv, quote, readCsv, tableCsv, writeCsv } from "../../static/js/core/csv.js";
import { parseBlock } from "../../static/js/modes/toy/paste.js";

// Labels a writer must quote, or a reader could take for something else.
const AWKWARD = [
  "a,b",
  'say "hi"',
  "two\nlines",
  "cr\rlf",
  " lead",
  "trail ",
  "3",
  "-1e5",
  "",
  "=SUM(A1)",
  "naïve ☃",
  "x\r\ny",
  '"',
  ",",
];

test("text is quoted with its quotes doubled; numbers are bare and exact; rows end in CRLF", () => {
  const text = writeCsv(
    "token",
    ["x1", 'b"y'],
    ["a,b", "3"],
    [
      [0.1, 1e-7],
      [-2.5, 1 / 3],
    ],
  );
  assert.equal(text, '"token","x1","b""y"\r\n"a,b",0.1,1e-7\r\n"3",-2.5,0.3333333333333333\r\n');
  assert.equal(quote('"'), '""""');
  // A cell whose text is not a number yet stays text.
  assert.equal(writeCsv("token", ["x1"], ["a"], [["1.2.3"]]), '"token","x1"\r\n"a","1.2.3"\r\n');
});

test("float32 values are written with the fewest digits that read back as that float32", () => {
  const data = new Float32Array([0.1, 1 / 3, 1e-8, 0.999999, 0, 12345.678]);
  const text = arrayCsv("query \\ key", ["a", "b", "c"], ["p", "q"], { dtype: "F32", shape: [2, 3], data });
  const rows = readCsv(text).rows;
  assert.deepEqual(rows[0], ["query \\ key", "a", "b", "c"]);
  assert.deepEqual(rows[1], ["p", "0.1", "0.33333334", "1e-8"]);
  const cells = rows.slice(1).flatMap((r) => r.slice(1));
  cells.forEach((c, i) => {
    assert.equal(Math.fround(Number(c)), data[i]);
    const digits = c.replace(/^-?0*\.?0*|e.*$|\./g, "").length;
    if (digits > 1) assert.notEqual(Math.fround(Number(Number(c).toPrecision(digits - 1))), data[i], c);
  });
  assert.throws(() => arrayCsv("x", ["a"], ["p", "q"], { dtype: "F32", shape: [2, 3], data }), RangeError);
});

test("the reader takes RFC 4180 quoting, any line ending, and trims only unquoted cells", () => {
  const { rows, quoted } = readCsv('\ufeff"a,b", 2 ,"say ""hi"""\r\n"two\nlines","cr\rlf", x\n" lead" ,3\r');
  assert.deepEqual(rows, [
    ["a,b", "2", 'say "hi"'],
    ["two\nlines", "cr\rlf", "x"],
    [" lead", "3"],
  ]);
  assert.deepEqual(quoted, [
    [true, false, true],
    [true, true, false],
    [true, false],
  ]);
  assert.deepEqual(readCsv('a\tb c\t"d\te"\n\n\n', "\t").rows, [["a", "b c", "d\te"]]);
  assert.deepEqual(readCsv("").rows, []);
  assert.deepEqual(readCsv('""').rows, [[""]]);
});

test("every awkward label and axis name survives writing and reading", () => {
  const rows = AWKWARD.map((_, i) => [i, -i / 7]);
  const { rows: back } = readCsv(writeCsv("token", AWKWARD.slice(0, 2), AWKWARD, rows));
  assert.deepEqual(back[0], ["token", ...AWKWARD.slice(0, 2)]);
  assert.deepEqual(
    back.slice(1).map((r) => r[0]),
    AWKWARD,
  );
});

test("a toy table exported then imported through paste's parser is the same table", () => {
  let seed = 3;
  const rand = () => ((seed = (seed * 48271) % 2147483647) / 2147483647) * 2000 - 1000;
  const tokens = [...AWKWARD, "12", "0.5"];
  const axes = ["4", "a x", 'c"z', "-1", "é,"];
  const embeddings = tokens.map(() => axes.map(() => rand()));
  embeddings[0][0] = 1e-7;
  embeddings[1][1] = 0.1;
  embeddings[2][2] = "not yet a number"; // a cell being typed
  embeddings[3][3] = "";
  const block = parseBlock(tableCsv({ tokens, axes, embeddings }));
  assert.deepEqual(block.labels, tokens);
  assert.deepEqual(block.axes, axes);
  assert.deepEqual(block.values, embeddings);
  // What spreadsheets and hand-written files look like still reads as before.
  assert.deepEqual(parseBlock("token, x, y\na, 1, 2\nb, 3, 4\n"), {
    axes: ["x", "y"],
    labels: ["a", "b"],
    values: [
      [1, 2],
      [3, 4],
    ],
  });
  assert.deepEqual(parseBlock("1\t2,5\n3\t4\n"), {
    axes: null,
    labels: null,
    values: [
      [1, 2.5],
      [3, 4],
    ],
  });
});

test("the byte cap fits any table within the limits", () => {
  const limits = { max_tokens: 3, max_dim: 2, max_token_chars: 1 };
  const widest = "\u{1F600}"; // four UTF-8 bytes
  // eslint-disable-next-line no-loss-of-precision -- 17 digits on purpose: the longest a float64 is written
  const longest = -1.2345678901234567e-300; // the longest a float64 is written
  const text = writeCsv(
    widest,
    [widest, widest],
    [widest, widest, widest],
    [
      [longest, longest],
      [longest, longest],
      [longest, longest],
    ],
  );
  assert.equal(String(longest).length, 24);
  assert.ok(new TextEncoder().encode(text).length <= csvByteCap(limits));
  assert.ok(csvByteCap({ max_tokens: 64, max_dim: 64, max_token_chars: 40 }) < 2 ** 21); // 2 MiB
});

test("the sentence downloads read the parts the page holds", () => {
  const tokens = ["[CLS]", "a,b", "[SEP]"];
  const att = new Float32Array(2 * 9).map((_, i) => i / 17);
  const part = {
    meta: /** @type {any} */ ({ tokens }),
    arrays: {
      attentions: { dtype: "F32", shape: [1, 2, 3, 3], data: att.subarray(0, 9) },
      head_mean: { dtype: "F64", shape: [1, 3, 3], data: new Float64Array(9).fill(1 / 3) },
      hidden_states: { dtype: "F32", shape: [2, 3, 2], data: new Float32Array(12).map((_, i) => i + 0.5) },
    },
  };
  const head = readCsv(partCsv("attention", /** @type {any} */ (part))).rows;
  assert.deepEqual(head[0], ["query \\ key", ...tokens]);
  assert.equal(head[2][0], "a,b");
  head.slice(1).forEach((r, i) => r.slice(1).forEach((c, j) => assert.equal(Math.fround(Number(c)), att[3 * i + j])));
  assert.equal(readCsv(partCsv("layer_mean", /** @type {any} */ (part))).rows[1][1], "0.3333333333333333");
  const states = readCsv(partCsv("hidden_states", /** @type {any} */ (part), 1)).rows;
  assert.deepEqual(states[0], ["token", "d0", "d1"]);
  assert.deepEqual(states[3], ["[SEP]", "10.5", "11.5"]);
});
