// Many texts at once: one head's queries and keys of every token of a set of texts, projected
// together into 2-D by the server (core/api.js fetchCorpus), on one <canvas> (up to 20,000
// tokens: 40,000 points, drawn in two batched paths). Queries are filled blue circles, keys
// vermilion rings; the reader's own sentence is drawn on top, larger and outlined, labelled,
// each token's query joined to its key by a faint line. Equal scales on both axes, so that a
// distance on the screen is a distance in the projection. Hover a point for its token in its
// text; click it (or Enter on the keyboard's cursor) to open that text at this head. The canvas
// takes focus: Left / Right walk the sentence's tokens, Up / Down switch query and key,
// PageUp / PageDown a text at a time (its first token), Home / End the set's first and last; a
// polite live region reads the point (the API's coordinates as given) and, for a query, the 5
// nearest keys in the map. render(container, data, selection, callbacks).

import { el, sizeCanvas } from "../core/dom.js";
import { readableCount, readablePercent } from "../core/numbers.js";
import { FONT, GRID, TEXT, TEXT_DIM } from "../core/theme.js";
import { quotedToken, shownToken } from "../core/tokens.js";
import { describe } from "./access.js";

/** @typedef {import("../core/types.js").Corpus} Corpus */
/** @typedef {import("../core/types.js").CorpusPoints} CorpusPoints */
/** @typedef {import("../core/types.js").CorpusText} CorpusText */

// Okabe-Ito blue and vermilion: apart for every kind of colour vision, and each at 3:1 or more
// on white (WCAG 1.4.11); queries and keys differ in shape too (filled circle, ring).
export const QUERY_COLOUR = "#0072b2";
export const KEY_COLOUR = "#d55e00";
export const NEAREST = 5; // keys read with a query under the keyboard's cursor
export const NAMED = 5; // the sentence's tokens the summary names
const HIT_PX = 6; // the pointer picks the nearest point this close
const CONTEXT = 4; // tokens either side of a token in its context

/**
 * Round tick values between lo and hi, about `count` of them (1, 2 or 5 times a power of ten).
 * @param {number} lo @param {number} hi @param {number} count
 * @returns {number[]}
 */
export function niceTicks(lo, hi, count) {
  if (!(hi > lo) || !Number.isFinite(lo) || !Number.isFinite(hi)) return Number.isFinite(lo) ? [lo] : [];
  const raw = (hi - lo) / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const err = raw / power; // 1 to 10: the step of 1, 2, 5 or 10 nearest it (on a log scale)
  const step = power * (err >= Math.sqrt(50) ? 10 : err >= Math.sqrt(10) ? 5 : err >= Math.SQRT2 ? 2 : 1);
  const digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const out = [];
  for (let t = Math.ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) {
    out.push(Number(t.toFixed(digits)) || 0); // no -0
  }
  return out;
}

/**
 * The data's bounds over every query and key, and its padded spans (`pad` of each span either
 * side; a span of zero, one point or all on a line, gets a small one).
 * @param {CorpusPoints} p @param {number} [pad]
 */
export function extent(p, pad = 0.04) {
  let [xa, xb, ya, yb] = [Infinity, -Infinity, Infinity, -Infinity];
  for (const xs of [p.qx, p.kx])
    for (const x of xs) {
      if (x < xa) xa = x;
      if (x > xb) xb = x;
    }
  for (const ys of [p.qy, p.ky])
    for (const y of ys) {
      if (y < ya) ya = y;
      if (y > yb) yb = y;
    }
  if (!Number.isFinite(xa)) [xa, xb, ya, yb] = [-1, 1, -1, 1];
  const tiny = Math.max(xb - xa, yb - ya) * 1e-3 || 1;
  return {
    cx: (xa + xb) / 2,
    cy: (ya + yb) / 2,
    wide: Math.max(xb - xa, tiny) * (1 + 2 * pad),
    tall: Math.max(yb - ya, tiny) * (1 + 2 * pad),
  };
}

/**
 * The data window a plot of `width` x `height` pixels shows with one scale on both axes: every
 * query and key inside, centred, with a margin of `pad` of each span.
 * @param {CorpusPoints} p @param {number} width @param {number} height @param {number} [pad]
 * @returns {{x0: number, x1: number, y0: number, y1: number, scale: number}} scale: pixels per unit
 */
