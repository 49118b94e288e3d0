// Why this score: one head's score of a (query, key) pair split exactly into what the query's
// residual stream carries by what the key's carries (the trace's qk_attribution: the token
// embedding, the position embedding, every earlier head, attention output bias and MLP, the
// biases; the smallest summed into "rest"), so the cells sum to the score. Drawn as the top
// pairs in words ("query from layer 1 head 4 (a previous-token head) × key from the embedding
// of “␣Mr”: +2.10 of 4.61"), the small matrix of components (a diverging colour per cell, its
// value written in it, to 3 significant digits on hover or under the keyboard's cursor, exact in
// its numbers table) and the key-position view: every key the query sees (the strongest few, and
// the picked one, on a long text), its score as a bar split by the key side's components;
// picking a key there makes it the panel's.
// render(container, data, selection, callbacks). Pure helpers (attributionOf, componentWords,
// pairWords, topPairs, keyRows) run in Node for the tests; nothing here reads the page's state.

import { el } from "../core/dom.js";
import { term } from "../core/glossary.js";
import { exact, readable, readableSigned } from "../core/numbers.js";
import { AXIS, SCORE_LUT, tokenColor } from "../core/theme.js";
import { quotedToken, shownToken, spokenToken } from "../core/tokens.js";
import { describe, keyCursor, matrixTable } from "./access.js";
import { inkOn } from "./describe.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */
/** @typedef {import("../core/types.js").Compact} Compact */

/**
 * A component of the residual stream (the wire's, core/generated/meta.js): kind "embed", "pos",
 * "type", "head", "attn_bias", "mlp", "bias" or "rest"; layer and head 0-based where it has them.
 * @typedef {import("../core/generated/meta.js").Component} Component
 */

/**
 * One QK attribution (the trace's qk_attribution, from a compact part by attributionOf).
 * @typedef {object} Attribution
 * @property {number} layer 0-based
 * @property {number} head 0-based
 * @property {number} query original token index
 * @property {number} key original token index
 * @property {number} score the head's score of the key at the query (before any soft-cap)
 * @property {Component[]} components the rows' and the columns' components, in order
 * @property {NDArray} matrix [N][N]: query side's component by key side's; sums to score
 * @property {NDArray} keys [K] the keys the query sees (original indices, ascending)
 * @property {NDArray} key_scores [K] each one's score
 * @property {NDArray} by_key [K][N] each key's score split by the key side's components
 * @property {NDArray} by_query [K][N] split by the query side's
 */

/**
 * What the view draws.
 * @typedef {{tokens: string[], attribution: Attribution, roles?: Record<string, string>}} WhyData
 *   tokens: the trace's tokens (original indices); roles: a head's component name ("L0.H3")
 *   to its atlas role in words ("a previous-token head"), for the heads the atlas has scored
 * @typedef {{onPickKey?: (key: number) => void}} WhyCallbacks onPickKey: a key picked in the
 *   key view (click, Enter): make it the panel's key
 */

/** The pairs said in words. */
export const PAIRS_SAID = 3;
/** The keys the key view draws at most (by score; the picked one besides). */
export const KEYS_SHOWN = 12;
const REST_COLOR = AXIS;

/**
 * The plain object the view draws, from a compact part holding qk_attribution.
 * @param {Compact} part
 * @returns {Attribution}
 */
export function attributionOf(part) {
  const m = /** @type {any} */ (part.meta).qk_attribution;
  if (!m) throw new Error("qk_attribution: the part holds none");
  const a = part.arrays;
  /** @param {string} name */
  const arr = (name) => {
    const got = a[`qk_attribution.${name}`];
    if (!got) throw new Error(`qk_attribution: the part has no ${name}`);
    return got;
  };
  return {
    layer: m.layer,
    head: m.head,
    query: m.query,
    key: m.key,
    score: m.score,
    components: m.components,
    matrix: arr("matrix"),
    keys: arr("keys"),
    key_scores: arr("key_scores"),
    by_key: arr("by_key"),
    by_query: arr("by_query"),
  };
}

/** "layer 1 head 4", 1-based as the atlas and the cards name heads. @param {number} l @param {number} h */
export const headWords = (l, h) => `layer ${l + 1} head ${h + 1}`;

/**
 * A component's short label (the matrix's rows and columns, the key view's legend): "L1 H4",
 * "embedding", "L2 MLP"; 1-based.
 * @param {Component} c
 */
