// The parts of a saved trace (attnviz/python/html.py packs them), served to sentence mode's
// views as the server would serve them: `openEmbedded(entries)` has TraceParts' shape ({body,
// get, seed}). A part is found by its query parameters (in any order; the token options' false
// is their default); any thumbnails asked for are the file's thumbnails (whatever their side);
// a part of one query row is cut from the file's part of every row, as the server cuts it, and
// the Predictions card's window of positions from the file's wider one; any other part is
// refused (a Refusal), saying what the file holds. Pure: no DOM, runs in Node for the tests.

import { decodeCompact } from "../core/compact.js";
import { Refusal } from "../core/controller.js";
import { rowCut, words } from "../core/fields.js";

/** @typedef {import("../core/types.js").Compact} Compact */
/** @typedef {import("../core/types.js").NDArray} NDArray */
/** @typedef {import("../core/api.js").Params} Params */
/** @typedef {{params: Params, body: ArrayBuffer}} Entry */

const DEFAULTS = /** @type {Record<string, string>} */ ({ hide_special: "false", merge_words: "false" });

/**
 * Undo html.py's shuffle: a float array's bytes back from grouped by significance to value by
 * value. In place.
 * @param {ArrayBuffer} body
 */
export function unshuffle(body) {
  const view = new DataView(body);
  const length = view.getUint32(0, true) + view.getUint32(4, true) * 2 ** 32;
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(body, 8, length)));
  const base = 8 + length;
  for (const [name, info] of Object.entries(header)) {
    const width = name === "__metadata__" ? 0 : ({ F32: 4, F64: 8 }[/** @type {string} */ (info.dtype)] ?? 0);
    if (!width) continue;
    const [begin, end] = info.data_offsets;
    const bytes = new Uint8Array(body, base + begin, end - begin);
    const grouped = bytes.slice();
    const count = bytes.length / width;
    for (let b = 0; b < width; b++) {
      for (let i = 0; i < count; i++) bytes[i * width + b] = grouped[b * count + i];
    }
  }
  return body;
}

/**
 * The entries of a packed block (already gunzipped): a u32 index length, the JSON index, the
 * bodies. Each body gets a buffer of its own (so its arrays are aligned), unshuffled.
 * @param {ArrayBuffer} block
 * @returns {Entry[]}
 */
export function unpack(block) {
  const n = new DataView(block).getUint32(0, true);
  const index = JSON.parse(new TextDecoder().decode(new Uint8Array(block, 4, n)));
  let at = 4 + n;
  return index.map((/** @type {{params: Params, size: number}} */ item) => {
    const body = unshuffle(block.slice(at, at + item.size));
    at += item.size;
    return { params: item.params, body };
  });
}

/**
 * Query parameters as the server reads them: strings, absent when null or the default.
 * @param {Params} params @returns {Record<string, string>}
 */
export function normal(params) {
  /** @type {Record<string, string>} */
  const out = {};
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || DEFAULTS[k] === String(v)) continue;
    out[k] = String(v);
  }
  return out;
}

/** @param {Record<string, string>} p */
const keyOf = (p) =>
  Object.keys(p)
    .sort()
    .map((k) => `${k}=${p[k]}`)
    .join("&");

/**
 * One query's row of a part of every row, as the server cuts it (core/fields.js rowCut): a
 * per-query array at row `query`, one drawn under the token options (view) at the row that
 * shows it; meta.query set.
 * @param {Compact} whole @param {number} query
 * @returns {Compact}
 */