export function frame(p, width, height, pad = 0.04) {
  const { cx, cy, wide, tall } = extent(p, pad);
  const s = Math.min(width / wide, height / tall);
  return { x0: cx - width / 2 / s, x1: cx + width / 2 / s, y0: cy - height / 2 / s, y1: cy + height / 2 / s, scale: s };
}

/**
 * A token in its text: "… the [cat] sat …" (CONTEXT tokens either side).
 * @param {string[]} tokens @param {number} pos @param {number} [around]
 */
export function contextText(tokens, pos, around = CONTEXT) {
  const a = Math.max(0, pos - around);
  const b = Math.min(tokens.length, pos + around + 1);
  const words = tokens.slice(a, b).map((t, i) => (a + i === pos ? `[${shownToken(t)}]` : shownToken(t)));
  return `${a > 0 ? "… " : ""}${words.join(" ")}${b < tokens.length ? " …" : ""}`;
}

/**
 * The `count` points of `xs, ys` nearest (x, y) in the map, nearest first (ties: the earlier),
 * leaving out the indices `skip` says.
 * @param {number[]} xs @param {number[]} ys @param {number} x @param {number} y
 * @param {number} count @param {(i: number) => boolean} [skip]
 * @returns {number[]}
 */
export function nearest(xs, ys, x, y, count, skip = () => false) {
  /** @type {{i: number, d: number}[]} */
  const best = [];
  for (let i = 0; i < xs.length; i++) {
    if (skip(i)) continue;
    const d = (xs[i] - x) ** 2 + (ys[i] - y) ** 2;
    if (best.length === count && d >= best[best.length - 1].d) continue;
    let k = best.length;
    while (k > 0 && best[k - 1].d > d) k--;
    best.splice(k, 0, { i, d });
    if (best.length > count) best.pop();
  }
  return best.map((b) => b.i);
}

/** The indices of the points of the user's text. @param {Corpus} data */
export function userPoints(data) {
  const p = /** @type {CorpusPoints} */ (data.points);
  const out = [];
  for (let i = 0; i < p.text.length; i++) if (data.texts[p.text[i]]?.user) out.push(i);
  return out;
}

/** A point's token. @param {Corpus} data @param {number} i */
export function tokenOf(data, i) {
  const p = /** @type {CorpusPoints} */ (data.points);
  return data.texts[p.text[i]].tokens[p.pos[i]];
}

/** "text 3 of 112" or "your sentence". @param {Corpus} data @param {number} t */
export function textName(data, t) {
  return data.texts[t].user ? "your sentence" : `text ${t + 1} of ${data.texts.length}`;
}

/**
 * For each token of the user's text, the key nearest its query in the map among the other
 * texts' keys (all keys when there is no other text).
 * @param {Corpus} data @returns {{i: number, key: number}[]}
 */
export function userNearest(data) {
  const p = /** @type {CorpusPoints} */ (data.points);
  const mine = userPoints(data);
  const others = mine.length < p.text.length;
  const own = new Set(mine);
  return mine.map((i) => ({
    i,
    key: nearest(p.kx, p.ky, p.qx[i], p.qy[i], 1, others ? (j) => own.has(j) : undefined)[0],
  }));
}

/**
 * The map in one line: "4,987 tokens from 112 texts; your 9 tokens' queries sit nearest keys of
 * the → “the” (text 5), …" (the first NAMED of them).
 * @param {Corpus} data
 */
export function corpusSummary(data) {
  const n = readableCount(data.tokens);
  const head =
    `${n} tokens from ${readableCount(data.texts.length)} text${data.texts.length === 1 ? "" : "s"}` +
    (data.dropped ? ` (${readableCount(data.dropped)} more left out by the budget)` : "");
  if (!data.points) return `${head}; no queries and keys: ${data.unavailable ?? "the model gives none"}`;
  const pairs = userNearest(data);
  if (!pairs.length) return `${head}.`;
  const p = data.points;
  const words = pairs
    .slice(0, NAMED)
    .map(
      ({ i, key }) =>
        `${shownToken(tokenOf(data, i))} → ${quotedToken(tokenOf(data, key))} (${textName(data, p.text[key])})`,
    );
  const more = pairs.length > NAMED ? `, and ${pairs.length - NAMED} more` : "";
  return `${head}; your ${pairs.length} token${pairs.length === 1 ? "'s query sits" : "s' queries sit"} nearest keys of ${words.join(", ")}${more}.`;
}

