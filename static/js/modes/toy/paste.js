// Reading a block pasted from a spreadsheet (tab-separated) or a CSV file (Import CSV), through
// the one CSV reader (core/csv.js).

import { readCsv } from "../../core/csv.js";

/** A number as people type or paste it: "0.7", "-1e-3", " 2 ", and "0,7" from a tab block. */
export function parseNumber(text, decimalComma = false) {
  let s = String(text).trim();
  if (decimalComma && /^[-+]?\d+,\d+$/.test(s)) s = s.replace(",", ".");
  if (s === "" || !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return null;
  const v = Number(s);
  return Number.isFinite(v) ? v : null;
}

/** True when the text is a block (more than one cell), not a single value. */
export function isBlock(text) {
  return /[\t,\n\r]/.test(text.trim());
}

/**
 * Rows of cells (tab-separated when the text has a tab, else comma-separated), read by the CSV
 * reader: "quoted" cells verbatim and flagged in `quoted` (text, never a number), others trimmed.
 * @param {string} text
 */
export function parseRows(text) {
  const sep = text.includes("\t") ? "\t" : ",";
  const { rows, quoted } = readCsv(text, sep);
  const width = Math.max(0, ...rows.map((r) => r.length));
  rows.forEach((r, i) => {
    while (r.length < width) {
      r.push("");
      quoted[i].push(false);
    }
  });
  // Drop columns that are empty in every row (trailing tabs from spreadsheets).
  for (let j = width - 1; j >= 0; j--) {
    if (rows.every((r, i) => r[j] === "" && !quoted[i][j])) {
      rows.forEach((r, i) => {
        r.splice(j, 1);
        quoted[i].splice(j, 1);
      });
    }
  }
  return { rows, quoted, decimalComma: sep === "\t" };
}

/**
 * The parts of a pasted block or a CSV file: `axes` (first row, when it is not numbers),
 * `labels` (first column, when it is not numbers) and `values` (numbers, or the text of a cell
 * that is not one). A quoted cell is text: an exported table's "3" is a name, not a number.
 * @param {string} text
 * @returns {{axes: string[] | null, labels: string[] | null, values: (number | string)[][]}}
 */
export function parseBlock(text) {
  const { rows, quoted, decimalComma } = parseRows(text);
  /** @param {number} i @param {number} j */
  const num = (i, j) => !quoted[i][j] && parseNumber(rows[i][j], decimalComma) !== null;
  if (!rows.length || !rows[0].length) return { axes: null, labels: null, values: [] };
  const width = rows[0].length;
  const all = rows.map((_, i) => i);
  const header =
    width > 1
      ? rows[0].slice(1).some((_, j) => !num(0, j + 1))
      : rows.length > 1 && !num(0, 0) && all.slice(1).every((i) => num(i, 0));
  const body = header ? all.slice(1) : all;
  const labels = body.length > 0 && (width > 1 ? body.some((i) => !num(i, 0)) : body.every((i) => !num(i, 0)));
  const skip = labels ? 1 : 0;
  return {
    axes: header ? rows[0].slice(skip) : null,
    labels: labels ? body.map((i) => rows[i][0]) : null,
    values: body.map((i) => rows[i].slice(skip).map((c) => parseNumber(c, decimalComma) ?? c)),
  };
}