export function shortName(c) {
  const l = (c.layer ?? 0) + 1;
  switch (c.kind) {
    case "embed":
      return "embedding";
    case "pos":
      return "position";
    case "type":
      return "token type";
    case "head":
      return `L${l} H${(c.head ?? 0) + 1}`;
    case "attn_bias":
      return `L${l} attn bias`;
    case "mlp":
      return `L${l} MLP`;
    case "bias":
      return "biases";
    case "rest":
      return "the rest";
    default:
      return c.name;
  }
}

/**
 * How to read the components' labels, as pieces of a sentence, each [text, glossary term id]
 * ("" for plain text): "Labels: L1 H4 is layer 1’s head 4; L5 MLP is layer 5’s MLP; the rest
 * sums the smaller components." The token type, the first head, MLP and "rest" of `components` (as
 * shortName() labels them) each said once; [] when there is none.
 * @param {Component[]} components @returns {[string, string][]}
 */
export function labelKey(components) {
  const head = components.find((c) => c.kind === "head");
  const mlp = components.find((c) => c.kind === "mlp");
  const rest = components.find((c) => c.kind === "rest");
  const type = components.find((c) => c.kind === "type");
  /** @type {[string, string][][]} */
  const said = [];
  if (type)
    said.push([
      [shortName(type), "token-type"],
      [" is the vector added to every token for its segment", ""],
    ]);
  if (head)
    said.push([
      [shortName(head), "head"],
      [` is layer ${(head.layer ?? 0) + 1}’s head ${(head.head ?? 0) + 1}`, ""],
    ]);
  if (mlp)
    said.push([
      [shortName(mlp), "mlp"],
      [` is layer ${(mlp.layer ?? 0) + 1}’s MLP`, ""],
    ]);
  if (rest)
    said.push([
      [shortName(rest), "rest"],
      [" sums the smaller components", ""],
    ]);
  if (!said.length) return [];
  return [
    ["Labels: ", ""],
    ...said.flatMap((s, i) => (i ? [/** @type {[string, string]} */ (["; ", ""]), ...s] : s)),
    [".", ""],
  ];
}

/** labelKey() as children for el(): its terms marked. @param {Component[]} components @returns {(Node | string)[]} */
export const labelKeyNodes = (components) => labelKey(components).map(([t, id]) => (id ? term(id, t) : t));

/**
 * A component in words, on the side of the token at `position`: "the embedding of “␣Mr”",
 * "layer 1 head 4 (a previous-token head)", "layer 2's MLP".
 * @param {Component} c @param {string[]} tokens @param {number} position the side's token
 * @param {Record<string, string>} [roles]
 */
export function componentWords(c, tokens, position, roles = {}) {
  const l = (c.layer ?? 0) + 1;
  const at = tokens[position] !== undefined ? quotedToken(tokens[position]) : `token ${position + 1}`;
  switch (c.kind) {
    case "embed":
      return `the embedding of ${at}`;
    case "pos":
      return `the position embedding of ${at} (position ${position + 1})`;
    case "type":
      return `the token type embedding of ${at}`;
    case "head": {
      const role = roles[c.name];
      return `${headWords(c.layer ?? 0, c.head ?? 0)}${role ? ` (${role})` : ""}`;
    }
    case "attn_bias":
      return `layer ${l}'s attention output bias`;
    case "mlp":
      return `layer ${l}'s MLP`;
    case "bias":
      return "the biases (fixed offsets the norms and projections add, the same for every token)";
    case "rest":
      return "the other components (the smaller parts, summed)";
    default:
      return c.name;
  }
}

/** A value of the card's grid and key list as its sentences write it, to 3 significant digits
 * (readable()), a minus as "−": "4.78", "−0.647". @param {number} v @param {string} [dtype] */
const shown = (v, dtype = "F64") => readable(v, dtype).replace("-", "−");

/**
 * A signed value as the panel's sentences and tooltips write it, to 3 significant digits as the
 * score above them (numbers.js readableSigned: "+4.78", "−0.313", "0" only for none).
 * @param {number} v
 */
export const signedReadable = (v) => readableSigned(v);

/**
 * The matrix's cells, largest magnitude first (ties: row, then column).
 * @param {Attribution} att @param {number} [count]
 * @returns {{i: number, j: number, v: number}[]}
 */
