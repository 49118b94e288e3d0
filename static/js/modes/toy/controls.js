// The preset picker and the model configuration form (every ToyConfig field).

import { byId, fillOptions, selectOnEntry } from "../../core/dom.js";
import { parseNumber } from "./paste.js";
import { dims, headChoices, identity } from "../../core/state.js";
import { cellText } from "./table.js";

const $ = byId;

const MATRIX_TITLES = { q: "W_Q (query)", k: "W_K (key)", v: "W_V (value)", o: "W_O (output)" };

/**
 * createControls({getState, getLimits, onEdit, onPreset}). onEdit() after the config changed;
 * onPreset(preset) when one is picked (or Reset).
 */
export function createControls({ getState, getLimits, onEdit, onPreset }) {
  const form = /** @type {HTMLFormElement} */ ($("config"));
  const f = /** @type {any} */ (form.elements);
  const presetSelect = /** @type {HTMLSelectElement} */ ($("preset"));
  const about = $("preset-about");
  const source = $("preset-source");
  const weightsBox = $("custom-weights");
  selectOnEntry(weightsBox); // a click into a weight selects it: typing replaces it
  /** @type {any[]} */
  let presets = [];

  /** @param {any[]} list */
  function setPresets(list) {
    presets = list;
    fillOptions(
      presetSelect,
      list.map((p) => [p.id, p.name]),
    );
    for (const [i, o] of [...presetSelect.options].entries()) o.title = list[i].about;
  }

  /** The preset picked and what it is; `note`: how the table shown differs from it (state.js presetNote). @param {string | null} id @param {string} note */
  function showPreset(id, note) {
    const p = presets.find((x) => x.id === id);
    if (p) presetSelect.value = p.id;
    else presetSelect.selectedIndex = -1;
    about.textContent = p ? p.about + note : "Your own table.";
    source.textContent = p ? `Source: ${p.source}` : "";
    source.hidden = !p;
  }

  presetSelect.addEventListener("change", () => {
    const p = presets.find((x) => x.id === presetSelect.value);
    if (p) onPreset(p);
  });
  $("preset-reset").addEventListener("click", () => {
    const p = presets.find((x) => x.id === presetSelect.value) || presets[0];
    if (p) onPreset(p);
  });

  /** Put the state's config into the form (and the custom matrices when they are on). */
  function render({ weights = true } = {}) {
    const s = getState();
    const cfg = s.config;
    const limits = getLimits();
    const d = dims(s);
    fillOptions(
      f.layers,
      Array.from({ length: limits.max_layers }, (_, i) => [i + 1, String(i + 1)]),
    );
    fillOptions(
      f.heads,
      headChoices(d, limits.max_heads).map((h) => [h, `${h} (d_h = ${d / h})`]),
    );
    f.layers.value = String(cfg.layers);
    f.heads.value = String(cfg.heads);
    for (const key of ["projections", "mask", "positional", "norm"]) f[key].value = cfg[key];
    for (const key of ["scale", "residual", "ffn"]) f[key].checked = Boolean(cfg[key]);
    // A head of one dimension has no pair for RoPE to rotate: say so beside the choice.
    $("cfg-positional-note").hidden = !(cfg.positional === "rope" && d / cfg.heads === 1);
    if (document.activeElement !== f.seed) f.seed.value = String(cfg.seed);
    if (weights || weightsBox.hidden !== (cfg.projections !== "custom")) renderWeights();
  }

  function renderWeights() {
    const cfg = getState().config;
    weightsBox.hidden = cfg.projections !== "custom";
    if (weightsBox.hidden) {
      weightsBox.replaceChildren();
      return;
    }
    weightsBox.replaceChildren(
      ...["q", "k", "v", "o"].map((name) => {
        const m = cfg.weights[name];
        const box = document.createElement("div");
        box.className = "matrix";
        const h = document.createElement("h3");
        h.textContent = MATRIX_TITLES[name];
        const scroll = document.createElement("div");
        scroll.className = "table-scroll";
        const table = document.createElement("table");
        table.className = "grid-table";
        table.dataset.matrix = name;
        m.forEach((row, i) => {
          const tr = table.insertRow();
          row.forEach((v, j) => {
            const input = document.createElement("input");
            input.type = "text";
            input.inputMode = "decimal";
            input.className = typeof v === "number" ? "value" : "value invalid";
            input.value = cellText(v);
            input.dataset.i = i;
            input.dataset.j = j;
            input.setAttribute("aria-label", `${MATRIX_TITLES[name]} row ${i + 1} column ${j + 1}`);
            tr.insertCell().append(input);
          });
        });
        scroll.append(table);
        box.append(h, scroll);
        return box;
      }),
    );
  }

  weightsBox.addEventListener("input", (event) => {
    const t = /** @type {HTMLInputElement} */ (event.target);
    const name = t.closest("table")?.dataset.matrix;
    const w = /** @type {Record<string, any>} */ (getState().config.weights);
    if (!name || !w) return;
    const v = parseNumber(t.value);
    w[name][Number(t.dataset.i)][Number(t.dataset.j)] = v ?? t.value;
    t.classList.toggle("invalid", v === null);
    onEdit({ structural: false });
  });

  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("input", (event) => {
    const t = /** @type {HTMLInputElement} */ (event.target);
    const cfg = /** @type {Record<string, any>} */ (getState().config);
    const key = t.name;
    if (!key) return;
    let structural = false;
    if (key === "layers" || key === "heads") cfg[key] = Number(t.value);
    else if (key === "seed") cfg.seed = /^\s*\d+\s*$/.test(t.value) ? Number(t.value) : t.value;
    else if (t.type === "checkbox") cfg[key] = t.checked;
    else cfg[key] = t.value;
    if (key === "projections") {
      cfg.weights =
        t.value === "custom"
          ? Object.fromEntries(["q", "k", "v", "o"].map((k) => [k, identity(dims(getState()))]))
          : null;
      structural = true;
    }
    onEdit({ structural, config: key });
  });

  return { setPresets, showPreset, render };
}
