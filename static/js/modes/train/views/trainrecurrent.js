// The Train tab's "Why not an RNN?" card: the comparison's form (task, seed, Run), its progress,
// and once measured its two plots: each model's accuracy against the distance it must remember,
// and its time per training step against the sequence's length (log-log); then the claims as
// measured and what the comparison showed, in words. Each plot takes focus (the arrow keys move
// over its points, a live region reading each one) and has a summary and its numbers in a table
// (exact, as the API sent them: numbersTable).
// render(card, data, sel, callbacks): the card's parts are marked by data-role.

import { fillOptions } from "../../../core/dom.js";
import { inLine } from "../../../core/trainrun.js";
import { exact, readableCount, readablePercent, readableProse } from "../../../core/numbers.js";
import { claimList } from "../claims.js";
import { plotlyOf } from "../../../core/plotly.js";
import { baseLayout, draw, headColor, plotText } from "../../../core/theme.js";
import { describe, keyCursor } from "../../../views/access.js";

/** @typedef {import("../../../core/types.js").RecurrentRun} RecurrentRun */
/** @typedef {import("../../../core/types.js").RecurrentModel} RecurrentModel */
/** @typedef {import("../../../core/types.js").RecurrentOptions} RecurrentOptions */

/** How a model is named for a person. */
const NAMES = { transformer: "transformer", lstm: "LSTM", gru: "GRU" };
/** @param {RecurrentModel} m */
const nameOf = (m) => NAMES[m.name] ?? m.name;
/** @param {number} x a share, 0 to 1: "100%" only when it is all of it (readablePercent) */
const pct = (x) => readablePercent(x);
/** A time in milliseconds, to 3 significant digits (readableProse: "12.3 ms", never "0.0 ms"). @param {number} s seconds */
export const ms = (s) => `${readableProse(1000 * s)} ms`;

/**
 * @param {HTMLElement} card
 * @param {{options: RecurrentOptions, run: RecurrentRun | null, starting: boolean}} data run:
 *   the comparison shown (null before the first); starting: a start is on its way
 * @param {{task: string, seed: number}} sel what the form says
 * @param {{onSelect: (change: {task?: string, seed?: number}) => void,
 *   onStart: () => void, onCancel: () => void}} callbacks
 */
export function render(card, data, sel, callbacks) {
  const part = (/** @type {string} */ role) => /** @type {HTMLElement} */ (card.querySelector(`[data-role=${role}]`));
  const { options, run } = data;
  const task = /** @type {HTMLSelectElement} */ (part("task"));
  fillOptions(
    task,
    options.tasks.map((t) => [t.name, t.title]),
    sel.task,
  );
  task.onchange = () => callbacks.onSelect({ task: task.value });
  const seed = /** @type {HTMLInputElement} */ (part("seed"));
  seed.max = String(options.max_seed);
  if (document.activeElement !== seed) seed.value = String(sel.seed);
  seed.onchange = () => callbacks.onSelect({ seed: Number(seed.value) });
  const running = run?.state === "running";
  const queued = run?.state === "queued";
  const start = /** @type {HTMLButtonElement} */ (part("start"));
  start.disabled = data.starting || running || queued || !options.slots;
  start.onclick = () => callbacks.onStart();
  // Its owner may stop it while it waits in line or runs (what it measured so far stays).
  const cancel = /** @type {HTMLButtonElement} */ (part("cancel"));
  cancel.hidden = !(running || queued) || !run?.can_cancel;
  cancel.onclick = () => callbacks.onCancel();
  const info = options.tasks.find((t) => t.name === sel.task);
  part("about").textContent = info ? `${info.about} Each model trains ${info.steps} steps on the same batches.` : "";
  // The comparison is named by what it is (its task and seed, in the line under the bar); its
  // id, never shown, is the card's data (what tests read).
  card.dataset.run = run ? run.id : "";
  card.dataset.state = run ? run.state : ""; // "queued", "running", "done"...: what tests wait for

  const progress = /** @type {HTMLProgressElement} */ (part("progress"));
  progress.value = run ? run.progress : 0;
  part("doing").textContent = !run
    ? options.slots
      ? "Not run yet: press Run comparison."
      : "This server does not train."
    : queued
      ? `${run.task}, seed ${run.seed}: waiting for a slot, ${inLine(run.place, run.wait_s)}. ` +
        "It starts by itself when the comparisons ahead end."
      : running
        ? `${run.task}, seed ${run.seed}: ${run.doing} (${pct(run.progress)})`
        : `${run.task}, seed ${run.seed}: ${run.state}${run.reason && run.reason !== run.state ? `: ${run.reason}` : ""} · ` +
          run.models
            .map(
              (m) =>
                `${nameOf(m)} ${readableCount(m.params)} parameters` +
                (m.train_seconds !== null ? `, trained in ${readableProse(m.train_seconds)} s` : ""),
            )
            .join(" · ");

  const claims = part("claims");
  claims.hidden = !run?.claims;
  claims.replaceChildren(
    ...(run?.claims
      ? claimList("What it showed, as claims measured on this run (each found to hold on seeds 0 to 4):", run?.claims)
      : []),
  );
  const shows = part("shows");
  shows.hidden = !run?.shows;
  shows.textContent = run?.shows ?? "";

  const plots = part("plots");
  const measured = Boolean(run && run.models.some((m) => m.accuracy.length));
  plots.hidden = !measured;
  if (!run || !measured) return Promise.resolve();
  return Promise.all([accuracyPlot(part("accuracy"), run), timePlot(part("time"), run)]);
}