export function topPairs(att, count = Infinity) {
  const N = att.components.length;
  const all = [];
  for (let i = 0; i < N; i++) for (let j = 0; j < N; j++) all.push({ i, j, v: att.matrix.data[i * N + j] });
  all.sort((a, b) => Math.abs(b.v) - Math.abs(a.v) || a.i - b.i || a.j - b.j);
  return all.slice(0, count);
}

/**
 * One pair in words: "query from layer 1 head 4 (a previous-token head) × key from the
 * embedding of “␣Mr”: +2.1 of 4.61", each number to 3 significant digits (readable()).
 * @param {Attribution} att @param {string[]} tokens @param {{i: number, j: number, v: number}} p
 * @param {Record<string, string>} [roles]
 */
export function pairWords(att, tokens, p, roles) {
  // One precision for the score in one card: 3 significant digits, as the sentence above says it.
  const of = `${signedReadable(p.v)} of ${readable(att.score).replace(/^-/, "−")}`;
  if (att.components[p.i].kind === "bias" && att.components[p.j].kind === "bias")
    // The pair no word changes: said once, as what it is.
    return (
      "the biases on both sides, fixed offsets the norms and projections add to every token: a part of " +
      `the score no word changes, ${of}`
    );
  const q = componentWords(att.components[p.i], tokens, att.query, roles);
  const k = componentWords(att.components[p.j], tokens, att.key, roles);
  return `query from ${q} × key from ${k}: ${of}`;
}

/**
 * The keys the key view draws: the `limit` with the largest scores (largest first) and the
 * picked key (att.key) where it is not among them; `left` how many are not drawn.
 * @param {Attribution} att @param {number} [limit]
 * @returns {{rows: {index: number, key: number, score: number, parts: number[]}[], left: number,
 *   winner: number}} index: the key's row in att.keys; parts: its score by the key side's
 *   components (by_key's row); winner: the key with the largest score
 */
export function keyRows(att, limit = KEYS_SHOWN) {
  const K = att.keys.data.length;
  const N = att.components.length;
  const order = Array.from({ length: K }, (_, r) => r);
  const s = att.key_scores.data;
  order.sort((a, b) => s[b] - s[a] || a - b);
  const chosen = order.slice(0, limit);
  const at = Array.prototype.indexOf.call(att.keys.data, att.key);
  if (at >= 0 && !chosen.includes(at)) chosen.push(at);
  const rows = chosen.map((r) => ({
    index: r,
    key: att.keys.data[r],
    score: s[r],
    parts: Array.from(att.by_key.data.subarray(r * N, (r + 1) * N)),
  }));
  return { rows, left: K - rows.length, winner: K ? att.keys.data[order[0]] : -1 };
}

/** The colour of component `c` (index `n`) in the key view. @param {Component} c @param {number} n */
export const componentColor = (c, n) => (c.kind === "rest" ? REST_COLOR : tokenColor(n));

/** @param {number} v @param {number} m @returns {[number, number, number]} */
function divergingRgb(v, m) {
  const i = Math.round((Math.max(-1, Math.min(1, m > 0 ? v / m : 0)) + 1) * 127.5);
  return [SCORE_LUT[i * 3], SCORE_LUT[i * 3 + 1], SCORE_LUT[i * 3 + 2]];
}

/**
 * Draw the panel.
 * @param {HTMLElement} container the view's box
 * @param {WhyData} data
 * @param {{limit?: number, focus?: "keys" | null} | null} [selection] limit: the keys the key
 *   view draws at most; focus: focus the key view, its cursor on the panel's key (a key just
 *   picked there by keyboard: the redraw keeps the reader's place)
 * @param {WhyCallbacks} [callbacks]
 */
