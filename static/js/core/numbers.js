// Numbers as a person reads them: short (fmt), to 3 significant digits (readable: text, tooltips,
// live regions; readableCount: a count in a sentence; readableWeight, readableShare,
// readablePercent, readableProse, readableSpan, readableAgainst, readableSigned: a sentence
// rounding must not make false; readableCell: a small cell's fixed decimals, never "1.00" short
// of 1 nor "0.00" above 0) or exact (exact: the numbers tables, CSV, exports; exactChange: a
// table's difference of two of them), never "-0.00".
// Pure, no DOM.

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
 * A decimal as an integer and a power of ten: "-1.25e-7" is [-125n, -9]. @param {string} s
 * @returns {[bigint, number]}
 */
function decimalOf(s) {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(s);
  if (!m) throw new RangeError(`not a decimal: ${s}`);
  const frac = m[3] ?? "";
  return [BigInt(`${m[1]}${m[2]}${frac}`), Number(m[4] ?? 0) - frac.length];
}

/**
 * A change a - b in a numbers table, exactly: the difference of the two values as exact()
 * spells them (0.652 - 0.305 reads "+0.347", never 0.34700000000000003), signed "+", "−"
 * (U+2212) or "0" when there is none; plain decimals, no exponent. Either masked reads "masked".
 * @param {number | null | undefined} a @param {number | null | undefined} b
 * @param {string} [dtype] "F32" for float32 values, anything else for float64
 */