/**
 * Accuracy against the distance: a line per model trained so far.
 * @param {HTMLElement} plot @param {RecurrentRun} run
 */
function accuracyPlot(plot, run) {
  const models = run.models.filter((m) => m.accuracy.length);
  const traces = models.map((m) => ({
    type: "scatter",
    mode: "lines+markers",
    uid: `acc-${m.name}`,
    name: plotText(nameOf(m)),
    x: run.distances,
    y: m.accuracy,
    line: { color: headColor(run.models.indexOf(m)), width: 2 },
    marker: { size: 7 },
    // Three short lines: at a phone's width the label of a point mid-plot fits on either side.
    hovertemplate: `${plotText(nameOf(m))}<br>%{x} ${plotText(run.distance)}<br>%{y:.0%} right<extra></extra>`,
  }));
  const first = run.distances[0];
  const last = run.distances[run.distances.length - 1];
  readable(plot, models, {
    what: "Accuracy against the distance to remember",
    summary:
      `Share predicted right at ${first} and at ${last} ${run.distance}: ` +
      models.map((m) => `${nameOf(m)} ${pct(m.accuracy[0])} and ${pct(m.accuracy[m.accuracy.length - 1])}`).join("; ") +
      ".",
    caption: `Share predicted right (0 to 1), by ${run.distance}`,
    corner: run.distance,
    xs: run.distances,
    ys: (m) => m.accuracy,
    point: (m, x, y) => `${nameOf(m)}, ${x} ${run.distance}: ${pct(y)} right`,
  });
  return draw(
    plot,
    traces,
    baseLayout({
      margin: { l: 56, r: 12, t: 30, b: 44 },
      legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
      showlegend: true,
      xaxis: { title: { text: run.distance }, tickvals: run.distances, zeroline: false },
      yaxis: { title: { text: "share right" }, range: [0, 1.05], tickformat: ".0%" },
    }),
    "attnviz-recurrent-accuracy",
  );
}

/**
 * Time per training step against the length, log-log: a line per model timed so far.
 * @param {HTMLElement} plot @param {RecurrentRun} run
 */
function timePlot(plot, run) {
  const models = run.models.filter((m) => m.step_seconds.length);
  const traces = models.map((m) => ({
    type: "scatter",
    mode: "lines+markers",
    uid: `time-${m.name}`,
    name: plotText(nameOf(m)),
    x: run.lengths.slice(0, m.step_seconds.length),
    y: m.step_seconds.map((s) => 1000 * s),
    line: { color: headColor(run.models.indexOf(m)), width: 2 },
    marker: { size: 7 },
    customdata: m.step_seconds.map(ms), // the hover says each time as the card's text does
    hovertemplate: `${plotText(nameOf(m))}<br>%{x} tokens: %{customdata} a step<extra></extra>`,
  }));
  const first = run.lengths[0];
  const whole = models.filter((m) => m.step_seconds.length === run.lengths.length);
  readable(plot, models, {
    what: "Time per training step against the sequence length",
    summary: !models.length
      ? "Not timed yet: the steps are timed once every model has trained."
      : whole.length === run.models.length
        ? `A training step at ${first} and at ${run.lengths[run.lengths.length - 1]} tokens: ` +
          whole
            .map(
              (m) => `${nameOf(m)} ${ms(m.step_seconds[0])} and ` + `${ms(m.step_seconds[m.step_seconds.length - 1])}`,
            )
            .join("; ") +
          " (one CPU thread)."
        : "A training step so far (one CPU thread): " +
          models
            .map((m) => {
              const n = m.step_seconds.length;
              return (
                `${nameOf(m)} ${ms(m.step_seconds[0])} at ${first}` +
                (n > 1 ? ` to ${ms(m.step_seconds[n - 1])} at ${run.lengths[n - 1]} tokens` : " tokens")
              );
            })
            .join("; ") +
          ".",
    caption: "Seconds per training step, by sequence length (tokens)",
    corner: "tokens",
    xs: run.lengths,
    ys: (m) => m.step_seconds,
    point: (m, x, y) => `${nameOf(m)}, ${x} tokens: ${ms(y)} a step`,
  });
  return draw(
    plot,
    traces,
    baseLayout({
      margin: { l: 56, r: 12, t: 30, b: 44 },
      legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
      showlegend: true,
      // Log axes: their ranges are powers of ten, set here so that an empty plot (nothing timed
      // yet) spans the lengths too.
      xaxis: {
        title: { text: "sequence length (tokens)" },
        type: "log",
        tickvals: run.lengths,
        zeroline: false,
        range: [Math.log10(first / 1.25), Math.log10(run.lengths[run.lengths.length - 1] * 1.25)],
      },
      yaxis: {
        title: { text: "ms per training step" },
        type: "log",
        ...(models.length ? logTicks(models.flatMap((m) => m.step_seconds)) : { range: [0, 3] }),
      },
    }),
    "attnviz-recurrent-time",
  );
}

