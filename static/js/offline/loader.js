// The loader of a saved file (templates/standalone.html; a classic script, not a module): it
// unpacks Plotly's bundle (gzip, base64) into a classic script, turns the inline ES modules (a
// gzipped JSON object of path: source) into blob: URLs, each one's relative imports rewritten to its dependencies' URLs (dependencies
// first), then imports the config's entry (offline/page.js for a trace, offline/run.js for a
// trained run) and calls its start(config, data), data the file's data block (#attnviz-parts,
// gunzipped). Nothing is fetched but blob: URLs.
// tests/js/offline.test.mjs checks that every module's imports are of the forms rewritten here.
(function () {
  "use strict";
  /** @param {string} id */
  const text = (id) => /** @type {HTMLElement} */ (document.getElementById(id)).textContent || "";

  /** The bytes of a base64 text. @param {string} b64 */
  function bytesOf(b64) {
    const bin = atob(b64.trim());
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  /** @param {Uint8Array<ArrayBuffer>} bytes @returns {Promise<ArrayBuffer>} */
  function gunzip(bytes) {
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).arrayBuffer();
  }

  /** @param {string} source @param {string} type */
  const blobUrl = (source, type) => URL.createObjectURL(new Blob([source], { type }));

  /** Plotly as a classic script (it sets window.Plotly), unless the page has it already. */
  async function loadPlotly() {
    if (/** @type {any} */ (window).Plotly) return;
    const source = new TextDecoder().decode(await gunzip(bytesOf(text("attnviz-plotly"))));
    await new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = blobUrl(source, "text/javascript");
      script.onload = resolve;
      script.onerror = () => reject(new Error("Plotly's bundle did not load"));
      document.head.append(script);
    });
  }

  // `from "./x.js"`, `import "./x.js"` (also `export ... from`): relative specifiers only.
  const IMPORT = /(\bfrom|^\s*import)(\s*)(["'])(\.{1,2}\/[^"']+)\3/gm;

  /** `spec` seen from the module at `path` (both under static/js). @param {string} path @param {string} spec */
  function resolve(path, spec) {
    const parts = path.split("/").slice(0, -1);
    for (const piece of spec.split("/")) {
      if (piece === "..") parts.pop();
      else if (piece !== ".") parts.push(piece);
    }
    return parts.join("/");
  }

  /** Every module as a blob: URL, its imports rewritten. @param {Record<string, string>} modules */
  function link(modules) {
    /** @type {Record<string, string>} */
    const urls = {};
    /** @type {Set<string>} */
    const visiting = new Set();
    /** @param {string} path @returns {string} */
    const visit = (path) => {
      if (urls[path]) return urls[path];
      if (!(path in modules)) throw new Error(`the file lacks the module ${path}`);
      if (visiting.has(path)) throw new Error(`the modules import each other in a circle at ${path}`);
      visiting.add(path);
      const source = modules[path].replace(
        IMPORT,
        (_, kw, space, quote, spec) => `${kw}${space}${quote}${visit(resolve(path, spec))}${quote}`,
      );
      visiting.delete(path);
      urls[path] = blobUrl(`${source}\n//# sourceURL=attnviz/${path}\n`, "text/javascript");
      return urls[path];
    };
    for (const path of Object.keys(modules)) visit(path);
    return urls;
  }

  /** @param {unknown} err */
  function fail(err) {
    const line = document.getElementById("error");
    const message = err instanceof Error ? err.message : String(err);
    if (line) {
      line.textContent = `This file could not draw its views: ${message}`;
      line.hidden = false;
    }
    console.error("attnviz:", err);
  }

  async function start() {
    const config = JSON.parse(text("attnviz-config"));
    const code = new TextDecoder().decode(await gunzip(bytesOf(text("attnviz-modules"))));
    const urls = link(JSON.parse(code));
    const [, page, data] = await Promise.all([
      loadPlotly(),
      import(urls[config.entry]),
      gunzip(bytesOf(text("attnviz-parts"))),
    ]);
    await page.start(config, data);
  }

  start().catch(fail);
})();
