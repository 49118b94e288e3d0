// Head view, after BertViz: the tokens twice, queries on the left and keys on the right, and a
// line from each query to each key per chosen head, as thick and opaque as its weight.
// Hovering a token keeps only its lines (left: what it attends to; right: what attends to it).

const SVG = "http://www.w3.org/2000/svg";
export const MIN_WEIGHT = 0.01; // lighter lines are not drawn

// 12 distinct colours, one per head (Tableau 10 and two more); more heads wrap around.
const HEAD_COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
  "#b07aa1", "#ff9da7", "#9c755f", "#7f7f7f", "#17becf", "#6b3fa0"];
export const headColor = (h) => HEAD_COLORS[h % HEAD_COLORS.length];

function svg(tag, attrs = {}) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

/** Check boxes for the heads, one colour chip each; onChange(list of chosen heads). */
export function renderHeadChips(box, heads, chosen, onChange) {
  if (box.childElementCount !== heads) {
    box.replaceChildren(...Array.from({ length: heads }, (_, h) => {
      const label = document.createElement("label");
      label.className = "chip";
      label.style.setProperty("--chip", headColor(h));
      const input = document.createElement("input");
      input.type = "checkbox";
      input.value = String(h);
      input.setAttribute("aria-label", `head ${h + 1}`);
      const text = document.createElement("span");
      text.textContent = String(h + 1);
      label.append(input, text);
      return label;
    }));
    box.onchange = () => onChange([...box.querySelectorAll("input:checked")].map((i) => Number(i.value)));
  }
  for (const input of box.querySelectorAll("input")) input.checked = chosen.includes(Number(input.value));
}

/** Rough width of a label in px at the given font size (no layout needed). */
const textWidth = (s, size) => [...s].length * size * 0.6;

/**
 * Draw into `box` (an element it fills): tv = tokenView, sel = {layer, heads: [..], query:
 * row of tv or -1}, onPick(row) when a query token is clicked.
 */
export function renderHeadView(box, trace, tv, sel, onPick) {
  const labels = tv.labels;
  const n = labels.length;
  const row = n <= 30 ? 22 : n <= 60 ? 16 : 12;
  const font = n <= 30 ? 13 : n <= 60 ? 11 : 9;
  const labelW = Math.min(170, Math.max(50, ...labels.map((s) => textWidth(s, font) + 14)));
  const width = Math.max(Math.min(box.clientWidth || 560, 2 * labelW + 480), 2 * labelW + 120);
  const top = 8;
  const height = top * 2 + n * row;
  const x1 = labelW;
  const x2 = width - labelW;
  const y = (i) => top + i * row + row / 2;

  const root = svg("svg", {
    class: "hv", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `Head view, layer ${sel.layer + 1}, heads ${sel.heads.map((h) => h + 1).join(", ") || "none"}`,
  });
  root.dataset.layer = String(sel.layer);
  root.dataset.heads = sel.heads.join(",");
  const lines = svg("g", { class: "hv-lines" });
  const groups = Array.from({ length: n }, (_, i) => svg("g", { class: "hv-q", "data-query": i }));
  for (const h of sel.heads) {
    const m = tv.attention(sel.layer, h);
    const color = headColor(h);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const w = m[i][j] ?? 0;
        if (w < MIN_WEIGHT) continue;
        groups[i].append(svg("line", {
          x1: x1 + 6, y1: y(i), x2: x2 - 6, y2: y(j), stroke: color,
          "stroke-width": (0.6 + 4 * w).toFixed(2), "stroke-opacity": (0.12 + 0.88 * w).toFixed(3),
          "data-head": h, "data-query": i, "data-key": j, "data-weight": String(w),
        }));
      }
    }
  }
  lines.append(...groups);

  const side = (name, x, anchor) => {
    const g = svg("g", { class: `hv-tokens hv-${name}` });
    labels.forEach((label, i) => {
      const t = svg("g", { class: "hv-token", "data-side": name, "data-index": i });
      const bg = svg("rect", { x: name === "left" ? 2 : x2 + 2, y: y(i) - row / 2 + 1,
        width: labelW - 4, height: row - 2, rx: 3 });
      const text = svg("text", { x, y: y(i), "text-anchor": anchor, "dominant-baseline": "central",
        "font-size": font });
      text.textContent = label;
      t.append(bg, text);
      if (name === "left") {
        t.setAttribute("tabindex", "0");
        t.setAttribute("role", "button");
        t.setAttribute("aria-label", `query ${label}`);
        if (i === sel.query) t.classList.add("chosen");
      }
      g.append(t);
    });
    return g;
  };
  root.append(lines, side("left", x1 - 8, "end"), side("right", x2 + 8, "start"));

  const clear = () => {
    root.classList.remove("focus-q", "focus-k");
    for (const e of root.querySelectorAll(".on")) e.classList.remove("on");
  };
  const focus = (t) => {
    clear();
    const i = t.dataset.index;
    t.classList.add("on");
    if (t.dataset.side === "left") {
      root.classList.add("focus-q");
      groups[i].classList.add("on");
    } else {
      root.classList.add("focus-k");
      for (const line of lines.querySelectorAll(`line[data-key="${i}"]`)) line.classList.add("on");
    }
  };
  root.addEventListener("mouseover", (e) => {
    const t = e.target.closest(".hv-token");
    if (t) focus(t);
  });
  root.addEventListener("mouseleave", clear);
  root.addEventListener("focusin", (e) => {
    const t = e.target.closest(".hv-token");
    if (t) focus(t);
  });
  root.addEventListener("focusout", clear);
  const pick = (e) => {
    const t = e.target.closest(".hv-left .hv-token");
    if (t && onPick) onPick(Number(t.dataset.index));
  };
  root.addEventListener("click", pick);
  root.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      pick(e);
    }
  });
  box.replaceChildren(root);
}

/** The drawn head view as an SVG file's text. */
export function headViewSvg(box) {
  const node = box.querySelector("svg.hv");
  if (!node) return null;
  const copy = node.cloneNode(true);
  copy.setAttribute("xmlns", SVG);
  const style = svg("style");
  style.textContent = "text{font-family:system-ui,sans-serif;fill:#1d2330} rect{fill:none}";
  copy.prepend(style);
  return new XMLSerializer().serializeToString(copy);
}
