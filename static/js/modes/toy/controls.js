// The preset picker and the model configuration form (every ToyConfig field).

import { byId, fillOptions, selectOnEntry } from "../../core/dom.js";
import { parseNumber } from "./paste.js";
import { dims, headChoices, identity } from "../../core/state.js";
import { cellText } from "./table.js";

const $ = byId;

const MATRIX_TITLES = { q: "W_Q (query)", k: "W_K (key)", v: "W_V (value)", o: "W_O (output)" };

/**
 * A weight cell's accessible name, by its axes as the table names its cells ("banana, fruit"):
 * "W_Q, grammar row, fruit column". A row of W_Q, W_K or W_V is an input axis and a column
 * the head's dimension it makes (with several heads, "(head 2)"); W_O's rows are the heads'
 * outputs joined and its columns the axes. An axis without a name is its dimension ("dimension
 * 3"), one named twice says which ("fruit (dimension 2)").
 * @param {string} name "q", "k", "v" or "o" @param {string[]} axes @param {number} heads
 * @param {number} i the row @param {number} j the column
 */
export function weightName(name, axes, heads, i, j) {
  const axis = (/** @type {number} */ c) => {
    const a = axes[c]?.trim() || `dimension ${c + 1}`;
    return axes.filter((x) => x.trim() === axes[c]?.trim()).length > 1 ? `${a} (dimension ${c + 1})` : a;
  };
  const size = Math.max(1, Math.floor(axes.length / Math.max(1, heads)));
  const head = (/** @type {number} */ c) => (heads > 1 ? ` (head ${Math.floor(c / size) + 1})` : "");
  const title = `W_${name.toUpperCase()}`;
  return name === "o"
    ? `${title}, ${axis(i)} row${head(i)}, ${axis(j)} column`
    : `${title}, ${axis(i)} row, ${axis(j)} column${head(j)}`;
}

/**
 * createControls({getState, getLimits, onEdit, onPreset}). A change of the config is made on a
 * copy and handed to onEdit({config}, how), which changes the state (the form never writes it);
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
    nameWeights();
  }

  /** The weights' accessible names again (axes renamed, heads changed). */
  function nameWeights() {
    const s = getState();
    for (const input of /** @type {NodeListOf<HTMLInputElement>} */ (weightsBox.querySelectorAll("input"))) {
      const name = /** @type {HTMLElement} */ (input.closest("table")).dataset.matrix ?? "";
      const label = weightName(name, s.axes, s.config.heads, Number(input.dataset.i), Number(input.dataset.j));
      if (input.getAttribute("aria-label") !== label) input.setAttribute("aria-label", label);
    }
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
    const config = structuredClone(getState().config); // (edited, then handed to onEdit)
    const w = /** @type {Record<string, any>} */ (config.weights);
    if (!name || !w) return;
    const v = parseNumber(t.value);
    w[name][Number(t.dataset.i)][Number(t.dataset.j)] = v ?? t.value;
    t.classList.toggle("invalid", v === null);
    onEdit({ config }, { structural: false });
  });

  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("input", (event) => {
    const t = /** @type {HTMLInputElement} */ (event.target);
    const config = /** @type {Record<string, any>} */ (structuredClone(getState().config));
    const key = t.name;
    if (!key) return;
    let structural = false;
    if (key === "layers" || key === "heads") config[key] = Number(t.value);
    else if (key === "seed") config.seed = /^\s*\d+\s*$/.test(t.value) ? Number(t.value) : t.value;
    else if (t.type === "checkbox") config[key] = t.checked;
    else config[key] = t.value;
    if (key === "projections") {
      config.weights =
        t.value === "custom"
          ? Object.fromEntries(["q", "k", "v", "o"].map((k) => [k, identity(dims(getState()))]))
          : null;
      structural = true;
    }
    onEdit({ config }, { structural, config: key });
  });

  return { setPresets, showPreset, render };
}
