// Train mode: train a tiny transformer on the server and watch it learn. Owns the inputs (task,
// preset or compared switch, architecture, optimiser, all from /api/train/options), starts a
// run, follows its server-sent events into one copy of the run's state, and draws the loss, the
// gradient norms and every head at the chosen checkpoint. A finished model opens in sentence
// mode. Lists the runs the server keeps, to open again, and makes the tab's link: the run open
// and the form's settings (trainlink.js).

import { cancelRun, decodeRun, fetchRun, fetchRuns, fetchTrainOptions, startRun } from "./api.js";
import { createStatus, drawViews } from "./controller.js";
import { byId, el, fillOptions } from "./dom.js";
import { TRAIN_FEEDS, viewsFed } from "./feeds.js";
import * as heatcanvas from "./heatcanvas.js";
import { fmt } from "./numbers.js";
import { defaultTrainView } from "./state.js";
import { encodeTrainLink, TRAIN_HASH } from "./trainlink.js";
import { ATTENTION, attentionAxes, headMatrix, renderDecoded, renderGrads, renderHeads, renderLoss, renderRuns,
  shownSteps, variantFigures } from "./trainviews.js";

/** @typedef {import("./types.js").TrainRun} TrainRun */
/** @typedef {import("./types.js").TrainView} TrainView */
/** @typedef {import("./types.js").TrainDecoded} TrainDecoded */
/** @typedef {import("./types.js").TrainRunSummary} TrainRunSummary */
/** @typedef {import("./trainlink.js").TrainLink} TrainLink */

const PLAY_MS = 450; // one checkpoint per this many milliseconds while playing

/**
 * @param {{setError: (m: string | null) => void, setStatus: (t: string) => void,
 *   setPending: (p: boolean) => void, viewsDrawn: () => void, changed: () => void,
 *   linked: () => void, openModel: (name: string, text: string) => void}} hooks openModel: show
 *   a trained model in sentence mode on a text; changed: a run started or ended (the header's
 *   Export JSON); linked: another run is open (the address bar's link)
 */
