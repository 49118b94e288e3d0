// Plotly.js for every view, from two of plotly.js's own partial bundles (static/vendor, the
// plotly wheel's version): the cartesian one (heatmap, scatter: every 2-D plot) and the gl3d one
// (scatter3d, cone: the 3-D plots), each a classic script the page names in a <meta> tag
// (attnviz-plotly-2d, attnviz-plotly-3d) and loads the first time a plot needs it (the toy lab
// asks for the cartesian one as it opens: load2d). Running the cartesian bundle takes about
// 0.1 s of a page's CPU, which a page that draws no Plotly plot (sentence mode's first screen,
// Learn's comparison before a run) no longer spends. The cartesian bundle sets window.Plotly and
// keeps it; the gl3d one, loaded after it, is kept here only. So a view reaches Plotly through
// this module alone: draw() (core/theme.js) paints with withPlotly(), and a plot's hover, PNG
// and listeners go to the library that drew it (plotlyOf, onPlot). An offline file carries one
// 2-D bundle (its loader sets window.Plotly before the page runs) and draws no 3-D trace.

/** Trace types of the gl3d bundle: a plot with one of them is drawn by it. */
const THREE_D = new Set(["scatter3d", "cone", "surface", "mesh3d", "isosurface", "volume", "streamtube"]);

/** The page's own Plotly (the cartesian bundle, or an offline file's), once loaded. @returns {any} */
const flat = () => window.Plotly;

/** @type {Promise<any> | null} */
let cartesian = null;
/** @type {Promise<any> | null} */
let gl3d = null;
/** @type {WeakMap<HTMLElement, any>} the library that drew each plot */
const drawnBy = new WeakMap();
/** @type {WeakMap<HTMLElement, Promise<void>>} a plot's last draw still running, when it waits for a bundle */
const pending = new WeakMap();
/** @type {WeakMap<HTMLElement, [string, (ev: any) => void][]>} the listeners a plot keeps across libraries */
const listeners = new WeakMap();
/** @type {WeakMap<HTMLElement, () => void>} a 3-D plot out of view: its latest draw, run once it comes near */
const deferred = new WeakMap();
/** @type {IntersectionObserver | null} */
let watcher = null;
/** How near the view (px) a 3-D plot is drawn: a scroll's worth ahead of it. */
const NEAR = 400;
// The page's timeline (`attnviz bench --browser` reads it): the first plot drawn, and how long
// the first 3-D plot took from being asked (its bundle loaded, its scene made).
let plotted = false;
let plotted3d = false;
/** @param {number} asked @param {boolean} three */
function marked(asked, three) {
  if (!plotted) performance.mark("attnviz:first-plot");
  plotted = true;
  if (three && !plotted3d) performance.measure("attnviz:first-3d-plot", { start: asked });
  plotted3d ||= three;
}

/** Whether drawing `data` needs the 3-D bundle. @param {any[]} data */
export const needs3d = (data) => data.some((t) => THREE_D.has(t?.type));

/** Each bundle the page names (its <meta name>), and why a plot cannot be drawn without it. */
const BUNDLES = {
  "attnviz-plotly-2d": {
    name: "cartesian",
    missing: "2-D plots need Plotly's cartesian bundle, which this page does not carry",
  },
  "attnviz-plotly-3d": { name: "gl3d", missing: "3-D plots need Plotly's gl3d bundle, which this page does not carry" },
};

/**
 * Run the bundle the page's <meta name=`meta`> names, as a classic script: the Plotly it set.
 * With `keep` false, window.Plotly is put back as it was (the load event comes right after the
 * script ran, in the same task: no other code sees it changed).
 * @param {keyof typeof BUNDLES} meta @param {boolean} keep @returns {Promise<any>}
 */
function bundle(meta, keep) {
  const { name, missing } = BUNDLES[meta];
  return new Promise((resolve, reject) => {
    const tag = /** @type {HTMLMetaElement | null} */ (document.querySelector(`meta[name="${meta}"]`));
    if (!tag) {
      reject(new Error(missing));
      return;
    }
    const own = window.Plotly;
    const script = document.createElement("script");
    script.src = tag.content;
    script.onload = () => {
      const lib = window.Plotly;
      if (!keep) window.Plotly = own;
      if (lib && lib !== own) resolve(lib);
      else reject(new Error(`Plotly's ${name} bundle did not run`));
    };
    script.onerror = () => reject(new Error(`Plotly's ${name} bundle did not load`));
    document.head.append(script);
  });
}

/** The cartesian bundle, loaded once (the page's own Plotly from then on: window.Plotly). */
export function load2d() {
  if (flat()) return Promise.resolve(flat());
  if (cartesian) return cartesian;
  const loading = bundle("attnviz-plotly-2d", true);
  cartesian = loading;
  loading.catch(() => {
    if (cartesian === loading) cartesian = null; // a later plot tries again
  });
  return loading;
}