/**
 * Ticks for a log axis of milliseconds: 1, 2, 5, 10, 20, 50... over the seconds given.
 * @param {number[]} seconds
 */
function logTicks(seconds) {
  if (!seconds.length) return {};
  const lo = (1000 * Math.min(...seconds)) / 1.5;
  const hi = 1000 * Math.max(...seconds) * 1.5;
  /** @type {number[]} */
  const ticks = [];
  for (let p = Math.floor(Math.log10(lo)); p <= Math.ceil(Math.log10(hi)); p++) {
    for (const m of [1, 2, 5]) {
      const t = m * 10 ** p;
      if (t >= lo && t <= hi) ticks.push(t);
    }
  }
  return {
    tickvals: ticks,
    ticktext: ticks.map((t) => (t < 1 ? String(Number(t.toPrecision(1))) : t.toLocaleString("en-US"))),
  };
}

/**
 * A plot's numbers table (behind "Show the numbers"): a row per x, a column per model, each
 * value exactly as the API sent it (exact(): an accuracy as its share, a time in seconds, never
 * rounded; the summary and the live region say them as a person reads them), "–" where a model
 * has not measured it yet; null without a model.
 * @param {RecurrentModel[]} models the lines drawn, in order
 * @param {{caption: string, corner: string, xs: number[], ys: (m: RecurrentModel) => number[]}} spec
 * @returns {import("../../../views/access.js").NumbersTable | null}
 */
export function numbersTable(models, spec) {
  if (!models.length) return null;
  return {
    caption: spec.caption,
    head: [spec.corner, ...models.map(nameOf)],
    rows: spec.xs.map((x, j) => [
      String(x),
      ...models.map((m) => {
        const y = spec.ys(m)[j];
        return y === undefined ? "–" : exact(y);
      }),
    ]),
  };
}

/**
 * A plot's text alternative (its summary, and its numbers in a table: numbersTable) and keyboard
 * cursor (up and down between the models, left and right along a line).
 * @param {HTMLElement} plot @param {RecurrentModel[]} models the lines drawn, in order
 * @param {{what: string, summary: string, caption: string, corner: string, xs: number[],
 *   ys: (m: RecurrentModel) => number[],
 *   point: (m: RecurrentModel, x: number, y: number) => string}} spec
 */
function readable(plot, models, spec) {
  const text = describe(plot, { summary: spec.summary, table: numbersTable(models, spec) });
  keyCursor(plot, text.live, {
    rows: models.length,
    cols: spec.xs.length,
    describedBy: text.summary.id,
    label:
      `${spec.what}, line plot of ${models.length} models. Left and right arrows move along a ` +
      "line, up and down between the models.",
    text: (i, j) => {
      const ys = spec.ys(models[i]);
      const k = Math.min(j, ys.length - 1);
      return k < 0 ? `${nameOf(models[i])}: not measured yet` : spec.point(models[i], spec.xs[k], ys[k]);
    },
    show: (i, j) => {
      const n = spec.ys(models[i]).length;
      if (n) plotlyOf(plot).Fx.hover(plot, [{ curveNumber: i, pointNumber: Math.min(j, n - 1) }]);
    },
    hide: () => plotlyOf(plot).Fx.unhover(plot),
  });
}
