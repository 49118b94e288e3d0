// Numbers as a person reads them: short (fmt) or exact (exact), never "-0.00". Pure, no DOM.

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
