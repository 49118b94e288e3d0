// Which rows and columns of a text trace's attention to show: all tokens, without the special
// tokens ([CLS], [SEP], ...), and/or with word pieces merged into words. Pure functions, no DOM.
//
// Rules (applied in this order):
// - hideSpecial: drop the special tokens' rows and columns, then divide each remaining row by
//   its sum, so that every row again sums to 1.
// - mergeWords: tokens that share a `words` index (and are adjacent) become one word; attention
//   TO a word is the sum of its pieces' columns, attention FROM a word the mean of its pieces'
//   rows. Rows that summed to 1 still do. Special tokens (word null) stay single tokens.

/** Words of a word group: the text it covers when offsets are known, else its pieces joined. */
function groupLabel(trace, group) {
  const { tokens, offsets, text } = trace;
  if (group.length === 1) return tokens[group[0]];
  if (offsets && typeof text === "string") {
    const start = offsets[group[0]][0];
    const end = offsets[group[group.length - 1]][1];
    if (end > start) return text.slice(start, end);
  }
  return group.map((i, k) => (k > 0 ? tokens[i].replace(/^##/, "") : tokens[i])).join("");
}

/** The groups of original token indices to show, one per row/column, in text order. */
export function tokenGroups(trace, { hideSpecial = false, mergeWords = false } = {}) {
  const special = trace.special || trace.tokens.map(() => false);
  const words = trace.words || trace.tokens.map(() => null);
  const groups = [];
  trace.tokens.forEach((_, i) => {
    if (hideSpecial && special[i]) return;
    const last = groups[groups.length - 1];
    const w = words[i];
    const prev = last ? last[last.length - 1] : -1;
    if (mergeWords && w !== null && w !== undefined && last && words[prev] === w && prev === i - 1) {
      last.push(i);
    } else {
      groups.push([i]);
    }
  });
  return groups;
}

/** Attention matrix `a` (n x n) restricted to `kept` tokens, each row renormalised to sum 1. */
export function renormalised(a, kept) {
  return kept.map((i) => {
    const row = kept.map((j) => a[i][j] ?? 0);
    const sum = row.reduce((s, v) => s + v, 0);
    return sum > 0 ? row.map((v) => v / sum) : row;
  });
}

/** Merge rows and columns of a square matrix over `groups` (lists of its indices): columns
 * summed within a group, rows averaged. */
export function mergeGroups(m, groups) {
  return groups.map((rows) => groups.map((cols) => {
    let total = 0;
    for (const i of rows) for (const j of cols) total += m[i][j] ?? 0;
    return total / rows.length;
  }));
}

/** In words: what the options did to the numbers (empty when nothing). */
export function describeOptions({ hideSpecial = false, mergeWords = false } = {}) {
  const out = [];
  if (hideSpecial) out.push("Special tokens hidden; each row renormalised to sum to 1.");
  if (mergeWords) {
    out.push("Word pieces merged: attention to a word is summed over its pieces, " +
      "attention from a word averaged.");
  }
  return out.join(" ");
}

/**
 * The tokens to show and their attention: {labels, groups, attention(layer, head) -> matrix,
 * indexOf(token) -> row of the group holding an original token index (or -1)}.
 */
export function tokenView(trace, options = {}) {
  const hideSpecial = Boolean(options.hideSpecial);
  const mergeWords = Boolean(options.mergeWords);
  const groups = tokenGroups(trace, { hideSpecial, mergeWords });
  const labels = groups.map((g) => groupLabel(trace, g));
  const kept = groups.flat();
  const position = new Map(kept.map((t, k) => [t, k])); // token -> row in the renormalised matrix
  const local = groups.map((g) => g.map((t) => position.get(t)));
  const cache = new Map();

  function attention(layer, head) {
    const key = `${layer}:${head}`;
    if (cache.has(key)) return cache.get(key);
    const a = trace.attentions[layer][head];
    let m;
    if (!hideSpecial && !mergeWords) m = a;
    else {
      const base = hideSpecial ? renormalised(a, kept) : a;
      m = mergeWords ? mergeGroups(base, hideSpecial ? local : groups) : base;
    }
    cache.set(key, m);
    return m;
  }

  const rowOf = new Map();
  groups.forEach((g, k) => g.forEach((t) => rowOf.set(t, k)));
  const indexOf = (token) => (rowOf.has(token) ? rowOf.get(token) : -1);

  return { labels, groups, attention, indexOf, hideSpecial, mergeWords, note: describeOptions(options) };
}