/** An axis's title: "PC1 (23%)" (a whole percentage: readablePercent), or "UMAP 1". @param {Corpus} data @param {number} axis 0 or 1 */
export function axisTitle(data, axis) {
  if (data.projection === "pca") {
    const e = data.explained?.[axis];
    return `PC${axis + 1}${e === undefined || e === null ? "" : ` (${readablePercent(e)})`}`;
  }
  return `${data.projection.toUpperCase()} ${axis + 1}`;
}

/** The map's title. @param {Corpus} data */
export function mapTitle(data) {
  return (
    `Queries and keys of layer ${data.layer + 1} head ${data.head + 1}: ` +
    `${readableCount(data.tokens)} tokens from ${readableCount(data.texts.length)} texts, ${data.projection.toUpperCase()}`
  );
}

/**
 * What the live region reads at point i (its query, or its key): the token, which text, the
 * coordinates exactly as the API gave them, and for a query the NEAREST keys in the map (for a
 * key, the nearest queries).
 * @param {Corpus} data @param {number} i @param {"q" | "k"} kind
 */
export function pointWords(data, i, kind) {
  const p = /** @type {CorpusPoints} */ (data.points);
  const t = p.text[i];
  const [x, y] = kind === "q" ? [p.qx[i], p.qy[i]] : [p.kx[i], p.ky[i]];
  const [xs, ys] = kind === "q" ? [p.kx, p.ky] : [p.qx, p.qy];
  const near = nearest(xs, ys, x, y, NEAREST).map(
    (j) => `${quotedToken(tokenOf(data, j))} (${textName(data, p.text[j])})`,
  );
  return (
    `${quotedToken(tokenOf(data, i))} ${kind === "q" ? "query" : "key"}, ${textName(data, t)}, token ${p.pos[i] + 1}: ` +
    `x ${x}, y ${y}. Nearest ${kind === "q" ? "keys" : "queries"}: ${near.join(", ")}. ` +
    `In context: ${contextText(data.texts[t].tokens, p.pos[i])}`
  );
}

/**
 * Where a key moves the keyboard's cursor (point `i`, its query or key) among the points of
 * texts `texts` (each point's text, in order) whose user points are `mine` (ascending): Left /
 * Right the previous / next of the user's tokens, Up / Down the query / the key, PageUp /
 * PageDown the first token of this text (if not on it) or of the previous one / of the next
 * text, Home / End the first / last point. null for any other key.
 * @param {string} key @param {number} i @param {"q" | "k"} kind @param {ArrayLike<number>} texts
 * @param {number[]} mine @returns {{i: number, kind: "q" | "k"} | null}
 */
export function moveCorpusCursor(key, i, kind, texts, mine) {
  const n = texts.length;
  const walk = mine.length ? mine : Array.from({ length: n }, (_, j) => j);
  const start = (/** @type {number} */ j) => {
    while (j > 0 && texts[j - 1] === texts[j]) j--;
    return j;
  };
  switch (key) {
    case "ArrowRight":
      return { i: walk.find((j) => j > i) ?? walk[walk.length - 1], kind };
    case "ArrowLeft":
      return { i: [...walk].reverse().find((j) => j < i) ?? walk[0], kind };
    case "ArrowUp":
      return { i, kind: "q" };
    case "ArrowDown":
      return { i, kind: "k" };
    case "PageDown": {
      let j = i;
      while (j < n - 1 && texts[j] === texts[i]) j++;
      return { i: texts[j] === texts[i] ? i : j, kind };
    }
    case "PageUp": {
      const s = start(i);
      return { i: s < i || s === 0 ? s : start(s - 1), kind };
    }
    case "Home":
      return { i: 0, kind };
    case "End":
      return { i: n - 1, kind };
    default:
      return null;
  }
}

/** @param {CanvasRenderingContext2D} ctx @param {number[]} xs @param {number[]} ys
 * @param {(x: number) => number} px @param {(y: number) => number} py @param {number} r
 * @param {number[] | null} only */
function circles(ctx, xs, ys, px, py, r, only) {
  ctx.beginPath();
  const each = (/** @type {number} */ i) => {
    const x = px(xs[i]);
    const y = py(ys[i]);
    ctx.moveTo(x + r, y);
    ctx.arc(x, y, r, 0, 2 * Math.PI);
  };
  if (only) only.forEach(each);
  else for (let i = 0; i < xs.length; i++) each(i);
}