export function cutRow(whole, query) {
  const meta = { ...whole.meta, query };
  /** @type {Record<string, NDArray>} */
  const arrays = {};
  for (const [name, arr] of Object.entries(whole.arrays)) {
    const cut = rowCut(name);
    if (!cut) {
      arrays[name] = arr;
      continue;
    }
    let row = query;
    if (cut === "shown") {
      const groups = whole.meta.token_view?.groups;
      row = groups ? groups.findIndex((g) => g.includes(query)) : query;
      if (row < 0) throw new Error(`query: token ${query + 1} is hidden (a special token); view shows no row for it`);
    }
    const [a, b, rows, cols] = arr.shape;
    if (!(row >= 0 && row < rows)) throw new Error(`query: ${query} is out of range (${rows} rows)`);
    const Type = /** @type {any} */ (arr.data).constructor;
    const data = new Type(a * b * cols);
    for (let k = 0; k < a * b; k++)
      data.set(arr.data.subarray((k * rows + row) * cols, (k * rows + row + 1) * cols), k * cols);
    arrays[name] = { dtype: arr.dtype, shape: [a, b, 1, cols], data };
  }
  return { meta, arrays };
}

/** The Predictions card's arrays: along which axis each holds positions ([m][k] top-k, [m]
 * targets, [rows][m] the lens). */
const WINDOW_AXES = /** @type {Record<string, number>} */ ({
  "top_k.ids": 0,
  "top_k.probs": 0,
  "top_k.target_probs": 0,
  "lens.ids": 1,
  "lens.probs": 1,
  "lens.targets": 0,
  "lens.target_ranks": 1,
  "lens.target_probs": 1,
});

/**
 * The Predictions card's part of positions start .. start + count - 1, cut from the file's part
 * of a window around them (html.py lens_window: the card's widest), as the server answers it.
 * @param {Compact} whole @param {number} start @param {number} count
 * @returns {Compact}
 */
export function cutWindow(whole, start, count) {
  const meta = /** @type {any} */ ({ ...whole.meta });
  const from = start - Number(meta.lens.start);
  for (const name of ["top_k", "lens"]) meta[name] = { ...meta[name], start };
  /** @type {Record<string, NDArray>} */
  const arrays = {};
  for (const [name, arr] of Object.entries(whole.arrays)) {
    const axis = WINDOW_AXES[name];
    if (axis === undefined) {
      arrays[name] = arr;
      continue;
    }
    const rows = axis === 0 ? 1 : arr.shape[0]; // the lens's rows
    const m = arr.shape[axis];
    const inner = axis === 0 ? arr.data.length / m : 1; // top-k's k
    const Type = /** @type {any} */ (arr.data).constructor;
    const data = new Type(rows * count * inner);
    for (let r = 0; r < rows; r++)
      data.set(arr.data.subarray((r * m + from) * inner, (r * m + from + count) * inner), r * count * inner);
    const shape = [...arr.shape];
    shape[axis] = count;
    arrays[name] = { dtype: arr.dtype, shape, data };
  }
  return { meta, arrays };
}

/** "1–3, 5" of 0-based indices, 1-based. @param {number[]} xs */
function spans(xs) {
  const s = [...new Set(xs)].sort((a, b) => a - b);
  /** @type {string[]} */
  const out = [];
  for (let i = 0; i < s.length; i++) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(i === j ? `${s[i] + 1}` : `${s[i] + 1}–${s[j] + 1}`);
    i = j;
  }
  return out.join(", ");
}

/** The most groups a refusal lists (the rest counted). */
const LISTED = 8;

/** A part's kind of numbers in a reader's words: its first field's (core/fields.js words).
 * @param {Record<string, string>} p */
function kindOf(p) {
  const f = (p.fields || "").split(",")[0];
  if (f === "thumbs" && p.thumb_layer !== undefined) return "8-bit weights";
  return p.measure === "value_weighted" && f === "view" ? "value-weighted exact norms" : words(f);
}

/** "a, b and c". @param {string[]} xs */
const listed = (xs) => (xs.length < 2 ? xs.join("") : `${xs.slice(0, -1).join(", ")} and ${xs[xs.length - 1]}`);

/**
 * Where a part is, as the page counts (from 1): "layer 4 heads 1–3 at token 5". `heads`: the
 * heads of a group (default: its own); `sep` between layer and head.
 * @param {Record<string, string>} p @param {number[]} [heads] @param {string} [sep]
 */
