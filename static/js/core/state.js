// The whole UI state, its checks, the API request it makes, and its URL encoding. Pure: no DOM,
// runs in Node for the tests. The caps (limits) and the config defaults come from fetchPresets,
// where the server defines them; nothing here repeats them.

/** @typedef {import("./types.js").ToyState} ToyState */
/** @typedef {import("./types.js").ToyConfig} ToyConfig */
/** @typedef {import("./types.js").ToyView} ToyView */
/** @typedef {import("./types.js").SentenceState} SentenceState */
/** @typedef {import("./types.js").Limits} Limits */
import { SENTENCE_MORE } from "./feeds.js";
import { FIELDS } from "./generated/fields.js";

const MATRICES = ["q", "k", "v", "o"];

/** @template T @param {T} x @returns {T} */
const clone = (x) => JSON.parse(JSON.stringify(x));
/** @param {number} v @param {number} lo @param {number} hi */
const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));
/** @param {unknown} v @returns {v is number} */
const isInt = (v) => Number.isInteger(v);

/** The table's dimensions. @param {Pick<ToyState, "embeddings">} state */
export const dims = (state) => (state.embeddings[0] || []).length;

/** @param {number} d */
export function identity(d) {
  return Array.from({ length: d }, (_, i) => Array.from({ length: d }, (_, j) => (i === j ? 1 : 0)));
}

/** Divisors of d that are allowed head counts. @param {number} d @param {number} maxHeads */
export function headChoices(d, maxHeads) {
  const out = [];
  for (let h = 1; h <= Math.min(d, maxHeads); h++) if (d % h === 0) out.push(h);
  return out;
}

/**
 * What normalize() did to the heads, for the status line; null when it left them alone.
 * @param {unknown} before the head count before @param {ToyState} state after normalize()
 * @param {Limits} limits
 */
export function headsNote(before, state, limits) {
  const now = state.config.heads;
  if (before === now) return null;
  const why =
    !isInt(before) || before < 1
      ? `${String(before)} is not a head count`
      : before > limits.max_heads
        ? `${before} is over the cap of ${limits.max_heads}`
        : `${before} does not divide d = ${dims(state)}`;
  return `heads: ${why}, now ${now}`;
}

/**
 * A square matrix resized to d x d, keeping what fits and filling with the identity.
 * @param {(number | string)[][] | undefined} m @param {number} d
 */
function resizeSquare(m, d) {
  return Array.from({ length: d }, (_, i) =>
    Array.from({ length: d }, (_, j) => (m && m[i] && j < m[i].length ? m[i][j] : i === j ? 1 : 0)),
  );
}

/**
 * Default view for n tokens and L layers: the last layer, second and last token.
 * @param {number} n @param {number} layers @returns {ToyView}
 */
function defaultView(n, layers) {
  return {
    layer: 0,
    head: 0,
    vlayer: layers,
    a: Math.min(1, n - 1),
    b: n - 1,
    trails: true,
    measure: /** @type {import("./types.js").Measure} */ ("weights"),
  };
}

/**
 * The state of a preset from fetchPresets.
 * @param {{id: string, tokens: string[], axes: string[], embeddings: number[][], config: object}} preset
 * @param {ToyConfig} defaults the server's config defaults
 * @returns {ToyState}
 */
export function fromPreset(preset, defaults) {
  const config = { ...defaults, ...clone(preset.config) };
  const n = preset.tokens.length;
  return {
    preset: preset.id,
    tokens: [...preset.tokens],
    axes: [...preset.axes],
    embeddings: clone(preset.embeddings),
    config,
    view: defaultView(n, config.layers),
  };
}

/**
 * True when the inputs (not the view) are exactly the preset's.
 * @param {ToyState} state @param {any} preset @param {Limits} limits @param {ToyConfig} defaults
 */
export function matchesPreset(state, preset, limits, defaults) {
  if (!preset) return false;
  const fresh = normalize(fromPreset(preset, defaults), limits);
  return JSON.stringify(toRequest(state, defaults)) === JSON.stringify(toRequest(fresh, defaults));
}

/**
 * What the preset's note adds for a state that is not exactly the preset: nothing when it is;
 * "(You have edited it.)" after the reader's own edits; else (a state loaded as it is, a Learn
 * step's start or a link) the settings it starts with that differ from the preset's ("Here it
 * starts with scale on."), or that the table differs.
 * @param {ToyState} state @param {any} preset @param {Limits} limits @param {ToyConfig} defaults
 * @param {boolean} touched the reader has edited the inputs since they were loaded
 * @returns {string}
 */
