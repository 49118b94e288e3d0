// Reading a block pasted from a spreadsheet (tab-separated) or a CSV file.

/** A number as people type or paste it: "0.7", "-1e-3", " 2 ", and "0,7" from a tab block. */
export function parseNumber(text, decimalComma = false) {
  let s = String(text).trim();
  if (decimalComma && /^[-+]?\d+,\d+$/.test(s)) s = s.replace(",", ".");
  if (s === "" || !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return null;
  const v = Number(s);
  return Number.isFinite(v) ? v : null;
}

/** Split one line on `sep`, honouring "double quoted" fields. */
function splitLine(line, sep) {
  const out = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') { cell += '"'; i++; }
      else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"' && cell.trim() === "") {
      quoted = true;
      cell = "";
    } else if (ch === sep) {
      out.push(cell.trim());
      cell = "";
    } else {
      cell += ch;
    }
  }
  out.push(cell.trim());
  return out;
}

/** True when the text is a block (more than one cell), not a single value. */
export function isBlock(text) {
  return /[\t,\n\r]/.test(text.trim());
}

/** Rows of trimmed cells; tab-separated when the text has a tab, else comma-separated. */
export function parseRows(text) {
  const sep = text.includes("\t") ? "\t" : ",";
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  while (lines.length && lines[lines.length - 1].trim() === "") lines.pop();
  const rows = lines.map((line) => splitLine(line, sep));
  const width = Math.max(0, ...rows.map((r) => r.length));
  for (const r of rows) while (r.length < width) r.push("");
  // Drop columns that are empty in every row (trailing tabs from spreadsheets).
  for (let j = width - 1; j >= 0; j--) {
    if (rows.every((r) => r[j] === "")) rows.forEach((r) => r.splice(j, 1));
  }
  return { rows, decimalComma: sep === "\t" };
}

/**
 * The parts of a pasted block: `axes` (first row, when it is not numbers), `labels` (first
 * column, when it is not numbers) and `values` (numbers, or the text of a cell that is not one).
 */
export function parseBlock(text) {
  const { rows, decimalComma } = parseRows(text);
  const num = (s) => parseNumber(s, decimalComma) !== null;
  if (!rows.length || !rows[0].length) return { axes: null, labels: null, values: [] };
  const width = rows[0].length;
  const header = width > 1
    ? rows[0].slice(1).some((c) => !num(c))
    : rows.length > 1 && !num(rows[0][0]) && rows.slice(1).every((r) => num(r[0]));
  const body = header ? rows.slice(1) : rows;
  const labels = body.length > 0 && (width > 1
    ? body.some((r) => !num(r[0]))
    : body.every((r) => !num(r[0])));
  const skip = labels ? 1 : 0;
  return {
    axes: header ? rows[0].slice(skip) : null,
    labels: labels ? body.map((r) => r[0]) : null,
    values: body.map((r) => r.slice(skip).map((c) => parseNumber(c, decimalComma) ?? c)),
  };
}
