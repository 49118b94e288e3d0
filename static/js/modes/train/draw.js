// The Train tab's views (views/, its own) drawn from the run open: what changed -> the views to
// draw, at most once per animation frame; the views' choices (variant, head, checkpoint) and
// playing the checkpoints.

import { runName } from "../../core/runname.js";
import { modelFolderUrl } from "../../core/api.js";
import { drawViews } from "../../core/controller.js";
import { byId } from "../../core/dom.js";
import { TRAIN_FEEDS, viewsFed } from "../../core/feeds.js";
import { shownSteps } from "../../core/trainrun.js";
import { reduce } from "./reducer.js";
import * as trainask from "./views/trainask.js";
import * as traindecoded from "./views/traindecoded.js";
import * as traingrads from "./views/traingrads.js";
import * as trainheads from "./views/trainheads.js";
import * as trainloss from "./views/trainloss.js";
import * as trainmodels from "./views/trainmodels.js";
import * as trainprogress from "./views/trainprogress.js";
import { createWhy, whyModel } from "./why.js";

/** @typedef {import("./app.js").TrainBase} TrainBase */
/** @typedef {import("../../core/types.js").TrainRun} TrainRun */
/** @typedef {import("../../core/types.js").TrainView} TrainView */

const PLAY_MS = 450; // one checkpoint per this many milliseconds while playing

/**
 * The views' draws, and what redraws them.
 * @param {TrainBase} base
 * @returns {{changed: (what: string[]) => void, choose: (change: Partial<TrainView>) => void,
 *   play: () => void}} changed: what changed (the views it feeds are drawn); choose: a view's
 *   choice; play: play the checkpoints (or pause)
 */
export function createDrawing({ app, hooks, status, live }) {
  const run = () => /** @type {TrainRun} */ (app.t.run);
  const why = createWhy({ onPickKey: (key) => choose({ key }) });

  /** What changed -> the views to draw, at most once per animation frame. @param {string[]} what */
  function changed(what) {
    const views = what.some((w) => ["run", "end", "variant"].includes(w))
      ? Object.keys(VIEWS)
      : what.includes("checkpoint")
        ? ["loss", "heads", "why", "progress"]
        : what.includes("steps")
          ? ["loss", "grads", "progress"]
          : what.includes("decoded")
            ? ["decoded"]
            : what.includes("target") // a cell a Learn task points at: the large heatmap's mark
              ? ["heads"]
              : viewsFed(TRAIN_FEEDS, what);
    for (const v of views) app.dirty.add(v);
    if (!app.frame && app.active) app.frame = requestAnimationFrame(flush);
  }

  async function flush() {
    app.frame = 0;
    const which = [...app.dirty];
    app.dirty.clear();
    if (!app.t.run || !which.length) return;
    await status.drawing(drawViews(VIEWS, which, hooks.setError), hooks.viewsDrawn);
  }

  /** @type {Record<keyof TRAIN_FEEDS, () => unknown>} */
  const VIEWS = {
    progress() {
      const r = run();
      trainprogress.render(byId("t-run-card"), { run: r, live });
      // The header names the run only while its card is shown (a Learn step may set it aside).
      if (inView("t-run-card"))
        status.set(
          r.state === "running"
            ? `training ${runName(r.title, r.created, r.named)}`
            : r.state === "queued"
              ? `${runName(r.title, r.created, r.named)}: waiting for a training slot`
              : `${runName(r.title, r.created, r.named)}: ${r.state}`,
        );
      hooks.changed();
      byId("train-mode").dataset.run = r.state;
      app.form?.trains(r);
    },
    loss: () => trainloss.render(byId("t-loss"), { run: run() }, app.t.view),
    grads: () => traingrads.render(byId("t-grads-card"), { run: run() }, app.t.view, { onSelect: choose }),
    heads: () =>
      trainheads.render(
        byId("t-heads-card"),
        { run: run(), live, why: whyModel(run(), app.t.view, live).model !== null, target: app.target },
        app.t.view,
        {
          onSelect: choose,
          onCheckpoint(index) {
            app.t = reduce(app.t, { type: "follow", data: index >= shownSteps(run()).length - 1 });
            choose({ checkpoint: index });
          },
          onPickCell: (query, key) => choose({ query, key }),
        },
      ),
    why: () => why.draw(run(), app.t.view, live),
    models() {
      const r = run();
      trainmodels.render(
        byId("t-models-card"),
        { run: r, folder: live ? (i) => modelFolderUrl(r.id, i) : null },
        {},
        { onOpen: hooks.openModel },
      );
      // An encoder-decoder is asked in its own card, not in sentence mode (on the live page).
      if (live) trainask.render(byId("t-try-card"), { run: r, refused: app.refused }, app.t.view);
    },
    decoded: () => traindecoded.render(byId("t-try-view"), { decoded: app.decoded }, app.t.view),
  };

  /** @param {Partial<TrainView>} change */
  function choose(change) {
    app.t = reduce(app.t, { type: "choose", data: change });
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
    if (!app.t.run) return;
    app.t = reduce(app.t, { type: "follow", data: false });
    if (app.t.view.checkpoint >= shownSteps(run()).length - 1)
      app.t = reduce(app.t, { type: "choose", data: { checkpoint: -1 } });
    button.setAttribute("aria-pressed", "true");
    button.textContent = "❚❚ pause";
    app.player = setInterval(() => {
      const last = shownSteps(run()).length - 1;
      if (app.t.view.checkpoint >= last) return play();
      choose({ checkpoint: app.t.view.checkpoint + 1 });
    }, PLAY_MS);
  }

  return { changed, choose, play };
}

/**
 * Whether a card of the tab is shown: not hidden, nor set aside by a Learn step that shows
 * only some of the lab's cards (true where the browser cannot tell).
 * @param {string} id
 */
export function inView(id) {
  const card = byId(id);
  return !card.hidden && (typeof card.checkVisibility !== "function" || card.checkVisibility());
}
