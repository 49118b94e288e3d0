// Numbers as a person reads them: short (fmt), to 3 significant digits (readable: text, tooltips,
// live regions; readableCount: a count in a sentence) or exact (exact: the numbers tables, CSV,
// exports), never "-0.00". Pure, no DOM.

/**
 * A short display of a number (2 decimals by default), never "-0.00"; "–" for none.
 * @param {number | null | undefined} v
 * @param {number} [digits]
 */
export function fmt(v, digits = 2) {
  if (v === null || v === undefined) return "–";
  const s = Number(v).toFixed(digits);
  return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
}

/**
 * The exact value as the JSON trace spells it. A float32 is written with the fewest significant
 * digits that read back as that float32 (as the server's JSON does: 0.1, not the
 * 0.10000000149011612 of its float64 widening; never more than 9); a float64 in full. Masked
 * scores (-Infinity, or null in JSON) read "masked".
 * @param {number | null | undefined} v
 * @param {string} [dtype] "F32" for float32 values, anything else for float64
 */
export function exact(v, dtype = "F64") {
  if (v === null || v === undefined || v === -Infinity) return "masked";
  if (dtype === "F32" && Number.isFinite(v) && v !== 0) {
    const f = Math.fround(v);
    for (let p = 1; p < 9; p++) {
      const short = Number(v.toPrecision(p));
      if (Math.fround(short) === f) return String(short);
    }
    return String(Number(v.toPrecision(9)));
  }
  return String(v);
}

/**
 * A number as a person reads it, in text, a tooltip, a live region or alt text: 3 significant
 * digits (14.620398596252752 reads "14.6", 0.6524058041842772 "0.652", 0.000123456 "0.000123"),
 * a number of 1000 or more rounded to a whole one (1234.5 reads "1235"), never "-0"; under
 * 0.000001, JavaScript's own exponent form ("1.23e-7"). Halves round away from zero. A float32
 * ("F32") is first read as the JSON trace spells it (exact()), so the page rounds the very number
 * the API sent. Masked scores (-Infinity, or null in JSON) read "masked", as exact() says them.
 * The exact value stays in the numbers tables, CSV and exports (exact()).
 * @param {number | null | undefined} v
 * @param {string} [dtype] "F32" for float32 values, anything else for float64
 */
export function readable(v, dtype = "F64") {
  if (v === null || v === undefined || v === -Infinity) return "masked";
  if (!Number.isFinite(v)) return String(v);
  const x = dtype === "F32" ? Number(exact(v, "F32")) : Number(v);
  if (Math.abs(x) >= 1000) return String(Math.sign(x) * Math.round(Math.abs(x)));
  return String(Number(x.toPrecision(3))); // String(-0) is "0"
}

/**
 * A count as a person reads it in a sentence ("55,000 parameters"): whole, with thousands
 * separators, up to 9,999 ("1,234 tokens"); from 10,000 to 3 significant digits, as readable()
 * rounds ("54,976" reads "55,000", "36,480" "36,500", 999,999 "1 million"); from a million in
 * words ("1.23 million", "2.5 billion"). Halves round away from zero. A cap, a counter beside
 * an input ("59 / 128 tokens"), a step of a run and a refusal's figures stay exact, as do the
 * numbers tables, CSV, exports and the API.
 * @param {number} n
 */
export function readableCount(n) {
  if (!Number.isFinite(n)) return String(n);
  const whole = Math.sign(n) * Math.round(Math.abs(n)) || 0; // never "-0"
  if (Math.abs(whole) < 10000) return whole.toLocaleString("en-US");
  // toPrecision rounds a half away from zero (the sign is set aside first).
  const r = Number(whole.toPrecision(3));
  const a = Math.abs(r);
  if (a >= 1e9) return `${Number((r / 1e9).toPrecision(3))} billion`;
  if (a >= 1e6) return `${Number((r / 1e6).toPrecision(3))} million`;
  return r.toLocaleString("en-US");
}