export function createTrain(hooks) {
  const app = {
    /** @type {any} */ options: null,
    /** @type {TrainRun | null} */ run: null,
    /** @type {TrainDecoded | null} */ decoded: null, // what an encoder-decoder last wrote when asked
    /** @type {string | null} */ refused: null, // why the model could not write what was asked
    /** @type {TrainRunSummary[] | null} */ runs: null, // the server's runs (GET /api/train)
    /** @type {TrainLink | null} */ link: null, // a link's, until the options are in to apply it
    /** @type {EventSource | null} */ source: null,
    v: defaultTrainView(),
    follow: true, // the checkpoint slider keeps to the newest until the reader moves it
    active: false,
    /** @type {ReturnType<typeof setInterval> | undefined} */ player: undefined,
    /** @type {Set<string>} */ dirty: new Set(),
    frame: 0,
  };
  const status = createStatus(hooks);
  const form = /** @type {HTMLFormElement} */ (byId("t-form"));
  const field = (/** @type {string} */ name) => /** @type {HTMLInputElement} */ (form.elements.namedItem(name));
  const select = (/** @type {string} */ id) => /** @type {HTMLSelectElement} */ (byId(id));

  // ---- Inputs -------------------------------------------------------------------------------

  const taskInfo = () => app.options.tasks.find((/** @type {any} */ t) => t.name === select("t-task").value);
  const presetInfo = () => app.options.presets.find((/** @type {any} */ p) => p.id === select("t-preset").value) || null;

  /** Fill the architecture and optimiser fields. @param {any} arch @param {any} opt */
  function fillForm(arch, opt) {
    const lim = app.options.limits;
    const range = (/** @type {number} */ a, /** @type {number} */ b) => Array.from({ length: b - a + 1 }, (_, i) => a + i);
    fillOptions(select("t-layers"), range(1, lim.max_layers).map((n) => [n, String(n)]), arch.layers);
    fillOptions(select("t-heads"), range(1, lim.max_heads).map((n) => [n, String(n)]), arch.heads);
    const widths = [8, 16, 32, 48, 64, 96, 128, 192, 256].filter((d) => d <= lim.max_d_model);
    fillOptions(select("t-d-model"), widths.map((d) => [d, String(d)]), arch.d_model);
    const names = /** @type {Record<string, string>} */ ({ none: "none", sinusoidal: "sinusoidal",
      learned: "learned", rope: "RoPE", pre: "pre-norm", post: "post-norm" });
    fillOptions(select("t-positional"), app.options.switches.positional.map((/** @type {string} */ v) => [v, names[v]]), arch.positional);
    fillOptions(select("t-norm"), app.options.switches.norm.map((/** @type {string} */ v) => [v, names[v]]), arch.norm);
    for (const k of ["scale", "residual", "ffn"]) field(k).checked = Boolean(arch[k]);
    for (const k of ["steps", "lr", "batch", "seed"]) field(k).value = String(opt[k]);
    field("steps").max = String(lim.max_steps);
    field("batch").max = String(lim.max_batch);
  }

  /** The form as {arch, opt}; an Error naming the field when one is not a number in range. */
  function readForm() {
    const num = (/** @type {string} */ k, /** @type {boolean} */ int, /** @type {number} */ lo, /** @type {number} */ hi) => {
      const v = Number(field(k).value);
      if (!Number.isFinite(v) || (int && !Number.isInteger(v)) || v < lo || v > hi) {
        throw new Error(`${k}: must be ${int ? "a whole number" : "a number"} from ${lo} to ${hi}`);
      }
      return v;
    };
    const lim = app.options.limits;
    const arch = {
      layers: Number(select("t-layers").value), heads: Number(select("t-heads").value),
      d_model: Number(select("t-d-model").value), positional: select("t-positional").value,
      norm: select("t-norm").value, scale: field("scale").checked, residual: field("residual").checked,
      ffn: field("ffn").checked,
    };
    const opt = { steps: num("steps", true, 1, lim.max_steps), lr: num("lr", false, 1e-6, 1),
      batch: num("batch", true, 1, lim.max_batch), seed: num("seed", true, 0, 2 ** 31 - 1) };
    return { arch, opt };
  }

  function renderInputs() {
    const task = taskInfo();
    byId("t-about").textContent = task.about;
    byId("t-text-box").hidden = task.name !== "charlm";
    const presets = app.options.presets.filter((/** @type {any} */ p) => p.task === task.name);
    fillOptions(select("t-preset"), [["", "none: one model"], ...presets.map((/** @type {any} */ p) => [p.id, p.title])]);
    const preset = presetInfo();
    const about = byId("t-preset-about");
    about.hidden = !preset;
    about.textContent = preset ? `${preset.question} ${preset.shows}` : "";
    byId("t-compare-row").hidden = Boolean(preset);
    for (const input of /** @type {NodeListOf<HTMLInputElement>} */ (form.querySelectorAll("input, select"))) {
      input.disabled = Boolean(preset);
    }
    if (preset) fillForm(preset.variants[0].arch, preset.opt);
  }

  // ---- The form as a link's settings, and back ---------------------------------------------

  const PICKS = ["layers", "heads", "d_model", "positional", "norm"];
  const CHECKS = ["scale", "residual", "ffn"];
  const NUMBERS = ["steps", "lr", "batch", "seed"];

  /** The form's settings, as text by the names of POST /api/train's fields (not a pasted text). */
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
   * A run's settings, as formSettings gives them.
   * @param {TrainRun} run
   * @returns {Record<string, string>}
   */
  function settingsOf(run) {
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
    fillForm(taskInfo().arch, taskInfo().opt);
    renderInputs();
    if (s.preset) {
      pick(select("t-preset"), "preset", s.preset);
      renderInputs();
      if (presetInfo()) return problems;
    }
    if (s.compare !== undefined) pick(select("t-compare"), "compare", s.compare);
    for (const k of PICKS) if (s[k] !== undefined) pick(/** @type {any} */ (field(k)), k, s[k]);
    for (const k of CHECKS) {
      if (s[k] === "1" || s[k] === "0") field(k).checked = s[k] === "1";
      else if (s[k] !== undefined) problems.push(`${k}: ${JSON.stringify(s[k])} is not 1 or 0`);
    }
    for (const k of NUMBERS) if (s[k] !== undefined) field(k).value = s[k];
    try {
      readForm();
    } catch (err) {
      problems.push(/** @type {Error} */ (err).message);
    }
    return problems;
  }

  function counted() {
    const n = /** @type {HTMLTextAreaElement} */ (byId("t-text")).value.length;
    byId("t-text-count").textContent = n ? `${n.toLocaleString("en")} / ${app.options.limits.max_text_chars.toLocaleString("en")} characters` : "";
  }

  // ---- A run --------------------------------------------------------------------------------

  async function start() {
    let body;
    try {
      const task = taskInfo().name;
      const preset = presetInfo();
      if (preset) body = { task, preset: preset.id };
      else {
        const { arch, opt } = readForm();
        const compare = select("t-compare").value || null;
        const text = /** @type {HTMLTextAreaElement} */ (byId("t-text")).value;
        body = { task, arch, opt, compare, ...(task === "charlm" && text.trim() ? { text } : {}) };
      }
    } catch (err) {
      hooks.setError(/** @type {Error} */ (err).message);
      return;
    }
    hooks.setError(null);
    stopFollowing();
    status.waiting("start", true);
    try {
      const accepted = await startRun(body);
      follow(accepted.id);
      hooks.linked();
      refreshRuns();
    } catch (err) {
      hooks.setError(`Training could not start: ${/** @type {Error} */ (err).message}`);
    } finally {
      status.waiting("start", false);
    }
  }

  /**
   * Show a run as GET /api/train/{id} (or its events' first) gives it, at its newest
   * checkpoint.
   * @param {TrainRun} run
   */
  function show(run) {
    app.run = run;
    app.decoded = null;
    app.refused = null;
    app.follow = true;
    app.v = defaultTrainView();
    app.v.attention = run.probe.source ? "cross" : "self";
    let newest = run.variants.length - 1;
    while (newest >= 0 && !run.variants[newest].checkpoints.length) newest--;
    if (newest >= 0) {
      const v = run.variants[newest];
      app.v.variant = newest;
      app.v.checkpoint = shownSteps(run).indexOf(v.checkpoints[v.checkpoints.length - 1].step);
    }
    changed(["run"]);
    showRuns();
  }

  /** Follow a run's events: its state first, then what happens. @param {string} id */
  function follow(id) {
    app.follow = true;
    app.v = defaultTrainView();
    const source = new EventSource(`/api/train/${encodeURIComponent(id)}/events`);
    app.source = source;
    const on = (/** @type {string} */ name, /** @type {(d: any) => void} */ fn) =>
      source.addEventListener(name, (e) => { if (app.source === source) fn(JSON.parse(/** @type {MessageEvent} */ (e).data)); });
    on("state", show);
    on("steps", (d) => {
      const h = /** @type {TrainRun} */ (app.run).variants[d.variant].history;
      for (const k of /** @type {const} */ (["step", "loss", "grad_norms", "seconds"])) /** @type {any[]} */ (h[k]).push(...d[k]);
      changed(["steps"]);
    });
    on("checkpoint", (d) => {
      /** @type {TrainRun} */ (app.run).variants[d.variant].checkpoints.push(d.checkpoint);
      if (app.follow) {
        app.v.checkpoint = shownSteps(/** @type {TrainRun} */ (app.run)).indexOf(d.checkpoint.step);
        if (d.variant !== app.v.variant && d.checkpoint.step === 0) app.v.variant = d.variant;
      }
      changed(["checkpoint"]);
    });
    on("variant", ({ variant, ...d }) => {
      Object.assign(/** @type {TrainRun} */ (app.run).variants[variant], d);
      changed(["variant"]);
    });
    on("claims", (d) => {
      /** @type {TrainRun} */ (app.run).claims = d.claims;
      changed(["variant"]);
    });
    on("end", (d) => {
      // Once ended, the slider runs over the checkpoints the run has (fewer when cancelled):
      // the newest when following, else the same step (or the one before it).
      const r = /** @type {TrainRun} */ (app.run);
      const step = shownSteps(r)[app.v.checkpoint];
      Object.assign(r, d);
      const steps = shownSteps(r);
      const at = steps.filter((s) => s <= step).length - 1;
      app.v.checkpoint = app.follow || at < 0 ? steps.length - 1 : at;
      source.close();
      app.source = null;
      changed(["end"]);
      refreshRuns();
    });
    source.onerror = () => {
      // The browser reconnects by itself (with Last-Event-ID) unless the server said no.
      if (source.readyState === EventSource.CLOSED && app.source === source) {
        hooks.setError("Lost the run's events: its server went away. Start it again.");
        app.source = null;
        changed(["end"]);
      }
    };
  }

  function stopFollowing() {
    app.source?.close();
    app.source = null;
  }

  /**
   * Open a run the server keeps: followed while it trains, else shown as it ended.
   * @param {string} id
   * @returns {Promise<TrainRun | Error>} the run, or why it could not be opened
   */
  async function openRun(id) {
    status.waiting("run", true);
    try {
      const run = /** @type {TrainRun} */ (await fetchRun(id));
      stopFollowing();
      if (run.state === "running") follow(run.id);
      else show(run);
      hooks.linked();
      return run;
    } catch (err) {
      return /** @type {Error} */ (err);
    } finally {
      status.waiting("run", false);
    }
  }

  /** Open a run from the list, its settings in the form. @param {string} id */
  async function openListed(id) {
    const run = await openRun(id);
    if (run instanceof Error) {
      hooks.setError(`Could not open run ${id}: ${run.message}`);
      refreshRuns();
      return;
    }
    hooks.setError(null);
    applySettings(settingsOf(run));
    hooks.linked();
  }

  /**
   * Open a link: its settings in the form, then its run; a run the server no longer has is
   * said plainly, the form keeping the link's settings.
   * @param {TrainLink} link
   */
  async function openLink(link) {
    const problems = applySettings(link.settings);
    const kept = problems.length ? ` Not all of the link's settings could be kept: ${problems.join("; ")}.` : "";
    if (!link.run) {
      if (kept) hooks.setError(kept.trim());
      return;
    }
    const err = await openRun(link.run);
    if (!(err instanceof Error)) {
      if (kept) hooks.setError(kept.trim());
      return;
    }
    const gone = /** @type {any} */ (err).status === 404;
    hooks.setError(gone
      ? `This link's run ${link.run} is no longer on this server: runs live in the server's memory, ` +
        `it keeps only the last few, and a restart forgets them. The form holds the link's settings: ` +
        `press Train to train it again.${kept}`
      : `Could not open this link's run ${link.run}: ${err.message}${kept}`);
  }

  /** Read the server's runs again, and list them. */
  async function refreshRuns() {
    try {
      app.runs = (await fetchRuns()).runs;
    } catch (err) {
      hooks.setError(`Could not list this server's runs: ${/** @type {Error} */ (err).message}`);
    }
    showRuns();
  }

  function showRuns() {
    renderRuns(byId("t-runs"), { runs: app.runs }, { open: app.run?.id ?? null }, { onOpen: openListed });
  }

  /** Ask a finished encoder-decoder variant to write its answer for the letters typed. */
  async function ask() {
    const r = app.run;
    if (!r) return;
    const text = /** @type {HTMLInputElement} */ (byId("t-try-text")).value.trim();
    const variant = Number(select("t-try-variant").value || 0);
    status.waiting("decode", true);
    try {
      app.decoded = await decodeRun(r.id, { source: text, variant });
      app.refused = null;
    } catch (err) {
      // Said beside the box, in the server's words (which name the field and the rule).
      app.refused = /** @type {Error} */ (err).message;
      app.decoded = null;
    } finally {
      status.waiting("decode", false);
    }
    changed(["decoded"]);
    showAsked();
  }

  /** What the model can be asked (the run's, from the server), and why it was not, if so. */
  function showAsked() {
    const ask = app.run?.ask;
    const a = ask?.alphabet ?? "";
    const range = [...a].every((c, i) => c.charCodeAt(0) === a.charCodeAt(0) + i);
    byId("t-try-rule").textContent = ask
      ? `${range ? `${a[0]} to ${a[a.length - 1]}` : a}, 1 to ${ask.max_len} of them ` +
        `(it trained on ${ask.min_len} to ${ask.max_len})`
      : "";
    const say = byId("t-try-say");
    say.hidden = !app.refused;
    say.textContent = app.refused ? `The model was not asked: ${app.refused}` : "";
    byId("t-try-text").setAttribute("aria-invalid", String(Boolean(app.refused)));
  }

  async function cancel() {
    if (!app.run) return;
    try {
      await cancelRun(app.run.id);
    } catch (err) {
      hooks.setError(`Could not cancel: ${/** @type {Error} */ (err).message}`);
    }
  }

  // ---- Views --------------------------------------------------------------------------------

  /** What changed -> the views to draw, at most once per animation frame. @param {string[]} what */
  function changed(what) {
    const views = what.some((w) => ["run", "end", "variant"].includes(w)) ? Object.keys(VIEWS)
      : what.includes("checkpoint") ? ["loss", "heads", "progress"]
        : what.includes("steps") ? ["loss", "grads", "progress"]
          : what.includes("decoded") ? ["decoded"] : viewsFed(TRAIN_FEEDS, what);
    for (const v of views) app.dirty.add(v);
    if (!app.frame && app.active) app.frame = requestAnimationFrame(flush);
  }

  async function flush() {
    app.frame = 0;
    const which = [...app.dirty];
    app.dirty.clear();
    if (!app.run || !which.length) return;
    await status.drawing(drawViews(VIEWS, which, hooks.setError), hooks.viewsDrawn);
  }

  const run = () => /** @type {TrainRun} */ (app.run);

  /** @type {Record<keyof TRAIN_FEEDS, () => unknown>} */
  const VIEWS = {
    progress() {
      const r = run();
      const total = r.steps * r.variants.length;
      const done = r.variants.reduce((n, v) => n + v.history.step.length, 0);
      const bar = /** @type {HTMLProgressElement} */ (byId("t-progress"));
      bar.value = total ? done / total : 0;
      const v = r.variants.find((x) => x.state === "running") || r.variants[r.variants.length - 1];
      const h = v.history;
      const n = h.step.length;
      const rate = n > 1 ? (n - 1) / Math.max(1e-6, h.seconds[n - 1] - h.seconds[0]) : 0;
      const last = v.checkpoints[v.checkpoints.length - 1];
      const who = r.variants.length > 1 ? `${v.label}: ` : "";
      // Once ended: each variant's own steps and held-out loss (an ablation's side by side).
      const each = r.variants.length > 1
        ? r.variants.map((x) => `${x.label}: ${variantFigures(x)}`).join(" · ")
        : variantFigures(r.variants[0]);
      const line = r.state === "running"
        ? `${who}step ${n} / ${r.steps} · ${fmt(rate, 0)} steps/s · batch loss ${fmt(h.loss[n - 1], 3)}` +
          (last ? ` · held-out ${fmt(last.heldout, 3)}` : "")
        : `${r.state}${r.reason && r.reason !== r.state ? `: ${r.reason}` : ""} · ${each}`;
      byId("t-rate").textContent = line;
      byId("t-run-id").textContent = r.id;
      /** @type {HTMLButtonElement} */ (byId("t-cancel")).disabled = r.state !== "running";
      status.set(r.state === "running" ? `training ${r.id}` : `run ${r.id}: ${r.state}`);
      hooks.changed();
      byId("train-mode").dataset.run = r.state;
    },
    loss: () => renderLoss(byId("t-loss"), { run: run() }, app.v),
    grads() {
      const r = run();
      fillOptions(select("t-grads-variant"), r.variants.map((v, i) => [i, v.label || "model"]), app.v.variant);
      /** @type {HTMLElement} */ (select("t-grads-variant").parentElement).hidden = r.variants.length < 2;
      return renderGrads(byId("t-grads"), { run: r }, app.v);
    },
    heads() {
      const r = run();
      const steps = shownSteps(r);
      const slider = /** @type {HTMLInputElement} */ (byId("t-checkpoint"));
      slider.max = String(Math.max(0, steps.length - 1));
      slider.value = String(app.v.checkpoint);
      slider.disabled = steps.length < 2;
      /** @type {HTMLButtonElement} */ (byId("t-play")).disabled = steps.length < 2;
      byId("t-look").textContent = r.probe.look;
      const kinds = /** @type {(keyof ATTENTION)[]} */ (r.probe.source ? ["cross", "self", "encoder"] : []);
      byId("t-attention-box").hidden = !kinds.length;
      fillOptions(select("t-attention"), kinds.map((k) => [k, ATTENTION[k].name]), app.v.attention);
      byId("t-exact-where").textContent = r.probe.source
        ? "Ask the model below for exact numbers on any string."
        : "Open the model in sentence mode for exact numbers.";
      const step = steps[app.v.checkpoint];
      renderHeads(byId("t-grids"), { run: r, step }, app.v,
        { onSelect: (variant, layer, head) => choose({ variant, layer, head }) });
      const v = r.variants[app.v.variant];
      const cp = v.checkpoints.find((c) => c.step === step);
      byId("t-checkpoint-out").textContent = step === undefined ? "no checkpoints"
        : `step ${step}` + (cp ? ` · held-out ${fmt(cp.heldout, 3)}` : "");
      slider.setAttribute("aria-valuetext", byId("t-checkpoint-out").textContent || "");
      const sample = byId("t-sample");
      sample.hidden = !cp?.sample;
      const verb = r.probe.verb || "continues";
      sample.replaceChildren(...(cp?.sample !== null && cp?.sample !== undefined
        ? [el("span", { className: "dim", textContent: `At step ${step} the model ${verb} ` }),
          el("b", { textContent: r.probe.prompt || "" }),
          ...(r.probe.source ? [el("span", { className: "dim", textContent: " as " }), el("b", { textContent: cp.sample || "(nothing)" })]
            : [el("span", { textContent: cp.sample })])]
        : []));
      if (!cp) {
        byId("t-large").replaceChildren(el("p", { className: "hint", textContent: step === undefined
          ? "No checkpoint was taken: the run ended before its first."
          : `${v.label || "The model"} has no checkpoint at step ${step}: choose another step, or a head of another model.` }));
        return;
      }
      const { layer, head, attention } = app.v;
      const what = r.probe.source ? `${ATTENTION[attention].name}, ` : "";
      heatcanvas.render(byId("t-large"), { ...attentionAxes(r.probe, attention),
        matrix: headMatrix(cp, layer, head, attention), approx: true,
        title: `${v.label ? `${v.label}, ` : ""}${what}layer ${layer + 1}, head ${head + 1} at step ${step}` });
    },
    models() {
      const r = run();
      const claims = byId("t-claims");
      claims.hidden = !r.claims;
      claims.replaceChildren(...(r.claims ? [
        el("p", { className: "hint", textContent: "The preset's claims, measured on these models (the tests check them on seeds 0 to 4):" }),
        el("ul", {}, r.claims.map((c) => el("li", { className: c.holds ? "holds" : "fails",
          textContent: `${c.holds ? "✓" : "✗"} ${c.claim}: ${fmt(c.value, 3)}` }))),
      ] : []));
      const seq2seq = Boolean(r.probe.source);
      byId("t-models").replaceChildren(...r.variants.map((v) => {
        const scores = v.alignment ?? v.induction ?? null;
        const kind = v.alignment ? "aligned cross-attention head" : "induction head";
        const best = scores ? Math.max(...scores.flat()) : null;
        const where = best === null || !scores ? "" : (() => {
          const k = scores.flat().indexOf(best);
          return ` · best ${kind} L${Math.floor(k / v.arch.heads) + 1} H${(k % v.arch.heads) + 1}: ${fmt(best, 2)}`;
        })();
        const open = el("button", { type: "button", textContent: "Open in sentence mode", disabled: !v.model });
        open.addEventListener("click", () => v.model && hooks.openModel(v.model, r.probe.text));
        const i = r.variants.indexOf(v);
        const save = el("a", { className: "button", textContent: "Download folder",
          title: "config.json, model.safetensors and tokenizer.json, zipped: attnviz serve --model FOLDER serves it",
          href: `/api/train/${encodeURIComponent(r.id)}/model.zip?variant=${i}`, download: "" });
        save.hidden = !v.model;
        // Where an encoder-decoder's buttons would be, why it has none.
        const why = el("span", { className: "hint t-model-why", textContent: "Not opened in sentence mode " +
          "nor saved as a folder: both take a model that reads one text, and an encoder-decoder reads " +
          "a source and writes its answer. Ask it above." });
        return el("div", { className: "t-model" }, [
          el("span", { className: "t-model-name", textContent: v.model || (seq2seq ? `${r.id}${v.label ? ` ${v.label}` : ""}` : v.label || "model") }),
          el("span", { className: "dim", textContent: ` ${v.label ? `${v.label} · ` : ""}${v.state} · ` +
            `${variantFigures(v)} · ${v.params.toLocaleString("en")} parameters${where}` }),
          ...(seq2seq ? [why] : [open, save]),
        ]);
      }));
      // An encoder-decoder is asked here, not in sentence mode.
      const done = r.variants.map((v, i) => /** @type {[number, string]} */ ([i, v.label || "model"]))
        .filter(([i]) => r.variants[i].state === "done" || r.variants[i].state === "cancelled");
      byId("t-try-card").hidden = !seq2seq || !done.length;
      if (seq2seq && done.length) {
        const input = /** @type {HTMLInputElement} */ (byId("t-try-text"));
        if (!input.value) input.value = r.probe.prompt || "";
        fillOptions(select("t-try-variant"), done, Math.min(app.v.variant, done.length - 1));
        byId("t-try-variant-box").hidden = r.variants.length < 2;
      }
      showAsked();
    },
    decoded: () => renderDecoded(byId("t-try-view"), { decoded: app.decoded }, app.v),
  };

  /** @param {Partial<TrainView>} change */
  function choose(change) {
    Object.assign(app.v, change);
    changed(Object.keys(change));
  }

  function play() {
    const button = byId("t-play");
    if (app.player) {
      clearInterval(app.player);
      app.player = undefined;
      button.setAttribute("aria-pressed", "false");
      button.textContent = "▶ play";
      return;
    }
    if (!app.run) return;
    app.follow = false;
    if (app.v.checkpoint >= shownSteps(app.run).length - 1) app.v.checkpoint = -1;
    button.setAttribute("aria-pressed", "true");
    button.textContent = "❚❚ pause";
    app.player = setInterval(() => {
      const last = shownSteps(run()).length - 1;
      if (app.v.checkpoint >= last) return play();
      choose({ checkpoint: app.v.checkpoint + 1 });
    }, PLAY_MS);
  }

  function wire() {
    select("t-task").addEventListener("change", () => {
      const task = taskInfo();
      fillForm(task.arch, task.opt);
      renderInputs();
    });
    select("t-preset").addEventListener("change", () => {
      renderInputs();
      if (!presetInfo()) fillForm(taskInfo().arch, taskInfo().opt);
    });
    byId("t-text").addEventListener("input", counted);
    byId("t-start").addEventListener("click", start);
    byId("t-cancel").addEventListener("click", cancel);
    byId("t-play").addEventListener("click", play);
    byId("t-checkpoint").addEventListener("input", (e) => {
      app.follow = Number(/** @type {HTMLInputElement} */ (e.target).value) >= shownSteps(run()).length - 1;
      choose({ checkpoint: Number(/** @type {HTMLInputElement} */ (e.target).value) });
    });
    select("t-grads-variant").addEventListener("change", () => choose({ variant: Number(select("t-grads-variant").value) }));
    select("t-attention").addEventListener("change", () => choose({ attention: /** @type {TrainView["attention"]} */ (select("t-attention").value) }));
    byId("t-try").addEventListener("submit", (e) => {
      e.preventDefault();
      ask();
    });
  }

  /**
   * Show the tab; a link's run and settings, when it comes from one.
   * @param {TrainLink | null} [link]
   */
  async function activate(link = null) {
    app.active = true;
    if (link) app.link = link;
    if (!app.options) {
      status.waiting("options", true);
      try {
        app.options = await fetchTrainOptions();
      } catch (err) {
        hooks.setError(`Could not load the training options: ${/** @type {Error} */ (err).message}`);
        return;
      } finally {
        status.waiting("options", false);
      }
      fillOptions(select("t-task"), app.options.tasks.map((/** @type {any} */ t) => [t.name, t.title]));
      fillOptions(select("t-compare"), [["", "nothing: one model"],
        ...Object.keys(app.options.switches).map((k) => /** @type {[string, string]} */ ([k, k]))]);
      fillForm(taskInfo().arch, taskInfo().opt);
      renderInputs();
      wire();
      if (!app.options.slots) hooks.setError("This server does not train models (ATTNVIZ_TRAIN_SLOTS=0).");
      /** @type {HTMLButtonElement} */ (byId("t-start")).disabled = !app.options.slots;
    }
    const pending = app.link;
    app.link = null;
    if (pending) await openLink(pending);
    if (app.run) changed(["run"]);
    else status.set("choose a task and train");
    refreshRuns();
  }

  return {
    activate,
    deactivate() {
      app.active = false;
    },
    hasRun: () => Boolean(app.run),
    /** The tab's link: the run open, and the form's settings. */
    link() {
      if (!app.options) return app.link ? encodeTrainLink(app.link) : TRAIN_HASH;
      return encodeTrainLink({ run: app.run?.id ?? null, settings: formSettings() });
    },
    /** The run as GET /api/train/{id} gives it (the server's copy, not the page's). */
    async exportJson() {
      if (!app.run) return null;
      return { text: JSON.stringify(await fetchRun(app.run.id), null, 1), name: `attnviz-run-${app.run.id}.json`, note: "" };
    },
  };
}
