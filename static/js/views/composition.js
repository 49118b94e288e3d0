// How heads compose: every head of a model as a node in a layers x heads graph (a column per
// layer), and the strongest composition scores of one kind (Q, K or V) as edges from an earlier
// head to a later one, thicker and darker the stronger, the strongest drawn last. A head the
// atlas has scored is labelled with its role (previous token, induction, sink). The edges are
// also a list of buttons, strongest first, in words: the keyboard path (Tab, Enter) and the
// text alternative; a button, or a click on an edge, opens the later head.
// render(container, data, selection, callbacks).

import { el } from "../core/dom.js";
import { readableWeight } from "../core/numbers.js";
import { TEXT_DIM } from "../core/theme.js";

/** @typedef {import("../core/types.js").Composition} Composition */
/** @typedef {import("../core/types.js").CompositionKind} CompositionKind */
/** @typedef {import("../core/types.js").Atlas} Atlas */
/** @typedef {{la: number, ha: number, lb: number, hb: number, v: number}} Edge */
/** @typedef {{name: string, short: string, color: string}} Role */

export const KIND_WORDS = { q: "Q-composition", k: "K-composition", v: "V-composition" };
export const EDGE_COUNTS = [10, 20, 40];
/** An atlas score from which a head is labelled with that role. */
export const ROLE_AT = 0.4;
/** The atlas's scores that name a role, in the order a head takes the first it reaches. */
export const ROLES = /** @type {Record<string, Role>} */ ({
  induction: { name: "induction", short: "I", color: "#c0392b" },
  previous_token: { name: "previous token", short: "P", color: "#1f5fa0" },
  first_token: { name: "sink", short: "S", color: "#6b4f2a" },
});
const NO_ROLE = "#aab1bd";
const SVG = "http://www.w3.org/2000/svg";

/**
 * The `count` strongest scores of `kind`, strongest first (ties: the earlier heads first).
 * @param {Composition} comp @param {CompositionKind} kind @param {number} count
 * @returns {Edge[]}
 */
export function strongestEdges(comp, kind, count) {
  /** @type {Edge[]} */
  const all = [];
  comp.kinds[kind].forEach((later, lb) =>
    later.forEach((from, hb) =>
      from.forEach((v, i) => {
        if (v !== null) all.push({ la: Math.floor(i / comp.heads), ha: i % comp.heads, lb, hb, v });
      }),
    ),
  );
  all.sort((a, b) => b.v - a.v || a.la - b.la || a.ha - b.ha || a.lb - b.lb || a.hb - b.hb);
  return all.slice(0, count);
}

/**
 * The role the atlas gives head (l, h): the first of ROLES whose score reaches ROLE_AT.
 * @param {Atlas | null} atlas @param {number} l @param {number} h @returns {Role | null}
 */
export function roleOf(atlas, l, h) {
  if (!atlas) return null;
  for (const [name, role] of Object.entries(ROLES)) {
    const score = atlas.scores.find((s) => s.name === name);
    if (score && score.grid[l]?.[h] >= ROLE_AT) return role;
  }
  return null;
}

/** "layer 1 head 3 (previous token)", 1-based as the atlas names heads. */
export function headName(atlas, l, h) {
  const role = roleOf(atlas, l, h);
  return `layer ${l + 1} head ${h + 1}${role ? ` (${role.name})` : ""}`;
}

/** Each role as a sentence names a head that has it. */
const ROLE_WORDS = /** @type {Record<string, string>} */ ({
  induction: "an induction head",
  "previous token": "a previous-token head",
  sink: "an attention sink",
});

/**
 * Every head the atlas gives a role, by its component name ("L0.H3", 0-based, as the trace's
 * attributions name heads), to the role in words ("a previous-token head"); none without an
 * atlas. What views/why.js takes as its roles.
 * @param {Atlas | null} atlas @returns {Record<string, string>}
 */
export function headRoles(atlas) {
  /** @type {Record<string, string>} */
  const out = {};
  if (!atlas) return out;
  for (let l = 0; l < atlas.layers; l++)
    for (let h = 0; h < atlas.heads; h++) {
      const role = roleOf(atlas, l, h);
      if (role) out[`L${l}.H${h}`] = ROLE_WORDS[role.name] ?? role.name;
    }
  return out;
}

/** One edge in words: "layer 1 head 3 (previous token) → layer 2 head 5: 0.268", the score (0
 * to 1) by numbers.js's rules (readableWeight: 3 significant digits, never "1" short of it nor
 * "0" above it: "over 0.999", "under 0.001").
 * @param {Edge} e @param {Atlas | null} atlas */
export function edgeWords(e, atlas) {
  return `${headName(atlas, e.la, e.ha)} → ${headName(atlas, e.lb, e.hb)}: ${readableWeight(e.v)}`;
}