export function exactChange(a, b, dtype = "F64") {
  const [sa, sb] = [exact(a, dtype), exact(b, dtype)];
  if (sa === "masked" || sb === "masked") return "masked";
  if (!Number.isFinite(Number(sa)) || !Number.isFinite(Number(sb))) return String(Number(sa) - Number(sb));
  const [[ma, ea], [mb, eb]] = [decimalOf(sa), decimalOf(sb)];
  const e = Math.min(ea, eb);
  const d = ma * 10n ** BigInt(ea - e) - mb * 10n ** BigInt(eb - e);
  if (d === 0n) return "0";
  let digits = (d < 0n ? -d : d).toString();
  if (e < 0) {
    digits = digits.padStart(1 - e, "0");
    digits = `${digits.slice(0, e)}.${digits.slice(e)}`.replace(/\.?0+$/, "");
  } else digits += "0".repeat(e);
  return `${d < 0n ? "−" : "+"}${digits}`;
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

// A number in a learner's sentence never reads as a value it is not (attnviz/numbers.py says the
// same, by the same rules; tests/test_numbers.py checks the two agree): a weight or share (0 to 1)
// within EDGE of 0 or 1, but not on it, reads "under 0.001" or "over 0.999", never "0" or "1"; a
// number under EDGE in size reads to one significant digit, "about 0.00008", and one that would
// round under 0.000001 "practically zero" (never "5.33e-10"); two ends of a range that read alike
// read as one value; a number beside the mark it is checked against never reads as the mark
// unless it is it ("just under 0.4"). The exact values stay in the numbers tables, CSV and
// exports (exact()).
const EDGE = 0.001;

/**
 * A weight, or another share of a whole (0 to 1), in a sentence: as readable() says it, but
 * within 0.001 of 0 or 1 and not on it, "under 0.001" or "over 0.999" (0.9996 reads "over 0.999",
 * never "1"; 0.0000759 "under 0.001"). A value outside 0 to 1, as readable(). A float32
 * ("F32") is first read as the JSON trace spells it (exact()), as readable() reads it.
 * @param {number | null | undefined} v
 * @param {string} [dtype] "F32" for float32 values, anything else for float64
 */
export function readableWeight(v, dtype = "F64") {
  if (v === null || v === undefined || !Number.isFinite(v)) return readable(v);
  const x = dtype === "F32" ? Number(exact(v, "F32")) : v;
  if (1 - EDGE < x && x < 1) return `over ${readable(1 - EDGE)}`;
  if (0 < x && x < EDGE) return `under ${readable(EDGE)}`;
  return readable(x);
}

/**
 * A share of a whole as a sentence says it before "of its attention": "all" (exactly 1), "none"
 * (exactly 0), "almost all (over 0.999)", "almost none (under 0.001)", else as readable() says it.
 * @param {number | null | undefined} v
 */
export function readableShare(v) {
  if (v === 1) return "all";
  if (v === 0) return "none";
  const said = readableWeight(v);
  if (said.startsWith("over")) return `almost all (${said})`;
  if (said.startsWith("under")) return `almost none (${said})`;
  return said;
}

/**
 * A share (0 to 1) as a whole percentage: "47%", "100%" only when it is all of it and "0%" only
 * when none; one that would round to either reads "over 99%" or "under 1%".
 * @param {number} v
 */
export function readablePercent(v) {
  if (!Number.isFinite(v)) return readable(v);
  const n = Math.round(100 * v) || 0; // never "-0%"
  if (n === 100 && v < 1) return "over 99%";
  if (n === 0 && v > 0) return "under 1%";
  return `${n}%`;
}

/**
 * A number in a sentence: as readable() says it (3 significant digits), but under 0.001 in size
 * to one significant digit, "about 0.00008" (0.0000759), and what would round under 0.000001
 * "practically zero" (5.33e-10). Exactly 0 reads "0".
 * @param {number | null | undefined} v
 */
export function readableProse(v) {
  if (v === null || v === undefined || !Number.isFinite(v) || v === 0 || Math.abs(v) >= EDGE) return readable(v);
  const r = Number(v.toPrecision(1));
  return Math.abs(r) < 1e-6 ? "practically zero" : `about ${String(r)}`;
}

/**
 * A range in a sentence, each end as `say` says it: "from 0.198 to 0.202"; ends that read alike
 * read as one value, "all about 0.2" ("all 0.2" when they are equal; "all under 0.001" when `say`
 * already hedges it).
 * @param {number} lo @param {number} hi @param {(v: number) => string} [say]
 */
export function readableSpan(lo, hi, say = readableProse) {
  const [a, b] = [say(lo), say(hi)];
  if (a !== b) return `from ${a} to ${b}`;
  return lo === hi || !/^[-\d]/.test(a) ? `all ${a}` : `all about ${a}`;
}

/**
 * A number said beside the mark it is checked against, as `say` says it, but never as the mark
 * when it is not the mark: 0.39996 against 0.4 reads "just under 0.4" (a head that "scores 0.4"
 * must pass a mark of 0.4), 0.50002 against 0.5 "just over 0.5".
 * @param {number} v @param {number} mark @param {(v: number) => string} [say]
 */
export function readableAgainst(v, mark, say = readableProse) {
  const said = say(v);
  if (v === mark || said !== say(mark)) return said;
  return `just ${v < mark ? "under" : "over"} ${said}`;
}

/**
 * A signed change or contribution: "+10.6", "−0.0523" (a minus sign, U+2212), "0" only when it
 * is none; its size as `say` says it (readable() by default, as attnviz.numbers.signed says it).
 * In a sentence pass readableProse: a size under 0.001 reads "about +0.00008", one under
 * 0.000001 "practically zero", never an exponent.
 * @param {number} v @param {(v: number) => string} [say]
 */
export function readableSigned(v, say = readable) {
  if (!Number.isFinite(v) || v === 0) return readable(v);
  const size = say(Math.abs(v));
  const sign = v > 0 ? "+" : "−";
  const at = size.search(/\d/); // words before the digits ("about ") keep their place
  if (at < 0 || /^0$|^practically/.test(size)) return size;
  return `${size.slice(0, at)}${sign}${size.slice(at)}`;
}

/**
 * A number written in a small cell (a heatmap's cell, a head atlas's button), to `digits`
 * decimals as fmt() writes it, but never onto a value it is not: a value that is not 0 never
 * reads "0.00" but "<0.01" (">-0.01" below 0), and one short of 1 never "1.00" but ">0.99"
 * (0.997: a weight that is not all of it). The cell's label or tooltip, and the numbers table,
 * say more.
 * @param {number | null | undefined} v @param {number} [digits]
 */
export function readableCell(v, digits = 2) {
  const s = fmt(v, digits);
  if (v === null || v === undefined || !Number.isFinite(v) || v === 0) return s;
  const step = 10 ** -digits;
  if (Number(s) === 0) return v > 0 ? `<${fmt(step, digits)}` : `>-${fmt(step, digits)}`;
  if (digits > 0 && Number(s) === 1 && v < 1) return `>${fmt(1 - step, digits)}`;
  return s;
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