/** The gl3d bundle, loaded once, after the cartesian one (window.Plotly stays that). */
export function load3d() {
  if (gl3d) return gl3d;
  const loading = load2d().then(() => bundle("attnviz-plotly-3d", false));
  gl3d = loading;
  loading.catch(() => {
    if (gl3d === loading) gl3d = null; // a later 3-D plot tries again
  });
  return loading;
}

/** A library's hover for a plot not drawn yet (its bundle still loading): nothing to hover. */
const UNDRAWN = { Fx: { hover() {}, unhover() {} } };

/** The library that drew `el` (the page's own before any draw). @param {HTMLElement} el @returns {any} */
export const plotlyOf = (el) => drawnBy.get(el) ?? flat() ?? UNDRAWN;

/**
 * Listen to a plot's Plotly event (`plotly_click`...) for as long as the element lives, even when
 * it is drawn again by the other library (which starts with no listeners).
 * @param {HTMLElement} el @param {string} name @param {(ev: any) => void} fn
 */
export function onPlot(el, name, fn) {
  const kept = listeners.get(el) ?? [];
  kept.push([name, fn]);
  listeners.set(el, kept);
  /** @type {any} */ (el).on?.(name, fn);
}

/** Whether `el` is shown and within NEAR of the view. @param {HTMLElement} el */
function nearView(el) {
  const r = el.getBoundingClientRect();
  const shown = r.width > 0 || r.height > 0;
  return shown && r.bottom > -NEAR && r.top < window.innerHeight + NEAR;
}

/** Run `go` once `el` comes near the view (its newer draw replaces it). @param {HTMLElement} el @param {() => void} go */
function whenNear(el, go) {
  deferred.set(el, go);
  el.dataset.deferred = "3d";
  watcher ??= new IntersectionObserver(
    (entries) => {
      for (const entry of entries) {
        const target = /** @type {HTMLElement} */ (entry.target);
        const later = deferred.get(target);
        if (!entry.isIntersecting || !later) continue;
        watcher?.unobserve(target);
        deferred.delete(target);
        delete target.dataset.deferred;
        later();
      }
    },
    { rootMargin: `${NEAR}px 0px` },
  );
  watcher.observe(el);
}

/** The gl3d bundle asked ahead (while a trace is asked) for a plot at `el` that will be 3-D:
 * only when it is near the view, since out of view it waits to be drawn. @param {HTMLElement} el */
export function prefetch3d(el) {
  if (nearView(el)) load3d().catch(() => undefined);
}

/** A waiting 3-D draw of `el` dropped (a newer draw of it comes). @param {HTMLElement} el */
function undefer(el) {
  if (!deferred.delete(el)) return;
  watcher?.unobserve(el);
  delete el.dataset.deferred;
}

/**
 * Run `paint(Plotly)` for `el` with the library its traces need. A 3-D plot out of view (a
 * WebGL scene: on a machine without a GPU it takes a second or more to draw, and blocks the
 * page meanwhile) is drawn when it comes near the view: until then the promise resolves at
 * once, its element says `data-deferred="3d"`, and its text alternative is there as always. A
 * 2-D plot with nothing queued is painted at once once the cartesian bundle is there, as
 * Plotly.react always was; a plot that waits for a bundle, and any draw of it asked meanwhile,
 * run in the order asked. A plot that changes library is purged
 * by the one that drew it and keeps its listeners.
 * @template T
 * @param {HTMLElement} el @param {any[]} data @param {(Plotly: any) => Promise<T>} paint
 * @returns {Promise<T>}
 */
export function withPlotly(el, data, paint) {
  const three = needs3d(data);
  undefer(el);
  if (three && !nearView(el)) {
    whenNear(el, () => void withPlotly(el, data, paint).catch(() => undefined));
    return Promise.resolve(/** @type {T} */ (/** @type {unknown} */ (undefined)));
  }
  const before = pending.get(el);
  const asked = performance.now();
  if (!before && !three && flat() && plotlyOf(el) === flat()) {
    drawnBy.set(el, flat());
    return paint(flat()).then((out) => {
      marked(asked, false);
      return out;
    });
  }
  const run = (before ?? Promise.resolve())
    .catch(() => undefined)
    .then(async () => {
      const lib = three ? await load3d() : await load2d();
      const old = drawnBy.get(el);
      const moved = old !== undefined && old !== lib;
      if (moved) old.purge(el);
      drawnBy.set(el, lib);
      const out = await paint(lib);
      marked(asked, three);
      // A plot drawn by another library, or for the first time after its listeners were asked
      // (a 3-D plot drawn once it came into view), takes them now.
      const fresh = old === undefined;
      if (moved || fresh) for (const [name, fn] of listeners.get(el) ?? []) /** @type {any} */ (el).on(name, fn);
      return out;
    });
  const done = run.then(
    () => undefined,
    () => undefined,
  );
  pending.set(el, done);
  done.then(() => {
    if (pending.get(el) === done) pending.delete(el);
  });
  return run;
}