/** @param {string} name @param {Record<string, string | number>} attrs @param {string} [text] */
function svgEl(name, attrs, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * Draw the graph and the list of edges.
 * @param {HTMLElement} container the view's box
 * @param {{comp: Composition, kind: CompositionKind, count: number, atlas: Atlas | null}} data
 *   atlas: the model's atlas when it has been scored (the heads' roles), else null
 * @param {{layer: number, head: number} | null} selection the later head last opened, marked
 * @param {{onPick: (layer: number, head: number) => void}} callbacks onPick: open that head
 */
export function render(container, data, selection, callbacks) {
  const { comp, kind, count, atlas } = data;
  const edges = strongestEdges(comp, kind, count);
  const L = comp.layers;
  const H = comp.heads;
  const col = 90;
  const row = 22;
  const left = 44;
  const top = 28;
  const x = (/** @type {number} */ l) => left + l * col;
  const y = (/** @type {number} */ h) => top + h * row;
  const width = left + (L - 1) * col + 40;
  const height = top + (H - 1) * row + 16;
  const svg = svgEl("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: "composition-graph",
    role: "img",
    "aria-label": `${KIND_WORDS[kind]}: the ${edges.length} strongest of ${comp.model}'s head pairs, drawn as edges between layers; the list below names them`,
  });
  svg.style.maxWidth = `${width * 1.6}px`;
  for (let l = 0; l < L; l++)
    svg.append(svgEl("text", { x: x(l), y: 12, "text-anchor": "middle", class: "composition-axis" }, `L${l + 1}`));
  for (let h = 0; h < H; h++)
    svg.append(
      svgEl("text", { x: left - 14, y: y(h) + 4, "text-anchor": "end", class: "composition-axis" }, `H${h + 1}`),
    );
  const most = edges.length ? edges[0].v : 1;
  // Weakest first: the strongest edges lie on top.
  for (const e of [...edges].reverse()) {
    const strength = most > 0 ? e.v / most : 0;
    const picked = selection !== null && selection.layer === e.lb && selection.head === e.hb;
    const [x0, y0, x1, y1] = [x(e.la), y(e.ha), x(e.lb), y(e.hb)];
    const bend = (x1 - x0) / 2;
    const path = svgEl("path", {
      d: `M ${x0} ${y0} C ${x0 + bend} ${y0}, ${x1 - bend} ${y1}, ${x1} ${y1}`,
      class: picked ? "composition-edge picked" : "composition-edge",
      "stroke-width": (1 + 4 * strength).toFixed(2),
      "stroke-opacity": (0.3 + 0.7 * strength).toFixed(2),
      "data-later": `${e.lb}.${e.hb}`,
    });
    path.append(svgEl("title", {}, `${KIND_WORDS[kind]}, ${edgeWords(e, atlas)}`));
    path.addEventListener("click", () => callbacks.onPick(e.lb, e.hb));
    svg.append(path);
  }
  for (let l = 0; l < L; l++)
    for (let h = 0; h < H; h++) {
      const role = roleOf(atlas, l, h);
      const node = svgEl("circle", { cx: x(l), cy: y(h), r: 5, fill: role ? role.color : NO_ROLE });
      node.append(svgEl("title", {}, headName(atlas, l, h)));
      svg.append(node);
      if (role)
        svg.append(
          svgEl("text", { x: x(l) + 8, y: y(h) + 4, class: "composition-role", fill: role.color }, role.short),
        );
    }
  const legend = el(
    "p",
    { className: "hint composition-legend" },
    atlas
      ? Object.values(ROLES).map((r) =>
          el("span", { textContent: `${r.short}: ${r.name} `, style: `color:${r.color}` }),
        )
      : [el("span", { textContent: "Score every head in the atlas to label the heads' roles." })],
  );
  const list = el(
    "ol",
    { className: "composition-edges" },
    edges.map((e) => {
      const picked = selection !== null && selection.layer === e.lb && selection.head === e.hb;
      const b = el("button", {
        type: "button",
        textContent: edgeWords(e, atlas),
        title: `Open layer ${e.lb + 1} head ${e.hb + 1} in the views`,
      });
      b.setAttribute("aria-pressed", picked ? "true" : "false");
      b.addEventListener("click", () => callbacks.onPick(e.lb, e.hb));
      return el("li", {}, [b]);
    }),
  );
  const summary = edges.length
    ? `Strongest ${KIND_WORDS[kind]}: ${edgeWords(edges[0], atlas)}.`
    : `${comp.model} has one layer: no head reads another.`;
  container.replaceChildren(
    el("p", { className: "plot-summary", textContent: summary }),
    el("div", { className: "composition-scroll" }, [svg]),
    legend,
    el("p", {
      className: "hint",
      textContent: `The ${edges.length} strongest ${KIND_WORDS[kind]} scores, strongest first; each opens the later head in the views:`,
      style: `color:${TEXT_DIM}`,
    }),
    list,
  );
}
