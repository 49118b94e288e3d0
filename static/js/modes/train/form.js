// The Train tab's form: the task, a preset or a compared switch, the architecture and the
// optimiser, all offered as the server's training options say (fetchTrainOptions); the body
// of a new run read from it (an Error naming the field that is out of range); and the form as
// a link's settings (link.js), both ways.

import { byId, fillOptions } from "../../core/dom.js";
import { readableCount } from "../../core/numbers.js";

/** @typedef {import("../../core/types.js").TrainRun} TrainRun */
/** @typedef {import("../../core/types.js").TrainOptions} TrainOptions */
/** @typedef {import("../../core/types.js").TrainArch} TrainArch */
/** @typedef {import("../../core/types.js").TrainOpt} TrainOpt */

const PICKS = ["layers", "heads", "d_model", "positional", "norm"];
const CHECKS = ["scale", "residual", "ffn"];
const NUMBERS = ["steps", "lr", "batch", "seed"];

/**
 * A run's settings, as formSettings gives them.
 * @param {TrainRun} run
 * @returns {Record<string, string>}
 */
export function settingsOf(run) {
  if (run.preset) return { task: run.task, preset: run.preset };
  const arch = run.variants[0].arch;
  /** @type {Record<string, string>} */
  const out = { task: run.task };
  if (run.compare) out.compare = run.compare;
  for (const k of PICKS) out[k] = String(arch[k]);
  for (const k of CHECKS) out[k] = arch[k] ? "1" : "0";
  for (const k of NUMBERS) out[k] = String(/** @type {Record<string, number>} */ (run.opt)[k]);
  return out;
}

/** A field of the form by its name. @param {string} name */
const field = (name) =>
  /** @type {HTMLInputElement} */ (/** @type {HTMLFormElement} */ (byId("t-form")).elements.namedItem(name));
/** A select of the form by its id. @param {string} id */
const select = (id) => /** @type {HTMLSelectElement} */ (byId(id));

/** Fill the architecture and optimiser fields. @param {TrainOptions} options
 * @param {TrainArch} arch @param {TrainOpt} opt */
function fillForm(options, arch, opt) {
  const lim = options.limits;
  const range = (/** @type {number} */ a, /** @type {number} */ b) =>
    Array.from({ length: b - a + 1 }, (_, i) => a + i);
  fillOptions(
    select("t-layers"),
    range(1, lim.max_layers).map((n) => [n, String(n)]),
    arch.layers,
  );
  fillOptions(
    select("t-heads"),
    range(1, lim.max_heads).map((n) => [n, String(n)]),
    arch.heads,
  );
  const widths = [8, 16, 32, 48, 64, 96, 128, 192, 256].filter((d) => d <= lim.max_d_model);
  fillOptions(
    select("t-d-model"),
    widths.map((d) => [d, String(d)]),
    arch.d_model,
  );
  const names = /** @type {Record<string, string>} */ ({
    none: "none",
    sinusoidal: "sinusoidal",
    learned: "learned",
    rope: "RoPE",
    pre: "pre-norm",
    post: "post-norm",
  });
  fillOptions(
    select("t-positional"),
    options.switches.positional.map((/** @type {string} */ v) => [v, names[v]]),
    arch.positional,
  );
  fillOptions(
    select("t-norm"),
    options.switches.norm.map((/** @type {string} */ v) => [v, names[v]]),
    arch.norm,
  );
  for (const k of ["scale", "residual", "ffn"]) field(k).checked = Boolean(arch[k]);
  for (const k of ["steps", "lr", "batch", "seed"]) field(k).value = String(opt[k]);
  // A server capped below these steps trains them at its cap (capped() says so).
  field("steps").value = String(Math.min(opt.steps, lim.max_steps));
  field("steps").max = String(lim.max_steps);
  field("batch").max = String(lim.max_batch);
}

/** The form as {arch, opt}; an Error naming the field when one is not a number in range.
 * @param {TrainOptions} options */