export function render(container, data, selection = null, callbacks = {}) {
  const att = data.attribution;
  const { tokens } = data;
  const roles = data.roles ?? {};
  const N = att.components.length;
  const names = att.components.map(shortName);
  const where = `${headWords(att.layer, att.head)}, query ${quotedToken(tokens[att.query] ?? "")} (${att.query + 1}) → key ${quotedToken(tokens[att.key] ?? "")} (${att.key + 1})`;

  // The top pairs in words.
  const pairs = topPairs(att, PAIRS_SAID);
  const head = el("p", { className: "why-score" }, [
    `${where}: score `,
    el("b", { textContent: readable(att.score) }),
    `, the sum of the ${N} × ${N} components below.`,
  ]);
  const said = el(
    "ol",
    { className: "why-pairs" },
    pairs.map((p) => el("li", { textContent: pairWords(att, tokens, p, roles) })),
  );

  // The matrix: rows the query side's components, columns the key side's.
  let m = 0;
  for (const v of att.matrix.data) m = Math.max(m, Math.abs(v));
  const cellText = (/** @type {number} */ i, /** @type {number} */ j) =>
    `query from ${componentWords(att.components[i], tokens, att.query, roles)} × key from ` +
    `${componentWords(att.components[j], tokens, att.key, roles)}: ${readable(att.matrix.data[i * N + j], att.matrix.dtype)}`;
  /** @type {HTMLElement[]} */
  const cells = [];
  const grid = el("div", { className: "why-matrix" });
  grid.style.gridTemplateColumns = `auto repeat(${N}, minmax(min-content, 1fr)) auto`;
  grid.append(el("span", { className: "why-corner", textContent: "query ↓ key →" }));
  for (const name of names) grid.append(el("span", { className: "why-col", textContent: name }));
  grid.append(el("span", { className: "why-col why-total", textContent: "row sum" }));
  const colSums = new Array(N).fill(0);
  for (let i = 0; i < N; i++) {
    grid.append(el("span", { className: "why-row", textContent: names[i] }));
    let rowSum = 0;
    for (let j = 0; j < N; j++) {
      const v = att.matrix.data[i * N + j];
      rowSum += v;
      colSums[j] += v;
      const rgb = divergingRgb(v, m);
      const cell = el("span", {
        className: "why-cell",
        textContent: shown(v, att.matrix.dtype),
        title: cellText(i, j),
        dataset: { i: String(i), j: String(j) },
      });
      cell.style.background = `rgb(${rgb.join(",")})`;
      cell.style.color = inkOn(rgb);
      cells.push(cell);
      grid.append(cell);
    }
    grid.append(el("span", { className: "why-sum", textContent: shown(rowSum) }));
  }
  grid.append(el("span", { className: "why-row why-total", textContent: "column sum" }));
  for (const v of colSums) grid.append(el("span", { className: "why-sum", textContent: shown(v) }));
  grid.append(el("span", { className: "why-sum why-all", textContent: shown(att.score) }));
  const matrixBox = el("div", { className: "why-matrix-box" }, [grid]);

  // The key view: each key's score split by the key side's components.
  const limit = selection?.limit ?? KEYS_SHOWN;
  const { rows, left, winner } = keyRows(att, limit);
  let reach = 0; // the longest bar's reach either side of 0
  for (const r of rows) {
    let pos = 0;
    let neg = 0;
    for (const v of r.parts)
      if (v > 0) pos += v;
      else neg -= v;
    reach = Math.max(reach, pos, neg);
  }
  const hasNeg = rows.some((r) => r.parts.some((v) => v < 0));
  const zero = hasNeg ? 50 : 0; // where 0 lies across the bar, in percent
  const span = hasNeg ? 50 : 100;
  const keyLabel = (/** @type {number} */ k) => `${shownToken(tokens[k] ?? "")} (${k + 1})`;
  const rowText = (/** @type {number} */ r, /** @type {number} */ c) => {
    const row = rows[r];
    const tag = row.key === att.key ? ", the panel's key" : row.key === winner ? ", the winning key" : "";
    return (
      `key ${spokenToken(tokens[row.key] ?? "")} (position ${row.key + 1}${tag}): score ${readable(row.score, att.key_scores.dtype)}; ` +
      `from the key's ${names[c]}: ${readable(row.parts[c], att.by_key.dtype)}`
    );
  };
  /** @type {HTMLElement[]} */
  const keyEls = rows.map((row) => {
    const bar = el("span", { className: "why-bar" });
    let up = zero;
    let down = zero;
    row.parts.forEach((v, c) => {
      if (!v || !reach) return;
      const w = (Math.abs(v) / reach) * span;
      const seg = el("span", {
        className: "why-seg",
        title: `${names[c]}: ${signedReadable(v)}`,
      });
      seg.style.background = componentColor(att.components[c], c);
      seg.style.width = `${w}%`;
      seg.style.left = `${v > 0 ? up : down - w}%`;
      if (v > 0) up += w;
      else down -= w;
      bar.append(seg);
    });
    if (hasNeg) bar.append(el("span", { className: "why-zero" }));
    const line = el(
      "div",
      {
        className: `why-key${row.key === att.key ? " picked" : ""}${row.key === winner ? " winner" : ""}`,
        dataset: { key: String(row.key) },
        title: `Make ${quotedToken(tokens[row.key] ?? "")} (${row.key + 1}) the key`,
      },
      [
        el("span", { className: "why-key-label", textContent: keyLabel(row.key) }),
        bar,
        el("span", { className: "why-key-score", textContent: shown(row.score, att.key_scores.dtype) }),
      ],
    );
    line.addEventListener("click", () => callbacks.onPickKey?.(row.key));
    return line;
  });
  const keyList = el("div", { className: "why-keys" }, keyEls);
  const legend = el(
    "p",
    { className: "why-legend" },
    att.components.map((c, n) =>
      el("span", {}, [el("span", { className: "why-swatch", style: `background:${componentColor(c, n)}` }), names[n]]),
    ),
  );
  const K = att.keys.data.length;
  const keyNote =
    left > 0
      ? `The ${rows.length} of ${K} keys with the largest scores${rows.length > limit ? " and the panel's key" : ""}; ${left} more not drawn.`
      : `All ${K} keys query ${quotedToken(tokens[att.query] ?? "")} sees, largest score first.`;

  container.replaceChildren(
    el("div", { className: "why" }, [
      head,
      said,
      el("h3", { className: "why-sub", textContent: "Query side × key side" }),
      ...(labelKey(att.components).length
        ? [el("p", { className: "hint why-labels" }, labelKeyNodes(att.components))]
        : []), // the first layer's components need no reading
      matrixBox,
      el("h3", { className: "why-sub", textContent: "Each key's score, by the key's components" }),
      el("p", { className: "hint", textContent: keyNote }),
      legend,
      keyList,
    ]),
  );

  // Text alternatives and keyboard paths.
  const matrixText = describe(matrixBox, {
    summary: pairs.length
      ? `${N} × ${N} cells summing to the score, ${readable(att.score)}; the largest: query-side ${names[pairs[0].i]} × key-side ${names[pairs[0].j]}, ${signedReadable(pairs[0].v)}.`
      : "",
    table: matrixTable(
      `${where}: the score by query-side components (rows) and key-side components (columns)`,
      "query side \\ key side",
      names,
      names,
      (i, j) => exact(att.matrix.data[i * N + j], att.matrix.dtype),
    ),
  });
  /** @param {number} i @param {number} j */
  const showCell = (i, j) => {
    cells.forEach((c) => c.classList.remove("cursor"));
    cells[i * N + j]?.classList.add("cursor");
  };
  keyCursor(grid, matrixText.live, {
    rows: N,
    cols: N,
    describedBy: matrixText.summary.id,
    label: `The score split into ${N} query-side by ${N} key-side components. Arrow keys move between cells.`,
    text: cellText,
    show: showCell,
    hide: () => cells.forEach((c) => c.classList.remove("cursor")),
  });
  const keysText = describe(keyList, {
    summary:
      winner >= 0
        ? `The winning key is ${quotedToken(tokens[winner] ?? "")} (${winner + 1}), score ${readable(rows[0].score)}; the panel's key is ${quotedToken(tokens[att.key] ?? "")} (${att.key + 1}), score ${readable(att.score)}.`
        : "",
    table: {
      caption: "Each key's score by the key side's components",
      head: ["key", "score", ...names],
      rows: rows.map((r) => [
        keyLabel(r.key),
        exact(r.score, att.key_scores.dtype),
        ...r.parts.map((v) => exact(v, att.by_key.dtype)),
      ]),
    },
  });
  /** @param {number} r */
  const showKey = (r) => {
    keyEls.forEach((e) => e.classList.remove("cursor"));
    keyEls[r]?.classList.add("cursor");
  };
  if (selection?.focus === "keys") {
    /** @type {any} */ (keyList).__cursor = {
      i: Math.max(
        0,
        rows.findIndex((r) => r.key === att.key),
      ),
      j: 0,
    };
  }
  keyCursor(keyList, keysText.live, {
    rows: rows.length,
    cols: N,
    describedBy: keysText.summary.id,
    label:
      "Each key's score, split by the key's components. Up and down move between keys, left and right between components; Enter makes the key the panel's.",
    text: rowText,
    show: (r) => showKey(r),
    hide: () => keyEls.forEach((e) => e.classList.remove("cursor")),
    pick: callbacks.onPickKey ? (r) => callbacks.onPickKey?.(rows[r].key) : undefined,
  });
  if (selection?.focus === "keys") keyList.focus();
  // What is drawn, for tests: the very numbers.
  /** @type {any} */ (container).__why = { attribution: att, rows, pairs };
}
