// The start of a notebook display whose code the notebook carries once (attnviz/python/notebook.py;
// a classic script, not a module, in the display's <iframe srcdoc>). The first display of a
// kernel session puts the page's code (CSS, the loader, the ES modules, Plotly, the glossary) in
// its notebook's window as window.attnvizShared, each piece under a key of its content; every
// display names the keys it needs (#attnviz-shared) and waits here until its notebook has them
// (a saved notebook reopened, or exported to HTML, defines them in its first display's output),
// then puts them in its own document and runs the loader as a saved file's does.
(function () {
  "use strict";
  const root = document.documentElement;
  /** @param {string} id */
  const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  /** @type {Record<string, string>} role -> key: css, loader, glossary, modules, plotly */
  const keys = JSON.parse(byId("attnviz-shared").textContent || "{}");

  /** The notebook's pieces, when all of this display's are there. @returns {Record<string, string> | null} */
  function pieces() {
    let shared;
    try {
      shared = /** @type {any} */ (window.parent).attnvizShared;
    } catch {
      return null; // a notebook that keeps each output apart (another origin)
    }
    return shared && Object.values(keys).every((k) => typeof shared[k] === "string") ? shared : null;
  }

  /** @param {string} id @param {string} text */
  function block(id, text) {
    const script = document.createElement("script");
    script.type = "application/octet-stream";
    script.id = id;
    script.textContent = text;
    document.body.append(script);
  }

  /** @param {Record<string, string>} shared */
  function start(shared) {
    byId("attnviz-css").textContent = shared[keys.css];
    const config = byId("attnviz-config");
    const glossary = JSON.parse(shared[keys.glossary]);
    config.textContent = JSON.stringify({ ...JSON.parse(config.textContent || "{}"), glossary });
    block("attnviz-modules", shared[keys.modules]);
    block("attnviz-plotly", shared[keys.plotly]);
    delete root.dataset.waiting;
    const loader = document.createElement("script");
    loader.textContent = shared[keys.loader];
    document.body.append(loader);
  }

  const now = pieces();
  if (now) {
    start(now);
    return;
  }
  // Not yet: the display that carries the code is drawn later, or not at all (its output was
  // cleared): say what it waits for, and go on waiting.
  const parent = /** @type {Window} */ (window.parent);
  const waiting = setTimeout(() => {
    byId("status").textContent =
      "Waiting for attnviz's code, which the first attnviz view of this notebook carries; " +
      "if that cell's output was cleared, run the cell again.";
  }, 3000);
  const check = () => {
    const ready = pieces();
    if (!ready) return;
    clearTimeout(waiting);
    parent.removeEventListener("attnviz-shared", check);
    byId("status").textContent = "loading…";
    start(ready);
  };
  try {
    parent.addEventListener("attnviz-shared", check);
  } catch {
    byId("status").textContent =
      "This notebook keeps each output apart, so this view cannot reach the code the first one carries.";
  }
})();