function readForm(options) {
  const num = (
    /** @type {string} */ k,
    /** @type {boolean} */ int,
    /** @type {number} */ lo,
    /** @type {number} */ hi,
  ) => {
    const v = Number(field(k).value);
    if (!Number.isFinite(v) || (int && !Number.isInteger(v)) || v < lo || v > hi) {
      throw new Error(`${k}: must be ${int ? "a whole number" : "a number"} from ${lo} to ${hi}`);
    }
    return v;
  };
  const lim = options.limits;
  const arch = {
    layers: Number(select("t-layers").value),
    heads: Number(select("t-heads").value),
    d_model: Number(select("t-d-model").value),
    positional: select("t-positional").value,
    norm: select("t-norm").value,
    scale: field("scale").checked,
    residual: field("residual").checked,
    ffn: field("ffn").checked,
  };
  const opt = {
    steps: num("steps", true, 1, lim.max_steps),
    lr: num("lr", false, 1e-6, 1),
    batch: num("batch", true, 1, lim.max_batch),
    seed: num("seed", true, 0, 2 ** 31 - 1),
  };
  return { arch, opt };
}

/**
 * Where this server's cap on steps (the options' limits.max_steps) is below what the preset
 * trains, or the task's usual steps: the run is shorter, in words; else "".
 * @param {TrainOptions} options @param {TrainOpt} wanted @param {boolean} preset
 */
export function capped(options, wanted, preset) {
  const most = options.limits.max_steps;
  if (wanted.steps <= most) return "";
  const cap = `This server trains at most ${readableCount(most)} steps a run: the run is shorter`;
  const want = readableCount(wanted.steps);
  return preset
    ? `${cap} than this preset's ${want} steps, and its claims may not hold.`
    : `${cap} than this task's usual ${want} steps, and may not learn what a full run does.`;
}

/** The form's settings, as text by the names of the fields of a new run's body (not a pasted text). */
function formSettings() {
  const task = select("t-task").value;
  const preset = select("t-preset").value;
  if (preset) return { task, preset };
  /** @type {Record<string, string>} */
  const out = { task };
  if (select("t-compare").value) out.compare = select("t-compare").value;
  for (const k of PICKS) out[k] = field(k).value;
  for (const k of CHECKS) out[k] = field(k).checked ? "1" : "0";
  for (const k of NUMBERS) out[k] = field(k).value;
  return out;
}

/**
 * Fill the form from the server's training options and wire it.
 * @param {TrainOptions} options the training options (tasks, presets, switches, limits, slots)
 */
