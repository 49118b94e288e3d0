// What every saved file's page shares: the hooks its mode's controller reports to (the file's
// status and error lines), and the mode's tab panel shown alone.

import { byId } from "../core/dom.js";

/**
 * The controller's hooks, and a promise settled the first time `when` is called: "traceDrawn"
 * (a trace in every view) or "viewsDrawn" (a run's views).
 * @param {"traceDrawn" | "viewsDrawn"} when
 */
export function fileHooks(when) {
  const root = document.documentElement;
  const status = byId("status");
  const error = byId("error");
  /** @type {() => void} */
  let settle = () => {};
  const drawn = new Promise((resolve) => {
    settle = () => resolve(undefined);
  });
  const hooks = {
    /** @param {string | null} message */
    setError(message) {
      error.textContent = message || "";
      error.hidden = !message;
    },
    /** @param {string} text */
    setStatus(text) {
      status.textContent = text;
    },
    /** @param {boolean} pending */
    setPending(pending) {
      root.dataset.pending = pending ? "1" : "0";
    },
    traceDrawn() {
      if (when === "traceDrawn") settle();
    },
    viewsDrawn() {
      root.dataset.views = String(+(root.dataset.views || 0) + 1);
      if (when === "viewsDrawn") settle();
    },
    changed() {},
  };
  return { hooks, drawn };
}

/**
 * The live page's tab panel `id`, alone in the file: no tab labels it (the page's tabs are not
 * here), so it is a plain container of its cards, each named by its heading; shown.
 * @param {string} id
 */
export function plainPanel(id) {
  const panel = byId(id);
  panel.removeAttribute("role");
  panel.removeAttribute("aria-labelledby");
  panel.hidden = false;
  return panel;
}