function place(p, heads = p.head === undefined ? [] : [Number(p.head)], sep = " ") {
  const layer = p.layer ?? p.thumb_layer;
  const bits = [
    [
      layer !== undefined ? `layer ${Number(layer) + 1}` : "",
      heads.length ? `${heads.length > 1 ? "heads" : "head"} ${spans(heads)}` : "",
    ]
      .filter(Boolean)
      .join(sep),
    p.image !== undefined ? `picture ${Number(p.image) + 1}` : "",
    p.query !== undefined ? `at token ${Number(p.query) + 1}` : "",
    p.position !== undefined ? `at token ${Number(p.position) + 1}` : "",
    p.pos_start !== undefined ? `at tokens ${+p.pos_start + 1}–${+p.pos_start + +p.pos_count}` : "",
    p.hide_special === "true" ? "with special tokens hidden" : "",
    p.merge_words === "true" ? "with words merged" : "",
  ];
  return bits.filter(Boolean).join(" ");
}

/**
 * The parts of one kind in a file, grouped by all but their head: "layer 6 head 12 and layer 3
 * heads 1–12" (at most LISTED groups, the rest counted).
 * @param {Record<string, string>[]} params
 */
function groups(params) {
  /** @type {Map<string, {p: Record<string, string>, heads: number[]}>} */
  const by = new Map();
  const whole = new Set(params.filter((p) => p.query === undefined).map(keyOf));
  for (const p of params) {
    const { head, query, ...rest } = p;
    if (query !== undefined && whole.has(keyOf({ ...rest, ...(head === undefined ? {} : { head }) }))) continue; // every query's
    if (query !== undefined) rest.query = query;
    const key = keyOf(rest);
    const group = by.get(key) ?? { p: rest, heads: [] };
    if (head !== undefined) group.heads.push(Number(head));
    by.set(key, group);
  }
  const all = [...by.values()]
    .sort((a, b) => Number(a.p.layer ?? -1) - Number(b.p.layer ?? -1))
    .map((g) => place(g.p, g.heads) || "the tokens as the model reads them");
  const more = all.length - LISTED;
  return listed(more > 0 ? [...all.slice(0, LISTED), `${more} more`] : all);
}

/** What a file has of one head (other than `kind`): "its exact weights and its small 8-bit
 * thumbnail in the model view's grid". @param {Record<string, string>[]} held
 * @param {string} layer @param {string} head @param {string} kind */
function hasOfHead(held, layer, head, kind) {
  const own = held.filter((e) => e.layer === layer && e.head === head && e.query === undefined);
  const kinds = [...new Set(own.map(kindOf))].filter((k) => k !== kind).map((k) => `its ${k}`);
  if (held.some((e) => e.fields === "thumbs" && e.thumb_layer === undefined))
    kinds.push("its small 8-bit thumbnail in the model view's grid");
  if (held.some((e) => e.fields === "thumbs" && e.thumb_layer === layer)) kinds.push("its layer's 8-bit weights");
  return kinds;
}

/**
 * Why a file cannot answer `p`, in one plain sentence as the page counts (from 1): which kind of
 * numbers the file has for what was asked, and where it holds that kind. What a file can be
 * saved with instead is the docs' to say (docs/python.md), not a learner's page's.
 * @param {Record<string, string>} p what was asked (normal) @param {Record<string, string>[]} held the file's parts
 */
export function refusal(p, held) {
  const kind = kindOf(p);
  const same = held.filter((e) => kindOf(e) === kind);
  // The query matters only where the file has this kind of this head at some query.
  const { query, ...head } = p;
  const where = place(same.some((e) => e.layer === p.layer && e.head === p.head) ? p : head, undefined, ", ");
  const has = p.head !== undefined ? hasOfHead(held, p.layer, p.head, kind) : [];
  const missing = `This file has no ${kind}${where ? `${/^(at|with) /.test(where) ? "" : " for"} ${where}` : ""}${has.length ? `, only ${listed(has)}` : ""}`;
  if (!same.length) return `${missing}; it holds no ${kind} at all.`;
  if (kind === "exact weights") return `${missing}; it holds ${groups(same)} exactly.`;
  return `${missing}; it holds the ${kind} of ${groups(same)}.`;
}