/**
 * Draw the map of `data` into `container`.
 * @param {HTMLElement} container
 * @param {Corpus} data
 * @param {{layer: number, head: number}} selection the head shown (the response's)
 * @param {{onPick?: (text: number) => void}} [callbacks] onPick: a point's text is opened
 */
export function render(container, data, selection, callbacks = {}) {
  let root = /** @type {HTMLElement & {__corpus?: any}} */ (container.querySelector(":scope > .cm"));
  if (!root) {
    root = el("div", { className: "cm" }, [
      el("p", { className: "cm-title" }),
      el("div", { className: "cm-legend", "aria-hidden": "true" }, [
        el("span", { className: "cm-key" }, [el("span", { className: "cm-dot cm-q" }), "query"]),
        el("span", { className: "cm-key" }, [el("span", { className: "cm-dot cm-k" }), "key"]),
        el("span", { className: "cm-key" }, [
          el("span", { className: "cm-dot cm-q cm-user" }),
          el("span", { className: "cm-dot cm-k cm-user" }),
          "your sentence (labelled; a line joins a token's query and key)",
        ]),
      ]),
      el("div", { className: "cm-body" }, [
        el("canvas", { className: "cm-canvas" }),
        el("div", { className: "cm-cursor", hidden: true }),
        el("div", { className: "cm-tip", hidden: true, role: "tooltip" }),
      ]),
    ]);
    container.replaceChildren(root);
  }
  /** @type {HTMLElement} */ (root.querySelector(".cm-title")).textContent = mapTitle(data);
  const body = /** @type {HTMLElement} */ (root.querySelector(".cm-body"));
  const canvas = /** @type {HTMLCanvasElement} */ (root.querySelector("canvas"));
  const tip = /** @type {HTMLElement} */ (root.querySelector(".cm-tip"));
  const ring = /** @type {HTMLElement} */ (root.querySelector(".cm-cursor"));
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  tip.hidden = ring.hidden = true;
  const p = data.points;
  if (!p) {
    canvas.hidden = true;
    container.dataset.points = "0";
    describe(body, { summary: corpusSummary(data), table: null });
    root.__corpus = null;
    return;
  }
  canvas.hidden = false;
  const n = p.text.length;
  const mine = userPoints(data);

  // Geometry in CSS pixels: tick labels and the axis titles left and below.
  const width = Math.max(260, Math.floor(root.clientWidth || container.clientWidth || 640));
  const left = 62;
  const right = 12;
  const top = 10;
  const bottom = 46;
  // The plot as tall as the data's shape asks (one scale on both axes), within bounds; no wider
  // than that height then needs.
  const room = width - left - right;
  const span = extent(p);
  const aspect = span.tall / span.wide;
  const plotH = Math.round(Math.max(240, Math.min(600, room * aspect)));
  const plotW = Math.max(Math.min(room, 280), Math.min(room, Math.ceil(plotH / aspect)));
  const height = top + plotH + bottom;
  const f = frame(p, plotW, plotH);
  const drawnWidth = left + plotW + right;
  const px = (/** @type {number} */ x) => left + (x - f.x0) * f.scale;
  const py = (/** @type {number} */ y) => top + (f.y1 - y) * f.scale;
  sizeCanvas(canvas, ctx, drawnWidth, height);

  // Axes: grid lines at the ticks, their labels, the titles.
  ctx.font = `11px ${FONT}`;
  ctx.strokeStyle = GRID;
  ctx.lineWidth = 1;
  ctx.fillStyle = TEXT_DIM;
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const t of niceTicks(f.x0, f.x1, Math.max(2, Math.round(plotW / 90)))) {
    const x = Math.round(px(t)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + plotH);
    ctx.stroke();
    ctx.fillText(String(t), x, top + plotH + 4);
  }
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const t of niceTicks(f.y0, f.y1, Math.max(2, Math.round(plotH / 70)))) {
    const y = Math.round(py(t)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(left, y);
    ctx.lineTo(left + plotW, y);
    ctx.stroke();
    ctx.fillText(String(t), left - 5, y);
  }
  ctx.strokeStyle = TEXT_DIM;
  ctx.strokeRect(left - 0.5, top - 0.5, plotW + 1, plotH + 1);
  ctx.font = `12px ${FONT}`;
  ctx.fillStyle = TEXT;
  ctx.textAlign = "center";
  ctx.textBaseline = "alphabetic";
  ctx.fillText(axisTitle(data, 0), left + plotW / 2, top + plotH + bottom - 6);
  ctx.save();
  ctx.translate(14, top + plotH / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText(axisTitle(data, 1), 0, 0);
  ctx.restore();

  // The set: keys (rings) under queries (filled), batched; then the user's sentence on top.
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, plotW, plotH);
  ctx.clip();
  const r = n > 5000 ? 2 : n > 1000 ? 2.5 : 3;
  ctx.globalAlpha = n > 5000 ? 0.5 : 0.7;
  ctx.strokeStyle = KEY_COLOUR;
  ctx.lineWidth = 1;
  circles(ctx, p.kx, p.ky, px, py, r, null);
  ctx.stroke();
  ctx.fillStyle = QUERY_COLOUR;
  circles(ctx, p.qx, p.qy, px, py, r, null);
  ctx.fill();
  ctx.globalAlpha = 1;
  ctx.strokeStyle = "rgba(29, 35, 48, 0.35)";
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const i of mine) {
    ctx.moveTo(px(p.qx[i]), py(p.qy[i]));
    ctx.lineTo(px(p.kx[i]), py(p.ky[i]));
  }
  ctx.stroke();
  circles(ctx, p.kx, p.ky, px, py, 7, mine);
  ctx.strokeStyle = TEXT;
  ctx.lineWidth = 4.5;
  ctx.stroke();
  ctx.strokeStyle = KEY_COLOUR;
  ctx.lineWidth = 2.5;
  ctx.stroke();
  circles(ctx, p.qx, p.qy, px, py, 6, mine);
  ctx.fillStyle = QUERY_COLOUR;
  ctx.fill();
  ctx.strokeStyle = TEXT;
  ctx.lineWidth = 1.5;
  ctx.stroke();
  ctx.font = `600 12px ${FONT}`;
  ctx.textAlign = "left";
  ctx.textBaseline = "bottom";
  ctx.lineJoin = "round";
  // Labels: the queries' first, then the keys'; one that would cover a label already drawn
  // tries the point's left, else is left out (hover or the keyboard still names it).
  /** @type {number[][]} */
  const taken = [];
  const free = (/** @type {number[]} */ b) =>
    taken.every((t) => b[0] >= t[2] || b[2] <= t[0] || b[1] >= t[3] || b[3] <= t[1]);
  for (const [xs, ys] of [
    [p.qx, p.qy],
    [p.kx, p.ky],
  ]) {
    for (const i of mine) {
      const label = shownToken(tokenOf(data, i));
      const w = ctx.measureText(label).width;
      const x = px(xs[i]);
      const y = py(ys[i]) - 5;
      const box = [
        [x + 7, y - 13, x + 7 + w, y],
        [x - 7 - w, y - 13, x - 7, y],
      ].find(free);
      if (!box) continue;
      taken.push(box);
      ctx.strokeStyle = "rgba(255, 255, 255, 0.9)";
      ctx.lineWidth = 3;
      ctx.strokeText(label, box[0], y);
      ctx.fillStyle = TEXT;
      ctx.fillText(label, box[0], y);
    }
  }
  ctx.restore();
  container.dataset.points = String(n);
  container.dataset.layer = String(data.layer);
  container.dataset.head = String(data.head);

  // The point under the pointer: the user's first (drawn on top), then the nearest of the set.
  /** @param {MouseEvent} e @returns {{i: number, kind: "q" | "k"} | null} */
  const hit = (e) => {
    const b = canvas.getBoundingClientRect();
    const mx = e.clientX - b.left;
    const my = e.clientY - b.top;
    /** @type {{i: number, kind: "q" | "k"} | null} */
    let found = null;
    let best = Infinity;
    /** @param {number} i @param {"q" | "k"} kind @param {number} reach */
    const test = (i, kind, reach) => {
      const d =
        kind === "q" ? Math.hypot(px(p.qx[i]) - mx, py(p.qy[i]) - my) : Math.hypot(px(p.kx[i]) - mx, py(p.ky[i]) - my);
      if (d <= reach && d < best) {
        best = d;
        found = { i, kind };
      }
    };
    for (const i of mine) {
      test(i, "q", HIT_PX + 3);
      test(i, "k", HIT_PX + 3);
    }
    if (found) return found;
    for (let i = 0; i < n; i++) {
      test(i, "q", HIT_PX);
      test(i, "k", HIT_PX);
    }
    return found;
  };
  /** @param {number} i @param {"q" | "k"} kind */
  const show = (i, kind) => {
    const t = p.text[i];
    const [x, y] = kind === "q" ? [p.qx[i], p.qy[i]] : [p.kx[i], p.ky[i]];
    tip.hidden = ring.hidden = false;
    tip.replaceChildren(
      el("span", { className: "cm-context", textContent: contextText(data.texts[t].tokens, p.pos[i]) }),
      el("br"),
      el("span", { textContent: `${kind === "q" ? "query" : "key"} · ${textName(data, t)} · token ${p.pos[i] + 1}` }),
      el("br"),
      el("span", { className: "cm-xy", textContent: `x ${x}, y ${y}` }),
    );
    const cx = px(x);
    const cy = py(y);
    tip.style.left = `${Math.max(0, Math.min(cx + 12, drawnWidth - 240))}px`;
    tip.style.top = `${cy + 14 > height - 70 ? Math.max(0, cy - 78) : cy + 14}px`;
    Object.assign(ring.style, { left: `${cx - 9}px`, top: `${cy - 9}px` });
  };
  const hide = () => {
    tip.hidden = ring.hidden = true;
  };
  canvas.onmousemove = (e) => {
    const h = hit(e);
    canvas.style.cursor = h && callbacks.onPick ? "pointer" : "";
    if (h) show(h.i, h.kind);
    else hide();
  };
  canvas.onmouseleave = () => {
    if (document.activeElement !== canvas) hide();
  };
  canvas.onclick = (e) => {
    const h = hit(e);
    if (h) callbacks.onPick?.(p.text[h.i]);
  };

  // The text alternative and the keyboard's path.
  const text = describe(body, {
    summary: corpusSummary(data),
    table: mine.length
      ? {
          caption: `Your sentence's tokens in the map of layer ${data.layer + 1} head ${data.head + 1}`,
          head: ["token", "query x", "query y", "key x", "key y"],
          rows: mine.map((i) => [
            `${p.pos[i] + 1}. ${shownToken(tokenOf(data, i))}`,
            String(p.qx[i]),
            String(p.qy[i]),
            String(p.kx[i]),
            String(p.ky[i]),
          ]),
        }
      : null,
  });
  const c = /** @type {HTMLCanvasElement & {__at?: {i: number, kind: "q" | "k"}}} */ (canvas);
  const at = c.__at ?? { i: mine[0] ?? 0, kind: /** @type {"q" | "k"} */ ("q") };
  if (at.i >= n) at.i = mine[0] ?? 0;
  c.__at = at;
  canvas.tabIndex = 0;
  canvas.setAttribute("role", "application");
  canvas.setAttribute(
    "aria-label",
    `${mapTitle(data)}. Left and Right walk your sentence's tokens, Up and Down ` +
      "switch between query and key, Page Up and Page Down go a text at a time, Home and End go to the set's first " +
      "and last; Enter opens the point's text in the views above.",
  );
  canvas.setAttribute("aria-describedby", text.summary.id);
  const say = () => {
    text.live.textContent = pointWords(data, at.i, at.kind);
    show(at.i, at.kind);
  };
  canvas.onfocus = say;
  canvas.onblur = hide;
  canvas.onkeydown = (e) => {
    if ((e.key === "Enter" || e.key === " ") && callbacks.onPick) {
      e.preventDefault();
      callbacks.onPick(p.text[at.i]);
      return;
    }
    const to = moveCorpusCursor(e.key, at.i, at.kind, p.text, mine);
    if (!to) return;
    e.preventDefault();
    Object.assign(at, to);
    say();
  };
  // What is drawn, for tests and exports: the frame that maps the API's coordinates to pixels.
  root.__corpus = {
    frame: f,
    left,
    top,
    plotW,
    plotH,
    width: drawnWidth,
    height,
    selection,
    axes: [axisTitle(data, 0), axisTitle(data, 1)],
  };
}
