// How a token's label is drawn and read, the same in every view. A label is the text the token
// stands for (" the", " ", "\n", a byte "<0xE2>"), kept as it is in the data (CSV, exports).
// Drawn, a space where it would not be seen (at the label's start or end) is "␣", a newline
// "⏎", a tab "⇥", a control byte "<0x06>" and another invisible character "<U+200B>", so that
// no token is a blank or a tofu box; read aloud (aria labels, live regions), they are named:
// "space", "newline", "byte 0x06".

/** @type {Record<string, [string, string]>} a character: [its mark, its name] */
const MARKS = {
  " ": ["␣", "space"],
  "\n": ["⏎", "newline"],
  "\t": ["⇥", "tab"],
  "\r": ["␍", "carriage return"],
};

// C0 and C1 controls and DEL (Unicode's Cc): a byte with no glyph.
const CONTROL = /\p{Cc}/u;
// Characters that draw nothing, or a blank: other spaces, format characters (zero-width joiners,
// the byte-order mark), line and paragraph separators, variation selectors.
const INVISIBLE = /[\p{Zs}\p{Cf}\p{Zl}\p{Zp}\u034f\ufe00-\ufe0f\u115f\u1160\u3164]/u;

/**
 * The characters of a label, each with whether it is drawn as a mark: a space only where it
 * would not be seen, at the label's start or end (between two visible characters it is one).
 * @param {string} s
 * @returns {[string, boolean][]}
 */
function chars(s) {
  const all = [...s];
  const lead = all.findIndex((ch) => ch !== " ");
  const from = lead < 0 ? all.length : lead;
  let to = all.length;
  while (to > from && all[to - 1] === " ") to--;
  return all.map((ch, i) => [ch, ch !== " " || i < from || i >= to]);
}

/** @param {string} ch @param {"shown" | "spoken"} how */
function mark(ch, how) {
  const m = MARKS[ch];
  if (m) return how === "shown" ? m[0] : m[1];
  const code = /** @type {number} */ (ch.codePointAt(0));
  const hex = code.toString(16).toUpperCase().padStart(2, "0");
  if (CONTROL.test(ch)) return how === "shown" ? `<0x${hex}>` : `byte 0x${hex}`;
  if (INVISIBLE.test(ch)) {
    return how === "shown" ? `<U+${hex.padStart(4, "0")}>` : `character U+${hex.padStart(4, "0")}`;
  }
  return null;
}

/**
 * A token's label as every view draws it: spaces, newlines, tabs and bytes visible.
 * @param {unknown} label
 */
export function shownToken(label) {
  const s = String(label);
  if (s === "") return "∅";
  let out = "";
  for (const [ch, marked] of chars(s)) out += (marked && mark(ch, "shown")) || ch;
  return out;
}

/**
 * A token's label as a screen reader is given it (aria labels, live regions): each run of
 * spaces, newlines or bytes named ("space", "2 newlines", "byte 0x06"), the rest as it is.
 * @param {unknown} label
 */
export function spokenToken(label) {
  const s = String(label);
  if (s === "") return "empty token";
  /** @type {string[]} */
  const words = [];
  let text = "";
  /** @type {string | null} */
  let run = null;
  let count = 0;
  const flush = () => {
    if (run !== null) words.push(count > 1 ? `${count} ${run}s` : run);
    run = null;
    count = 0;
  };
  for (const [ch, marked] of chars(s)) {
    const name = marked ? mark(ch, "spoken") : null;
    if (name === null) {
      flush();
      text += ch;
      continue;
    }
    if (text) {
      words.push(text);
      text = "";
    }
    if (name === run && Object.values(MARKS).some((m) => m[1] === name)) count++;
    else {
      flush();
      run = name;
      count = 1;
    }
  }
  flush();
  if (text) words.push(text);
  // A server's byte label ("<0xE2>", one byte of a character) is read as a byte too.
  return words.join(" ").replace(/<0x([0-9A-F]{2})>/g, "byte 0x$1");
}

/**
 * A token quoted in running text: “␣the”; one with nothing visible of its own is named after
 * it, “␣” (space), “<0x06>” (byte 0x06).
 * @param {unknown} label
 */
export function quotedToken(label) {
  const s = String(label);
  const blank = [...s].every((ch) => mark(ch, "shown") !== null) || /^(<0x[0-9A-F]{2}>)+$/.test(s);
  return `“${shownToken(s)}”${blank ? ` (${spokenToken(s)})` : ""}`;
}