export function presetNote(state, preset, limits, defaults, touched) {
  if (!preset || matchesPreset(state, preset, limits, defaults)) return "";
  if (touched) return " (You have edited it.)";
  const mine = toRequest(state, defaults);
  const theirs = toRequest(normalize(fromPreset(preset, defaults), limits), defaults);
  const same = (/** @type {unknown} */ a, /** @type {unknown} */ b) => JSON.stringify(a) === JSON.stringify(b);
  if (!same([mine.tokens, mine.axes, mine.embeddings], [theirs.tokens, theirs.axes, theirs.embeddings]))
    return " (The table shown differs from it.)";
  const changes = Object.keys(mine.config)
    .filter((key) => key !== "weights" && !same(mine.config[key], theirs.config[key]))
    .map((key) => {
      const v = mine.config[key];
      return typeof v === "boolean" ? `${key} ${v ? "on" : "off"}` : `${key} ${v}`;
    });
  if (!same(mine.config.weights, theirs.config.weights)) changes.push("its own W_Q, W_K, W_V and W_O");
  return ` Here it starts with ${changes.join(", ")}.`;
}

/**
 * Make the state consistent after an edit: heads divide d, custom matrices are d x d,
 * view indices are in range. `previousLayers` lets the vector slider follow the last layer.
 * @param {ToyState} state @param {Limits} limits @param {number} [previousLayers]
 * @returns {ToyState}
 */
export function normalize(state, limits, previousLayers) {
  const n = state.tokens.length;
  const d = dims(state);
  const cfg = state.config;
  cfg.layers = clamp(isInt(cfg.layers) ? cfg.layers : 1, 1, limits.max_layers);
  const choices = headChoices(d, limits.max_heads);
  if (!choices.includes(cfg.heads)) cfg.heads = Math.max(...choices.filter((h) => h <= cfg.heads), 1);
  if (cfg.projections === "custom") {
    const w = cfg.weights || {};
    cfg.weights = Object.fromEntries(MATRICES.map((k) => [k, resizeSquare(w[k], d)]));
  } else {
    cfg.weights = null;
  }
  const v = state.view;
  const L = cfg.layers;
  if (previousLayers !== undefined && v.vlayer === previousLayers) v.vlayer = L;
  v.layer = clamp(isInt(v.layer) ? v.layer : 0, 0, L - 1);
  v.head = clamp(isInt(v.head) ? v.head : 0, 0, cfg.heads - 1);
  v.vlayer = clamp(isInt(v.vlayer) ? v.vlayer : L, 0, L);
  v.a = clamp(isInt(v.a) ? v.a : 0, 0, n - 1);
  v.b = clamp(isInt(v.b) ? v.b : n - 1, 0, n - 1);
  v.trails = v.trails !== false;
  if (!MEASURES.includes(v.measure)) v.measure = "weights";
  return state;
}

/** @param {unknown} value */
function badNumber(value) {
  return typeof value !== "number" || !Number.isFinite(value);
}

/**
 * The first problem the UI can see before asking the server, as a one-line message.
 * @param {ToyState} state @param {Limits} limits
 * @returns {string | null}
 */
export function problem(state, limits) {
  const { tokens, axes, embeddings, config } = state;
  for (let i = 0; i < embeddings.length; i++) {
    for (let j = 0; j < embeddings[i].length; j++) {
      if (badNumber(embeddings[i][j])) {
        const text = String(embeddings[i][j]).trim();
        const what = text ? `"${text}" is not a number` : "is empty";
        return `embeddings: ${tokens[i] || `row ${i + 1}`}, ${axes[j] || `column ${j + 1}`}: ${what}`;
      }
    }
  }
  if (config.weights) {
    for (const k of MATRICES) {
      const bad = config.weights[k].flat().find(badNumber);
      if (bad !== undefined) return `config.weights.${k}: "${String(bad).trim()}" is not a number`;
    }
  }
  if (!isInt(config.seed) || config.seed < 0 || config.seed > 2 ** 31 - 1) {
    return "config.seed: must be a whole number from 0 to 2147483647";
  }
  const long = tokens.find((t) => t.length > limits.max_token_chars);
  if (long !== undefined) return `tokens: "${long.slice(0, 12)}…" is longer than ${limits.max_token_chars} characters`;
  return null;
}