export function createForm(options) {
  const form = /** @type {HTMLFormElement} */ (byId("t-form"));
  /** The task chosen (the select offers only the options' tasks). */
  const taskInfo = () =>
    /** @type {import("../../core/types.js").TrainTaskInfo} */ (
      options.tasks.find((t) => t.name === select("t-task").value)
    );
  const presetInfo = () => options.presets.find((p) => p.id === select("t-preset").value) || null;

  function renderInputs() {
    const task = taskInfo();
    byId("t-about").textContent = task.about;
    byId("t-text-box").hidden = task.name !== "charlm";
    const presets = options.presets.filter((p) => p.task === task.name);
    fillOptions(select("t-preset"), [
      ["", "none: one model"],
      ...presets.map((p) => /** @type {[string, string]} */ ([p.id, p.title])),
    ]);
    const preset = presetInfo();
    const about = byId("t-preset-about");
    about.hidden = !preset;
    about.textContent = preset ? `${preset.question} ${preset.shows}` : "";
    byId("t-compare-row").hidden = Boolean(preset);
    for (const input of /** @type {NodeListOf<HTMLInputElement>} */ (form.querySelectorAll("input, select"))) {
      input.disabled = Boolean(preset);
    }
    if (preset) fillForm(options, preset.variants[0].arch, preset.opt);
    const note = byId("t-capped");
    note.textContent = capped(options, preset ? preset.opt : task.opt, Boolean(preset));
    note.hidden = !note.textContent;
  }

  /**
   * Put settings into the form: the task's defaults, then each setting given. What is not
   * offered is left at the default and said, naming the field.
   * @param {Record<string, string>} s
   * @returns {string[]} the problems
   */
  function applySettings(s) {
    const problems = [];
    /** @param {HTMLSelectElement} box @param {string} k @param {string} v */
    const pick = (box, k, v) => {
      const values = [...box.options].map((o) => o.value);
      if (values.includes(v)) box.value = v;
      else problems.push(`${k}: ${JSON.stringify(v)} is not one of ${values.filter(Boolean).join(", ")}`);
    };
    if (s.task !== undefined) pick(select("t-task"), "task", s.task);
    select("t-preset").value = "";
    fillForm(options, taskInfo().arch, taskInfo().opt);
    renderInputs();
    if (s.preset) {
      pick(select("t-preset"), "preset", s.preset);
      renderInputs();
      if (presetInfo()) return problems;
    }
    if (s.compare !== undefined) pick(select("t-compare"), "compare", s.compare);
    for (const k of PICKS)
      if (s[k] !== undefined) pick(/** @type {HTMLSelectElement} */ (/** @type {unknown} */ (field(k))), k, s[k]);
    for (const k of CHECKS) {
      if (s[k] === "1" || s[k] === "0") field(k).checked = s[k] === "1";
      else if (s[k] !== undefined) problems.push(`${k}: ${JSON.stringify(s[k])} is not 1 or 0`);
    }
    for (const k of NUMBERS) if (s[k] !== undefined) field(k).value = s[k];
    try {
      readForm(options);
    } catch (err) {
      problems.push(/** @type {Error} */ (err).message);
    }
    return problems;
  }

  function counted() {
    const n = /** @type {HTMLTextAreaElement} */ (byId("t-text")).value.length;
    byId("t-text-count").textContent = n
      ? `${n.toLocaleString("en")} / ${options.limits.max_text_chars.toLocaleString("en")} characters`
      : "";
  }

  /** The body of a new run (POST train), as the form says; an Error naming a field out of range. */
  function body() {
    const task = taskInfo().name;
    const preset = presetInfo();
    // A preset over this server's cap trains shorter, at the cap (the note says so).
    const most = options.limits.max_steps;
    if (preset) return { task, preset: preset.id, ...(preset.opt.steps > most ? { steps: most } : {}) };
    const { arch, opt } = readForm(options);
    const compare = select("t-compare").value || null;
    const text = /** @type {HTMLTextAreaElement} */ (byId("t-text")).value;
    return { task, arch, opt, compare, ...(task === "charlm" && text.trim() ? { text } : {}) };
  }

  fillOptions(
    select("t-task"),
    options.tasks.map((t) => /** @type {[string, string]} */ ([t.name, t.title])),
  );
  fillOptions(select("t-compare"), [
    ["", "nothing: one model"],
    ...Object.keys(options.switches).map((k) => /** @type {[string, string]} */ ([k, k])),
  ]);
  fillForm(options, taskInfo().arch, taskInfo().opt);
  renderInputs();
  select("t-task").addEventListener("change", () => {
    const task = taskInfo();
    fillForm(options, task.arch, task.opt);
    renderInputs();
  });
  select("t-preset").addEventListener("change", () => {
    renderInputs();
    if (!presetInfo()) fillForm(options, taskInfo().arch, taskInfo().opt);
  });
  byId("t-text").addEventListener("input", counted);

  /**
   * Start training greyed while the run in view trains or waits for a slot (a second press
   * would start another run beside it), the reason said beside it; offered again once it ends.
   * @param {TrainRun | null} run
   */
  function trains(run) {
    const busy = run?.state === "running" || run?.state === "queued";
    /** @type {HTMLButtonElement} */ (byId("t-start")).disabled = busy || !options.slots;
    const why = byId("t-start-why");
    why.textContent = busy
      ? `Start training is off while this run ${run?.state === "queued" ? "waits for a slot" : "trains"}: ` +
        "it comes back when the run ends or is cancelled."
      : "";
    why.hidden = !busy;
  }

  return { body, settings: formSettings, apply: applySettings, trains };
}
