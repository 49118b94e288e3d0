// The table of each token's vector before (layer 0) and after the chosen layer.

import { exact, fmt } from "./theme.js";

const SHOWN = 3; // values written out per vector; the cell's title has all of them

function vectorCell(values) {
  const td = document.createElement("td");
  const shown = values.slice(0, SHOWN).map((v) => fmt(v, 2));
  if (values.length > SHOWN) shown.push("…");
  td.textContent = `[${shown.join(", ")}]`;
  td.title = `[${values.map(exact).join(", ")}]`;
  return td;
}

function cell(tag, text, className) {
  const c = document.createElement(tag);
  c.textContent = text;
  if (className) c.className = className;
  return c;
}

/** Rows: token | hidden_states[0][i] | hidden_states[layer][i], from the API response. */
export function renderBeforeAfter(table, trace, view) {
  const l = Math.min(view.vlayer, trace.layers);
  const head = document.createElement("thead");
  const hr = head.insertRow();
  hr.append(cell("th", "token"), cell("th", "before (layer 0)"), cell("th", `after layer ${l}`));
  const body = document.createElement("tbody");
  trace.tokens.forEach((token, i) => {
    const tr = body.insertRow();
    tr.dataset.token = String(i);
    tr.append(cell("td", token, "token"), vectorCell(trace.hidden_states[0][i]),
      vectorCell(trace.hidden_states[l][i]));
  });
  table.replaceChildren(head, body);
}