/**
 * The ToyTraceRequest body for this state.
 * @param {ToyState} state @param {ToyConfig} defaults
 */
export function toRequest(state, defaults) {
  /** @type {Record<string, any>} */
  const config = {};
  const given = /** @type {Record<string, any>} */ (state.config);
  for (const [key, value] of Object.entries(defaults)) config[key] = given[key] ?? value;
  if (config.projections !== "custom") config.weights = null;
  return { tokens: state.tokens, embeddings: state.embeddings, axes: state.axes, config };
}

// ---- URL: #s=<base64url of the JSON state> ----------------------------------------------

/** @param {string} text */
function toBase64Url(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** @param {string} text */
function fromBase64Url(text) {
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

/** @param {ToyState} state */
export function encodeState(state) {
  const { preset, tokens, axes, embeddings, config, view } = state;
  return "#s=" + toBase64Url(JSON.stringify({ v: 1, preset, tokens, axes, embeddings, config, view }));
}

/** @param {unknown} x @returns {x is string[]} */
const isStrList = (x) => Array.isArray(x) && x.every((s) => typeof s === "string");

/**
 * The JSON object in a `#s=` hash, or null when there is none; throws when it cannot be read.
 * @param {string} hash @returns {any}
 */
function readHash(hash) {
  const m = /^#s=([A-Za-z0-9_-]+)$/.exec(hash || "");
  if (!m) return null;
  const raw = JSON.parse(fromBase64Url(m[1]));
  if (!raw || typeof raw !== "object") throw new Error("the link holds no state");
  return raw;
}

/**
 * The toy state in a `#s=` hash, or null when there is none; throws when it cannot be read.
 * @param {string} hash @param {Limits} limits @param {ToyConfig} defaults
 */
export function decodeState(hash, limits, defaults) {
  const raw = readHash(hash);
  return raw && toyFromRaw(raw, limits, defaults);
}

/**
 * @param {any} raw @param {Limits} limits @param {ToyConfig} defaults
 * @returns {ToyState}
 */
function toyFromRaw(raw, limits, defaults) {
  const { tokens, axes, embeddings, config, view } = raw;
  const n = Array.isArray(tokens) ? tokens.length : 0;
  const d = Array.isArray(embeddings) && Array.isArray(embeddings[0]) ? embeddings[0].length : 0;
  const ok =
    isStrList(tokens) &&
    isStrList(axes) &&
    n >= 1 &&
    n <= limits.max_tokens &&
    d >= 1 &&
    d <= limits.max_dim &&
    axes.length === d &&
    embeddings.length === n &&
    embeddings.every(
      (/** @type {unknown} */ r) =>
        Array.isArray(r) && r.length === d && r.every((x) => typeof x === "number" || typeof x === "string"),
    ) &&
    config &&
    typeof config === "object";
  if (!ok) throw new Error("the link's table is not a valid n x d table");
  /** @type {ToyState} */
  const state = {
    preset: typeof raw.preset === "string" ? raw.preset : null,
    tokens,
    axes,
    embeddings,
    config: { ...defaults },
    view: { ...defaultView(n, 1), ...(view && typeof view === "object" ? view : {}) },
  };
  const target = /** @type {Record<string, any>} */ (state.config);
  for (const key of Object.keys(defaults)) if (key in config) target[key] = config[key];
  return normalize(state, limits);
}

// ---- Sentence mode ----------------------------------------------------------------------
//
// sentence = {
//   model: name of the pretrained model (null: the server's default),
//   text: the sentence,
//   layer, head: the chosen head (0-based; model view, query-key view),
//   heads: [head indices] drawn in the head view (at its layer, `layer`),
//   query: original token index for the query-key view (null: the first ordinary token; with
//     images in a causal model, the first after the first image),
//   key: original token index of the key Why this score explains at the query (null: the
//     query's winning key, its largest weight),
//   hideSpecial, mergeWords: the token options,
//   picked: [original token indices] shown in the trajectories ("all"; null: the default, every
//     token of a short text, a few from the query on of a long one), dims: 2 | 3,
//   allKeys: the query-key view shows every key (else the strongest, on long texts),
//   peak: the model view colours each head from 0 to its own largest weight,
//   aggregate: what the model view's large heatmap shows of the chosen layer,
//   measure: "weights" | "value_weighted": what the model and head views show, the attention
//     weights or ||a v W_O|| (the trace's ``measure``),
//   ablate: [{layer, head}] heads knocked out (0-based; the trace's ``ablate``, a new trace),
//   ablateMode: "zero" | "mean" | "patch", how each is knocked out, ablateSource: patch's text,
//   diffLayer, diffHead: the head whose attention the Knock-out card compares (null: the
//     default, the chosen head's index in the layer after the first knocked out),
//   pushed: "top" | "next" | "diff", the token the Predictions card's "What pushed this"
//     attributes (the top prediction, the true next token, the difference),
//   images: [{name, type, size, url}] the images with the text (data: URLs; a new trace),
//     NEVER written into a link (too large for one: the page says so),
//   foldImages: each image one row and column (null: the default, by its size),
//   more: [names] the cards open under "More views" (SENTENCE_MORE's; null: as this browser
//     remembers them),
// }

/**
 * @param {string | null} [model] @param {string} [text]
 * @returns {SentenceState}
 */
export function defaultSentence(model = null, text = "") {
  return {
    model,
    text,
    layer: 0,
    head: 0,
    heads: [0],
    query: null,
    key: /** @type {number | null} */ (null),
    hideSpecial: false,
    mergeWords: false,
    picked: null,
    dims: 2,
    allKeys: false,
    peak: false,
    aggregate: /** @type {import("./types.js").Aggregate} */ ("head"),
    measure: /** @type {import("./types.js").Measure} */ ("weights"),
    generate: /** @type {import("./types.js").Generate | null} */ (null),
    step: /** @type {number | null} */ (null),
    ablate: /** @type {{layer: number, head: number}[]} */ ([]),
    ablateMode: /** @type {import("./types.js").AblateMode} */ ("zero"),
    ablateSource: "",
    diffLayer: /** @type {number | null} */ (null),
    diffHead: /** @type {number | null} */ (null),
    pushed: /** @type {import("./types.js").Pushed} */ ("top"),
    images: /** @type {import("./types.js").SentenceImage[]} */ ([]),
    foldImages: /** @type {boolean | null} */ (null),
    more: /** @type {string[] | null} */ (null),
  };
}

/** The names of the cards behind "More views". */
export const MORE_VIEWS = /** @type {string[]} */ (SENTENCE_MORE.map(([name]) => name));

/**
 * The known names of `raw` (an untrusted list: a link's, or this browser's), in the page's
 * order; null when it is not a list. @param {unknown} raw @returns {string[] | null}
 */
export function moreViews(raw) {
  if (!Array.isArray(raw)) return null;
  return MORE_VIEWS.filter((name) => raw.includes(name));
}

/** Sentence keys a link never carries: the images (data: URLs, megabytes). */
const UNSHARED = ["images"];

/** How a head is knocked out (the trace's ``ablate[i].mode``; the card's select offers the same). */
export const ABLATE_MODES = ["zero", "mean", "patch"];
/** A knocked-out head's key, "layer:head". */
export const ablateKey = (/** @type {{layer: number, head: number}} */ a) => `${a.layer}:${a.head}`;

/**
 * The trace request's ``ablate`` for the state: every knocked-out head in the chosen mode, or
 * none while a patch has no source text yet.
 * @param {SentenceState} s
 * @returns {{layer: number, head: number, mode: string, source?: string}[]}
 */
export function ablateBody(s) {
  if (s.ablateMode === "patch" && !s.ablateSource.trim()) return [];
  return s.ablate.map(({ layer, head }) => ({
    layer,
    head,
    mode: s.ablateMode,
    ...(s.ablateMode === "patch" ? { source: s.ablateSource } : {}),
  }));
}

/** What the model view can show of a layer: the chosen head, or a field of all its heads
 * together; the page's picker offers the same (a test checks).
 * @type {import("./types.js").Aggregate[]} */
export const AGGREGATES = ["head", ...overHeads()];

function overHeads() {
  const names = Object.keys(FIELDS).filter((name) => FIELDS[name].over_heads);
  return /** @type {import("./generated/fields.js").OverHeads[]} */ (names);
}

/** What the model and head views show (the trace's ``measure``; the page's switch offers the
 * same, a test checks). */
export const MEASURES = ["weights", "value_weighted"];

/** What "What pushed this" can attribute (its radio group offers the same, a test checks). */
export const PUSHED = ["top", "next", "diff"];

/** @param {unknown} v @returns {v is number} */
const isIndex = (v) => isInt(v) && v >= 0;

/**
 * A sentence state from untrusted JSON (a link): wrong fields fall back to their defaults.
 * @param {any} raw @returns {SentenceState}
 */
export function sentenceFromRaw(raw) {
  const s = defaultSentence();
  if (!raw || typeof raw !== "object") throw new Error("the link has no sentence");
  if (typeof raw.model === "string") s.model = raw.model;
  if (typeof raw.text === "string") s.text = raw.text;
  for (const key of ["layer", "head"]) if (isIndex(raw[key])) s[key] = raw[key];
  if (Array.isArray(raw.heads) && raw.heads.every(isIndex)) s.heads = [...new Set(raw.heads)].sort((a, b) => a - b);
  if (isIndex(raw.query)) s.query = raw.query;
  if (isIndex(raw.key)) s.key = raw.key;
  s.hideSpecial = raw.hideSpecial === true;
  s.mergeWords = raw.mergeWords === true;
  if (Array.isArray(raw.picked) && raw.picked.every(isIndex)) s.picked = [...new Set(raw.picked)].sort((a, b) => a - b);
  if (raw.picked === "all") s.picked = "all";
  s.dims = raw.dims === 3 ? 3 : 2;
  s.allKeys = raw.allKeys === true;
  s.peak = raw.peak === true;
  if (AGGREGATES.includes(raw.aggregate)) s.aggregate = raw.aggregate;
  if (MEASURES.includes(raw.measure)) s.measure = raw.measure;
  const g = raw.generate;
  if (
    g &&
    isInt(g.steps) &&
    g.steps >= 1 &&
    typeof g.temperature === "number" &&
    g.temperature >= 0 &&
    g.temperature <= 2 &&
    isIndex(g.seed)
  ) {
    s.generate = { steps: g.steps, temperature: g.temperature, seed: g.seed };
  }
  if (isInt(raw.step) && raw.step >= 1) s.step = raw.step;
  if (Array.isArray(raw.ablate)) {
    const seen = new Set();
    for (const a of raw.ablate) {
      if (!a || !isIndex(a.layer) || !isIndex(a.head) || seen.has(ablateKey(a))) continue;
      seen.add(ablateKey(a));
      s.ablate.push({ layer: a.layer, head: a.head });
    }
  }
  if (ABLATE_MODES.includes(raw.ablateMode)) s.ablateMode = raw.ablateMode;
  if (typeof raw.ablateSource === "string") s.ablateSource = raw.ablateSource;
  for (const key of ["diffLayer", "diffHead"]) if (isIndex(raw[key])) s[key] = raw[key];
  if (PUSHED.includes(raw.pushed)) s.pushed = raw.pushed;
  if (typeof raw.foldImages === "boolean") s.foldImages = raw.foldImages;
  s.more = moreViews(raw.more);
  return s;
}

/**
 * Keep the sentence's choices inside a model of `layers` x `heads` and a text of n tokens.
 * @param {SentenceState} s @param {number} layers @param {number} heads @param {number} [n]
 */
export function clampSentence(s, layers, heads, n) {
  s.layer = clamp(s.layer, 0, layers - 1);
  s.head = clamp(s.head, 0, heads - 1);
  const chosen = s.heads.filter((h) => h < heads);
  s.heads = chosen.length || !s.heads.length ? chosen : [s.head]; // "none" stays none
  s.ablate = s.ablate.filter((a) => a.layer < layers && a.head < heads);
  if (s.diffLayer !== null) s.diffLayer = clamp(s.diffLayer, 0, layers - 1);
  if (s.diffHead !== null) s.diffHead = clamp(s.diffHead, 0, heads - 1);
  if (n !== undefined) {
    if (s.query !== null && s.query >= n) s.query = null;
    if (s.key !== null && s.key >= n) s.key = null;
    if (Array.isArray(s.picked)) s.picked = s.picked.filter((i) => i < n);
  }
  return s;
}

// ---- Share links: both modes in one hash ----------------------------------------------------
//
// #s=<base64url of {v: 3, mode, toy?, sentence?}>: the mode in view and the state of each mode
// the reader has opened, so that a link restores every mode as it was. Compact: a toy table that
// is exactly its preset's is written as the preset's id (with its config and view), config keys
// at the server's defaults and sentence keys at their defaults are left out. Older links (v1: a
// toy state; v2: a sentence) are still read.

/** @param {unknown} a @param {unknown} b */
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The toy state, compactly. @param {ToyState} toy @param {ShareContext} [ctx]
 * @returns {Record<string, any>}
 */
function toyPart(toy, ctx) {
  const { preset, tokens, axes, embeddings, config, view } = toy;
  /** The config keys that differ from `base`'s. @param {Record<string, any> | undefined} base */
  const diff = (base) =>
    Object.fromEntries(Object.entries(config).filter(([key, value]) => !base || !same(value, base[key])));
  const found = ctx?.presets.find((p) => p.id === preset);
  if (ctx && found) {
    // The preset's table, under any config: only what differs from the preset travels.
    const fresh = normalize(fromPreset(found, ctx.defaults), ctx.limits);
    if (same([tokens, axes, embeddings], [fresh.tokens, fresh.axes, fresh.embeddings])) {
      return { preset, config: diff(fresh.config), view };
    }
  }
  return { preset, tokens, axes, embeddings, config: diff(ctx?.defaults), view };
}

/**
 * The sentence state, compactly: the keys that differ from the defaults; null when nothing
 * does (sentence mode was never opened). @param {SentenceState} sentence
 */
function sentencePart(sentence) {
  const base = /** @type {Record<string, unknown>} */ (defaultSentence());
  const out = Object.fromEntries(
    Object.entries(sentence).filter(([key, value]) => !UNSHARED.includes(key) && !same(value, base[key])),
  );
  return Object.keys(out).length ? out : null;
}

/**
 * @typedef {{presets: {id: string, tokens: string[], axes: string[], embeddings: number[][], config: object}[],
 *   limits: Limits, defaults: ToyConfig}} ShareContext what a link's toy part is read against
 */

/**
 * The hash of the page: the mode in view and both modes' states (either may be null: not opened).
 * @param {string} mode @param {ToyState | null} toy @param {SentenceState | null} sentence
 * @param {ShareContext} [ctx] with it, a preset's table is written as the preset's id
 */
export function encodeShare(mode, toy, sentence, ctx) {
  /** @type {Record<string, any>} */
  const out = { v: 3, mode: mode === "sentence" ? "sentence" : "toy" };
  if (toy) out.toy = toyPart(toy, ctx);
  const s = sentence && sentencePart(sentence);
  if (s) out.sentence = s;
  return "#s=" + toBase64Url(JSON.stringify(out));
}

/**
 * {mode, toy, sentence} from a hash (toy or sentence null when the link has none), or null when
 * there is no hash; throws when it cannot be read.
 * @param {string} hash @param {Limits} limits @param {ToyConfig} defaults
 * @param {ShareContext["presets"]} [presets] to read a toy part written as a preset's id
 * @returns {{mode: "toy" | "sentence", toy: ToyState | null, sentence: SentenceState | null} | null}
 */
export function decodeShare(hash, limits, defaults, presets = []) {
  const raw = readHash(hash);
  if (!raw) return null;
  if (raw.v !== 3) {
    if (raw.mode === "sentence") return { mode: "sentence", toy: null, sentence: sentenceFromRaw(raw.sentence) };
    return { mode: "toy", toy: toyFromRaw(raw, limits, defaults), sentence: null };
  }
  let toy = null;
  if (raw.toy && typeof raw.toy === "object") {
    const t = raw.toy;
    if (Array.isArray(t.tokens)) {
      toy = toyFromRaw(t, limits, defaults);
    } else {
      const found = presets.find((p) => p.id === t.preset);
      if (!found) throw new Error(`the link names the preset '${String(t.preset)}', which this server does not have`);
      const fresh = fromPreset(found, defaults);
      toy = toyFromRaw({ ...fresh, config: { ...fresh.config, ...(t.config || {}) }, view: t.view }, limits, defaults);
    }
  }
  const sentence = raw.sentence && typeof raw.sentence === "object" ? sentenceFromRaw(raw.sentence) : null;
  return { mode: raw.mode === "sentence" ? "sentence" : "toy", toy, sentence };
}

/** What the Train mode's views show at first. @returns {import("./types.js").TrainView} */
export const defaultTrainView = () => ({
  variant: 0,
  layer: 0,
  head: 0,
  checkpoint: 0,
  attention: /** @type {import("./types.js").AttentionKind} */ ("self"),
  query: /** @type {number | null} */ (null),
  key: /** @type {number | null} */ (null),
});
