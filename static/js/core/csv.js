// CSV in and out (RFC 4180): the reader the toy lab's paste and Import CSV share, and the writer
// of the toy table and of the sentence mode's head, layer-mean and hidden-state downloads, in
// the layout of Python's to_csv (attnviz/python/tables.py), byte for byte: a header row, then a
// row per token; text (labels, names, the corner) always quoted, numbers bare and exact (as
// exact() spells them); rows end in CRLF. Pure: no DOM, runs in Node for the tests.

import { sub } from "./compact.js";
import { exact } from "./numbers.js";

/** @typedef {import("./types.js").NDArray} NDArray */

/** The media type a download is saved as. */
export const CSV_TYPE = "text/csv;charset=utf-8";

/** The corner cell of a square of weights (rows = queries, columns = keys) in Python's layout. */
export const WEIGHTS_CORNER = "query \\ key";
/** The corner cell of a table with a row per token: the toy table's, and hidden states'. */
export const TOKEN_CORNER = "token";

/**
 * A text cell: always quoted, quotes doubled, so that "3" or " the" reads back as that text.
 * @param {string} text
 */
export function quote(text) {
  return `"${String(text).replaceAll('"', '""')}"`;
}

/**
 * A number cell: the exact value (exact(); "F32" for a float32), bare; infinities and NaN as
 * JavaScript and Python's float() spell them.
 * @param {number} v
 * @param {string} [dtype]
 */
export function numberCell(v, dtype = "F64") {
  return Number.isFinite(v) ? exact(v, dtype) : String(v);
}

/**
 * A labelled matrix as CSV: the header (`corner`, then `columns`), then for each label its row.
 * A cell that is not a number (a toy cell whose text is not one yet) is written as text.
 * @param {string} corner
 * @param {string[]} columns
 * @param {string[]} labels
 * @param {ArrayLike<number | string>[]} rows
 * @param {string} [dtype] "F32" when the numbers are float32s
 * @returns {string}
 */
export function writeCsv(corner, columns, labels, rows, dtype = "F64") {
  if (rows.length !== labels.length) throw new RangeError(`${rows.length} rows for ${labels.length} labels`);
  const lines = [[corner, ...columns].map(quote).join(",")];
  labels.forEach((label, i) => {
    const cells = Array.from(rows[i], (v) => (typeof v === "number" ? numberCell(v, dtype) : quote(v)));
    lines.push([quote(label), ...cells].join(","));
  });
  return lines.map((line) => `${line}\r\n`).join("");
}

/**
 * A 2-d array (a block of a compact part, sub(attentions, 0, 0)) as CSV with its row labels
 * and column names, numbers spelled for the array's dtype.
 * @param {string} corner
 * @param {string[]} columns
 * @param {string[]} labels
 * @param {NDArray} arr
 */
export function arrayCsv(corner, columns, labels, arr) {
  const [n, m] = arr.shape;
  if (arr.shape.length !== 2 || n !== labels.length || m !== columns.length) {
    throw new RangeError(`a ${arr.shape.join(" x ")} array for ${labels.length} x ${columns.length} labels`);
  }
  const rows = Array.from({ length: n }, (_, i) => arr.data.subarray(i * m, (i + 1) * m));
  return writeCsv(corner, columns, labels, rows, arr.dtype);
}

/**
 * The toy table as CSV, the layout Import CSV reads back into the same table.
 * @param {{tokens: string[], axes: string[], embeddings: (number | string)[][]}} table
 */
export function tableCsv({ tokens, axes, embeddings }) {
  return writeCsv(TOKEN_CORNER, axes, tokens, embeddings);
}

/** Hidden-state columns as Python names them: d0 to d{d-1}. @param {number} d */
export const stateColumns = (d) => Array.from({ length: d }, (_, j) => `d${j}`);

/**
 * Read CSV text (RFC 4180, leniently): `sep` between cells, CRLF, LF or CR between rows,
 * "quoted" cells taken verbatim (separators, quotes doubled, line breaks), unquoted cells
 * trimmed. Blank lines at the end are dropped. `quoted[i][j]` says a cell was quoted: text,
 * never a number.
 * @param {string} text
 * @param {string} [sep]
 * @returns {{rows: string[][], quoted: boolean[][]}}
 */
export function readCsv(text, sep = ",") {
  /** @type {string[][]} */ const rows = [];
  /** @type {boolean[][]} */ const quoted = [];
  /** @type {string[]} */ let row = [];
  /** @type {boolean[]} */ let flags = [];
  let cell = "";
  let inQuotes = false;
  let wasQuoted = false;
  const endCell = () => {
    row.push(wasQuoted ? cell : cell.trim());
    flags.push(wasQuoted);
    cell = "";
    wasQuoted = false;
  };
  const endRow = () => {
    endCell();
    rows.push(row);
    quoted.push(flags);
    row = [];
    flags = [];
  };
  const s = text.startsWith("\ufeff") ? text.slice(1) : text; // a spreadsheet's byte-order mark
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (inQuotes) {
      if (ch === '"' && s[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') inQuotes = false;
      else cell += ch;
    } else if (ch === '"' && !wasQuoted && cell.trim() === "") {
      inQuotes = true;
      wasQuoted = true;
      cell = "";
    } else if (ch === sep) {
      endCell();
    } else if (ch === "\r" || ch === "\n") {
      if (ch === "\r" && s[i + 1] === "\n") i++;
      endRow();
    } else if (!(wasQuoted && /\s/.test(ch))) {
      // space after a closing quote is not the cell's
      cell += ch;
    }
  }
  if (cell !== "" || wasQuoted || row.length) endRow();
  while (rows.length && rows[rows.length - 1].every((c, j) => c === "" && !quoted[rows.length - 1][j])) {
    rows.pop();
    quoted.pop();
  }
  return { rows, quoted };
}

/**
 * The largest CSV file a table within the limits can be, with room to spare: every cell a
 * quoted name of max_token_chars characters of up to 8 bytes each (4 in UTF-8, twice that for a
 * doubled quote, more than either alone), or a float64 of 24 characters. Import CSV refuses a
 * larger file before reading it.
 * @param {{max_tokens: number, max_dim: number, max_token_chars: number}} limits
 */
export function csvByteCap(limits) {
  const cell = Math.max(8 * limits.max_token_chars, 24) + 3; // quotes, separator
  return (limits.max_tokens + 1) * (limits.max_dim + 1) * cell;
}

/**
 * A sentence-mode download from a compact part the page holds, as Python's to_csv writes it:
 * "attention" from the part {fields: "attentions", layer, head}, "layer_mean" from
 * {fields: "head_mean", layer} (no token options), "hidden_states" from {fields:
 * "hidden_states"}, whose `layer` runs from 0 (the input) to the trace's layers.
 * @param {"attention" | "layer_mean" | "hidden_states"} what
 * @param {import("./types.js").Compact} part
 * @param {number} [layer] hidden_states only
 */
export function partCsv(what, part, layer = 0) {
  const tokens = part.meta.tokens;
  if (what === "attention") return arrayCsv(WEIGHTS_CORNER, tokens, tokens, sub(part.arrays.attentions, 0, 0));
  if (what === "layer_mean") return arrayCsv(WEIGHTS_CORNER, tokens, tokens, sub(part.arrays.head_mean, 0));
  const states = sub(part.arrays.hidden_states, layer);
  return arrayCsv(TOKEN_CORNER, stateColumns(states.shape[1]), tokens, states);
}