/**
 * Where a file's part `p` is (normal parameters): which of `held` holds it (their index), and
 * how it is cut from it: as it is ("whole"; any thumbnails asked for are the file's), the
 * Predictions card's window ("window"), one query's row ("row"); null where none holds it.
 * Pure: the tests check the page's asks against html.py's plan with it.
 * @param {Record<string, string>} p @param {Record<string, string>[]} held
 * @returns {{at: number, cut: "whole" | "window" | "row"} | null}
 */
export function locate(p, held) {
  const at = (
    /** @type {(e: Record<string, string>) => boolean} */ test,
    /** @type {"whole" | "window" | "row"} */ cut,
  ) => {
    const i = held.findIndex(test);
    return i >= 0 ? { at: i, cut } : null;
  };
  const key = keyOf(p);
  const exact = at((e) => keyOf(e) === key, "whole");
  if (exact) return exact;
  if (p.fields === "thumbs" && p.thumb_layer === undefined) {
    const side = keyOf({ ...p, thumb: "" });
    const thumbs = at(
      (e) => e.fields === "thumbs" && e.thumb_layer === undefined && keyOf({ ...e, thumb: "" }) === side,
      "whole",
    );
    if (thumbs) return thumbs;
  }
  if (p.pos_start !== undefined && p.pos_count !== undefined) {
    const { pos_start: start, pos_count: count, ...rest } = p;
    const [s0, n0] = [Number(start), Number(count)];
    const around = at(({ pos_start: a, pos_count: c, ...other }) => {
      return a !== undefined && keyOf(other) === keyOf(rest) && +a <= s0 && s0 + n0 <= +a + Number(c);
    }, "window");
    if (around) return around;
  }
  if (p.query !== undefined) {
    const { query, ...rest } = p;
    const whole = keyOf(rest);
    return at((e) => keyOf(e) === whole, "row");
  }
  return null;
}

/**
 * The parts of a saved trace, with TraceParts' shape.
 * @param {Entry[]} entries
 * @param {object} [body] the trace request (the input card's)
 */
export function openEmbedded(entries, body = {}) {
  const all = entries.map((e) => ({ params: normal(e.params), body: e.body }));
  const held = all.map((e) => e.params);
  /** @type {Map<string, Compact>} */
  const decoded = new Map();
  /** @type {Map<string, Compact>} */
  const seeded = new Map();
  /** @param {{params: Record<string, string>, body: ArrayBuffer}} e */
  const open = (e) => {
    const key = keyOf(e.params);
    let part = decoded.get(key);
    if (!part) decoded.set(key, (part = decodeCompact(e.body)));
    return part;
  };

  /** @param {Params} params @returns {Compact} */
  function answer(params) {
    const p = normal(params);
    const seed = seeded.get(keyOf(p));
    if (seed) return seed;
    const found = locate(p, held);
    if (found) {
      const part = open(all[found.at]);
      if (found.cut === "window") return cutWindow(part, Number(p.pos_start), Number(p.pos_count));
      if (found.cut === "row") return cutRow(part, Number(p.query));
      return part;
    }
    // In one plain sentence, as the page counts; the controller says it in the view's card
    // (core/controller.js viewNotes), which keeps what it drew.
    throw new Refusal(refusal(p, held));
  }

  return {
    body,
    /** @param {Params} params @returns {Promise<Compact>} */
    get(params) {
      try {
        return Promise.resolve(answer(params));
      } catch (err) {
        return Promise.reject(err);
      }
    },
    /** @param {Params} params @param {Compact} part */
    seed(params, part) {
      seeded.set(keyOf(normal(params)), part);
    },
  };
}
