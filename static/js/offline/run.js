// A saved run's page (templates/standalone.html with modes/train.html; offline/loader.js imports
// it): Train mode's own controller and views, given the run's state (the file's data block, as
// fetchRun gives it) instead of fetching and following it. What takes
// the live server is not here: the form and the Train and Cancel buttons, the header's exports, the server's
// runs, and asking, opening or downloading a model (the views say so where it would be).

import { byId } from "../core/dom.js";
import { installGlossary } from "../core/glossary.js";
import { fileHooks, plainPanel } from "./file.js";
import { createTrain } from "../modes/train/index.js";

/** @typedef {import("../core/types.js").TrainRun} TrainRun */
/** @typedef {{entry: string, saved?: string, glossary?: import("../core/glossary.js").Term[]}} RunConfig */

/** The parts of Train mode that start, cancel, list or export runs: hidden in the file. */
const LIVE_ONLY = ["t-start", "t-cancel", "t-runs", "t-try-card"];

/**
 * Draw the saved run.
 * @param {RunConfig} config @param {ArrayBuffer} data the run's state, JSON (gunzipped)
 */
export async function start(config, data) {
  const root = document.documentElement;
  /** @type {TrainRun} */
  const run = JSON.parse(new TextDecoder().decode(data));
  installGlossary(config.glossary); // the terms the markup and the views mark open offline too
  const panel = plainPanel("train-mode");
  const form = panel.querySelector("aside.panel");
  if (form) /** @type {HTMLElement} */ (form).hidden = true;
  panel.classList.add("t-saved");
  for (const id of LIVE_ONLY) byId(id).hidden = true;
  // The card's help as it applies here (the live page's says how to train).
  const help = byId("t-run-card").querySelector(".howto p");
  if (help)
    help.textContent =
      "A saved run: the bar shows the steps it took and the line under it " +
      "each model's figures. Training, cancelling and asking a model take the live page.";
  const { hooks, drawn } = fileHooks("viewsDrawn");
  const train = createTrain(
    {
      ...hooks,
      linked() {},
      openModel() {},
    },
    { run },
  );
  await train.activate();
  const steps = run.variants.reduce((n, v) => n + v.history.step.length, 0);
  const checkpoints = run.variants.reduce((n, v) => n + v.checkpoints.length, 0);
  byId("offline-note").textContent =
    `A saved run (${run.id}${config.saved ? `, saved ${config.saved}` : ""}): ` +
    `its ${steps.toLocaleString("en")} steps and ${checkpoints} checkpoints are in this file. Move the ` +
    "slider or press play to scrub the checkpoints; pick a head to see it large.";
  await drawn;
  root.dataset.run = "1"; // every view is drawn (the tests wait for it)
}
