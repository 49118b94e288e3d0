// attnviz: static/js/main.js and every module it imports, in one file made by esbuild (make bundle); sources 45bd25ba38c34ae4
var __defProp = Object.defineProperty;
var __export = (target, all) => {
  for (var name in all)
    __defProp(target, name, { get: all[name], enumerable: true });
};

// static/js/core/compact.js
var COMPACT_MEDIA_TYPE = "application/vnd.attnviz.trace+safetensors";
var TYPES = (
  /** @type {const} */
  { F64: Float64Array, F32: Float32Array, I32: Int32Array, U8: Uint8Array }
);
function decodeCompact(buffer) {
  if (buffer.byteLength < 8) throw new Error("the response is too short to be a trace");
  const view = new DataView(buffer);
  const length = view.getUint32(0, true) + view.getUint32(4, true) * 2 ** 32;
  if (length > buffer.byteLength - 8) throw new Error("the trace's header runs past its end");
  const header2 = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, length)));
  const meta = JSON.parse(header2.__metadata__?.attnviz ?? "{}");
  const base = 8 + length;
  const arrays = {};
  for (const [name, info] of Object.entries(header2)) {
    if (name === "__metadata__") continue;
    const Type = TYPES[
      /** @type {keyof typeof TYPES} */
      info.dtype
    ];
    if (!Type) throw new Error(`${name}: unsupported dtype ${info.dtype}`);
    const [begin, end] = info.data_offsets;
    const count = (end - begin) / Type.BYTES_PER_ELEMENT;
    if (count !== info.shape.reduce((a, b) => a * b, 1) || base + end > buffer.byteLength) {
      throw new Error(`${name}: its bytes do not match its shape ${JSON.stringify(info.shape)}`);
    }
    const at = base + begin;
    const data = at % Type.BYTES_PER_ELEMENT === 0 ? new Type(buffer, at, count) : new Type(buffer.slice(at, base + end));
    arrays[name] = { dtype: info.dtype, shape: info.shape, data };
  }
  return { meta, arrays };
}
function sub(arr, ...index) {
  let offset = 0;
  let size = arr.data.length;
  index.forEach((i, d) => {
    if (!(i >= 0 && i < arr.shape[d])) throw new RangeError(`index ${i} out of range for axis ${d}`);
    size /= arr.shape[d];
    offset += i * size;
  });
  return { dtype: arr.dtype, shape: arr.shape.slice(index.length), data: arr.data.subarray(offset, offset + size) };
}
function nested(arr) {
  const { shape, data } = arr;
  if (shape.length === 0) return (
    /** @type {any} */
    data[0]
  );
  if (shape.length === 1) return Array.from(data);
  return Array.from({ length: shape[0] }, (_, i) => nested(sub(arr, i)));
}

// static/js/core/api.js
var ApiError = class extends Error {
  /** @param {string} message @param {number} status */
  constructor(message, status) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
};
function errorMessage(status, body) {
  if (body && typeof body.message === "string" && body.message) return body.message;
  if (body && Array.isArray(body.detail) && body.detail.length) {
    return body.detail.map((d) => {
      const loc = (d.loc || []).filter((p) => p !== "body" && p !== "query").join(".");
      return loc ? `${loc}: ${d.msg}` : String(d.msg);
    }).join("; ");
  }
  if (body && typeof body.detail === "string") return body.detail;
  return `The server answered ${status}.`;
}
async function failure(response) {
  const text = await response.text();
  let body;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return new ApiError(errorMessage(response.status, body), response.status);
}
var BUSY_TRIES = 30;
var busy = Object.assign(new EventTarget(), { retryAt: 0 });
var retrying = /* @__PURE__ */ new Map();
function setRetry(who, at) {
  if (at) retrying.set(who, at);
  else retrying.delete(who);
  const next = retrying.size ? Math.max(...retrying.values()) : 0;
  if (next !== busy.retryAt) {
    busy.retryAt = next;
    busy.dispatchEvent(new Event("change"));
  }
}
function retryAfterSeconds(response) {
  const s = Number(response.headers.get("Retry-After"));
  return Number.isFinite(s) && s >= 1 ? s : 1;
}
function sleep(ms2, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms2);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(new DOMException("The request was aborted.", "AbortError"));
      },
      { once: true }
    );
  });
}
async function fetchPatiently(url, init2) {
  const who = {};
  try {
    for (let tries = 1; ; tries++) {
      const response = await fetch(url, init2);
      if (response.status !== 503 || tries >= BUSY_TRIES) return response;
      const ms2 = 1e3 * retryAfterSeconds(response) * (1 + Math.random() / 5);
      setRetry(who, Date.now() + ms2);
      await sleep(ms2, init2.signal);
    }
  } finally {
    setRetry(who, 0);
  }
}
async function onceMoreIfCut(read, signal) {
  try {
    return await read();
  } catch (err) {
    if (!(err instanceof TypeError) || signal?.aborted) throw err;
    await sleep(300, signal);
    return read();
  }
}
function getJson(path2) {
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently(path2, { headers: { Accept: "application/json" } });
    if (!response.ok) throw await failure(response);
    return response.json();
  });
}
var fetchPresets = () => getJson("/api/presets");
var runs = /* @__PURE__ */ new Map();
async function fetchModels(open = null) {
  const query2 = open ? `?${new URLSearchParams({ open })}` : "";
  const list = (
    /** @type {import("./types.js").ModelList} */
    await getJson(`/api/models${query2}`)
  );
  runs.clear();
  for (const m of list.models) if (m.run) runs.set(m.name, m.run);
  return list;
}
function fetchAtlas(model) {
  const run = runs.get(model);
  const headers = { Accept: "application/json" };
  if (run) headers["X-Attnviz-Run"] = run;
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently(`/api/models/${encodeURIComponent(model)}/atlas`, { headers });
    if (!response.ok) throw await failure(response);
    return response.json();
  });
}
function fetchCorpus(model, body, signal) {
  return postPatiently(`/api/models/${encodeURIComponent(model)}/corpus`, body, runs.get(model), signal);
}
function postPatiently(url, body, run, signal) {
  const headers = { "Content-Type": "application/json", Accept: "application/json" };
  if (run) headers["X-Attnviz-Run"] = run;
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently(url, { method: "POST", headers, body: JSON.stringify(body), signal });
    if (!response.ok) throw await failure(response);
    return response.json();
  }, signal);
}
function traceHeaders(body, accept) {
  const headers = { "Content-Type": "application/json", Accept: accept };
  const run = body && typeof body.model === "string" ? runs.get(body.model) : void 0;
  if (run) headers["X-Attnviz-Run"] = run;
  return headers;
}
var JOB_POLL_MS = 500;
function cancelTraceJob(url) {
  return fetch(url, { method: "DELETE" }).catch(() => null);
}
async function followJob(job, signal, onJob) {
  const stop = () => cancelTraceJob(job.url);
  signal?.addEventListener("abort", stop, { once: true });
  try {
    for (; ; ) {
      onJob?.(job);
      if (job.state === "done") return await fetch(job.result, { signal });
      if (job.state === "cancelled" || job.state === "failed")
        throw new ApiError(job.message || `The trace was ${job.state}.`, job.status || 409);
      await sleep(JOB_POLL_MS, signal);
      const response = await fetch(job.url, { headers: { Accept: "application/json" }, signal });
      if (!response.ok) throw await failure(response);
      job = await response.json();
    }
  } finally {
    signal?.removeEventListener("abort", stop);
  }
}
var fetchLearn = () => getJson("/api/learn");
function checkLearn(id, body, signal) {
  const { run, recurrent } = (
    /** @type {{run?: string | null, recurrent?: string | null}} */
    body
  );
  return postPatiently(`/api/learn/${encodeURIComponent(id)}/check`, body, run ?? recurrent ?? null, signal);
}
var fetchTrainOptions = () => getJson("/api/train/options");
var fetchRuns = () => getJson("/api/train");
var fetchRun = (id) => getJson(`/api/train/${encodeURIComponent(id)}`);
function startRun(body) {
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently("/api/train", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body)
    });
    if (!response.ok) throw await failure(response);
    return response.json();
  });
}
async function decodeRun(id, body) {
  const response = await fetch(`/api/train/${encodeURIComponent(id)}/decode`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(body)
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}
var runEvents = (id) => new EventSource(`/api/train/${encodeURIComponent(id)}/events`);
var modelFolderUrl = (id, variant) => `/api/train/${encodeURIComponent(id)}/model.zip?variant=${variant}`;
var runHtmlUrl = (id) => `/api/train/${encodeURIComponent(id)}/export`;
async function exportRunHtml(id) {
  const response = await fetch(runHtmlUrl(id));
  if (!response.ok) throw await failure(response);
  const name = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "")?.[1] ?? `attnviz-run-${id}.html`;
  return { blob: await response.blob(), name };
}
function exportHtml(body) {
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently("/api/export", {
      method: "POST",
      headers: { ...traceHeaders(body.trace, "text/html"), "Content-Type": "application/json" },
      body: JSON.stringify(body)
    });
    if (!response.ok) throw await failure(response);
    const name = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "")?.[1] ?? "attnviz.html";
    return { blob: await response.blob(), name };
  });
}
var fetchRecurrentOptions = () => getJson("/api/recurrent/options");
function startRecurrent(body) {
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently("/api/recurrent", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body)
    });
    if (!response.ok) throw await failure(response);
    return response.json();
  });
}
var fetchRecurrent = (id) => getJson(`/api/recurrent/${encodeURIComponent(id)}`);
async function cancelRun(id) {
  const response = await fetch(`/api/train/${encodeURIComponent(id)}`, { method: "DELETE" });
  if (!response.ok) throw await failure(response);
  return response.json();
}
function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== void 0) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}
function fetchTrace(body, params = {}, signal, onJob) {
  return onceMoreIfCut(async () => {
    let response = await fetchPatiently(`/api/trace${query(params)}`, {
      method: "POST",
      headers: { ...traceHeaders(body, COMPACT_MEDIA_TYPE), Prefer: "respond-async" },
      body: JSON.stringify(body),
      signal
    });
    if (response.status === 202) response = await followJob(await response.json(), signal, onJob);
    if (!response.ok) throw await failure(response);
    return decodeCompact(await response.arrayBuffer());
  }, signal);
}
function fetchTraceJson(body, params = {}) {
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently(`/api/trace${query(params)}`, {
      method: "POST",
      headers: traceHeaders(body, "application/json"),
      body: JSON.stringify(body)
    });
    if (!response.ok) throw await failure(response);
    return response.text();
  });
}
var TraceParts = class {
  /** @param {object} body the trace request @param {number} [keep] parts remembered */
  constructor(body, keep = 48) {
    this.body = body;
    this.keep = keep;
    this.parts = /* @__PURE__ */ new Map();
  }
  /**
   * Remember a part already at hand (the first response holds the first head).
   * @param {Params} params @param {Compact} part
   */
  seed(params, part4) {
    this.parts.set(query(params), Promise.resolve(part4));
  }
  /**
   * @param {Params} params
   * @returns {Promise<Compact>}
   */
  get(params) {
    const key = query(params);
    let part4 = this.parts.get(key);
    if (part4) {
      this.parts.delete(key);
    } else {
      part4 = fetchTrace(this.body, params);
      part4.catch(() => this.parts.delete(key));
    }
    this.parts.set(key, part4);
    while (this.parts.size > this.keep) this.parts.delete(
      /** @type {string} */
      this.parts.keys().next().value
    );
    return part4;
  }
};
var TraceClient = class {
  /**
   * @param {{delay?: number, onPending: (p: boolean) => void,
   *   onResult: (c: Compact, r: {body: object, params: Params}) => void,
   *   onError: (message: string, status?: number) => void,
   *   onJob?: (job: TraceJob | null) => void}} options onError: the message, and
   *   the server's status code when it answered (404: no model of that name); onJob: the
   *   state of the job computing a long trace, each time it is read, then null once it ends
   */
  constructor({ delay = 150, onPending, onResult, onError, onJob = () => {
  } }) {
    this.delay = delay;
    this.onPending = onPending;
    this.onResult = onResult;
    this.onError = onError;
    this.onJob = onJob;
    this.following = false;
    this.timer = void 0;
    this.controller = null;
    this.seq = 0;
  }
  /**
   * Ask for `params` of the trace of `body` after the debounce delay (0 = now).
   * @param {object} body
   * @param {Params} params
   * @param {number} [delay]
   */
  request(body, params, delay = this.delay) {
    this.cancel();
    const seq = ++this.seq;
    this.onPending(true);
    this.timer = setTimeout(() => this.send({ body, params }, seq), delay);
  }
  /** Forget any scheduled or running request (a job it follows is cancelled). */
  cancel() {
    clearTimeout(this.timer);
    this.timer = void 0;
    if (this.controller) this.controller.abort();
    this.controller = null;
    if (this.following) {
      this.following = false;
      this.onJob(null);
    }
  }
  /** Drop pending work and report that nothing is pending (e.g. the input is invalid). */
  idle() {
    this.cancel();
    this.seq++;
    this.onPending(false);
  }
  /** @param {{body: object, params: Params}} request @param {number} seq */
  async send(request, seq) {
    const controller = new AbortController();
    this.controller = controller;
    const told = (job) => {
      if (seq !== this.seq) return;
      this.following = true;
      this.onJob(job);
    };
    try {
      const result = await fetchTrace(request.body, request.params, controller.signal, told);
      if (seq !== this.seq) return;
      this.controller = null;
      if (this.following) {
        this.following = false;
        this.onJob(null);
      }
      this.onResult(result, request);
    } catch (err) {
      const e = (
        /** @type {Error} */
        err
      );
      if (seq !== this.seq || e.name === "AbortError") return;
      this.controller = null;
      if (this.following) {
        this.following = false;
        this.onJob(null);
      }
      if (e instanceof ApiError) this.onError(e.message, e.status);
      else this.onError(`Could not reach the server (${e.message}).`);
    } finally {
      if (seq === this.seq) this.onPending(false);
    }
  }
};

// static/js/core/tokens.js
var MARKS = {
  " ": ["␣", "space"],
  "\n": ["⏎", "newline"],
  "	": ["⇥", "tab"],
  "\r": ["␍", "carriage return"]
};
var CONTROL = /\p{Cc}/u;
var INVISIBLE = /[\p{Zs}\p{Cf}\p{Zl}\p{Zp}\u034f\ufe00-\ufe0f\u115f\u1160\u3164]/u;
function chars(s) {
  const all = [...s];
  const lead = all.findIndex((ch) => ch !== " ");
  const from = lead < 0 ? all.length : lead;
  let to = all.length;
  while (to > from && all[to - 1] === " ") to--;
  return all.map((ch, i) => [ch, ch !== " " || i < from || i >= to]);
}
function mark(ch, how) {
  const m = MARKS[ch];
  if (m) return how === "shown" ? m[0] : m[1];
  const code = (
    /** @type {number} */
    ch.codePointAt(0)
  );
  const hex2 = code.toString(16).toUpperCase().padStart(2, "0");
  if (CONTROL.test(ch)) return how === "shown" ? `<0x${hex2}>` : `byte 0x${hex2}`;
  if (INVISIBLE.test(ch)) {
    return how === "shown" ? `<U+${hex2.padStart(4, "0")}>` : `character U+${hex2.padStart(4, "0")}`;
  }
  return null;
}
function shownToken(label) {
  const s = String(label);
  if (s === "") return "∅";
  let out = "";
  for (const [ch, marked2] of chars(s)) out += marked2 && mark(ch, "shown") || ch;
  return out;
}
function spokenToken(label) {
  const s = String(label);
  if (s === "") return "empty token";
  const words = [];
  let text = "";
  let run = null;
  let count = 0;
  const flush = () => {
    if (run !== null) words.push(count > 1 ? `${count} ${run}s` : run);
    run = null;
    count = 0;
  };
  for (const [ch, marked2] of chars(s)) {
    const name = marked2 ? mark(ch, "spoken") : null;
    if (name === null) {
      flush();
      text += ch;
      continue;
    }
    if (text) {
      words.push(text);
      text = "";
    }
    if (name === run && Object.values(MARKS).some((m) => m[1] === name)) count++;
    else {
      flush();
      run = name;
      count = 1;
    }
  }
  flush();
  if (text) words.push(text);
  return words.join(" ").replace(/<0x([0-9A-F]{2})>/g, "byte 0x$1");
}
function quotedToken(label) {
  const s = String(label);
  const blank = [...s].every((ch) => mark(ch, "shown") !== null) || /^(<0x[0-9A-F]{2}>)+$/.test(s);
  return `“${shownToken(s)}”${blank ? ` (${spokenToken(s)})` : ""}`;
}

// static/js/core/dom.js
function byId(id) {
  const found = document.getElementById(id);
  if (!found) throw new Error(`attnviz: the page has no #${id}`);
  return found;
}
function el(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === void 0 || v === null) continue;
    if (k === "dataset") Object.assign(node.dataset, v);
    else if (k in node) node[k] = v;
    else node.setAttribute(k, String(v));
  }
  node.append(...children);
  return node;
}
function fillOptions(select2, items, value = null) {
  const same2 = select2.options.length === items.length && items.every(([v, text], i) => select2.options[i].value === String(v) && select2.options[i].textContent === text);
  const current = select2.value;
  if (!same2) select2.replaceChildren(...items.map(([v, text]) => new Option(text, String(v))));
  const want = value === null ? current : String(value);
  if (items.some(([v]) => String(v) === want)) select2.value = want;
}
function fillIndexSelect(select2, count, label, value, tokens = null) {
  const items = (
    /** @type {[number, string][]} */
    Array.from({ length: count }, (_, i) => [i, tokens ? `${i + 1}. ${shownToken(tokens[i])}` : `${label} ${i + 1}`])
  );
  fillOptions(select2, items, value);
}
function download(data, filename, type = "application/json") {
  const isUrl = typeof data === "string" && data.startsWith("data:");
  const url = isUrl ? (
    /** @type {string} */
    data
  ) : URL.createObjectURL(data instanceof Blob ? data : new Blob([data], { type }));
  const a = el("a", { href: url, download: filename });
  document.body.append(a);
  a.click();
  a.remove();
  if (!isUrl) setTimeout(() => URL.revokeObjectURL(url), 1e4);
}
function sizeCanvas(canvas, ctx, width, height) {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, width, height);
}

// static/js/core/plotly.js
var THREE_D = /* @__PURE__ */ new Set(["scatter3d", "cone", "surface", "mesh3d", "isosurface", "volume", "streamtube"]);
var flat = () => window.Plotly;
var gl3d = null;
var drawnBy = /* @__PURE__ */ new WeakMap();
var pending = /* @__PURE__ */ new WeakMap();
var listeners = /* @__PURE__ */ new WeakMap();
var plotted = false;
var plotted3d = false;
function marked(asked2, three) {
  if (!plotted) performance.mark("attnviz:first-plot");
  plotted = true;
  if (three && !plotted3d) performance.measure("attnviz:first-3d-plot", { start: asked2 });
  plotted3d ||= three;
}
var hasPlotly = () => Boolean(flat());
var needs3d = (data) => data.some((t) => THREE_D.has(t?.type));
function load3d() {
  if (gl3d) return gl3d;
  gl3d = new Promise((resolve, reject) => {
    const meta = (
      /** @type {HTMLMetaElement | null} */
      document.querySelector('meta[name="attnviz-plotly-3d"]')
    );
    if (!meta) {
      reject(new Error("3-D plots need Plotly's gl3d bundle, which this page does not carry"));
      return;
    }
    const own = window.Plotly;
    const script = document.createElement("script");
    script.src = meta.content;
    script.onload = () => {
      const lib = window.Plotly;
      window.Plotly = own;
      if (lib && lib !== own) resolve(lib);
      else reject(new Error("Plotly's 3-D bundle did not run"));
    };
    script.onerror = () => reject(new Error("Plotly's 3-D bundle did not load"));
    document.head.append(script);
  });
  gl3d.catch(() => {
    gl3d = null;
  });
  return gl3d;
}
var plotlyOf = (el2) => drawnBy.get(el2) ?? flat();
function onPlot(el2, name, fn) {
  const kept = listeners.get(el2) ?? [];
  kept.push([name, fn]);
  listeners.set(el2, kept);
  el2.on?.(name, fn);
}
function withPlotly(el2, data, paint2) {
  const three = needs3d(data);
  const before = pending.get(el2);
  const asked2 = performance.now();
  if (!before && !three && plotlyOf(el2) === flat()) {
    drawnBy.set(el2, flat());
    return paint2(flat()).then((out) => {
      marked(asked2, false);
      return out;
    });
  }
  const run = (before ?? Promise.resolve()).catch(() => void 0).then(async () => {
    const lib = three ? await load3d() : flat();
    const old = drawnBy.get(el2);
    const moved = old !== void 0 && old !== lib;
    if (moved) old.purge(el2);
    drawnBy.set(el2, lib);
    const out = await paint2(lib);
    marked(asked2, three);
    if (moved) for (const [name, fn] of listeners.get(el2) ?? []) el2.on(name, fn);
    return out;
  });
  const done = run.then(
    () => void 0,
    () => void 0
  );
  pending.set(el2, done);
  done.then(() => {
    if (pending.get(el2) === done) pending.delete(el2);
  });
  return run;
}

// static/js/core/export.js
function downloadPng(plotEl, filename) {
  if (!plotEl || !plotEl.data) return Promise.resolve(false);
  const { width, height } = plotEl.getBoundingClientRect();
  return plotlyOf(plotEl).downloadImage(plotEl, {
    format: "png",
    filename,
    width: Math.round(width),
    height: Math.round(height),
    scale: 2
  }).then(() => true);
}
async function copyText(url) {
  try {
    await navigator.clipboard.writeText(url);
    return true;
  } catch {
    const area = document.createElement("textarea");
    area.value = url;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.append(area);
    area.select();
    let ok;
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    area.remove();
    return ok;
  }
}

// static/js/core/state.js
var MATRICES = ["q", "k", "v", "o"];
var clone = (x) => JSON.parse(JSON.stringify(x));
var clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));
var isInt = (v) => Number.isInteger(v);
var dims = (state) => (state.embeddings[0] || []).length;
function identity(d) {
  return Array.from({ length: d }, (_, i) => Array.from({ length: d }, (_2, j) => i === j ? 1 : 0));
}
function headChoices(d, maxHeads) {
  const out = [];
  for (let h = 1; h <= Math.min(d, maxHeads); h++) if (d % h === 0) out.push(h);
  return out;
}
function headsNote(before, state, limits) {
  const now = state.config.heads;
  if (before === now) return null;
  const why = !isInt(before) || before < 1 ? `${String(before)} is not a head count` : before > limits.max_heads ? `${before} is over the cap of ${limits.max_heads}` : `${before} does not divide d = ${dims(state)}`;
  return `heads: ${why}, now ${now}`;
}
function resizeSquare(m, d) {
  return Array.from(
    { length: d },
    (_, i) => Array.from({ length: d }, (_2, j) => m && m[i] && j < m[i].length ? m[i][j] : i === j ? 1 : 0)
  );
}
function defaultView(n, layers) {
  return {
    layer: 0,
    head: 0,
    vlayer: layers,
    a: Math.min(1, n - 1),
    b: n - 1,
    trails: true,
    measure: (
      /** @type {import("./types.js").Measure} */
      "weights"
    )
  };
}
function fromPreset(preset, defaults) {
  const config = { ...defaults, ...clone(preset.config) };
  const n = preset.tokens.length;
  return {
    preset: preset.id,
    tokens: [...preset.tokens],
    axes: [...preset.axes],
    embeddings: clone(preset.embeddings),
    config,
    view: defaultView(n, config.layers)
  };
}
function matchesPreset(state, preset, limits, defaults) {
  if (!preset) return false;
  const fresh = normalize(fromPreset(preset, defaults), limits);
  return JSON.stringify(toRequest(state, defaults)) === JSON.stringify(toRequest(fresh, defaults));
}
function presetNote(state, preset, limits, defaults, touched) {
  if (!preset || matchesPreset(state, preset, limits, defaults)) return "";
  if (touched) return " (You have edited it.)";
  const mine = toRequest(state, defaults);
  const theirs = toRequest(normalize(fromPreset(preset, defaults), limits), defaults);
  const same2 = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  if (!same2([mine.tokens, mine.axes, mine.embeddings], [theirs.tokens, theirs.axes, theirs.embeddings]))
    return " (The table shown differs from it.)";
  const changes = Object.keys(mine.config).filter((key) => key !== "weights" && !same2(mine.config[key], theirs.config[key])).map((key) => {
    const v = mine.config[key];
    return typeof v === "boolean" ? `${key} ${v ? "on" : "off"}` : `${key} ${v}`;
  });
  if (!same2(mine.config.weights, theirs.config.weights)) changes.push("its own W_Q, W_K, W_V and W_O");
  return ` Here it starts with ${changes.join(", ")}.`;
}
function normalize(state, limits, previousLayers) {
  const n = state.tokens.length;
  const d = dims(state);
  const cfg = state.config;
  cfg.layers = clamp(isInt(cfg.layers) ? cfg.layers : 1, 1, limits.max_layers);
  const choices = headChoices(d, limits.max_heads);
  if (!choices.includes(cfg.heads)) cfg.heads = Math.max(...choices.filter((h) => h <= cfg.heads), 1);
  if (cfg.projections === "custom") {
    const w = cfg.weights || {};
    cfg.weights = Object.fromEntries(MATRICES.map((k) => [k, resizeSquare(w[k], d)]));
  } else {
    cfg.weights = null;
  }
  const v = state.view;
  const L = cfg.layers;
  if (previousLayers !== void 0 && v.vlayer === previousLayers) v.vlayer = L;
  v.layer = clamp(isInt(v.layer) ? v.layer : 0, 0, L - 1);
  v.head = clamp(isInt(v.head) ? v.head : 0, 0, cfg.heads - 1);
  v.vlayer = clamp(isInt(v.vlayer) ? v.vlayer : L, 0, L);
  v.a = clamp(isInt(v.a) ? v.a : 0, 0, n - 1);
  v.b = clamp(isInt(v.b) ? v.b : n - 1, 0, n - 1);
  v.trails = v.trails !== false;
  if (!MEASURES.includes(v.measure)) v.measure = "weights";
  return state;
}
function badNumber(value) {
  return typeof value !== "number" || !Number.isFinite(value);
}
function problem(state, limits) {
  const { tokens, axes, embeddings, config } = state;
  for (let i = 0; i < embeddings.length; i++) {
    for (let j = 0; j < embeddings[i].length; j++) {
      if (badNumber(embeddings[i][j])) {
        const text = String(embeddings[i][j]).trim();
        const what = text ? `"${text}" is not a number` : "is empty";
        return `embeddings: ${tokens[i] || `row ${i + 1}`}, ${axes[j] || `column ${j + 1}`}: ${what}`;
      }
    }
  }
  if (config.weights) {
    for (const k of MATRICES) {
      const bad = config.weights[k].flat().find(badNumber);
      if (bad !== void 0) return `config.weights.${k}: "${String(bad).trim()}" is not a number`;
    }
  }
  if (!isInt(config.seed) || config.seed < 0 || config.seed > 2 ** 31 - 1) {
    return "config.seed: must be a whole number from 0 to 2147483647";
  }
  const long = tokens.find((t) => t.length > limits.max_token_chars);
  if (long !== void 0) return `tokens: "${long.slice(0, 12)}…" is longer than ${limits.max_token_chars} characters`;
  return null;
}
function toRequest(state, defaults) {
  const config = {};
  const given = (
    /** @type {Record<string, any>} */
    state.config
  );
  for (const [key, value] of Object.entries(defaults)) config[key] = given[key] ?? value;
  if (config.projections !== "custom") config.weights = null;
  return { tokens: state.tokens, embeddings: state.embeddings, axes: state.axes, config };
}
function toBase64Url(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 32768) bin += String.fromCharCode(...bytes.subarray(i, i + 32768));
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
function fromBase64Url(text) {
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}
var isStrList = (x) => Array.isArray(x) && x.every((s) => typeof s === "string");
function readHash(hash) {
  const m = /^#s=([A-Za-z0-9_-]+)$/.exec(hash || "");
  if (!m) return null;
  const raw = JSON.parse(fromBase64Url(m[1]));
  if (!raw || typeof raw !== "object") throw new Error("the link holds no state");
  return raw;
}
function toyFromRaw(raw, limits, defaults) {
  const { tokens, axes, embeddings, config, view } = raw;
  const n = Array.isArray(tokens) ? tokens.length : 0;
  const d = Array.isArray(embeddings) && Array.isArray(embeddings[0]) ? embeddings[0].length : 0;
  const ok = isStrList(tokens) && isStrList(axes) && n >= 1 && n <= limits.max_tokens && d >= 1 && d <= limits.max_dim && axes.length === d && embeddings.length === n && embeddings.every(
    (r) => Array.isArray(r) && r.length === d && r.every((x) => typeof x === "number" || typeof x === "string")
  ) && config && typeof config === "object";
  if (!ok) throw new Error("the link's table is not a valid n x d table");
  const state = {
    preset: typeof raw.preset === "string" ? raw.preset : null,
    tokens,
    axes,
    embeddings,
    config: { ...defaults },
    view: { ...defaultView(n, 1), ...view && typeof view === "object" ? view : {} }
  };
  const target = (
    /** @type {Record<string, any>} */
    state.config
  );
  for (const key of Object.keys(defaults)) if (key in config) target[key] = config[key];
  return normalize(state, limits);
}
function defaultSentence(model = null, text = "") {
  return {
    model,
    text,
    layer: 0,
    head: 0,
    heads: [0],
    query: null,
    hideSpecial: false,
    mergeWords: false,
    picked: null,
    dims: 2,
    allKeys: false,
    peak: false,
    aggregate: (
      /** @type {import("./types.js").Aggregate} */
      "head"
    ),
    measure: (
      /** @type {import("./types.js").Measure} */
      "weights"
    ),
    generate: (
      /** @type {import("./types.js").Generate | null} */
      null
    ),
    step: (
      /** @type {number | null} */
      null
    ),
    ablate: (
      /** @type {{layer: number, head: number}[]} */
      []
    ),
    ablateMode: (
      /** @type {import("./types.js").AblateMode} */
      "zero"
    ),
    ablateSource: "",
    diffLayer: (
      /** @type {number | null} */
      null
    ),
    diffHead: (
      /** @type {number | null} */
      null
    )
  };
}
var ABLATE_MODES = ["zero", "mean", "patch"];
var ablateKey = (a) => `${a.layer}:${a.head}`;
function ablateBody(s) {
  if (s.ablateMode === "patch" && !s.ablateSource.trim()) return [];
  return s.ablate.map(({ layer, head }) => ({
    layer,
    head,
    mode: s.ablateMode,
    ...s.ablateMode === "patch" ? { source: s.ablateSource } : {}
  }));
}
var AGGREGATES = ["head", "head_mean", "head_max", "rollout", "value_weighted_sum"];
var MEASURES = ["weights", "value_weighted"];
var isIndex = (v) => isInt(v) && v >= 0;
function sentenceFromRaw(raw) {
  const s = defaultSentence();
  if (!raw || typeof raw !== "object") throw new Error("the link has no sentence");
  if (typeof raw.model === "string") s.model = raw.model;
  if (typeof raw.text === "string") s.text = raw.text;
  for (const key of ["layer", "head"]) if (isIndex(raw[key])) s[key] = raw[key];
  if (Array.isArray(raw.heads) && raw.heads.every(isIndex)) s.heads = [...new Set(raw.heads)].sort((a, b) => a - b);
  if (isIndex(raw.query)) s.query = raw.query;
  s.hideSpecial = raw.hideSpecial === true;
  s.mergeWords = raw.mergeWords === true;
  if (Array.isArray(raw.picked) && raw.picked.every(isIndex)) s.picked = [...new Set(raw.picked)].sort((a, b) => a - b);
  if (raw.picked === "all") s.picked = "all";
  s.dims = raw.dims === 3 ? 3 : 2;
  s.allKeys = raw.allKeys === true;
  s.peak = raw.peak === true;
  if (AGGREGATES.includes(raw.aggregate)) s.aggregate = raw.aggregate;
  if (MEASURES.includes(raw.measure)) s.measure = raw.measure;
  const g = raw.generate;
  if (g && isInt(g.steps) && g.steps >= 1 && typeof g.temperature === "number" && g.temperature >= 0 && g.temperature <= 2 && isIndex(g.seed)) {
    s.generate = { steps: g.steps, temperature: g.temperature, seed: g.seed };
  }
  if (isInt(raw.step) && raw.step >= 1) s.step = raw.step;
  if (Array.isArray(raw.ablate)) {
    const seen = /* @__PURE__ */ new Set();
    for (const a of raw.ablate) {
      if (!a || !isIndex(a.layer) || !isIndex(a.head) || seen.has(ablateKey(a))) continue;
      seen.add(ablateKey(a));
      s.ablate.push({ layer: a.layer, head: a.head });
    }
  }
  if (ABLATE_MODES.includes(raw.ablateMode)) s.ablateMode = raw.ablateMode;
  if (typeof raw.ablateSource === "string") s.ablateSource = raw.ablateSource;
  for (const key of ["diffLayer", "diffHead"]) if (isIndex(raw[key])) s[key] = raw[key];
  return s;
}
function clampSentence(s, layers, heads, n) {
  s.layer = clamp(s.layer, 0, layers - 1);
  s.head = clamp(s.head, 0, heads - 1);
  const chosen = s.heads.filter((h) => h < heads);
  s.heads = chosen.length || !s.heads.length ? chosen : [s.head];
  s.ablate = s.ablate.filter((a) => a.layer < layers && a.head < heads);
  if (s.diffLayer !== null) s.diffLayer = clamp(s.diffLayer, 0, layers - 1);
  if (s.diffHead !== null) s.diffHead = clamp(s.diffHead, 0, heads - 1);
  if (n !== void 0) {
    if (s.query !== null && s.query >= n) s.query = null;
    if (Array.isArray(s.picked)) s.picked = s.picked.filter((i) => i < n);
  }
  return s;
}
var same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
function toyPart(toy, ctx) {
  const { preset, tokens, axes, embeddings, config, view } = toy;
  const diff = (base) => Object.fromEntries(Object.entries(config).filter(([key, value]) => !base || !same(value, base[key])));
  const found = ctx?.presets.find((p) => p.id === preset);
  if (ctx && found) {
    const fresh = normalize(fromPreset(found, ctx.defaults), ctx.limits);
    if (same([tokens, axes, embeddings], [fresh.tokens, fresh.axes, fresh.embeddings])) {
      return { preset, config: diff(fresh.config), view };
    }
  }
  return { preset, tokens, axes, embeddings, config: diff(ctx?.defaults), view };
}
function sentencePart(sentence) {
  const base = (
    /** @type {Record<string, unknown>} */
    defaultSentence()
  );
  const out = Object.fromEntries(Object.entries(sentence).filter(([key, value]) => !same(value, base[key])));
  return Object.keys(out).length ? out : null;
}
function encodeShare(mode, toy, sentence, ctx) {
  const out = { v: 3, mode: mode === "sentence" ? "sentence" : "toy" };
  if (toy) out.toy = toyPart(toy, ctx);
  const s = sentence && sentencePart(sentence);
  if (s) out.sentence = s;
  return "#s=" + toBase64Url(JSON.stringify(out));
}
function decodeShare(hash, limits, defaults, presets = []) {
  const raw = readHash(hash);
  if (!raw) return null;
  if (raw.v !== 3) {
    if (raw.mode === "sentence") return { mode: "sentence", toy: null, sentence: sentenceFromRaw(raw.sentence) };
    return { mode: "toy", toy: toyFromRaw(raw, limits, defaults), sentence: null };
  }
  let toy = null;
  if (raw.toy && typeof raw.toy === "object") {
    const t = raw.toy;
    if (Array.isArray(t.tokens)) {
      toy = toyFromRaw(t, limits, defaults);
    } else {
      const found = presets.find((p) => p.id === t.preset);
      if (!found) throw new Error(`the link names the preset '${String(t.preset)}', which this server does not have`);
      const fresh = fromPreset(found, defaults);
      toy = toyFromRaw({ ...fresh, config: { ...fresh.config, ...t.config || {} }, view: t.view }, limits, defaults);
    }
  }
  const sentence = raw.sentence && typeof raw.sentence === "object" ? sentenceFromRaw(raw.sentence) : null;
  return { mode: raw.mode === "sentence" ? "sentence" : "toy", toy, sentence };
}
var defaultTrainView = () => ({
  variant: 0,
  layer: 0,
  head: 0,
  checkpoint: 0,
  attention: (
    /** @type {import("./types.js").AttentionKind} */
    "self"
  )
});

// static/js/modes/learn/mathml.js
var MATHML_NS = "http://www.w3.org/1998/Math/MathML";
var ELEMENTS = /* @__PURE__ */ new Set([
  "math",
  "mrow",
  "mi",
  "mn",
  "mo",
  "mtext",
  "mspace",
  "ms",
  "msup",
  "msub",
  "msubsup",
  "mfrac",
  "msqrt",
  "mroot",
  "mover",
  "munder",
  "munderover",
  "mtable",
  "mtr",
  "mtd",
  "mstyle",
  "mpadded",
  "mphantom",
  "menclose"
]);
var ATTRIBUTES = /* @__PURE__ */ new Set([
  "display",
  "mathvariant",
  "stretchy",
  "fence",
  "separator",
  "lspace",
  "rspace",
  "accent",
  "accentunder",
  "columnalign",
  "rowalign",
  "rowspacing",
  "columnspacing",
  "linethickness",
  "form",
  "largeop",
  "movablelimits",
  "symmetric",
  "scriptlevel",
  "displaystyle",
  "width",
  "height",
  "depth",
  "notation",
  "minsize",
  "maxsize"
]);
var MAX_CHARS = 2e4;
var ENTITIES = (
  /** @type {Record<string, string>} */
  { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" }
);
function unescape(s) {
  return s.replace(/&([^;\s&]*);?/g, (whole, name) => {
    if (!whole.endsWith(";")) throw new Error(`formula: "&${name}" is not a complete entity`);
    const num = /^#(?:x([0-9a-fA-F]{1,6})|([0-9]{1,7}))$/.exec(name);
    if (num) {
      const code = num[1] ? parseInt(num[1], 16) : Number(num[2]);
      if (code < 1 || code > 1114111 || code >= 55296 && code <= 57343) {
        throw new Error(`formula: &${name}; is not a character`);
      }
      return String.fromCodePoint(code);
    }
    if (name in ENTITIES) return ENTITIES[name];
    throw new Error(`formula: the entity &${name}; is not one of &amp; &lt; &gt; &quot; &apos; or a number`);
  });
}
function parseMarkup(text) {
  if (typeof text !== "string") throw new Error("formula: not a string");
  if (text.length > MAX_CHARS) throw new Error(`formula: longer than ${MAX_CHARS} characters`);
  const tag = /<(\/?)([A-Za-z][\w.-]*)((?:\s+[A-Za-z_][\w.:-]*\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>/y;
  const attr = /\s+([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"<]*)"|'([^'<]*)')/g;
  const open = [];
  let root2 = null;
  let i = 0;
  while (i < text.length) {
    const lt = text.indexOf("<", i);
    const end = lt < 0 ? text.length : lt;
    if (end > i) {
      const chunk = text.slice(i, end);
      if (open.length) open[open.length - 1].children.push({ text: unescape(chunk) });
      else if (chunk.trim()) throw new Error("formula: text outside the <math> element");
      i = end;
      continue;
    }
    tag.lastIndex = i;
    const m = tag.exec(text);
    if (!m) throw new Error(`formula: cannot read the markup at character ${i + 1} ("${text.slice(i, i + 12)}…")`);
    i = tag.lastIndex;
    const [, closing, name, rawAttrs, selfClosing] = m;
    if (closing) {
      if (rawAttrs || selfClosing) throw new Error(`formula: </${name}> cannot have attributes`);
      const top = open.pop();
      if (!top || top.name !== name) throw new Error(`formula: </${name}> closes ${top ? `<${top.name}>` : "nothing"}`);
      if (!open.length) root2 = top;
      continue;
    }
    const attrs = {};
    for (const a of rawAttrs.matchAll(attr)) {
      if (a[1] in attrs) throw new Error(`formula: <${name}> has ${a[1]} twice`);
      attrs[a[1]] = unescape(a[2] ?? a[3] ?? "");
    }
    const node = { name, attrs, children: (
      /** @type {MathNode[]} */
      []
    ) };
    if (open.length) open[open.length - 1].children.push(node);
    else if (root2) throw new Error("formula: more than one root element");
    if (selfClosing) {
      if (!open.length) root2 = node;
    } else open.push(node);
  }
  if (open.length) throw new Error(`formula: <${open[open.length - 1].name}> is not closed`);
  if (!root2) throw new Error("formula: no element");
  return root2;
}
function checkMath(tree) {
  if (!("name" in tree) || tree.name !== "math") throw new Error("formula: the root element must be <math>");
  const walk = (node, depth) => {
    if (!("name" in node)) return;
    if (depth > 64) throw new Error("formula: nested too deeply");
    if (!ELEMENTS.has(node.name)) throw new Error(`formula: <${node.name}> is not an allowed MathML element`);
    if (node.name === "math" && depth > 0) throw new Error("formula: <math> inside <math>");
    for (const a of Object.keys(node.attrs)) {
      if (!ATTRIBUTES.has(a)) throw new Error(`formula: the attribute ${a} of <${node.name}> is not allowed`);
    }
    for (const c of node.children) walk(c, depth + 1);
  };
  walk(tree, 0);
  return tree;
}
function buildMath(tree, doc) {
  const build = (node) => {
    if (!("name" in node)) return doc.createTextNode(node.text);
    const el2 = doc.createElementNS(MATHML_NS, node.name);
    for (const [k, v] of Object.entries(node.attrs)) el2.setAttribute(k, v);
    el2.append(...node.children.map(build));
    return el2;
  };
  return (
    /** @type {Element} */
    build(tree)
  );
}
function importMath(text, doc = document) {
  return buildMath(checkMath(parseMarkup(text)), doc);
}

// static/js/modes/learn/progress.js
var LEARN_HASH = "#learn";
var STORAGE_KEY = "attnviz.learn";
function decodeLearnHash(hash) {
  const m = /^#learn(?:\/([^?#]*))?$/.exec(hash || "");
  if (!m) return null;
  if (m[1] === void 0 || m[1] === "") return { n: null };
  return /^[1-9][0-9]{0,3}$/.test(m[1]) ? { n: Number(m[1]) } : { n: null, bad: m[1] };
}
var encodeLearnHash = (n) => `${LEARN_HASH}/${n}`;
var emptyProgress = () => ({ v: 1, last: null, done: {} });
var ID = /^[a-z0-9][a-z0-9-]{0,63}$/;
function readProgress(text) {
  const out = emptyProgress();
  let raw;
  try {
    raw = text ? JSON.parse(text) : null;
  } catch {
    return out;
  }
  if (!raw || typeof raw !== "object" || raw.v !== 1) return out;
  if (Number.isInteger(raw.last) && raw.last >= 1 && raw.last <= 9999) out.last = raw.last;
  if (raw.done && typeof raw.done === "object" && !Array.isArray(raw.done)) {
    for (const [step, tasks] of Object.entries(raw.done).slice(0, 64)) {
      if (!ID.test(step) || !Array.isArray(tasks)) continue;
      const ids2 = [...new Set(tasks.filter((t) => typeof t === "string" && ID.test(t)))].slice(0, 16);
      if (ids2.length) out.done[step] = ids2;
    }
  }
  return out;
}
var writeProgress = (p) => JSON.stringify(p);
function recordTasks(p, step, tasks) {
  const now = tasks.filter((t) => t.done && ID.test(t.id)).map((t) => t.id);
  const before = p.done[step] || [];
  const all = [.../* @__PURE__ */ new Set([...before, ...now])];
  if (all.length === before.length) return p;
  return { ...p, done: { ...p.done, [step]: all } };
}
var setLast = (p, n) => p.last === n ? p : { ...p, last: n };
function stepDone(p, step) {
  const done = p.done[step.id] || [];
  return step.tasks.length > 0 && step.tasks.every((t) => done.includes(t.id));
}
var taskDone = (p, step, task) => (p.done[step] || []).includes(task);
function stepToOpen(link, p, count) {
  const fallback = p.last !== null && p.last <= count ? p.last : 1;
  if (link.bad !== void 0)
    return { n: fallback, said: `There is no step "${link.bad}": steps are numbered 1 to ${count}.` };
  if (link.n === null) return { n: fallback, said: null };
  if (link.n > count)
    return { n: count, said: `There is no step ${link.n}: the path has ${count} steps. This is the last.` };
  return { n: link.n, said: null };
}
function stepToyState(toy, defaults) {
  const n = toy.tokens.length;
  const layers = toy.config?.layers ?? defaults.layers;
  return {
    preset: toy.preset ?? null,
    tokens: [...toy.tokens],
    axes: [...toy.axes],
    embeddings: toy.embeddings.map((row) => [...row]),
    config: { ...defaults, ...JSON.parse(JSON.stringify(toy.config || {})) },
    view: {
      layer: 0,
      head: 0,
      vlayer: layers,
      a: Math.min(1, n - 1),
      b: n - 1,
      trails: true,
      measure: (
        /** @type {import("../../core/types.js").Measure} */
        "weights"
      ),
      ...toy.view || {}
    }
  };
}
function toyCheckBody(state, defaults) {
  const { layer, head, vlayer, a, b } = state.view;
  return { toy: toRequest(state, defaults), view: { layer, head, vlayer, a, b } };
}
function trainCheckBody(run, view) {
  return { run: run.id, view: { variant: view.variant, layer: view.layer, head: view.head } };
}
function trainCheckKey(run, view) {
  const variants = run.variants.map((v) => [
    v.state,
    v.checkpoints.length ? v.checkpoints[v.checkpoints.length - 1].step : -1,
    Boolean(v.induction),
    Boolean(v.alignment)
  ]);
  return JSON.stringify([run.id, run.state, run.claims?.length ?? null, variants, view.variant, view.layer, view.head]);
}
function fixed(x, decimals) {
  const s = x.toFixed(decimals);
  return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
}
function articleRows(table) {
  return table.rows.map((row) => ({
    label: row.label,
    cells: row.article.map((a, j) => {
      const article = fixed(a, table.decimals);
      const engine = row.engine[j] === void 0 || row.engine[j] === null ? "–" : fixed(row.engine[j], table.decimals);
      return { article, engine, agrees: article === engine };
    })
  }));
}
function stepLabel(step, p) {
  return `${step.n}. ${step.title}${stepDone(p, step) ? ", done" : ""}`;
}
var stepsDone = (steps, p) => steps.filter((s) => stepDone(p, s)).length;
function taskLines(step, answer, p) {
  return step.tasks.map((t) => {
    const got = answer?.tasks.find((a) => a.id === t.id) ?? null;
    const before = !got?.done && taskDone(p, step.id, t.id);
    return {
      id: t.id,
      prompt: t.prompt,
      hint: t.hint,
      done: Boolean(got?.done),
      before: before && !t.finding,
      found: before && t.finding,
      says: got ? got.says : ""
    };
  });
}

// static/js/modes/learn/guide.js
var part = (container, role) => (
  /** @type {HTMLElement} */
  container.querySelector(`[data-role="${role}"]`)
);
var ENGINE_ROW = { start: "engine", live: "your table", kept: "engine" };
function articleNote(source, agree, decimals) {
  if (source === "kept") {
    return "These are the article's case: the engine's numbers for the article's table as the step starts. Your table's tokens, dimensions or layers are no longer the article's, so they are not recomputed from it.";
  }
  const whose = source === "live" ? "Your table's numbers (recomputed from its trace as you edit it)" : "The engine's numbers";
  return agree ? `${whose}, rounded to ${decimals} decimals as the article prints them, are the article's.` : source === "live" ? "Where a number is marked, your table's (recomputed from its trace as you edit it) differs from the article's at its rounding." : "Where a number is marked, the engine's differs from the article's at its rounding.";
}
function articleTable(table, source) {
  const rows = articleRows(table);
  const head = el("tr", {}, [
    el("th", { scope: "col" }, [""]),
    el("th", { scope: "col" }, ["source"]),
    ...table.columns.map((c) => el("th", { scope: "col" }, [c]))
  ]);
  const body = rows.flatMap((r) => {
    const differs = r.cells.some((c) => !c.agrees);
    return [
      el("tr", { className: "article-row" }, [
        el("th", { scope: "row", rowSpan: 2, className: "token" }, [r.label]),
        el("th", { scope: "row", className: "source" }, ["article"]),
        ...r.cells.map((c) => el("td", {}, [c.article]))
      ]),
      el("tr", { className: differs ? "engine-row differs" : "engine-row" }, [
        el("th", { scope: "row", className: "source" }, [ENGINE_ROW[source]]),
        ...r.cells.map(
          (c) => el("td", { className: c.agrees ? "" : "differs" }, [
            c.engine,
            ...c.agrees ? [] : [el("span", { className: "sr-only" }, [" (differs)"])]
          ])
        )
      ])
    ];
  });
  const agree = rows.every((r) => r.cells.every((c) => c.agrees));
  const caption = source === "live" ? table.caption.replace(/the engine's$/, "your table's") : table.caption;
  return el("figure", { className: "learn-table", dataset: { source } }, [
    el("div", { className: "table-scroll", tabIndex: 0, role: "region", "aria-label": caption }, [
      el("table", { className: "data-table" }, [
        el("caption", {}, [caption]),
        el("thead", {}, [head]),
        el("tbody", {}, body)
      ])
    ]),
    el("figcaption", { className: "hint" }, [articleNote(source, agree, table.decimals)])
  ]);
}
function drawArticle(box, step, answer) {
  const mine = answer && answer.step === step.id && answer.article !== void 0 ? answer : null;
  const source = !mine ? "start" : mine.article ? "live" : "kept";
  const tables = mine?.article ?? step.article;
  const key = JSON.stringify([step.id, source, tables]);
  if (box.dataset.drawn === key) return;
  box.dataset.drawn = key;
  box.replaceChildren(...tables.map((t) => articleTable(t, source)));
}
function render(container, data, selection, callbacks) {
  const { steps, progress } = data;
  const step = steps[selection.n - 1];
  part(container, "loading").hidden = true;
  part(container, "count").textContent = `(${stepsDone(steps, progress)} of ${steps.length} done)`;
  drawProgress(part(container, "steps"), steps, progress, selection.n);
  if (container.dataset.step !== step.id) {
    container.dataset.step = step.id;
    drawStep(container, step, steps.length, callbacks);
  }
  drawLooks(part(container, "look"), data.looks, callbacks);
  drawTasks(part(container, "tasks"), step, data.answer, progress);
  drawArticle(part(container, "article"), step, data.answer);
  const problem2 = part(container, "problem");
  if (problem2.textContent !== (data.problem ?? "")) problem2.textContent = data.problem ?? "";
  problem2.hidden = !data.problem;
}
function drawProgress(list, steps, progress, n) {
  if (list.children.length !== steps.length) {
    list.replaceChildren(
      ...steps.map(
        (s) => el("li", {}, [
          el("a", { href: encodeLearnHash(s.n), dataset: { n: String(s.n) } }, [
            el("span", { className: "learn-num" }, [String(s.n), el("span", { className: "sr-only" }, ["."])]),
            el("span", { className: "learn-name" }, [
              s.title,
              el("span", { className: "sr-only", dataset: { role: "done" } }, [""])
            ]),
            el("span", { className: "learn-tick", "aria-hidden": "true" }, ["✓"])
          ])
        ])
      )
    );
  }
  for (const [i, s] of steps.entries()) {
    const a = (
      /** @type {HTMLAnchorElement} */
      list.children[i].firstElementChild
    );
    const done = stepDone(progress, s);
    a.title = stepLabel(s, progress);
    part(a, "done").textContent = done ? ", done" : "";
    a.dataset.done = String(done);
    if (s.n === n) a.setAttribute("aria-current", "step");
    else a.removeAttribute("aria-current");
  }
}
function drawStep(container, step, count, callbacks) {
  const lab = step.lab === "toy" ? "the toy lab" : "the Train tab";
  part(container, "where").textContent = `Step ${step.n} of ${count} · in ${lab}, below`;
  part(container, "title").textContent = step.title;
  part(container, "text").replaceChildren(...step.text.map((t) => el("p", {}, [t])));
  const box = part(container, "formula-box");
  const math = part(container, "formula");
  part(container, "formula-text").textContent = step.formula_text;
  try {
    math.replaceChildren(importMath(step.formula));
    math.hidden = false;
    fitFormula(box);
  } catch (err) {
    console.warn(`attnviz: step ${step.id}'s formula is not drawn: ${/** @type {Error} */
    err.message}`);
    math.replaceChildren();
    math.hidden = true;
  }
  box.hidden = !step.formula && !step.formula_text;
  fitFormula(box);
  const prev = (
    /** @type {HTMLAnchorElement} */
    part(container, "prev")
  );
  const next = (
    /** @type {HTMLAnchorElement} */
    part(container, "next")
  );
  prev.hidden = step.n <= 1;
  next.hidden = step.n >= count;
  prev.href = encodeLearnHash(Math.max(1, step.n - 1));
  next.href = encodeLearnHash(Math.min(count, step.n + 1));
  prev.setAttribute("aria-label", `Previous: step ${step.n - 1}`);
  next.setAttribute("aria-label", `Next: step ${step.n + 1}`);
  const reset = part(container, "reset");
  const explore = part(container, "explore");
  reset.onclick = () => callbacks.onReset();
  explore.onclick = () => callbacks.onExplore();
  explore.textContent = `Explore freely in ${step.lab === "toy" ? "the toy lab" : "Train"}`;
}
var MATH_REM = [1.2, 0.7];
var fitting = /* @__PURE__ */ new WeakMap();
function fitFormula(box) {
  if (!fitting.has(box) && typeof ResizeObserver !== "undefined") {
    let width = 0;
    const observer = new ResizeObserver(() => {
      if (box.clientWidth !== width) fitFormula(box);
      width = box.clientWidth;
    });
    observer.observe(box);
    fitting.set(box, observer);
  }
  const math = (
    /** @type {HTMLElement | null} */
    box.querySelector("math")
  );
  if (!math || box.hidden) return;
  const [most, least] = MATH_REM;
  math.style.fontSize = `${most}rem`;
  const pad = box.scrollWidth - box.clientWidth;
  if (pad <= 0) return;
  const room = box.clientWidth - 32;
  math.style.fontSize = `${Math.max(least, most * room / (room + pad)).toFixed(3)}rem`;
}
function drawLooks(box, looks, callbacks) {
  const key = JSON.stringify(looks);
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  box.hidden = !looks.length;
  box.replaceChildren(
    ...looks.length ? [el("span", {}, ["Look at: "])] : [],
    ...looks.map((l) => {
      const b = el("button", { type: "button", className: "learn-look-go" }, [l.name]);
      b.addEventListener("click", () => callbacks.onLook(l.id));
      return b;
    })
  );
}
function drawTasks(list, step, answer, progress) {
  const lines = taskLines(step, answer, progress);
  if (list.dataset.step !== step.id) {
    list.dataset.step = step.id;
    list.replaceChildren(
      ...lines.map(
        (t) => el("li", { className: "learn-task", dataset: { task: t.id, state: "unchecked" } }, [
          el("p", { className: "learn-prompt" }, [t.prompt]),
          ...t.hint ? [el("details", { className: "learn-hint" }, [el("summary", {}, ["Hint"]), el("p", {}, [t.hint])])] : [],
          el("p", { className: "learn-answer", "aria-live": "polite" }, [
            el("span", { className: "learn-badge", dataset: { role: "badge" } }, [""]),
            el("span", { dataset: { role: "says" } }, [""])
          ])
        ])
      )
    );
  }
  for (const [i, t] of lines.entries()) {
    const li = (
      /** @type {HTMLElement} */
      list.children[i]
    );
    const state = !answer ? "unchecked" : t.done || t.found ? "done" : "todo";
    li.dataset.state = state;
    li.dataset.before = String(t.before);
    const badge = t.done ? "Done" : t.found ? "Done: found earlier" : t.before ? "Done before, not now" : answer ? "Not yet" : "";
    const says = t.says ? ` ${t.says}` : "";
    const b = part(li, "badge");
    const s = part(li, "says");
    if (b.textContent !== badge) b.textContent = badge;
    b.hidden = !badge;
    if (s.textContent !== says) s.textContent = says;
  }
}

// static/js/modes/learn/index.js
var CHECK_DELAY = 200;
var POLL_MS = 2e3;
function createLearn(hooks) {
  const app2 = {
    /** @type {LearnStep[] | null} */
    steps: null,
    progress: loadProgress(),
    n: 1,
    opened: false,
    // a step has been opened (its link is the page's)
    active: false,
    /** The step whose starting state each lab last received (the lab holds it, or the learner's changes to it). */
    loaded: (
      /** @type {Record<"toy" | "train", number | null>} */
      { toy: null, train: null }
    ),
    /** @type {LearnAnswer | null} */
    answer: null,
    /** @type {string | null} */
    problem: null,
    /** @type {string | null} */
    shown: null,
    // the key of the question the answer shown answers
    /** @type {string | null} */
    waiting: null,
    // the key of the question scheduled or in flight
    seq: 0,
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    timer: void 0,
    /** @type {ReturnType<typeof setInterval> | undefined} */
    poll: void 0,
    /** @type {Element[]} */
    outlined: [],
    /** The step each run in the Train lab was first seen in (run id -> step n): a run is checked
     * only by the step it was trained (or opened) in, never by the next step it is left in view
     * for. @type {Map<string, number>} */
    runSteps: /* @__PURE__ */ new Map()
  };
  const container = byId("learn-guide");
  const step = () => (
    /** @type {LearnStep[]} */
    app2.steps[app2.n - 1]
  );
  function loadProgress() {
    try {
      return readProgress(localStorage.getItem(STORAGE_KEY));
    } catch {
      return emptyProgress();
    }
  }
  function saveProgress() {
    try {
      localStorage.setItem(STORAGE_KEY, writeProgress(app2.progress));
    } catch {
    }
  }
  function looks() {
    const cards = /* @__PURE__ */ new Map();
    for (const id of step().focus) {
      const card = document.getElementById(id)?.closest("section.card");
      const h2 = card?.querySelector("h2");
      const name = h2 ? headingName(h2) : "";
      if (card?.id && name && !cards.has(card.id)) cards.set(card.id, name);
    }
    return [...cards].map(([id, name]) => ({ id, name }));
  }
  function draw8() {
    if (!app2.steps) return;
    render(
      container,
      { steps: app2.steps, progress: app2.progress, answer: app2.answer, problem: app2.problem, looks: looks() },
      { n: app2.n },
      {
        onReset: () => open(app2.n, { fresh: true }),
        onExplore: () => hooks.explore(step().lab),
        onLook(id) {
          const card = document.getElementById(id);
          if (!card) return;
          card.scrollIntoView({ block: "start" });
          const heading = (
            /** @type {HTMLElement | null} */
            card.querySelector("h2")
          );
          if (heading) {
            if (!heading.hasAttribute("tabindex")) heading.tabIndex = -1;
            heading.focus({ preventScroll: true });
          }
        }
      }
    );
  }
  function outline() {
    for (const e of app2.outlined) e.classList.remove("learn-focus");
    app2.outlined = app2.active && app2.steps ? step().focus.flatMap((id) => {
      const e = document.getElementById(id);
      return e ? [e] : [];
    }) : [];
    for (const e of app2.outlined) e.classList.add("learn-focus");
  }
  function open(n, { fresh = false, focus = false } = {}) {
    const changed = n !== app2.n;
    const before = hooks.trainRun();
    if (before && !app2.runSteps.has(before.id)) app2.runSteps.set(before.id, app2.opened ? app2.n : 0);
    app2.n = n;
    const s = step();
    app2.opened = true;
    if (changed || fresh) {
      app2.answer = null;
      app2.problem = null;
      app2.shown = null;
      app2.waiting = null;
      app2.seq++;
    }
    app2.progress = setLast(app2.progress, n);
    saveProgress();
    hooks.linked();
    if (fresh || app2.loaded[s.lab] !== n) {
      app2.loaded[s.lab] = n;
      if (s.lab === "toy" && s.toy) hooks.openLab("toy", stepToyState(s.toy, hooks.defaults));
      else hooks.openLab(s.lab, s.lab === "train" ? { run: null, settings: { ...s.train?.settings ?? {} } } : null);
    } else {
      hooks.openLab(s.lab, null);
    }
    draw8();
    outline();
    if (focus) container.querySelector("#learn-title").focus({ preventScroll: true });
    labChanged(0);
  }
  async function loadSteps() {
    hooks.setPending(true);
    try {
      app2.steps = /** @type {{steps: LearnStep[]}} */
      (await fetchLearn()).steps;
      if (!app2.steps.length) throw new Error("the server has no steps");
      return true;
    } catch (err) {
      hooks.setError(`Could not load the Learn path: ${/** @type {Error} */
      err.message}`);
      const loading = container.querySelector("[data-role=loading]");
      if (loading) loading.textContent = "The path could not be loaded: open this tab again to retry.";
      return false;
    } finally {
      hooks.setPending(false);
    }
  }
  function question() {
    const s = step();
    if (s.lab === "toy") {
      const state = hooks.toyState();
      if (!state) return { wait: "" };
      const bad = problem(state, hooks.limits);
      if (bad) return { wait: `The table cannot be checked until it is fixed: ${bad}.` };
      const body = toyCheckBody(state, hooks.defaults);
      return { key: JSON.stringify(body), body };
    }
    if (s.id === "rnn" || s.train?.settings?.recurrent !== void 0) {
      const id = hooks.recurrentId();
      if (!id) return { wait: "Start the comparison in its card below; the page checks it as it runs." };
      return { key: `recurrent:${id}:${Date.now() - Date.now() % POLL_MS}`, body: { recurrent: id } };
    }
    const run = hooks.trainRun();
    if (!run)
      return { wait: "Press Train in the Run card below; the page checks the run as it trains and when it ends." };
    if (!app2.runSteps.has(run.id)) app2.runSteps.set(run.id, app2.n);
    const of = (
      /** @type {number} */
      app2.runSteps.get(run.id)
    );
    if (of !== app2.n)
      return {
        wait: `The run in view, ${run.id}, ${of ? `is step ${of}'s` : "was trained before this step opened"}. The form below now holds this step's settings: press Train in the Run card, and the page checks that run as it trains and when it ends.`
      };
    const view = hooks.trainView();
    return { key: trainCheckKey(run, view), body: trainCheckBody(run, view) };
  }
  function labChanged(delay = CHECK_DELAY) {
    if (!app2.active || !app2.steps) return;
    const q = question();
    if ("wait" in q) {
      clearTimeout(app2.timer);
      app2.seq++;
      app2.answer = null;
      app2.shown = app2.waiting = null;
      app2.problem = q.wait || null;
      hooks.setPending(false);
      draw8();
      hooks.checked();
      keepPolling();
      return;
    }
    if (q.key === app2.waiting) return;
    clearTimeout(app2.timer);
    app2.seq++;
    if (q.key === app2.shown) {
      app2.waiting = null;
      hooks.setPending(false);
      return;
    }
    const seq = app2.seq;
    app2.waiting = q.key;
    hooks.setPending(true);
    app2.timer = setTimeout(() => ask2(q.key, q.body, seq), delay);
  }
  async function ask2(key, body, seq) {
    const s = step();
    try {
      const answer = await checkLearn(s.id, body);
      if (seq !== app2.seq) return;
      app2.answer = answer;
      app2.shown = key;
      app2.problem = null;
      app2.progress = recordTasks(app2.progress, s.id, answer.tasks);
      saveProgress();
    } catch (err) {
      if (seq !== app2.seq) return;
      app2.answer = null;
      app2.shown = null;
      app2.problem = `The page could not check this step: ${/** @type {Error} */
      err.message}`;
    }
    app2.waiting = null;
    hooks.setPending(false);
    draw8();
    keepPolling();
    hooks.checked();
  }
  function keepPolling() {
    const waiting = app2.active && app2.steps && step().id === "rnn" && !(app2.answer && app2.answer.tasks.every((t) => t.done));
    if (waiting && !app2.poll) app2.poll = setInterval(() => labChanged(), POLL_MS);
    if (!waiting && app2.poll) {
      clearInterval(app2.poll);
      app2.poll = void 0;
    }
  }
  return {
    /**
     * Show the guide: a link's step (`{n}`; null: the learner's last step, or the first).
     * @param {{n: number | null, bad?: string} | null} [link]
     */
    async activate(link = null) {
      app2.active = true;
      container.dataset.ready = "0";
      if (!app2.steps && !await loadSteps()) return;
      if (!app2.active) return;
      const steps = (
        /** @type {LearnStep[]} */
        app2.steps
      );
      const { n, said } = stepToOpen(link ?? { n: null }, app2.progress, steps.length);
      hooks.setError(said);
      open(n, { focus: link !== null && link.n !== null && document.activeElement?.closest("#learn-mode") !== null });
      container.dataset.ready = "1";
    },
    deactivate() {
      app2.active = false;
      clearTimeout(app2.timer);
      app2.seq++;
      app2.waiting = null;
      hooks.setPending(false);
      outline();
      keepPolling();
    },
    /** The lab beneath the guide (null until the path is loaded). @returns {"toy" | "train" | null} */
    lab: () => app2.steps ? step().lab : null,
    /** The step open (1-based), null before the first opens. */
    current: () => app2.opened ? app2.n : null,
    /** The lab open changed: ask again (debounced). */
    labChanged: () => labChanged()
  };
}
function headingName(h2) {
  const own = (
    /** @type {Element} */
    h2.cloneNode(true)
  );
  for (const filled of own.querySelectorAll("[data-role]")) filled.remove();
  return (own.textContent ?? "").replace(/\s+/g, " ").trim();
}

// static/js/core/controller.js
function createStatus(hooks) {
  let status = "";
  let drawing = 0;
  const waiting = /* @__PURE__ */ new Set();
  const sync = () => {
    const pending2 = drawing > 0 || waiting.size > 0;
    hooks.setPending(pending2);
    hooks.setStatus(pending2 ? "computing…" : status);
  };
  return {
    /** The status line once nothing is pending. @param {string} text */
    set(text) {
      status = text;
      sync();
    },
    /** Something named (a request, the model list) is in flight, or not. @param {string} what @param {boolean} on */
    waiting(what, on) {
      if (on) waiting.add(what);
      else waiting.delete(what);
      sync();
    },
    /**
     * Pending until `work` settles; then `done()`.
     * @param {Promise<unknown>} work @param {() => void} [done]
     */
    drawing(work, done) {
      drawing++;
      sync();
      return work.finally(() => {
        drawing--;
        done?.();
        sync();
      });
    }
  };
}
async function drawViews(views, which, setError) {
  await Promise.all(
    which.map(
      (name) => Promise.resolve().then(() => views[name]()).catch((err) => {
        console.error(`attnviz: the ${name} view failed`, err);
        setError(`The ${name} view could not be drawn (${err.message}).`);
      })
    )
  );
}

// static/js/core/feeds.js
var TOY_FEEDS = {
  attention: ["layer", "head", "measure"],
  vectors: ["vlayer", "trails"],
  beforeAfter: ["vlayer"],
  distances: ["a", "b", "vlayer"]
};
var SENTENCE_FEEDS = {
  model: ["layer", "head", "query", "hideSpecial", "mergeWords", "peak", "aggregate", "measure"],
  // the large heatmap frames the query's row
  gen: ["layer", "head", "step"],
  head: ["layer", "heads", "query", "hideSpecial", "mergeWords", "measure"],
  qk: ["layer", "head", "query", "allKeys", "hideSpecial", "mergeWords"],
  traj: ["picked", "dims", "hideSpecial", "mergeWords", "query"],
  // a long text starts at the query
  lens: ["query"],
  // the predictions after the query, and the logit lens around it
  knock: ["diffLayer", "diffHead"]
  // ablate, ablateMode, ablateSource: a new trace
};
var CORPUS_FEEDS = {
  corpus: ["source", "upload", "max_tokens", "seed", "layer", "head", "projection"],
  headclusters: ["source", "upload", "max_tokens", "seed", "layer", "head", "clusters"]
  // the head shown is marked
};
var TRAIN_FEEDS = {
  progress: [],
  loss: ["variant"],
  grads: ["variant"],
  heads: ["variant", "layer", "head", "checkpoint", "attention"],
  models: [],
  decoded: ["layer", "head", "attention"]
};
function viewsFed(feeds, keys) {
  return Object.keys(feeds).filter((view) => feeds[view].some((k) => keys.includes(k)));
}

// static/js/core/numbers.js
function fmt(v, digits = 2) {
  if (v === null || v === void 0) return "–";
  const s = Number(v).toFixed(digits);
  return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
}
function exact(v, dtype = "F64") {
  if (v === null || v === void 0 || v === -Infinity) return "masked";
  if (dtype === "F32" && Number.isFinite(v) && v !== 0) {
    const f = Math.fround(v);
    for (let p = 1; p < 9; p++) {
      const short = Number(v.toPrecision(p));
      if (Math.fround(short) === f) return String(short);
    }
    return String(Number(v.toPrecision(9)));
  }
  return String(v);
}

// static/js/core/theme.js
var FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
var TEXT = "#1d2330";
var TEXT_DIM = "#5b6475";
var GRID = "#e3e6eb";
var PALETTE = [
  "#4e79a7",
  "#e15759",
  "#59a14f",
  "#f28e2b",
  "#b07aa1",
  "#76b7b2",
  "#edc948",
  "#ff9da7",
  "#9c755f",
  "#bab0ac"
];
var PALETTE_SIZE = PALETTE.length;
var tokenColor = (i) => PALETTE[i % PALETTE.length];
var HEAD_COLORS = [
  "#4e79a7",
  "#f28e2b",
  "#e15759",
  "#76b7b2",
  "#59a14f",
  "#edc948",
  "#b07aa1",
  "#ff9da7",
  "#9c755f",
  "#7f7f7f",
  "#17becf",
  "#6b3fa0"
];
var headColor = (h) => HEAD_COLORS[h % HEAD_COLORS.length];
var WEIGHT_SCALE = [
  [0, "#f7fbff"],
  [0.2, "#c6dbef"],
  [0.45, "#6baed6"],
  [0.7, "#2171b5"],
  [1, "#08306b"]
];
var SCORE_SCALE = [
  [0, "#2166ac"],
  [0.25, "#92c5de"],
  [0.5, "#f7f7f7"],
  [0.75, "#f4a582"],
  [1, "#b2182b"]
];
var MASKED_GREY = "#c9ccd1";
var SELECTED = "#1f5fbf";
var hex = (s) => [1, 3, 5].map((k) => parseInt(s.slice(k, k + 2), 16));
function lookupTable(scale) {
  const out = new Uint8ClampedArray(256 * 3);
  for (let i = 0; i < 256; i++) {
    const t = i / 255;
    let k = 1;
    while (k < scale.length - 1 && scale[k][0] < t) k++;
    const [t0, c0] = scale[k - 1];
    const [t1, c1] = scale[k];
    const f = t1 > t0 ? (t - t0) / (t1 - t0) : 0;
    const a = hex(c0);
    const b = hex(c1);
    for (let c = 0; c < 3; c++) out[i * 3 + c] = Math.round(a[c] + (b[c] - a[c]) * f);
  }
  return out;
}
var WEIGHT_LUT = lookupTable(WEIGHT_SCALE);
var SCORE_LUT = lookupTable(SCORE_SCALE);
var lutColor = (lut, i) => `rgb(${lut[i * 3]},${lut[i * 3 + 1]},${lut[i * 3 + 2]})`;
var WEIGHT_GRADIENT = `linear-gradient(to right, ${WEIGHT_SCALE.map(([t, c]) => `${c} ${t * 100}%`).join(", ")})`;
function baseLayout(extra = {}) {
  return {
    font: { family: FONT, size: 13, color: TEXT },
    paper_bgcolor: "#ffffff",
    plot_bgcolor: "#ffffff",
    margin: { l: 60, r: 20, t: 36, b: 50 },
    hoverlabel: { font: { family: FONT, size: 13 } },
    ...extra
  };
}
var ON_MACHINE = Object.freeze({
  showSendToCloud: false,
  plotlyServerURL: "",
  showEditInChartStudio: false,
  showLink: false,
  displaylogo: false
});
function plotConfig(filename) {
  return {
    responsive: true,
    ...ON_MACHINE,
    modeBarButtonsToRemove: ["lasso2d", "select2d"],
    toImageButtonOptions: { format: "png", filename, scale: 2 }
  };
}
function plotText(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
var plotToken = (t) => plotText(shownToken(t));
function tokenAxis(tokens, extra = {}) {
  const n = tokens.length;
  const size = n <= 12 ? 13 : n <= 24 ? 11 : n <= 40 ? 9 : 7;
  return {
    tickmode: "array",
    tickvals: tokens.map((_, i) => i),
    ticktext: tokens.map(plotToken),
    tickfont: { size },
    showgrid: false,
    zeroline: false,
    ...extra
  };
}
function draw(el2, data, layout, filename) {
  return withPlotly(el2, data, async (Plotly) => {
    await Plotly.react(el2, data, layout, plotConfig(filename));
    const full = (
      /** @type {any} */
      el2._fullLayout
    );
    if (full && (Math.abs(full.width - el2.clientWidth) > 1 || Math.abs(full.height - el2.clientHeight) > 1)) {
      await Plotly.Plots.resize(el2);
    }
  });
}

// static/js/views/describe.js
function strongest(matrix, skip = {}) {
  const C = matrix.shape[1] ?? matrix.shape[0];
  const from = (skip.fromRow ?? 0) * C;
  let best = null;
  for (let p = from; p < matrix.data.length; p++) {
    const v = matrix.data[p];
    if (v === null || !Number.isFinite(v) || p % C === skip.col) continue;
    if (best === null || v > best.v) best = { i: Math.floor(p / C), j: p % C, v };
  }
  return best;
}
var SINK_SHARE = 0.5;
function firstTokenSink(matrix) {
  const n = matrix.shape[0];
  if (n < 2 || (matrix.shape[1] ?? n) !== n) return null;
  let share2 = 0;
  for (let i = 1; i < n; i++) {
    let sum = 0;
    for (let j = 0; j < n; j++) {
      const v = Number(matrix.data[i * n + j]) || 0;
      if (v < 0 || v > 1.05) return null;
      sum += v;
    }
    if (Math.abs(sum - 1) > 0.05) return null;
    share2 += Number(matrix.data[i * n]) || 0;
  }
  share2 /= n - 1;
  return share2 >= SINK_SHARE ? share2 : null;
}
function strongestText(rowLabels, colLabels, matrix, opts = {}) {
  const word = opts.word ?? "strongest";
  const value = (v) => `${opts.approx ? "≈ " : ""}${fmt(v, opts.digits ?? 2)}`;
  const causal = opts.causal && matrix.shape[0] > 1 && (matrix.shape[1] ?? matrix.shape[0]) === matrix.shape[0];
  if (!causal) {
    const s2 = strongest(matrix);
    if (!s2) return "every cell is masked";
    return `${word}: ${rowLabels[s2.i]} → ${colLabels[s2.j]} ${value(s2.v)}`;
  }
  const sink = firstTokenSink(matrix);
  const s = strongest(matrix, { fromRow: 1, col: sink === null ? void 0 : 0 });
  const cell = s ? `${rowLabels[s.i]} → ${colLabels[s.j]} ${value(s.v)}` : "none";
  if (sink === null) return `${word} past the first query (which sees only itself): ${cell}`;
  return `an attention sink: each later query gives on average ${Math.round(100 * sink)}% of its weight to the first token, “${colLabels[0]}”; ${word} elsewhere: ${cell}`;
}
function curveText(what, steps, values) {
  if (!values.length) return `${what}: no steps yet`;
  const last = steps[steps.length - 1];
  return `${what} ${fmt(values[0], 2)} → ${fmt(values[values.length - 1], 2)} over ${last.toLocaleString("en-US")} step${last === 1 ? "" : "s"}`;
}
function luminance(rgb) {
  const [r, g, b] = rgb.map((c) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}
function inkOn(rgb) {
  return contrast(rgb, [0, 0, 0]) >= contrast(rgb, [255, 255, 255]) ? "#000000" : "#ffffff";
}
var JUMP = 10;
function moveCursor(key, i, j, rows, cols, ctrl = false) {
  const clamp2 = (v, n) => Math.max(0, Math.min(n - 1, v));
  switch (key) {
    case "ArrowLeft":
      return [i, clamp2(j - 1, cols)];
    case "ArrowRight":
      return [i, clamp2(j + 1, cols)];
    case "ArrowUp":
      return [clamp2(i - 1, rows), j];
    case "ArrowDown":
      return [clamp2(i + 1, rows), j];
    case "Home":
      return ctrl ? [0, 0] : [i, 0];
    case "End":
      return ctrl ? [rows - 1, cols - 1] : [i, cols - 1];
    case "PageUp":
      return [i, clamp2(j - JUMP, cols)];
    case "PageDown":
      return [i, clamp2(j + JUMP, cols)];
    default:
      return null;
  }
}
function farthest(from, to) {
  let best = null;
  from.forEach((p, i) => {
    const d = Math.hypot(...p.map((v, c) => to[i][c] - v));
    if (best === null || d > best.d) best = { i, d };
  });
  return best;
}

// static/js/views/access.js
var ids = 0;
function describe(plot, text) {
  let box = (
    /** @type {HTMLElement | null} */
    plot.nextElementSibling
  );
  if (!box || !box.classList.contains("plot-text")) {
    const id = `plot-text-${++ids}`;
    box = el("div", { className: "plot-text" }, [
      el("p", { className: "plot-summary", id: `${id}-summary` }),
      el("details", { className: "plot-numbers", hidden: true }, [
        el("summary", { textContent: "Show the numbers" }),
        el("div", { className: "table-scroll", tabIndex: 0, role: "region" }, [
          el("table", { className: "data-table" })
        ])
      ]),
      el("p", { className: "sr-only plot-live", "aria-live": "polite" })
    ]);
    plot.after(box);
  }
  const summary = (
    /** @type {HTMLElement} */
    box.querySelector(".plot-summary")
  );
  summary.textContent = text.summary;
  summary.hidden = !text.summary;
  const details = (
    /** @type {HTMLElement} */
    box.querySelector(".plot-numbers")
  );
  const t = text.table ?? null;
  details.hidden = !t;
  if (t) {
    const scroll = (
      /** @type {HTMLElement} */
      details.querySelector(".table-scroll")
    );
    scroll.setAttribute("aria-label", t.caption);
    details.querySelector("table").replaceChildren(
      el("caption", { className: "sr-only", textContent: t.caption }),
      el("thead", {}, [
        el(
          "tr",
          {},
          t.head.map((h) => el("th", { scope: "col", textContent: h }))
        )
      ]),
      el(
        "tbody",
        {},
        t.rows.map(
          ([head, ...cells]) => el("tr", {}, [
            el("th", { scope: "row", textContent: head }),
            ...cells.map((c) => el("td", { textContent: c }))
          ])
        )
      )
    );
  }
  return { box, summary, live: (
    /** @type {HTMLElement} */
    box.querySelector(".plot-live")
  ) };
}
function matrixTable(caption, corner, rowLabels, colLabels, cell) {
  return {
    caption,
    head: [corner, ...colLabels],
    rows: rowLabels.map((r, i) => [r, ...colLabels.map((_, j) => cell(i, j))])
  };
}
function keyCursor(target, live, spec) {
  const t = (
    /** @type {HTMLElement & {__cursor?: {i: number, j: number}}} */
    target
  );
  target.tabIndex = 0;
  target.setAttribute("role", "application");
  target.setAttribute("aria-label", spec.label);
  if (spec.describedBy) target.setAttribute("aria-describedby", spec.describedBy);
  const at = t.__cursor ?? { i: 0, j: 0 };
  at.i = Math.max(0, Math.min(spec.rows - 1, at.i));
  at.j = Math.max(0, Math.min(spec.cols - 1, at.j));
  t.__cursor = at;
  const empty = spec.rows < 1 || spec.cols < 1;
  const say = () => {
    if (empty) return;
    live.textContent = spec.text(at.i, at.j);
    spec.show?.(at.i, at.j);
  };
  target.onfocus = say;
  target.onblur = () => spec.hide?.();
  target.onkeydown = (e) => {
    if (empty) return;
    if ((e.key === "Enter" || e.key === " ") && spec.pick) {
      e.preventDefault();
      spec.pick(at.i, at.j);
      return;
    }
    const to = moveCursor(e.key, at.i, at.j, spec.rows, spec.cols, e.ctrlKey || e.metaKey);
    if (!to) return;
    e.preventDefault();
    [at.i, at.j] = to;
    say();
  };
}
function gridArrows(grid, selector, layers, heads) {
  const steps = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };
  grid.onkeydown = (e) => {
    const b = (
      /** @type {HTMLElement | null} */
      /** @type {HTMLElement} */
      e.target.closest(selector)
    );
    const step = steps[e.key];
    if (!b || !step) return;
    const l = Math.min(layers - 1, Math.max(0, Number(b.dataset.layer) + step[0]));
    const h = Math.min(heads - 1, Math.max(0, Number(b.dataset.head) + step[1]));
    grid.querySelector(`${selector}[data-layer="${l}"][data-head="${h}"]`)?.focus();
    e.preventDefault();
  };
}

// static/js/views/atlas.js
var STRONGEST = 5;
function luminance2(rgb) {
  const [r, g, b] = rgb.map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
function cellColours(v) {
  const c = Math.max(0, Math.min(255, Math.round(v * 255))) * 3;
  const rgb = [WEIGHT_LUT[c], WEIGHT_LUT[c + 1], WEIGHT_LUT[c + 2]];
  const l = luminance2(rgb);
  const white = 1.05 / (l + 0.05);
  const black = (l + 0.05) / 0.05;
  return { background: `rgb(${rgb.join(",")})`, color: black >= white ? "#000000" : "#ffffff" };
}
function headWords(score, l, h) {
  const off = score.offsets ? ` at offset ${score.offsets[l][h]}` : "";
  return `layer ${l + 1} head ${h + 1} ${fmt(score.grid[l][h], 2)}${off}`;
}
function strongest2(score, count = STRONGEST) {
  const all = score.grid.flatMap((row, l) => row.map((v, h) => ({ v, l, h })));
  all.sort((a, b) => b.v - a.v || a.l - b.l || a.h - b.h);
  return `${score.title}: ` + all.slice(0, count).map(({ l, h }) => headWords(score, l, h)).join(", ");
}
function spread(score) {
  const all = score.grid.flat();
  if (!all.length) return 0;
  const mean = all.reduce((a, b) => a + b, 0) / all.length;
  return Math.sqrt(all.reduce((a, v) => a + (v - mean) ** 2, 0) / all.length);
}
function mostVaried(scores) {
  return scores.reduce((best, s) => spread(s) > spread(best) ? s : best, scores[0]);
}
function buildGrid(grid, layers, heads) {
  if (grid.dataset.shape === `${layers}x${heads}`) return;
  grid.dataset.shape = `${layers}x${heads}`;
  grid.style.setProperty("--heads", String(heads));
  const cells = [el("span", { className: "atlas-corner" })];
  for (let h = 0; h < heads; h++)
    cells.push(el("span", { className: "atlas-col", textContent: `H${h + 1}`, "aria-hidden": "true" }));
  for (let l = 0; l < layers; l++) {
    cells.push(el("span", { className: "atlas-row", textContent: `L${l + 1}`, "aria-hidden": "true" }));
    for (let h = 0; h < heads; h++) {
      cells.push(
        el("button", { type: "button", className: "atlas-cell", dataset: { layer: String(l), head: String(h) } })
      );
    }
  }
  grid.replaceChildren(...cells);
}
function render2(container, data, selection, callbacks) {
  const { layers, heads, score } = data;
  let grid = (
    /** @type {HTMLElement | null} */
    container.querySelector(".atlas-grid")
  );
  if (!grid) {
    grid = el("div", { className: "atlas-grid", role: "group" });
    container.replaceChildren(el("div", { className: "atlas-scroll" }, [grid]));
  }
  grid.setAttribute("aria-label", `${score.title} of every head: layers by heads`);
  buildGrid(grid, layers, heads);
  for (
    const b of
    /** @type {NodeListOf<HTMLElement>} */
    grid.querySelectorAll("button.atlas-cell")
  ) {
    const l = Number(b.dataset.layer);
    const h = Number(b.dataset.head);
    const v = score.grid[l][h];
    const { background, color } = cellColours(v);
    b.style.background = background;
    b.style.color = color;
    b.textContent = fmt(v, 2);
    b.dataset.value = String(v);
    const words = `${score.title}, ${headWords(score, l, h)}`;
    b.setAttribute("aria-label", `${words}: open it on the probe`);
    b.title = words;
    const on = selection !== null && l === selection.layer && h === selection.head;
    b.classList.toggle("selected", on);
    b.setAttribute("aria-pressed", on ? "true" : "false");
  }
  grid.onclick = (e) => {
    const b = (
      /** @type {HTMLElement | null} */
      /** @type {HTMLElement} */
      e.target.closest("button.atlas-cell")
    );
    if (b) callbacks.onPick(Number(b.dataset.layer), Number(b.dataset.head));
  };
  gridArrows(grid, "button.atlas-cell", layers, heads);
  const scroll = (
    /** @type {HTMLElement} */
    grid.parentElement
  );
  describe(scroll, {
    summary: `Strongest heads, ${strongest2(score)}.`,
    table: matrixTable(
      `${score.title} of every head`,
      "layer",
      Array.from({ length: layers }, (_, l) => `layer ${l + 1}`),
      Array.from({ length: heads }, (_, h) => `head ${h + 1}`),
      (l, h) => score.offsets ? `${fmt(score.grid[l][h], 2)} (offset ${score.offsets[l][h]})` : fmt(score.grid[l][h], 2)
    )
  });
}

// static/js/modes/sentence/cards/atlas.js
function createAtlasCard(ctx) {
  const go = (
    /** @type {HTMLButtonElement} */
    byId("atlas-go")
  );
  const pick = (
    /** @type {HTMLSelectElement} */
    byId("atlas-score")
  );
  const status = byId("atlas-status");
  const definition = byId("atlas-definition");
  const view = byId("atlas-view");
  const probe = byId("atlas-probe");
  let shown = null;
  let opened2 = null;
  let asked2 = 0;
  let pending2 = null;
  function draw8() {
    if (!shown) return;
    const { atlas } = shown;
    const score = atlas.scores.find((s) => s.name === pick.value) ?? atlas.scores[0];
    definition.textContent = score.definition;
    render2(view, { layers: atlas.layers, heads: atlas.heads, score }, opened2, {
      onPick(layer, head) {
        opened2 = { layer, head };
        draw8();
        ctx.openHead(atlas.probe.text, layer, head);
      }
    });
  }
  function reset() {
    shown = null;
    opened2 = null;
    pending2 = null;
    asked2++;
    go.hidden = false;
    go.disabled = false;
    pick.disabled = true;
    status.textContent = "";
    definition.textContent = "";
    probe.textContent = "";
    probe.hidden = true;
    view.replaceChildren();
  }
  go.addEventListener("click", async () => {
    const model = ctx.model();
    if (!model) return;
    const mine = ++asked2;
    pending2 = model;
    go.disabled = true;
    status.textContent = `Scoring every head of ${model} on the probe…`;
    try {
      const atlas = await fetchAtlas(model);
      if (mine !== asked2) return;
      pending2 = null;
      shown = { model, atlas };
      go.hidden = true;
      pick.disabled = false;
      fillOptions(
        pick,
        atlas.scores.map((s) => [s.name, s.title]),
        mostVaried(atlas.scores).name
      );
      const p = atlas.probe;
      status.textContent = `${atlas.layers} layers × ${atlas.heads} heads, scored in ${atlas.seconds.toFixed(1)} s (kept for this model). Pick a head to open it on the probe.`;
      probe.hidden = false;
      probe.textContent = `The probe: ${p.strings} strings of ${p.half} random tokens, each repeated (seed ${p.seed}); the first is “${p.text.trim()}”.`;
      draw8();
    } catch (err) {
      if (mine !== asked2) return;
      pending2 = null;
      go.disabled = false;
      status.textContent = "";
      ctx.setError(`atlas: ${/** @type {Error} */
      err.message}`);
    }
  });
  pick.addEventListener("change", draw8);
  reset();
  return {
    sync() {
      const of = shown?.model ?? pending2;
      if (of !== null && of !== ctx.model()) reset();
    }
  };
}

// static/js/views/corpus.js
var QUERY_COLOUR = "#0072b2";
var KEY_COLOUR = "#d55e00";
var NEAREST = 5;
var NAMED = 5;
var HIT_PX = 6;
var CONTEXT = 4;
function niceTicks(lo, hi, count) {
  if (!(hi > lo) || !Number.isFinite(lo) || !Number.isFinite(hi)) return Number.isFinite(lo) ? [lo] : [];
  const raw = (hi - lo) / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const err = raw / power;
  const step = power * (err >= Math.sqrt(50) ? 10 : err >= Math.sqrt(10) ? 5 : err >= Math.SQRT2 ? 2 : 1);
  const digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const out = [];
  for (let t = Math.ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) {
    out.push(Number(t.toFixed(digits)) || 0);
  }
  return out;
}
function extent(p, pad = 0.04) {
  let [xa, xb, ya, yb] = [Infinity, -Infinity, Infinity, -Infinity];
  for (const xs of [p.qx, p.kx])
    for (const x of xs) {
      if (x < xa) xa = x;
      if (x > xb) xb = x;
    }
  for (const ys of [p.qy, p.ky])
    for (const y of ys) {
      if (y < ya) ya = y;
      if (y > yb) yb = y;
    }
  if (!Number.isFinite(xa)) [xa, xb, ya, yb] = [-1, 1, -1, 1];
  const tiny = Math.max(xb - xa, yb - ya) * 1e-3 || 1;
  return {
    cx: (xa + xb) / 2,
    cy: (ya + yb) / 2,
    wide: Math.max(xb - xa, tiny) * (1 + 2 * pad),
    tall: Math.max(yb - ya, tiny) * (1 + 2 * pad)
  };
}
function frame(p, width, height, pad = 0.04) {
  const { cx, cy, wide, tall } = extent(p, pad);
  const s = Math.min(width / wide, height / tall);
  return { x0: cx - width / 2 / s, x1: cx + width / 2 / s, y0: cy - height / 2 / s, y1: cy + height / 2 / s, scale: s };
}
function contextText(tokens, pos, around = CONTEXT) {
  const a = Math.max(0, pos - around);
  const b = Math.min(tokens.length, pos + around + 1);
  const words = tokens.slice(a, b).map((t, i) => a + i === pos ? `[${shownToken(t)}]` : shownToken(t));
  return `${a > 0 ? "… " : ""}${words.join(" ")}${b < tokens.length ? " …" : ""}`;
}
function nearest(xs, ys, x, y, count, skip = () => false) {
  const best = [];
  for (let i = 0; i < xs.length; i++) {
    if (skip(i)) continue;
    const d = (xs[i] - x) ** 2 + (ys[i] - y) ** 2;
    if (best.length === count && d >= best[best.length - 1].d) continue;
    let k = best.length;
    while (k > 0 && best[k - 1].d > d) k--;
    best.splice(k, 0, { i, d });
    if (best.length > count) best.pop();
  }
  return best.map((b) => b.i);
}
function userPoints(data) {
  const p = (
    /** @type {CorpusPoints} */
    data.points
  );
  const out = [];
  for (let i = 0; i < p.text.length; i++) if (data.texts[p.text[i]]?.user) out.push(i);
  return out;
}
function tokenOf(data, i) {
  const p = (
    /** @type {CorpusPoints} */
    data.points
  );
  return data.texts[p.text[i]].tokens[p.pos[i]];
}
function textName(data, t) {
  return data.texts[t].user ? "your sentence" : `text ${t + 1} of ${data.texts.length}`;
}
function userNearest(data) {
  const p = (
    /** @type {CorpusPoints} */
    data.points
  );
  const mine = userPoints(data);
  const others = mine.length < p.text.length;
  const own = new Set(mine);
  return mine.map((i) => ({
    i,
    key: nearest(p.kx, p.ky, p.qx[i], p.qy[i], 1, others ? (j) => own.has(j) : void 0)[0]
  }));
}
function corpusSummary(data) {
  const n = data.tokens.toLocaleString("en-US");
  const head = `${n} tokens from ${data.texts.length.toLocaleString("en-US")} text${data.texts.length === 1 ? "" : "s"}` + (data.dropped ? ` (${data.dropped.toLocaleString("en-US")} more left out by the budget)` : "");
  if (!data.points) return `${head}; no queries and keys: ${data.unavailable ?? "the model gives none"}`;
  const pairs = userNearest(data);
  if (!pairs.length) return `${head}.`;
  const p = data.points;
  const words = pairs.slice(0, NAMED).map(
    ({ i, key }) => `${shownToken(tokenOf(data, i))} → ${quotedToken(tokenOf(data, key))} (${textName(data, p.text[key])})`
  );
  const more = pairs.length > NAMED ? `, and ${pairs.length - NAMED} more` : "";
  return `${head}; your ${pairs.length} token${pairs.length === 1 ? "'s query sits" : "s' queries sit"} nearest keys of ${words.join(", ")}${more}.`;
}
function axisTitle(data, axis) {
  if (data.projection === "pca") {
    const e = data.explained?.[axis];
    return `PC${axis + 1}${e === void 0 || e === null ? "" : ` (${fmt(e * 100, 1)} %)`}`;
  }
  return `${data.projection.toUpperCase()} ${axis + 1}`;
}
function mapTitle(data) {
  return `Queries and keys of layer ${data.layer + 1} head ${data.head + 1}: ${data.tokens.toLocaleString("en-US")} tokens from ${data.texts.length.toLocaleString("en-US")} texts, ${data.projection.toUpperCase()}`;
}
function pointWords(data, i, kind) {
  const p = (
    /** @type {CorpusPoints} */
    data.points
  );
  const t = p.text[i];
  const [x, y] = kind === "q" ? [p.qx[i], p.qy[i]] : [p.kx[i], p.ky[i]];
  const [xs, ys] = kind === "q" ? [p.kx, p.ky] : [p.qx, p.qy];
  const near = nearest(xs, ys, x, y, NEAREST).map(
    (j) => `${quotedToken(tokenOf(data, j))} (${textName(data, p.text[j])})`
  );
  return `${quotedToken(tokenOf(data, i))} ${kind === "q" ? "query" : "key"}, ${textName(data, t)}, token ${p.pos[i] + 1}: x ${x}, y ${y}. Nearest ${kind === "q" ? "keys" : "queries"}: ${near.join(", ")}. In context: ${contextText(data.texts[t].tokens, p.pos[i])}`;
}
function moveCorpusCursor(key, i, kind, texts, mine) {
  const n = texts.length;
  const walk = mine.length ? mine : Array.from({ length: n }, (_, j) => j);
  const start2 = (j) => {
    while (j > 0 && texts[j - 1] === texts[j]) j--;
    return j;
  };
  switch (key) {
    case "ArrowRight":
      return { i: walk.find((j) => j > i) ?? walk[walk.length - 1], kind };
    case "ArrowLeft":
      return { i: [...walk].reverse().find((j) => j < i) ?? walk[0], kind };
    case "ArrowUp":
      return { i, kind: "q" };
    case "ArrowDown":
      return { i, kind: "k" };
    case "PageDown": {
      let j = i;
      while (j < n - 1 && texts[j] === texts[i]) j++;
      return { i: texts[j] === texts[i] ? i : j, kind };
    }
    case "PageUp": {
      const s = start2(i);
      return { i: s < i || s === 0 ? s : start2(s - 1), kind };
    }
    case "Home":
      return { i: 0, kind };
    case "End":
      return { i: n - 1, kind };
    default:
      return null;
  }
}
function circles(ctx, xs, ys, px, py, r, only) {
  ctx.beginPath();
  const each = (i) => {
    const x = px(xs[i]);
    const y = py(ys[i]);
    ctx.moveTo(x + r, y);
    ctx.arc(x, y, r, 0, 2 * Math.PI);
  };
  if (only) only.forEach(each);
  else for (let i = 0; i < xs.length; i++) each(i);
}
function render3(container, data, selection, callbacks = {}) {
  let root2 = (
    /** @type {HTMLElement & {__corpus?: any}} */
    container.querySelector(":scope > .cm")
  );
  if (!root2) {
    root2 = el("div", { className: "cm" }, [
      el("p", { className: "cm-title" }),
      el("div", { className: "cm-legend", "aria-hidden": "true" }, [
        el("span", { className: "cm-key" }, [el("span", { className: "cm-dot cm-q" }), "query"]),
        el("span", { className: "cm-key" }, [el("span", { className: "cm-dot cm-k" }), "key"]),
        el("span", { className: "cm-key" }, [
          el("span", { className: "cm-dot cm-q cm-user" }),
          el("span", { className: "cm-dot cm-k cm-user" }),
          "your sentence (labelled; a line joins a token's query and key)"
        ])
      ]),
      el("div", { className: "cm-body" }, [
        el("canvas", { className: "cm-canvas" }),
        el("div", { className: "cm-cursor", hidden: true }),
        el("div", { className: "cm-tip", hidden: true, role: "tooltip" })
      ])
    ]);
    container.replaceChildren(root2);
  }
  root2.querySelector(".cm-title").textContent = mapTitle(data);
  const body = (
    /** @type {HTMLElement} */
    root2.querySelector(".cm-body")
  );
  const canvas = (
    /** @type {HTMLCanvasElement} */
    root2.querySelector("canvas")
  );
  const tip = (
    /** @type {HTMLElement} */
    root2.querySelector(".cm-tip")
  );
  const ring = (
    /** @type {HTMLElement} */
    root2.querySelector(".cm-cursor")
  );
  const ctx = (
    /** @type {CanvasRenderingContext2D} */
    canvas.getContext("2d")
  );
  tip.hidden = ring.hidden = true;
  const p = data.points;
  if (!p) {
    canvas.hidden = true;
    container.dataset.points = "0";
    describe(body, { summary: corpusSummary(data), table: null });
    root2.__corpus = null;
    return;
  }
  canvas.hidden = false;
  const n = p.text.length;
  const mine = userPoints(data);
  const width = Math.max(260, Math.floor(root2.clientWidth || container.clientWidth || 640));
  const left = 62;
  const right = 12;
  const top = 10;
  const bottom = 46;
  const room = width - left - right;
  const span = extent(p);
  const aspect = span.tall / span.wide;
  const plotH = Math.round(Math.max(240, Math.min(600, room * aspect)));
  const plotW = Math.max(Math.min(room, 280), Math.min(room, Math.ceil(plotH / aspect)));
  const height = top + plotH + bottom;
  const f = frame(p, plotW, plotH);
  const drawnWidth = left + plotW + right;
  const px = (x) => left + (x - f.x0) * f.scale;
  const py = (y) => top + (f.y1 - y) * f.scale;
  sizeCanvas(canvas, ctx, drawnWidth, height);
  ctx.font = `11px ${FONT}`;
  ctx.strokeStyle = GRID;
  ctx.lineWidth = 1;
  ctx.fillStyle = TEXT_DIM;
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const t of niceTicks(f.x0, f.x1, Math.max(2, Math.round(plotW / 90)))) {
    const x = Math.round(px(t)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + plotH);
    ctx.stroke();
    ctx.fillText(String(t), x, top + plotH + 4);
  }
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const t of niceTicks(f.y0, f.y1, Math.max(2, Math.round(plotH / 70)))) {
    const y = Math.round(py(t)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(left, y);
    ctx.lineTo(left + plotW, y);
    ctx.stroke();
    ctx.fillText(String(t), left - 5, y);
  }
  ctx.strokeStyle = TEXT_DIM;
  ctx.strokeRect(left - 0.5, top - 0.5, plotW + 1, plotH + 1);
  ctx.font = `12px ${FONT}`;
  ctx.fillStyle = TEXT;
  ctx.textAlign = "center";
  ctx.textBaseline = "alphabetic";
  ctx.fillText(axisTitle(data, 0), left + plotW / 2, top + plotH + bottom - 6);
  ctx.save();
  ctx.translate(14, top + plotH / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText(axisTitle(data, 1), 0, 0);
  ctx.restore();
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, plotW, plotH);
  ctx.clip();
  const r = n > 5e3 ? 2 : n > 1e3 ? 2.5 : 3;
  ctx.globalAlpha = n > 5e3 ? 0.5 : 0.7;
  ctx.strokeStyle = KEY_COLOUR;
  ctx.lineWidth = 1;
  circles(ctx, p.kx, p.ky, px, py, r, null);
  ctx.stroke();
  ctx.fillStyle = QUERY_COLOUR;
  circles(ctx, p.qx, p.qy, px, py, r, null);
  ctx.fill();
  ctx.globalAlpha = 1;
  ctx.strokeStyle = "rgba(29, 35, 48, 0.35)";
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const i of mine) {
    ctx.moveTo(px(p.qx[i]), py(p.qy[i]));
    ctx.lineTo(px(p.kx[i]), py(p.ky[i]));
  }
  ctx.stroke();
  circles(ctx, p.kx, p.ky, px, py, 7, mine);
  ctx.strokeStyle = TEXT;
  ctx.lineWidth = 4.5;
  ctx.stroke();
  ctx.strokeStyle = KEY_COLOUR;
  ctx.lineWidth = 2.5;
  ctx.stroke();
  circles(ctx, p.qx, p.qy, px, py, 6, mine);
  ctx.fillStyle = QUERY_COLOUR;
  ctx.fill();
  ctx.strokeStyle = TEXT;
  ctx.lineWidth = 1.5;
  ctx.stroke();
  ctx.font = `600 12px ${FONT}`;
  ctx.textAlign = "left";
  ctx.textBaseline = "bottom";
  ctx.lineJoin = "round";
  const taken = [];
  const free = (b) => taken.every((t) => b[0] >= t[2] || b[2] <= t[0] || b[1] >= t[3] || b[3] <= t[1]);
  for (const [xs, ys] of [
    [p.qx, p.qy],
    [p.kx, p.ky]
  ]) {
    for (const i of mine) {
      const label = shownToken(tokenOf(data, i));
      const w = ctx.measureText(label).width;
      const x = px(xs[i]);
      const y = py(ys[i]) - 5;
      const box = [
        [x + 7, y - 13, x + 7 + w, y],
        [x - 7 - w, y - 13, x - 7, y]
      ].find(free);
      if (!box) continue;
      taken.push(box);
      ctx.strokeStyle = "rgba(255, 255, 255, 0.9)";
      ctx.lineWidth = 3;
      ctx.strokeText(label, box[0], y);
      ctx.fillStyle = TEXT;
      ctx.fillText(label, box[0], y);
    }
  }
  ctx.restore();
  container.dataset.points = String(n);
  container.dataset.layer = String(data.layer);
  container.dataset.head = String(data.head);
  const hit = (e) => {
    const b = canvas.getBoundingClientRect();
    const mx = e.clientX - b.left;
    const my = e.clientY - b.top;
    let found = null;
    let best = Infinity;
    const test = (i, kind, reach) => {
      const d = kind === "q" ? Math.hypot(px(p.qx[i]) - mx, py(p.qy[i]) - my) : Math.hypot(px(p.kx[i]) - mx, py(p.ky[i]) - my);
      if (d <= reach && d < best) {
        best = d;
        found = { i, kind };
      }
    };
    for (const i of mine) {
      test(i, "q", HIT_PX + 3);
      test(i, "k", HIT_PX + 3);
    }
    if (found) return found;
    for (let i = 0; i < n; i++) {
      test(i, "q", HIT_PX);
      test(i, "k", HIT_PX);
    }
    return found;
  };
  const show2 = (i, kind) => {
    const t = p.text[i];
    const [x, y] = kind === "q" ? [p.qx[i], p.qy[i]] : [p.kx[i], p.ky[i]];
    tip.hidden = ring.hidden = false;
    tip.replaceChildren(
      el("span", { className: "cm-context", textContent: contextText(data.texts[t].tokens, p.pos[i]) }),
      el("br"),
      el("span", { textContent: `${kind === "q" ? "query" : "key"} · ${textName(data, t)} · token ${p.pos[i] + 1}` }),
      el("br"),
      el("span", { className: "cm-xy", textContent: `x ${x}, y ${y}` })
    );
    const cx = px(x);
    const cy = py(y);
    tip.style.left = `${Math.max(0, Math.min(cx + 12, drawnWidth - 240))}px`;
    tip.style.top = `${cy + 14 > height - 70 ? Math.max(0, cy - 78) : cy + 14}px`;
    Object.assign(ring.style, { left: `${cx - 9}px`, top: `${cy - 9}px` });
  };
  const hide = () => {
    tip.hidden = ring.hidden = true;
  };
  canvas.onmousemove = (e) => {
    const h = hit(e);
    canvas.style.cursor = h && callbacks.onPick ? "pointer" : "";
    if (h) show2(h.i, h.kind);
    else hide();
  };
  canvas.onmouseleave = () => {
    if (document.activeElement !== canvas) hide();
  };
  canvas.onclick = (e) => {
    const h = hit(e);
    if (h) callbacks.onPick?.(p.text[h.i]);
  };
  const text = describe(body, {
    summary: corpusSummary(data),
    table: mine.length ? {
      caption: `Your sentence's tokens in the map of layer ${data.layer + 1} head ${data.head + 1}`,
      head: ["token", "query x", "query y", "key x", "key y"],
      rows: mine.map((i) => [
        `${p.pos[i] + 1}. ${shownToken(tokenOf(data, i))}`,
        String(p.qx[i]),
        String(p.qy[i]),
        String(p.kx[i]),
        String(p.ky[i])
      ])
    } : null
  });
  const c = (
    /** @type {HTMLCanvasElement & {__at?: {i: number, kind: "q" | "k"}}} */
    canvas
  );
  const at = c.__at ?? { i: mine[0] ?? 0, kind: (
    /** @type {"q" | "k"} */
    "q"
  ) };
  if (at.i >= n) at.i = mine[0] ?? 0;
  c.__at = at;
  canvas.tabIndex = 0;
  canvas.setAttribute("role", "application");
  canvas.setAttribute(
    "aria-label",
    `${mapTitle(data)}. Left and Right walk your sentence's tokens, Up and Down switch between query and key, Page Up and Page Down go a text at a time, Home and End go to the set's first and last; Enter opens the point's text in the views above.`
  );
  canvas.setAttribute("aria-describedby", text.summary.id);
  const say = () => {
    text.live.textContent = pointWords(data, at.i, at.kind);
    show2(at.i, at.kind);
  };
  canvas.onfocus = say;
  canvas.onblur = hide;
  canvas.onkeydown = (e) => {
    if ((e.key === "Enter" || e.key === " ") && callbacks.onPick) {
      e.preventDefault();
      callbacks.onPick(p.text[at.i]);
      return;
    }
    const to = moveCorpusCursor(e.key, at.i, at.kind, p.text, mine);
    if (!to) return;
    e.preventDefault();
    Object.assign(at, to);
    say();
  };
  root2.__corpus = {
    frame: f,
    left,
    top,
    plotW,
    plotH,
    width: drawnWidth,
    height,
    selection,
    axes: [axisTitle(data, 0), axisTitle(data, 1)]
  };
}

// static/js/views/headclusters.js
var LABEL_PX = 11;
var BAR = 58;
var MAX_SIDE = 620;
var LISTED = 12;
function headName(index, heads) {
  return `L${Math.floor(index / heads) + 1} H${index % heads + 1}`;
}
function runs2(c) {
  const out = [];
  c.order.forEach((h, k) => {
    const label = c.labels[h];
    const last = out[out.length - 1];
    if (last && last.label === label) last.end = k + 1;
    else out.push({ label, start: k, end: k + 1 });
  });
  return out;
}
function members(c) {
  const count = Math.max(0, ...c.labels) + 1;
  const out = Array.from({ length: count }, () => []);
  for (const h of c.order) out[c.labels[h]].push(h);
  return out;
}
function closestPair(c) {
  let best = null;
  for (let i = 0; i < c.order.length; i++) {
    for (let j = i + 1; j < c.order.length; j++) {
      const v = c.similarity[i][j];
      if (best === null || v > best.v) best = { i, j, v };
    }
  }
  return best;
}
function clustersSummary(c, shown) {
  const n = c.order.length;
  const groups = members(c);
  let line = `${n} heads in ${groups.length} cluster${groups.length === 1 ? "" : "s"} by ${c.measure}`;
  if (shown) {
    const me = shown.layer * c.heads + shown.head;
    const g = c.labels[me];
    const others = groups[g].filter((h) => h !== me);
    const named = others.slice(0, LISTED).map((h) => headName(h, c.heads)).join(", ");
    line += `; ${headName(me, c.heads)}, shown in the map, is in cluster ${g + 1}` + (others.length ? ` with ${named}${others.length > LISTED ? ` and ${others.length - LISTED} more` : ""}` : ", alone");
  }
  const pair = closestPair(c);
  if (pair) {
    line += `; the most similar pair: ${headName(c.order[pair.i], c.heads)} and ${headName(c.order[pair.j], c.heads)} (${pair.v})`;
  }
  return `${line}.`;
}
function similarityColour(v, signed2) {
  const lut = signed2 ? SCORE_LUT : WEIGHT_LUT;
  const t = signed2 ? (Math.max(-1, Math.min(1, v)) + 1) / 2 : Math.max(0, Math.min(1, v));
  const c = Math.round(t * 255) * 3;
  return [lut[c], lut[c + 1], lut[c + 2]];
}
function render4(container, data, selection, callbacks = {}) {
  let root2 = (
    /** @type {HTMLElement & {__clusters?: any}} */
    container.querySelector(":scope > .hcl")
  );
  if (!root2) {
    root2 = el("div", { className: "hcl" }, [
      el("p", { className: "hcl-title" }),
      el("p", { className: "hcl-measure hint" }),
      el("div", { className: "hcl-body" }, [
        el("canvas", { className: "hcl-canvas" }),
        el("div", { className: "hcl-cursor", hidden: true }),
        el("div", { className: "hcl-tip", hidden: true, role: "tooltip" })
      ]),
      el("ol", { className: "hcl-list", "aria-label": "The clusters" })
    ]);
    container.replaceChildren(root2);
  }
  const c = data;
  const n = c.order.length;
  const signed2 = c.similarity.some((row) => row.some((v) => v < 0));
  const groups = members(c);
  root2.querySelector(".hcl-title").textContent = `${n} heads' similarity in the dendrogram's order, ${groups.length} cluster${groups.length === 1 ? "" : "s"} outlined`;
  root2.querySelector(".hcl-measure").textContent = `Similarity: ${c.measure}.`;
  const body = (
    /** @type {HTMLElement} */
    root2.querySelector(".hcl-body")
  );
  const canvas = (
    /** @type {HTMLCanvasElement} */
    root2.querySelector("canvas")
  );
  const tip = (
    /** @type {HTMLElement} */
    root2.querySelector(".hcl-tip")
  );
  const cursor = (
    /** @type {HTMLElement} */
    root2.querySelector(".hcl-cursor")
  );
  const ctx = (
    /** @type {CanvasRenderingContext2D} */
    canvas.getContext("2d")
  );
  const names2 = c.order.map((h) => headName(h, c.heads));
  const me = selection ? selection.layer * c.heads + selection.head : -1;
  const mine = c.order.indexOf(me);
  const width = Math.max(260, Math.floor(root2.clientWidth || container.clientWidth || 600));
  const font = n <= 40 ? 11 : 10;
  ctx.font = `${font}px ${FONT}`;
  const labelW = Math.ceil(Math.max(...names2.map((s) => ctx.measureText(s).width), 10)) + 8;
  const left = labelW + 4;
  const side = Math.max(120, Math.min(MAX_SIDE, width - left - BAR - 8));
  const cell = side / n;
  const every = Math.max(1, Math.ceil(LABEL_PX / cell));
  const top = 4;
  const bottom = Math.ceil(labelW * 0.77) + 10;
  const height = top + side + bottom;
  const wide = left + side + BAR;
  sizeCanvas(canvas, ctx, wide, height);
  const img = new ImageData(n, n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const [r, g, b] = similarityColour(c.similarity[i][j], signed2);
      const o = (i * n + j) * 4;
      img.data[o] = r;
      img.data[o + 1] = g;
      img.data[o + 2] = b;
      img.data[o + 3] = 255;
    }
  }
  const src = document.createElement("canvas");
  src.width = src.height = n;
  src.getContext("2d").putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(src, left, top, side, side);
  ctx.strokeStyle = GRID;
  ctx.lineWidth = 1;
  ctx.strokeRect(left - 0.5, top - 0.5, side + 1, side + 1);
  for (const run of runs2(c)) {
    const x = left + run.start * cell;
    const w = (run.end - run.start) * cell;
    ctx.strokeStyle = "#ffffff";
    ctx.lineWidth = 3.5;
    ctx.strokeRect(x, top + run.start * cell, w, w);
    ctx.strokeStyle = TEXT;
    ctx.lineWidth = 1.5;
    ctx.strokeRect(x, top + run.start * cell, w, w);
  }
  if (mine >= 0) {
    ctx.strokeStyle = SELECTED;
    ctx.lineWidth = 2;
    ctx.strokeRect(left + 1, top + mine * cell, side - 2, Math.max(2, cell));
    ctx.strokeRect(left + mine * cell, top + 1, Math.max(2, cell), side - 2);
  }
  ctx.textBaseline = "middle";
  names2.forEach((s, k) => {
    const on = k === mine;
    if (!on && (k % every !== 0 || mine >= 0 && Math.abs(k - mine) < every)) return;
    ctx.font = `${on ? "bold " : ""}${font}px ${FONT}`;
    ctx.fillStyle = on ? SELECTED : TEXT;
    ctx.textAlign = "right";
    ctx.fillText(s, left - 4, top + (k + 0.5) * cell);
    ctx.save();
    ctx.translate(left + (k + 0.5) * cell, top + side + 5);
    ctx.rotate(-50 * Math.PI / 180);
    ctx.fillText(s, 0, 0);
    ctx.restore();
  });
  const bx = left + side + 10;
  for (let y = 0; y < side; y++) {
    const t = 1 - y / Math.max(1, side - 1);
    const [r, g, b] = similarityColour(signed2 ? 2 * t - 1 : t, signed2);
    ctx.fillStyle = `rgb(${r},${g},${b})`;
    ctx.fillRect(bx, top + y, 12, 1);
  }
  ctx.fillStyle = TEXT_DIM;
  ctx.font = `11px ${FONT}`;
  ctx.textAlign = "left";
  for (const t of [0, 0.5, 1]) ctx.fillText(String(signed2 ? 2 * t - 1 : t), bx + 16, top + (1 - t) * side);
  root2.querySelector(".hcl-list").replaceChildren(
    ...groups.map(
      (g, k) => el("li", { className: g.includes(me) ? "hcl-mine" : "" }, [
        el("b", { textContent: `cluster ${k + 1}` }),
        ` (${g.length} head${g.length === 1 ? "" : "s"}): `,
        g.map((h) => headName(h, c.heads)).join(", ")
      ])
    )
  );
  const at = (e) => {
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left - left;
    const y = e.clientY - r.top - top;
    if (x < 0 || y < 0 || x >= side || y >= side) return null;
    return [Math.min(n - 1, Math.floor(y / cell)), Math.min(n - 1, Math.floor(x / cell))];
  };
  const words = (i, j) => `${names2[i]} and ${names2[j]}: similarity ${c.similarity[i][j]} (cluster ${c.labels[c.order[i]] + 1}, cluster ${c.labels[c.order[j]] + 1})`;
  const show2 = (i, j) => {
    tip.hidden = cursor.hidden = false;
    tip.replaceChildren(
      el("span", { textContent: `${names2[i]} · ${names2[j]}` }),
      el("br"),
      el("span", { textContent: `similarity ${c.similarity[i][j]}` }),
      el("br"),
      el("span", { textContent: `clusters ${c.labels[c.order[i]] + 1} and ${c.labels[c.order[j]] + 1}` }),
      ...callbacks.onPick ? [el("br"), el("span", { className: "hcl-do", textContent: `click: ${names2[i]} in the map` })] : []
    );
    tip.style.left = `${Math.min(left + (j + 1) * cell + 10, Math.max(0, wide - 180))}px`;
    tip.style.top = `${top + (i + 1) * cell + 8}px`;
    Object.assign(cursor.style, {
      left: `${left + j * cell}px`,
      top: `${top + i * cell}px`,
      width: `${Math.max(3, cell)}px`,
      height: `${Math.max(3, cell)}px`
    });
  };
  const hide = () => {
    tip.hidden = cursor.hidden = true;
  };
  hide();
  const pick = (i) => {
    const h = c.order[i];
    callbacks.onPick?.(Math.floor(h / c.heads), h % c.heads);
  };
  canvas.onmousemove = (e) => {
    const ij = at(e);
    canvas.style.cursor = ij && callbacks.onPick ? "pointer" : "";
    if (ij) show2(ij[0], ij[1]);
    else hide();
  };
  canvas.onmouseleave = () => {
    if (document.activeElement !== canvas) hide();
  };
  canvas.onclick = (e) => {
    const ij = at(e);
    if (ij) pick(ij[0]);
  };
  const pair = closestPair(c);
  const text = describe(body, {
    summary: clustersSummary(c, selection),
    table: {
      caption: "Each head's cluster and the head most similar to it",
      head: ["head", "cluster", "most similar head", "similarity"],
      rows: c.order.map((h, i) => {
        let best = -1;
        for (let j = 0; j < n; j++) if (j !== i && (best < 0 || c.similarity[i][j] > c.similarity[i][best])) best = j;
        return [
          names2[i],
          String(c.labels[h] + 1),
          best >= 0 ? names2[best] : "–",
          best >= 0 ? String(c.similarity[i][best]) : "–"
        ];
      })
    }
  });
  keyCursor(canvas, text.live, {
    rows: n,
    cols: n,
    describedBy: text.summary.id,
    label: `Heads' similarity matrix, ${n} × ${n} in the dendrogram's order. Arrow keys move between cells; Enter shows the row's head in the map.`,
    text: words,
    show: show2,
    hide,
    pick: callbacks.onPick ? (i) => pick(i) : void 0
  });
  root2.__clusters = { geometry: { left, top, side, cell }, order: c.order, pair };
}

// static/js/modes/sentence/cards/corpus.js
var SOURCES = (
  /** @type {const} */
  {
    examples: "the model's examples",
    docs: "Python's documentation",
    upload: "a file"
  }
);
function defaultCorpusState() {
  return {
    source: (
      /** @type {CorpusSource} */
      "docs"
    ),
    upload: (
      /** @type {string | null} */
      null
    ),
    max_tokens: 0,
    seed: 0,
    projection: "pca",
    clusters: 6,
    layer: 0,
    head: 0
  };
}
function charCount(text) {
  return [...text].length;
}
function corpusBody(s, text) {
  return {
    source: s.source,
    ...s.source === "upload" ? { upload: s.upload } : {},
    ...text.trim() ? { text } : {},
    layer: s.layer,
    head: s.head,
    projection: s.projection,
    seed: s.seed,
    max_tokens: s.max_tokens,
    clusters: s.clusters
  };
}
function createCorpusCard(ctx) {
  const card = byId("corpus-card");
  const go = (
    /** @type {HTMLButtonElement} */
    byId("corpus-go")
  );
  const source = (
    /** @type {HTMLSelectElement} */
    byId("corpus-source")
  );
  const fileBox = byId("corpus-file-box");
  const file = (
    /** @type {HTMLInputElement} */
    byId("corpus-file")
  );
  const budget = (
    /** @type {HTMLInputElement} */
    byId("corpus-budget")
  );
  const projection = (
    /** @type {HTMLSelectElement} */
    byId("corpus-projection")
  );
  const clusters = (
    /** @type {HTMLInputElement} */
    byId("corpus-clusters")
  );
  const seed = (
    /** @type {HTMLInputElement} */
    byId("corpus-seed")
  );
  const layer = (
    /** @type {HTMLSelectElement} */
    byId("corpus-layer")
  );
  const head = (
    /** @type {HTMLSelectElement} */
    byId("corpus-head")
  );
  const status = byId("corpus-status");
  const note = byId("corpus-note");
  const view = byId("corpus-view");
  const heads = byId("corpus-heads");
  const headsBox = byId("corpus-heads-box");
  const s = defaultCorpusState();
  let shown = null;
  let model = null;
  let touched = false;
  let asked2 = 0;
  let answers = 0;
  let running = null;
  const limits = () => ctx.models()?.corpus ?? null;
  function draw8(keys = Object.values(CORPUS_FEEDS).flat()) {
    if (!shown) return;
    const a = shown.answer;
    const which = viewsFed(CORPUS_FEEDS, keys);
    if (which.includes("corpus")) {
      render3(
        view,
        a,
        { layer: a.layer, head: a.head },
        {
          onPick: (t) => ctx.openHead(a.texts[t].text, a.layer, a.head)
        }
      );
    }
    if (which.includes("headclusters")) {
      headsBox.hidden = false;
      render4(
        heads,
        a.clusters,
        { layer: a.layer, head: a.head },
        {
          onPick(l, h) {
            touched = true;
            s.layer = l;
            s.head = h;
            layer.value = String(l);
            head.value = String(h);
            ask2(["layer", "head"]);
          }
        }
      );
    }
  }
  function reset() {
    shown = null;
    asked2++;
    running?.abort();
    running = null;
    card.removeAttribute("aria-busy");
    go.hidden = false;
    status.textContent = "";
    note.textContent = "";
    view.replaceChildren();
    delete view.dataset.points;
    heads.replaceChildren();
    headsBox.hidden = true;
    ready();
  }
  function ready() {
    const lim = limits();
    const why = !lim ? "This server does not place texts." : s.source === "upload" && s.upload === null ? "Pick a file first: one text per line." : "";
    go.disabled = Boolean(why) || !ctx.model();
    if (!shown) status.textContent = why;
  }
  function said(a) {
    const t = a.seconds;
    return `${a.tokens.toLocaleString("en-US")} tokens from ${a.texts.length.toLocaleString("en-US")} texts${a.cut ? " (cut at the budget)" : ""}: run in ${t.run.toFixed(2)} s${a.cached ? " (the set's run was kept)" : ""}, projected in ${t.project.toFixed(2)} s, heads clustered in ${t.cluster.toFixed(2)} s. Hover or focus a point; click one (or press Enter) to open its text above.`;
  }
  async function ask2(keys) {
    const name = ctx.model();
    if (!name) return;
    const mine = ++asked2;
    running?.abort();
    const controller = new AbortController();
    running = controller;
    go.disabled = true;
    card.setAttribute("aria-busy", "true");
    status.textContent = `Placing your sentence among up to ${s.max_tokens.toLocaleString("en-US")} tokens of ${SOURCES[s.source]} at layer ${s.layer + 1} head ${s.head + 1}…`;
    try {
      const answer = await fetchCorpus(name, corpusBody(s, ctx.text()), controller.signal);
      if (mine !== asked2) return;
      shown = { model: name, answer };
      go.hidden = true;
      status.textContent = said(answer);
      const tr = answer.transform;
      note.textContent = tr ? `How the keys were moved before projecting: ${tr.note} Here the shift's norm is ${tr.key_shift}, s = ${tr.scale}.` : "";
      draw8(keys);
      card.dataset.answers = String(++answers);
    } catch (err) {
      if (mine !== asked2 || /** @type {Error} */
      err.name === "AbortError") return;
      status.textContent = "";
      ctx.setError(`corpus: ${/** @type {Error} */
      err.message}`);
    } finally {
      if (mine === asked2) {
        running = null;
        card.removeAttribute("aria-busy");
        ready();
      }
    }
  }
  function sync() {
    const name = ctx.model();
    const info = ctx.info();
    const lim = limits();
    if (name !== model) {
      model = name;
      touched = false;
      reset();
    }
    if (lim) {
      budget.min = "16";
      budget.max = String(lim.max_tokens);
      if (!s.max_tokens) s.max_tokens = lim.default_tokens;
      budget.value = String(s.max_tokens);
      if (lim.max_clusters) clusters.max = String(lim.max_clusters);
      fillOptions(
        projection,
        lim.projections.map((p) => [p, p.toUpperCase()]),
        s.projection
      );
      s.projection = projection.value;
      file.title = `At most ${lim.max_chars.toLocaleString("en-US")} characters, one text per line`;
    }
    if (info) {
      if (!touched && !shown) Object.assign(s, ctx.selection());
      s.layer = Math.min(s.layer, info.layers - 1);
      s.head = Math.min(s.head, info.heads - 1);
      fillIndexSelect(layer, info.layers, "layer", s.layer);
      fillIndexSelect(head, info.heads, "head", s.head);
    }
    ready();
  }
  function newSet() {
    reset();
  }
  source.addEventListener("change", () => {
    s.source = /** @type {CorpusSource} */
    source.value;
    fileBox.hidden = s.source !== "upload";
    newSet();
  });
  file.addEventListener("change", () => {
    const picked = file.files?.[0];
    const lim = limits();
    s.upload = null;
    newSet();
    if (!picked || !lim) return;
    if (picked.size > 4 * lim.max_chars) {
      ctx.setError(
        `upload: the file has ${picked.size.toLocaleString("en-US")} bytes; at most ${lim.max_chars.toLocaleString("en-US")} characters`
      );
      return;
    }
    const reader = new FileReader();
    reader.onload = () => {
      const text = String(reader.result ?? "");
      const n = charCount(text);
      if (n > lim.max_chars) {
        ctx.setError(
          `upload: the file has ${n.toLocaleString("en-US")} characters; at most ${lim.max_chars.toLocaleString("en-US")}`
        );
        return;
      }
      s.upload = text;
      const lines = text.split(/\r?\n/).filter((l) => l.trim()).length;
      ready();
      status.textContent = `${picked.name}: ${lines.toLocaleString("en-US")} text${lines === 1 ? "" : "s"} (one per non-empty line), ${n.toLocaleString("en-US")} characters.`;
    };
    reader.onerror = () => ctx.setError(`upload: could not read ${picked.name}`);
    reader.readAsText(picked);
  });
  budget.addEventListener("change", () => {
    s.max_tokens = Math.round(Number(budget.value));
    newSet();
  });
  seed.addEventListener("change", () => {
    s.seed = Math.round(Number(seed.value));
    newSet();
  });
  projection.addEventListener("change", () => {
    s.projection = projection.value;
    if (shown) ask2(["projection"]);
  });
  clusters.addEventListener("change", () => {
    s.clusters = Math.round(Number(clusters.value));
    if (shown) ask2(["clusters"]);
  });
  for (
    const [select2, key] of
    /** @type {[HTMLSelectElement, "layer" | "head"][]} */
    [
      [layer, "layer"],
      [head, "head"]
    ]
  ) {
    select2.addEventListener("change", () => {
      touched = true;
      s[key] = Number(select2.value);
      if (shown) ask2([key]);
    });
  }
  go.addEventListener("click", () => {
    if (!touched) {
      Object.assign(s, ctx.selection());
      layer.value = String(s.layer);
      head.value = String(s.head);
    }
    ask2(Object.values(CORPUS_FEEDS).flat());
  });
  let resizeTimer;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => draw8(), 200);
  });
  fileBox.hidden = true;
  source.value = s.source;
  seed.value = String(s.seed);
  clusters.value = String(s.clusters);
  reset();
  return { sync };
}

// static/js/views/modelview.js
function coverage(s, out) {
  return Array.from({ length: out }, (_, p) => {
    const from = Math.floor(p * s / out);
    return [from, Math.max(from + 1, Math.ceil((p + 1) * s / out))];
  });
}
function thumbImage(thumbs, layer, head, peak = false, out, top = 1) {
  const [, H, s] = thumbs.values.shape;
  const k = layer * H + head;
  const scale = peak ? 1 : thumbs.scale.data[k] / top;
  const pixels = thumbs.values.data.subarray(k * s * s, (k + 1) * s * s);
  const size = out && out < s ? out : s;
  const spans = coverage(s, size);
  const img = new ImageData(size, size);
  for (let y = 0; y < size; y++) {
    const [r0, r1] = spans[y];
    for (let x = 0; x < size; x++) {
      const [c0, c1] = spans[x];
      let v = 0;
      for (let r = r0; r < r1; r++) for (let c2 = c0; c2 < c1; c2++) v = Math.max(v, pixels[r * s + c2]);
      const c = Math.min(255, Math.round(v * scale)) * 3;
      const p = (y * size + x) * 4;
      img.data[p] = WEIGHT_LUT[c];
      img.data[p + 1] = WEIGHT_LUT[c + 1];
      img.data[p + 2] = WEIGHT_LUT[c + 2];
      img.data[p + 3] = 255;
    }
  }
  return img;
}
function paint(canvas, thumbs, layer, head, size, peak = false, top = 1) {
  const px = size ?? Math.max(8, Math.round(canvas.clientWidth * (window.devicePixelRatio || 1)));
  if (canvas.width !== px) {
    canvas.width = px;
    canvas.height = px;
  }
  const img = thumbImage(thumbs, layer, head, peak, px, top);
  const ctx = (
    /** @type {CanvasRenderingContext2D} */
    canvas.getContext("2d")
  );
  if (img.width === px) {
    ctx.putImageData(img, 0, 0);
    return;
  }
  const src = document.createElement("canvas");
  src.width = img.width;
  src.height = img.height;
  src.getContext("2d").putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(src, 0, 0, px, px);
}
function buildGrid2(grid, layers, heads, onSelect) {
  if (grid.dataset.shape !== `${layers}x${heads}`) {
    grid.dataset.shape = `${layers}x${heads}`;
    grid.style.setProperty("--heads", String(heads));
    const cells = [el("span", { className: "mv-corner" })];
    for (let h = 0; h < heads; h++) cells.push(el("span", { className: "mv-col", textContent: `H${h + 1}` }));
    for (let l = 0; l < layers; l++) {
      cells.push(el("span", { className: "mv-row", textContent: `L${l + 1}` }));
      for (let h = 0; h < heads; h++) {
        cells.push(
          el(
            "button",
            {
              type: "button",
              className: "mv-cell",
              dataset: { layer: String(l), head: String(h) },
              "aria-label": `layer ${l + 1}, head ${h + 1}`
            },
            [el("canvas")]
          )
        );
      }
    }
    grid.replaceChildren(...cells);
  }
  grid.onclick = (e) => {
    const b = (
      /** @type {HTMLElement | null} */
      /** @type {HTMLElement} */
      e.target.closest("button.mv-cell")
    );
    if (b) onSelect(Number(b.dataset.layer), Number(b.dataset.head));
  };
  gridArrows(grid, "button.mv-cell", layers, heads);
}
function render5(grid, data, sel, callbacks) {
  const { layers, heads, thumbs, entropy } = data;
  buildGrid2(grid, layers, heads, callbacks.onSelect);
  const g = (
    /** @type {any} */
    grid
  );
  const cells = (
    /** @type {NodeListOf<HTMLElement>} */
    grid.querySelectorAll("button.mv-cell")
  );
  const first = (
    /** @type {HTMLCanvasElement | null} */
    cells[0]?.firstChild ?? null
  );
  const px = Math.max(8, Math.round((first?.clientWidth ?? 0) * (window.devicePixelRatio || 1)));
  const peak = Boolean(sel.peak);
  const top = sel.top ?? 1;
  const same2 = g.__thumbs?.values === thumbs.values && g.__painted === `${px}:${peak}:${top}`;
  g.__thumbs = thumbs;
  g.__painted = `${px}:${peak}:${top}`;
  const unit = sel.unit ? `, ${sel.unit}` : "";
  for (const b of cells) {
    const l = Number(b.dataset.layer);
    const h = Number(b.dataset.head);
    if (!same2) paint(
      /** @type {HTMLCanvasElement} */
      b.firstChild,
      thumbs,
      l,
      h,
      px,
      peak,
      top
    );
    b.setAttribute("aria-label", `layer ${l + 1}, head ${h + 1}${unit}`);
    const on = l === sel.layer && h === sel.head;
    b.classList.toggle("selected", on);
    b.setAttribute("aria-pressed", on ? "true" : "false");
    b.title = `layer ${l + 1}, head ${h + 1}`;
  }
  if (entropy) titles(grid, entropy);
}
function titles(grid, entropy) {
  const heads = entropy.shape[1];
  for (
    const b of
    /** @type {NodeListOf<HTMLElement>} */
    grid.querySelectorAll("button.mv-cell")
  ) {
    const l = Number(b.dataset.layer);
    const h = Number(b.dataset.head);
    b.title = `layer ${l + 1}, head ${h + 1}: mean entropy ${fmt(entropy.data[l * heads + h], 2)} nats`;
  }
}
function gridPng(data, peak = false, top = 1) {
  const cell = 64;
  const gap = 4;
  const pad = 28;
  const { layers, heads, thumbs } = data;
  const canvas = document.createElement("canvas");
  canvas.width = pad + heads * (cell + gap);
  canvas.height = pad + layers * (cell + gap);
  const ctx = (
    /** @type {CanvasRenderingContext2D} */
    canvas.getContext("2d")
  );
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = TEXT_DIM;
  ctx.font = "12px system-ui, sans-serif";
  ctx.textAlign = "center";
  for (let h = 0; h < heads; h++) ctx.fillText(`H${h + 1}`, pad + h * (cell + gap) + cell / 2, 18);
  ctx.textAlign = "left";
  for (let l = 0; l < layers; l++) {
    ctx.fillText(`L${l + 1}`, 2, pad + l * (cell + gap) + cell / 2 + 4);
    for (let h = 0; h < heads; h++) {
      const c = document.createElement("canvas");
      paint(c, thumbs, l, h, cell, peak, top);
      ctx.drawImage(c, pad + h * (cell + gap), pad + l * (cell + gap), cell, cell);
    }
  }
  return canvas.toDataURL("image/png");
}
function sinkNote(matrix, labels, rowsSumToOne, groups = null, special = null) {
  const m = matrix.shape[0];
  if (!rowsSumToOne || m < 3) return "";
  let best = -1;
  let top = 0;
  for (let j = 0; j < m; j++) {
    let sum = 0;
    for (let i = 0; i < m; i++) if (i !== j) sum += matrix.data[i * m + j];
    const mean = sum / (m - 1);
    if (mean > top) [best, top] = [j, mean];
  }
  if (top < 0.5) return "";
  const tokens = groups ? groups[best] : [best];
  const [first, last] = [tokens[0], tokens[tokens.length - 1]];
  const where = first === 0 ? "the first token" : tokens.length > 1 ? `tokens ${first + 1}–${last + 1}` : `token ${first + 1}`;
  const share2 = `on average ${Math.round(100 * top)}% of each other row's weight goes to ${where}, ${quotedToken(labels[best])}.`;
  const punctuation = /^[\s\p{P}\p{S}]+$/u.test(labels[best]);
  if (first !== 0 && !punctuation && !tokens.some((t) => special?.[t])) {
    return `One token draws this head: ${share2} It is a word of the text, so the head reads it for what it says; it is not an attention sink, a token (the first, [CLS], [SEP], punctuation) that draws weight whatever the text.`;
  }
  return `An attention sink: ${share2} Softmax must give each row's weight to some token; models learn to park what a head does not need on a token every query can see (in a causal model, the first is the only one), and often keep that token's value vector small, so the parked weight changes little. Much weight on it does not mean it matters.`;
}
function thumbsTop(thumbs) {
  let top = 0;
  for (const v of thumbs.scale.data) if (v > top) top = v;
  return top > 0 ? top : 1;
}

// static/js/modes/sentence/cards/gen.js
var gen_exports = {};
__export(gen_exports, {
  draw: () => draw2,
  wire: () => wire
});

// static/js/views/heatcanvas.js
var LABEL_PX2 = 11;
var BAR2 = 66;
var MAX_SIDE2 = 760;
var TABLE_MAX = 400;
function widest(ctx, labels, font) {
  ctx.font = `${font}px ${FONT}`;
  let w = 0;
  for (const s of labels) w = Math.max(w, ctx.measureText(s).width);
  return w;
}
function image(matrix, top) {
  const [R, C] = matrix.shape;
  const img = new ImageData(C, R);
  const z = matrix.data;
  for (let p = 0; p < R * C; p++) {
    const c = Math.round(Math.min(1, Math.max(0, z[p] / top)) * 255) * 3;
    img.data[p * 4] = WEIGHT_LUT[c];
    img.data[p * 4 + 1] = WEIGHT_LUT[c + 1];
    img.data[p * 4 + 2] = WEIGHT_LUT[c + 2];
    img.data[p * 4 + 3] = 255;
  }
  return img;
}
function render6(container, data, sel = {}, callbacks = {}) {
  let root2 = (
    /** @type {HTMLElement & {__heat?: any}} */
    container.querySelector(":scope > .hc")
  );
  if (!root2) {
    root2 = el("div", { className: "hc" }, [
      el("p", { className: "hc-title" }),
      el("div", { className: "hc-body" }, [
        el("canvas", { className: "hc-canvas" }),
        el("div", { className: "hc-cursor", hidden: true }),
        el("div", { className: "hc-tip", hidden: true, role: "tooltip" })
      ])
    ]);
    container.replaceChildren(root2);
  }
  const { matrix, title } = data;
  const labels = data.labels.map(shownToken);
  const rowLabels = (data.rowLabels ?? data.labels).map(shownToken);
  const spokenCols = data.labels.map(spokenToken);
  const spokenRows = (data.rowLabels ?? data.labels).map(spokenToken);
  const [rowAxis, colAxis] = data.axes ?? ["query", "key"];
  const R = matrix.shape[0];
  const C = matrix.shape[1] ?? R;
  const m = Math.max(R, C);
  root2.querySelector(".hc-title").textContent = title;
  const canvas = (
    /** @type {HTMLCanvasElement} */
    root2.querySelector("canvas")
  );
  const ctx = (
    /** @type {CanvasRenderingContext2D} */
    canvas.getContext("2d")
  );
  const width = Math.max(260, root2.clientWidth || container.clientWidth || 600);
  const font = m <= 16 ? 13 : m <= 40 ? 11 : 10;
  const fit = (w) => Math.max(120, Math.min(MAX_SIDE2, width - (w + 18) - BAR2 - 8));
  const allW = Math.min(160, Math.ceil(widest(ctx, [...labels, ...rowLabels], font)) + 10);
  const every = Math.max(1, Math.ceil(LABEL_PX2 / (fit(allW) / m)));
  const shown = labels.map((s, i) => i % every === 0 ? s : "");
  const shownRows = rowLabels.map((s, i) => i % every === 0 ? s : "");
  const labelW = Math.min(160, Math.ceil(widest(ctx, [...shown, ...shownRows], font)) + 10);
  const left = labelW + 18;
  const cell = fit(labelW) / m;
  const side = C * cell;
  const tall = R * cell;
  const bottom = Math.min(150, Math.ceil(labelW * 0.77) + 24);
  const top = 6;
  const barH = Math.max(tall, 64);
  const height = top + Math.max(tall + bottom, barH + 14);
  const wide = left + Math.max(side, 120) + BAR2;
  sizeCanvas(canvas, ctx, wide, height);
  let vmax = 1;
  if (sel.peak) {
    vmax = 0;
    for (const v of matrix.data) if (v > vmax) vmax = v;
    if (!(vmax > 0)) vmax = 1;
  }
  const src = document.createElement("canvas");
  src.width = C;
  src.height = R;
  src.getContext("2d").putImageData(image(matrix, vmax), 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(src, left, top, side, tall);
  ctx.strokeStyle = GRID;
  ctx.strokeRect(left - 0.5, top - 0.5, side + 1, tall + 1);
  ctx.fillStyle = TEXT;
  ctx.font = `${font}px ${FONT}`;
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  const q = sel.query ?? -1;
  shownRows.forEach((s, i) => {
    if (i !== q && (!s || q >= 0 && Math.abs(i - q) < every)) return;
    ctx.font = `${i === q ? "bold " : ""}${font}px ${FONT}`;
    ctx.fillText(rowLabels[i], left - 6, top + (i + 0.5) * cell, labelW);
  });
  ctx.font = `${font}px ${FONT}`;
  shown.forEach((s, j) => {
    if (!s) return;
    ctx.save();
    ctx.translate(left + (j + 0.5) * cell, top + tall + 6);
    ctx.rotate(-50 * Math.PI / 180);
    ctx.textAlign = "right";
    ctx.fillText(s, 0, 0, labelW);
    ctx.restore();
  });
  ctx.fillStyle = TEXT_DIM;
  ctx.font = `12px ${FONT}`;
  ctx.textAlign = "center";
  ctx.fillText(colAxis, left + side / 2, top + tall + bottom - 8);
  ctx.save();
  ctx.translate(10, top + tall / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText(rowAxis, 0, 0);
  ctx.restore();
  if (q >= 0 && q < R) {
    ctx.strokeStyle = TEXT;
    ctx.lineWidth = 1;
    ctx.strokeRect(left + 0.5, top + q * cell + 0.5, side - 1, Math.max(1, cell - 1));
  }
  const bx = left + Math.max(side, 120) + 12;
  for (let y = 0; y < barH; y++) {
    const c = Math.round((1 - y / Math.max(1, barH - 1)) * 255) * 3;
    ctx.fillStyle = `rgb(${WEIGHT_LUT[c]},${WEIGHT_LUT[c + 1]},${WEIGHT_LUT[c + 2]})`;
    ctx.fillRect(bx, top + y, 12, 1);
  }
  ctx.fillStyle = TEXT_DIM;
  ctx.font = `11px ${FONT}`;
  ctx.textAlign = "left";
  for (const t of [0, 0.5, 1]) ctx.fillText(vmax === 1 ? String(t) : fmt(t * vmax, 3), bx + 16, top + (1 - t) * barH);
  const tip = (
    /** @type {HTMLElement} */
    root2.querySelector(".hc-tip")
  );
  const cursor = (
    /** @type {HTMLElement} */
    root2.querySelector(".hc-cursor")
  );
  const at = (e) => {
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left - left;
    const y = e.clientY - r.top - top;
    if (x < 0 || y < 0 || x >= side || y >= tall) return null;
    return [Math.min(R - 1, Math.floor(y / cell)), Math.min(C - 1, Math.floor(x / cell))];
  };
  const unit = data.unit ?? "weight";
  const value = (v) => data.approx ? `≈ ${fmt(v, 2)} (8-bit)` : exact(v, matrix.dtype);
  const show2 = (i, j) => {
    tip.hidden = cursor.hidden = false;
    const v = matrix.data[i * C + j];
    tip.replaceChildren(
      el("span", {}, [`${rowAxis} `, el("b", { textContent: rowLabels[i] })]),
      el("br"),
      el("span", {}, [`${colAxis} `, el("b", { textContent: labels[j] })]),
      el("br"),
      el("span", { className: "hc-value", textContent: `${unit} ${value(v)}` })
    );
    const x = left + (j + 1) * cell + 10;
    tip.style.left = `${Math.min(x, left + side - 150)}px`;
    tip.style.top = `${top + (i + 1) * cell + 8}px`;
    Object.assign(cursor.style, {
      left: `${left + j * cell}px`,
      top: `${top + i * cell}px`,
      width: `${Math.max(2, cell)}px`,
      height: `${Math.max(2, cell)}px`
    });
  };
  const hide = () => {
    tip.hidden = true;
    cursor.hidden = true;
  };
  hide();
  canvas.onmousemove = (e) => {
    const ij = at(e);
    canvas.style.cursor = ij && callbacks.onPick ? "pointer" : "";
    if (ij) show2(ij[0], ij[1]);
    else hide();
  };
  canvas.onmouseleave = () => {
    if (document.activeElement !== canvas) hide();
  };
  canvas.onclick = (e) => {
    const ij = at(e);
    if (ij && callbacks.onPick) callbacks.onPick(ij[0]);
  };
  const text = describe(
    /** @type {HTMLElement} */
    root2.querySelector(".hc-body"),
    {
      summary: `${R} × ${C} ${unit}s, ${strongestText(rowLabels, labels, matrix, { approx: data.approx, causal: data.causal })}`,
      table: R * C <= TABLE_MAX ? matrixTable(
        `${title}: the ${unit}s, ${rowAxis} rows by ${colAxis} columns`,
        rowAxis,
        rowLabels,
        labels,
        (i, j) => fmt(matrix.data[i * C + j], data.approx ? 2 : 3)
      ) : null
    }
  );
  keyCursor(canvas, text.live, {
    rows: R,
    cols: C,
    describedBy: text.summary.id,
    label: `${title}: heatmap of ${R} × ${C} ${unit === "weight" ? "attention weight" : unit}s, ${rowAxis} rows by ${colAxis} columns. Arrow keys move between cells${callbacks.onPick ? `; Enter makes the row's token the ${rowAxis}` : ""}.`,
    text: (i, j) => `${spokenRows[i]} → ${spokenCols[j]}: ${value(matrix.data[i * C + j])} (${rowAxis} ${i + 1}, ${colAxis} ${j + 1})`,
    show: show2,
    hide,
    pick: callbacks.onPick ? (i) => callbacks.onPick?.(i) : void 0
  });
  root2.__heat = {
    labels: data.labels,
    rowLabels: data.rowLabels ?? data.labels,
    drawn: { labels, rowLabels },
    matrix,
    vmax,
    geometry: { left, top, side, tall, cell }
  };
}
function heatPng(container) {
  const canvas = (
    /** @type {HTMLCanvasElement | null} */
    container.querySelector(".hc canvas")
  );
  return canvas ? canvas.toDataURL("image/png") : null;
}

// static/js/views/genview.js
function render7(container, data, sel) {
  if (!container.querySelector(":scope > .gen-text")) {
    container.replaceChildren(el("p", { className: "gen-text" }), el("div", { className: "gen-heat heat-large" }));
  }
  const { tokens, start: start2 } = data;
  const read = start2 + sel.step - 2;
  const written = start2 + sel.step - 1;
  container.querySelector(".gen-text").replaceChildren(
    ...tokens.map(
      (tok, i) => el("span", {
        textContent: tok,
        // the text itself, as written (pre-wrap: its spaces and line breaks)
        className: [
          i >= start2 ? "written" : "",
          i === read ? "read" : "",
          i === written ? "new" : "",
          i > written ? "later" : ""
        ].filter(Boolean).join(" ")
      })
    )
  );
  const matrix = { dtype: data.row.dtype, shape: [1, read + 1], data: data.row.data.slice(0, read + 1) };
  render6(
    /** @type {HTMLElement} */
    container.querySelector(".gen-heat"),
    {
      labels: tokens.slice(0, read + 1),
      rowLabels: [tokens[read]],
      matrix,
      axes: ["read", "key"],
      title: `Step ${sel.step}: reading up to ${quotedToken(tokens[read])}, the model wrote ${quotedToken(tokens[written])} · layer ${sel.layer + 1}, head ${sel.head + 1}`
    },
    { peak: true }
  );
}

// static/js/modes/sentence/cards/gen.js
async function draw2({ app: app2, p, ticket }) {
  const current = ticket("gen");
  const meta = (
    /** @type {Compact} */
    app2.first.meta
  );
  const g = meta.generated;
  const card = byId("gen-card");
  card.hidden = !g;
  if (!g) return;
  fillIndexSelect(
    /** @type {HTMLSelectElement} */
    byId("gen-layer"),
    meta.layers,
    "layer",
    app2.s.layer
  );
  fillIndexSelect(
    /** @type {HTMLSelectElement} */
    byId("gen-head"),
    meta.heads,
    "head",
    app2.s.head
  );
  const step = p.genStep();
  const slider = (
    /** @type {HTMLInputElement} */
    byId("gen-step")
  );
  slider.max = String(g.steps);
  slider.value = String(step);
  byId("gen-step-out").textContent = `step ${step} / ${g.steps}` + (g.stopped ? " · then it wrote its end-of-text token and stopped" : "");
  const part4 = await p.genPart();
  if (!current()) return;
  const row = sub(part4.arrays.attentions, 0, 0, 0);
  render7(
    byId("gen-view"),
    { tokens: meta.tokens, start: g.start, row },
    { layer: app2.s.layer, head: app2.s.head, step }
  );
}
function wire({ app: app2, p, viewChanged }) {
  byId("gen-step").addEventListener("input", (e) => {
    app2.s.step = Number(
      /** @type {HTMLInputElement} */
      e.target.value
    );
    viewChanged(["step"]);
  });
  for (
    const [id, key] of
    /** @type {const} */
    [
      ["gen-layer", "layer"],
      ["gen-head", "head"]
    ]
  ) {
    byId(id).addEventListener("change", (e) => {
      app2.s[key] = Number(
        /** @type {HTMLSelectElement} */
        e.target.value
      );
      viewChanged([key]);
    });
  }
  let player;
  function playGeneration() {
    const button = byId("gen-play");
    const stop = () => {
      clearInterval(player);
      player = void 0;
      button.setAttribute("aria-pressed", "false");
      button.textContent = "▶ play";
    };
    if (player) return stop();
    const g = app2.first?.meta.generated;
    if (!g) return;
    if (p.genStep() >= g.steps) {
      app2.s.step = 1;
      viewChanged(["step"]);
    }
    button.setAttribute("aria-pressed", "true");
    button.textContent = "❚❚ pause";
    player = setInterval(() => {
      const now = app2.first?.meta.generated;
      if (!now || p.genStep() >= now.steps) return stop();
      app2.s.step = p.genStep() + 1;
      viewChanged(["step"]);
    }, 700);
  }
  byId("gen-play").addEventListener("click", () => playGeneration());
}

// static/js/modes/sentence/cards/head.js
var head_exports = {};
__export(head_exports, {
  draw: () => draw3,
  wire: () => wire2
});

// static/js/views/headview.js
var SVG = "http://www.w3.org/2000/svg";
var MIN_WEIGHT = 0.01;
var FULL_MAX = 64;
function svg(tag, attrs = {}) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}
function renderHeadChips(box, heads, chosen, onChange) {
  if (box.childElementCount !== heads) {
    box.replaceChildren(
      ...Array.from({ length: heads }, (_, h) => {
        const label = el("label", { className: "chip" }, [
          el("input", { type: "checkbox", value: String(h), "aria-label": `head ${h + 1}` }),
          el("span", { textContent: String(h + 1) })
        ]);
        label.style.setProperty("--chip", headColor(h));
        return label;
      })
    );
  }
  box.onchange = () => onChange([...box.querySelectorAll("input:checked")].map((i) => Number(
    /** @type {HTMLInputElement} */
    i.value
  )));
  for (
    const input of
    /** @type {NodeListOf<HTMLInputElement>} */
    box.querySelectorAll("input")
  ) {
    input.checked = chosen.includes(Number(input.value));
  }
}
var textWidth = (s, size) => [...s].length * size * 0.6;
function render8(container, data, sel, callbacks) {
  const { values, scale, rows } = data;
  const labels = data.labels.map(shownToken);
  const spoken2 = data.labels.map(spokenToken);
  const n = labels.length;
  let weightOf;
  if (values && scale) weightOf = (h, i, j) => values.data[(h * n + i) * n + j] * scale.data[h] / 255;
  else if (rows) weightOf = (h, i, j) => i === rows.query ? rows.weights.data[h * n + j] : 0;
  else throw new Error("the head view has no weights to draw");
  const full = n <= FULL_MAX;
  const row = n <= 30 ? 22 : n <= 60 ? 16 : 12;
  const font = n <= 30 ? 13 : n <= 60 ? 11 : 9;
  const labelW = Math.min(170, Math.max(50, ...labels.map((s) => textWidth(s, font) + 14)));
  const width = Math.max(Math.min(container.clientWidth || 560, 2 * labelW + 480), 2 * labelW + 120);
  const top = 8;
  const height = top * 2 + n * row;
  const x1 = labelW;
  const x2 = width - labelW;
  const y = (i) => top + i * row + row / 2;
  const key = `${width}\0${labels.join("\0")}`;
  const box = (
    /** @type {HTMLElement & {__hv?: {key: string, root: SVGSVGElement, lines: SVGGElement}}} */
    container
  );
  const reuse = box.__hv && box.__hv.key === key && box.__hv.root.isConnected;
  const root2 = reuse ? (
    /** @type {NonNullable<typeof box.__hv>} */
    box.__hv.root
  ) : (
    /** @type {SVGSVGElement} */
    /** @type {unknown} */
    svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "group" })
  );
  root2.setAttribute("class", full ? "hv" : "hv hv-one");
  root2.setAttribute(
    "aria-label",
    `Head view${sel.unit ? ` of ${sel.unit}s` : ""}, layer ${sel.layer + 1}, heads ${sel.heads.map((h) => h + 1).join(", ") || "none"}`
  );
  root2.dataset.layer = String(sel.layer);
  root2.dataset.heads = sel.heads.join(",");
  root2.dataset.complete = data.values ? "1" : "0";
  const lines = reuse ? (
    /** @type {NonNullable<typeof box.__hv>} */
    box.__hv.lines
  ) : svg("g", { class: "hv-lines" });
  const all = Array.from({ length: n }, (_, i) => i);
  function drawLines(qs, ks) {
    const groups2 = Array.from({ length: n }, (_, i) => svg("g", { class: "hv-q", "data-query": i }));
    let top2 = 1;
    if (!full || sel.unit) {
      top2 = sel.unit ? 0 : MIN_WEIGHT;
      for (const h of sel.heads) for (const i of qs) for (const j of ks) top2 = Math.max(top2, weightOf(h, i, j));
    }
    const least = sel.unit ? MIN_WEIGHT * top2 : MIN_WEIGHT;
    for (const h of sel.heads) {
      const color = headColor(h);
      for (const i of qs) {
        for (const j of ks) {
          const w = weightOf(h, i, j);
          if (w < least || !(w > 0)) continue;
          const v = w / top2;
          groups2[i].append(
            svg("line", {
              x1: x1 + 6,
              y1: y(i),
              x2: x2 - 6,
              y2: y(j),
              stroke: color,
              "stroke-width": (0.6 + 4 * v).toFixed(2),
              "stroke-opacity": (0.12 + 0.88 * v).toFixed(3),
              "data-head": h,
              "data-query": i,
              "data-key": j,
              "data-weight": String(w)
            })
          );
        }
      }
    }
    lines.replaceChildren(...groups2);
    return groups2;
  }
  const linesOf = (t, left) => t < 0 || t >= n ? drawLines([], []) : left ? drawLines([t], all) : drawLines(all, [t]);
  let shownFor = full ? "" : `L${sel.query}`;
  let groups = full ? drawLines(all, all) : linesOf(sel.query, true);
  const side = (name, x, anchor) => {
    const g = svg("g", { class: `hv-tokens hv-${name}` });
    g.append(
      svg("rect", {
        class: "hv-hl",
        x: name === "left" ? 2 : x2 + 2,
        y: 0,
        width: labelW - 4,
        height: row - 2,
        rx: 3,
        visibility: "hidden"
      })
    );
    labels.forEach((label, i) => {
      const t = svg("text", {
        class: "hv-token",
        "data-side": name,
        "data-index": i,
        x,
        y: y(i),
        "text-anchor": anchor,
        "dominant-baseline": "central",
        "font-size": font
      });
      t.textContent = label;
      if (name === "left") {
        t.setAttribute("tabindex", "0");
        t.setAttribute("role", "button");
        t.setAttribute("aria-label", `query ${spoken2[i]}`);
      }
      g.append(t);
    });
    return g;
  };
  if (!reuse) {
    root2.append(lines, side("left", x1 - 8, "end"), side("right", x2 + 8, "start"));
    box.__hv = { key, root: root2, lines: (
      /** @type {SVGGElement} */
      /** @type {unknown} */
      lines
    ) };
  }
  for (const e of root2.querySelectorAll(".chosen, .on")) e.classList.remove("chosen", "on");
  root2.classList.remove("focus-q", "focus-k");
  root2.querySelector(".hv-chosen")?.remove();
  const chosen = root2.querySelector(`.hv-left .hv-token[data-index="${sel.query}"]`);
  if (chosen) {
    chosen.classList.add("chosen");
    const mark2 = svg("rect", {
      class: "hv-chosen",
      x: 2,
      y: y(sel.query) - row / 2 + 1,
      width: labelW - 4,
      height: row - 2,
      rx: 3
    });
    root2.querySelector(".hv-left")?.prepend(mark2);
  }
  const highlight = (t) => {
    for (const hl2 of root2.querySelectorAll(".hv-hl")) hl2.setAttribute("visibility", "hidden");
    if (!t) return;
    const hl = (
      /** @type {Element} */
      t.parentElement?.querySelector(".hv-hl")
    );
    hl.setAttribute("y", String(y(Number(
      /** @type {HTMLElement} */
      t.dataset.index
    )) - row / 2 + 1));
    hl.setAttribute("visibility", "visible");
  };
  const clear = () => {
    root2.classList.remove("focus-q", "focus-k");
    for (const e of root2.querySelectorAll(".on")) e.classList.remove("on");
    highlight(null);
    if (!full && shownFor !== `L${sel.query}`) {
      groups = linesOf(sel.query, true);
      shownFor = `L${sel.query}`;
    }
  };
  const focus = (t) => {
    for (const e of root2.querySelectorAll(".on")) e.classList.remove("on");
    const i = Number(
      /** @type {HTMLElement} */
      t.dataset.index
    );
    const left = (
      /** @type {HTMLElement} */
      t.dataset.side === "left"
    );
    t.classList.add("on");
    highlight(t);
    const key2 = `${left ? "L" : "R"}${i}`;
    if (!full && shownFor !== key2) {
      groups = linesOf(i, left);
      shownFor = key2;
    }
    root2.classList.toggle("focus-q", left);
    root2.classList.toggle("focus-k", !left);
    if (left) groups[i].classList.add("on");
    else for (const line of lines.querySelectorAll(`line[data-key="${i}"]`)) line.classList.add("on");
  };
  let asked2 = false;
  const enter = (e) => {
    if (!values && !asked2 && callbacks.onNeedAll) {
      asked2 = true;
      callbacks.onNeedAll();
    }
    const t = (
      /** @type {Element} */
      e.target.closest(".hv-token")
    );
    if (t) focus(t);
  };
  const pick = (e) => {
    const t = (
      /** @type {HTMLElement | null} */
      /** @type {Element} */
      e.target.closest(".hv-left .hv-token")
    );
    if (t && callbacks.onPick) callbacks.onPick(Number(t.dataset.index));
  };
  const key_ = (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      pick(e);
    }
  };
  listen(root2, {
    mouseover: enter,
    mouseleave: clear,
    focusin: enter,
    focusout: clear,
    click: pick,
    keydown: (
      /** @type {(e: Event) => void} */
      key_
    )
  });
  const note = full ? [] : [
    el("p", {
      className: "hv-note",
      textContent: `${n} tokens: only one token's lines are drawn, the chosen query's (click a token on the left to choose it) or the token under the pointer's, each as strong as its weight over the strongest line's.`
    })
  ];
  if (!reuse) container.replaceChildren(...note, root2);
  const best = (i) => {
    let top2 = (
      /** @type {[number, number, number]} */
      [-1, -1, -1]
    );
    for (const h of sel.heads)
      for (let j = 0; j < n; j++) if (weightOf(h, i, j) > top2[2]) top2 = [h, j, weightOf(h, i, j)];
    return top2;
  };
  for (
    const t of
    /** @type {NodeListOf<SVGTextElement>} */
    root2.querySelectorAll(".hv-left .hv-token")
  ) {
    const i = Number(t.dataset.index);
    const [h, j, w] = values || i === rows?.query ? best(i) : [-1, -1, -1];
    t.setAttribute(
      "aria-label",
      h < 0 ? `query ${spoken2[i]}` : `query ${spoken2[i]}: strongest key ${spoken2[j]}, ${fmt(w, 2)} (head ${h + 1})`
    );
  }
  const heads = sel.heads.map((h) => {
    let top2 = [-1, -1, -1];
    const qs = values ? all : rows ? [rows.query] : [];
    for (const i of qs) for (let j = 0; j < n; j++) if (weightOf(h, i, j) > top2[2]) top2 = [i, j, weightOf(h, i, j)];
    return top2[0] < 0 ? `head ${h + 1}: no line` : `head ${h + 1} ${labels[top2[0]]} → ${labels[top2[1]]} ${fmt(top2[2], 2)}`;
  });
  describe(
    /** @type {HTMLElement} */
    /** @type {unknown} */
    root2,
    {
      summary: sel.heads.length ? `Layer ${sel.layer + 1}${sel.unit ? ` (${sel.unit}s)` : ""}, the strongest line of each head shown${values ? "" : " (the chosen query's)"}: ${heads.join("; ")}.` : "No head chosen: pick heads above."
    }
  );
}
function listen(node, handlers) {
  for (const [type, fn] of Object.entries(node.__listeners || {})) node.removeEventListener(type, fn);
  for (const [type, fn] of Object.entries(handlers)) node.addEventListener(type, fn);
  node.__listeners = handlers;
}
function headViewSvg(container) {
  const node = container.querySelector("svg.hv");
  if (!node) return null;
  const copy = (
    /** @type {Element} */
    node.cloneNode(true)
  );
  copy.setAttribute("xmlns", SVG);
  const style = svg("style");
  style.textContent = "text{font-family:system-ui,sans-serif;fill:#1d2330} rect{fill:none}";
  copy.prepend(style);
  return new XMLSerializer().serializeToString(copy);
}

// static/js/views/lens.js
var columnsFor = (width) => Math.max(3, Math.min(16, Math.floor(((width || 800) - 90) / 76)));
function percent(p) {
  if (p >= 0.01) return `${(p * 100).toFixed(1)}%`;
  return p >= 1e-4 ? `${(p * 100).toFixed(2)}%` : "<0.01%";
}
var quoted = quotedToken;
var spoken = (s) => `“${spokenToken(s)}”`;
function rowName(row, rows) {
  if (row === 0) return "embeddings";
  return row === rows - 1 ? `layer ${row} (output)` : `layer ${row}`;
}
function cellText(data, row, pos, quote2 = quoted) {
  const { lens, tokens } = data;
  const m = lens.targets.data.length;
  const j = pos - data.start;
  const at = row * m + j;
  const top = lens.vocab[String(lens.ids.data[at])] ?? "?";
  const where = data.predicts === "masked" ? "at" : "after";
  const head = `${rowName(row, lens.rows)}, ${where} ${quote2(tokens[pos])} (token ${pos + 1}): top ${quote2(top)} ${percent(lens.probs.data[at])}`;
  const target = lens.targets.data[j];
  const masked = data.predicts === "masked";
  if (target < 0) return masked ? `${head}; a mask: the text does not say` : `${head}; the text ends here`;
  const next = lens.vocab[String(target)] ?? "?";
  return `${head}; ${masked ? "the text's token" : "the next token"} ${quote2(next)} is rank ${lens.target_ranks.data[at]}, ${percent(lens.target_probs.data[at])}`;
}
function windowOf(n, query2, cols) {
  const count = Math.min(n, cols);
  const start2 = Math.max(0, Math.min(n - count, query2 - Math.floor(count / 2)));
  return Array.from({ length: count }, (_, i) => start2 + i);
}
function firstKnown(data, pos) {
  const { lens } = data;
  const m = lens.targets.data.length;
  let known = -1;
  for (let r = lens.rows - 1; r >= 0; r--) {
    if (lens.target_ranks.data[r * m + pos - data.start] !== 1) break;
    known = r;
  }
  return known;
}
function render9(container, data, selection, callbacks = {}) {
  const { tokens, top, lens, start: start2 } = data;
  const n = tokens.length;
  const m = lens.targets.data.length;
  const shown = Array.from({ length: m }, (_, i) => start2 + i);
  const q = Math.max(start2, Math.min(start2 + m - 1, selection.query));
  const qj = q - start2;
  const masked = data.predicts === "masked";
  const items = [];
  for (let j = 0; j < top.k; j++) {
    const id = top.ids.data[qj * top.k + j];
    const p = top.probs.data[qj * top.k + j];
    const isNext = id === lens.targets.data[qj];
    items.push(
      el("li", { className: isNext ? "lens-top-row next" : "lens-top-row" }, [
        el("span", { className: "lens-top-token", textContent: quoted(top.vocab[String(id)] ?? "?") }),
        el("span", { className: "lens-bar", "aria-hidden": "true" }, [
          el("span", { className: "lens-bar-fill", style: `width: ${Math.max(0.5, p * 100)}%` })
        ]),
        el("span", {
          className: "lens-top-p",
          textContent: percent(p) + (isNext ? masked ? " (the text's)" : " (the next token)" : "")
        })
      ])
    );
  }
  const out = (lens.rows - 1) * m + qj;
  const target = lens.targets.data[qj];
  const said = quoted(lens.vocab[String(target)] ?? "?");
  const ranked = `the output ranks it ${lens.target_ranks.data[out]} of the vocabulary, ${percent(lens.target_probs.data[out])}.`;
  const nextLine = masked ? target < 0 ? "A mask: the text does not say what is here; the model fills it in." : `The text has ${said} here: ${ranked}` : target < 0 ? "The text ends here: nothing follows to rank." : `The text continues with ${said}: ${ranked}`;
  const grid = el("div", {
    className: "lens-grid",
    style: `grid-template-columns: 5.5em repeat(${shown.length}, minmax(0, 1fr))`
  });
  const hover2 = el("p", { className: "hint lens-hover", dataset: { role: "lens-hover" } });
  grid.append(el("span", { className: "lens-corner", textContent: "layer" }));
  for (const pos of shown) {
    grid.append(
      el("span", {
        className: pos === q ? "lens-col query" : "lens-col",
        title: `token ${pos + 1}: ${spokenToken(tokens[pos])}`,
        textContent: `${pos + 1}. ${shownToken(tokens[pos])}`
      })
    );
  }
  const cells = [];
  for (let r = 0; r < lens.rows; r++) {
    grid.append(
      el("span", {
        className: "lens-row",
        textContent: r === 0 ? "embed" : r === lens.rows - 1 ? `${r} out` : String(r)
      })
    );
    const line = [];
    for (const pos of shown) {
      const at = r * m + pos - start2;
      const p = lens.probs.data[at];
      const i = Math.round(Math.max(0, Math.min(1, p)) * 255);
      const rgb = (
        /** @type {[number, number, number]} */
        [
          WEIGHT_LUT[i * 3],
          WEIGHT_LUT[i * 3 + 1],
          WEIGHT_LUT[i * 3 + 2]
        ]
      );
      const hit = lens.target_ranks.data[at] === 1;
      const cell = el("span", {
        className: `lens-cell${hit ? " hit" : ""}${pos === q ? " query" : ""}`,
        dataset: { row: String(r), pos: String(pos) },
        style: `background: rgb(${rgb.join(",")}); color: ${inkOn(rgb)}`,
        textContent: shownToken(lens.vocab[String(lens.ids.data[at])] ?? "?")
      });
      line.push(cell);
      grid.append(cell);
    }
    cells.push(line);
  }
  grid.onmouseover = (e) => {
    const c = (
      /** @type {HTMLElement} */
      e.target.closest?.(".lens-cell")
    );
    if (c instanceof HTMLElement) hover2.textContent = cellText(data, Number(c.dataset.row), Number(c.dataset.pos));
  };
  grid.onclick = (e) => {
    const c = (
      /** @type {HTMLElement} */
      e.target.closest?.(".lens-cell")
    );
    if (c instanceof HTMLElement) callbacks.onPick?.(Number(c.dataset.pos));
  };
  container.replaceChildren(
    el("div", { className: "lens-top" }, [
      el("h3", {
        className: "lens-sub",
        textContent: `${masked ? "At" : "Next after"} ${quoted(tokens[q])} (token ${q + 1}): the top ${top.k}`
      }),
      el("ol", { className: "lens-top-list" }, items),
      el("p", { className: "hint lens-next", textContent: nextLine })
    ]),
    el("h3", {
      className: "lens-sub",
      textContent: `Logit lens, tokens ${shown[0] + 1}–${shown[shown.length - 1] + 1} of ${n}`
    }),
    el("div", { className: "lens-scroll" }, [grid]),
    hover2
  );
  const known = firstKnown(data, q);
  const summary = target < 0 ? `Logit lens of ${lens.rows} rows (the embeddings and ${lens.rows - 1} layers) over tokens ${shown[0] + 1}–${shown[shown.length - 1] + 1}; ${masked ? "the query is a mask" : "the text ends at the query"}.` : `Logit lens of ${lens.rows} rows (the embeddings and ${lens.rows - 1} layers): ${masked ? "at" : "after"} ${quoted(tokens[q])} ${masked ? "the text's token" : "the next token"} ${said} is ` + (known < 0 ? "never the top prediction." : `the top prediction from ${rowName(known, lens.rows)} on.`);
  const rowLabels = Array.from({ length: lens.rows }, (_, r) => rowName(r, lens.rows));
  const colLabels = shown.map((pos) => `${pos + 1}. ${shownToken(tokens[pos])}`);
  const table = matrixTable(
    `Logit lens: each row's top token and probability; ${masked ? "the text's token's" : "the next token's"} rank`,
    "layer",
    rowLabels,
    colLabels,
    (r, c) => {
      const at = r * m + c;
      const rank = lens.targets.data[c] < 0 ? "" : `; ${masked ? "text's" : "next"} rank ${lens.target_ranks.data[at]}`;
      return `${shownToken(lens.vocab[String(lens.ids.data[at])] ?? "?")} ${percent(lens.probs.data[at])}${rank}`;
    }
  );
  const text = describe(grid, { summary, table });
  let marked2 = null;
  keyCursor(grid, text.live, {
    rows: lens.rows,
    cols: shown.length,
    label: "Logit lens: arrow keys move over layers and tokens; Enter makes the token the query",
    describedBy: text.summary.id,
    text: (r, c) => cellText(data, r, shown[c], spoken),
    show: (r, c) => {
      marked2?.classList.remove("cursor");
      marked2 = cells[r][c];
      marked2.classList.add("cursor");
      hover2.textContent = cellText(data, r, shown[c]);
    },
    hide: () => marked2?.classList.remove("cursor"),
    pick: (_r, c) => callbacks.onPick?.(shown[c])
  });
}
function renderUnavailable(container, reason) {
  container.replaceChildren(
    el("p", {
      className: "hint lens-unavailable",
      role: "note",
      textContent: `No predictions here: ${reason.replace(/^(top_k|lens): /, "")}. A causal model (GPT-2, a Llama-style folder, a trained run) shows them, and an encoder saved with its masked-language-model head.`
    })
  );
}

// static/js/modes/sentence/parts.js
var QK_FIELDS = "queries,keys,scores,attentions";
var thumbsOf = (part4) => ({
  values: part4.arrays["thumbs.values"],
  scale: part4.arrays["thumbs.scale"],
  pool: thumbsMeta(part4).pool,
  size: thumbsMeta(part4).size
});
var thumbsMeta = (part4) => (
  /** @type {NonNullable<Compact["meta"]["thumbs"]>} */
  part4.meta.thumbs
);
var tokenView = (meta) => (
  /** @type {import("../../core/types.js").TokenViewMeta} */
  meta.token_view
);
function createParts(app2, modelInfo) {
  const parts = () => (
    /** @type {Parts} */
    app2.parts
  );
  const first = () => (
    /** @type {Compact} */
    app2.first
  );
  const options = () => ({ hide_special: app2.s.hideSpecial, merge_words: app2.s.mergeWords });
  const valueWeighted = () => app2.s.measure === "value_weighted" && app2.first !== null && !app2.first.meta.unavailable?.value_weighted;
  const shown = () => ({ ...options(), ...valueWeighted() ? { measure: "value_weighted" } : {} });
  function thumbSize() {
    const split = document.getElementById("model-view-card")?.querySelector(".mv-split");
    const width = split?.clientWidth || 1e3;
    const heads = modelInfo()?.heads ?? 12;
    return Math.max(16, Math.ceil(width / (heads + 0.6) * (window.devicePixelRatio || 1)));
  }
  const thumbParams = () => ({ fields: "thumbs", thumb: thumbSize(), ...shown() });
  function queryIndex() {
    const meta = first().meta;
    const q = app2.s.query;
    if (q !== null && q < meta.n && !(app2.s.hideSpecial && meta.special?.[q])) return q;
    const ordinary = (meta.special || []).findIndex((x) => !x);
    return ordinary >= 0 ? ordinary : 0;
  }
  const genStep = () => {
    const g = first().meta.generated;
    return g ? Math.min(app2.s.step ?? g.steps, g.steps) : 0;
  };
  const genRow = () => (first().meta.generated?.start ?? 1) + genStep() - 2;
  const thumbsPart = () => parts().get(thumbParams());
  async function layerPart() {
    const l = app2.s.layer;
    const layerOf = (part4, k) => ({
      meta: part4.meta,
      values: sub(part4.arrays["thumbs.values"], k),
      scale: sub(part4.arrays["thumbs.scale"], k)
    });
    const alone = () => parts().get({ fields: "thumbs", thumb: 0, thumb_layer: l, ...shown() });
    if ((app2.first?.meta.thumbs?.pool ?? 0) > 1) return layerOf(await alone(), 0);
    const thumbs = await thumbsPart();
    return thumbsMeta(thumbs).pool === 1 ? layerOf(thumbs, l) : layerOf(await alone(), 0);
  }
  function lensWindow() {
    const shown2 = windowOf(
      first().meta.n,
      queryIndex(),
      columnsFor(document.getElementById("lens-view")?.clientWidth ?? 0)
    );
    return [shown2[0], shown2.length];
  }
  return {
    thumbParams,
    valueWeighted,
    thumbsPart,
    layerPart,
    queryIndex,
    genStep,
    /** The row of the query under the token options (-1 when it is hidden). @param {number[][]} groups */
    queryRow: (groups) => groups.findIndex((g) => g.includes(queryIndex())),
    /** The chosen head's exact weights under the token options, or the chosen aggregate of its
     * layer's heads. */
    headPart: () => parts().get(
      app2.s.aggregate === "head" ? { fields: "view", layer: app2.s.layer, head: app2.s.head, ...shown() } : {
        fields: app2.s.aggregate,
        layer: app2.s.layer,
        ...app2.s.aggregate === "value_weighted_sum" ? options() : shown()
      }
    ),
    /** The chosen head's row that wrote the generation step's token. */
    genPart: () => parts().get({ fields: "attentions", layer: app2.s.layer, head: app2.s.head, query: genRow() }),
    /** The chosen head's queries and keys, and the chosen query's scores and weights. */
    queryPart: () => parts().get({
      fields: app2.s.hideSpecial ? `${QK_FIELDS},view` : QK_FIELDS,
      layer: app2.s.layer,
      head: app2.s.head,
      query: queryIndex(),
      ...app2.s.hideSpecial ? { hide_special: true } : {}
    }),
    /** True when the head view draws the chosen query from its rows first: a text so long that
     * a layer is megabytes (past 256 tokens), and tokens as the model has them (no option
     * regroups them). */
    readsRows: () => (app2.first?.meta.n ?? 0) > 256 && !app2.s.hideSpecial && !app2.s.mergeWords,
    /** The chosen query's weights (or value-weighted norms) in every head of the layer:
     * [1][heads][1][n], exact; the array is the part's `fields`. */
    rowsPart: () => parts().get({
      fields: valueWeighted() ? "value_weighted" : "attentions",
      layer: app2.s.layer,
      query: queryIndex()
    }),
    /** The hidden states' projection, under the token options. */
    projectionPart: () => parts().get({ fields: "projection", ...options() }),
    /** What the model predicts (a causal model) at the positions the Predictions card draws
     * (lensWindow): their top tokens (the server's default k) and the logit lens. */
    lensPart: () => {
      const [start2, count] = lensWindow();
      return parts().get({ fields: "top_k,lens", pos_start: start2, pos_count: count });
    },
    lensWindow,
    /** Each head's mean entropy. */
    entropyPart: () => parts().get({ fields: "entropy_mean" })
  };
}

// static/js/modes/sentence/cards/measure.js
var MEASURE_SWITCHES = ["mv-measure", "hv-measure"];
function showMeasure(app2, meta, value) {
  const lacking = meta.unavailable?.value_weighted ?? "";
  for (const name of MEASURE_SWITCHES) {
    for (
      const input of
      /** @type {NodeListOf<HTMLInputElement>} */
      document.querySelectorAll(`input[name="${name}"]`)
    ) {
      input.checked = input.value === (value ? "value_weighted" : "weights");
      input.disabled = Boolean(lacking) && input.value === "value_weighted";
      input.parentElement.title = input.disabled ? lacking.replace(/^value_weighted: /, "") : "";
    }
  }
  const said = lacking && app2.s.measure === "value_weighted" ? `Value-weighted attention is not available: ${lacking.replace(/^value_weighted: /, "")}. The weights are shown.` : value ? "Value-weighted: each cell is ||a_ij v_j W_O^h||, the norm of what key j adds to query i's output through the head (its weight times its value through the head's slice of the output projection; Kobayashi et al., 2020). A key with much weight but a small value moves little." : "";
  for (const id of ["mv-measure-note", "hv-measure-note"]) {
    byId(id).hidden = !said;
    byId(id).textContent = id === "hv-measure-note" && value ? "Value-weighted: a line's thickness and opacity is ||a_ij v_j W_O^h|| over the strongest line drawn (lines under 1% of it are left out)." : said;
  }
}
function wireMeasure({ app: app2, viewChanged }, name) {
  for (
    const input of
    /** @type {NodeListOf<HTMLInputElement>} */
    document.querySelectorAll(`input[name="${name}"]`)
  ) {
    input.addEventListener("change", () => {
      if (!input.checked) return;
      app2.s.measure = /** @type {import("../../../core/types.js").Measure} */
      input.value;
      viewChanged(["measure"]);
    });
  }
}

// static/js/modes/sentence/cards/head.js
async function draw3({ app: app2, p, ticket, pickQuery, viewChanged }) {
  const current = ticket("head");
  const meta = (
    /** @type {Compact} */
    app2.first.meta
  );
  fillIndexSelect(
    /** @type {HTMLSelectElement} */
    byId("hv-layer"),
    meta.layers,
    "layer",
    app2.s.layer
  );
  renderHeadChips(byId("hv-heads"), meta.heads, app2.s.heads, (heads) => {
    app2.s.heads = heads;
    viewChanged(["heads"]);
  });
  const box = byId("head-view");
  const meta0 = (
    /** @type {Compact} */
    app2.first.meta
  );
  const value = p.valueWeighted();
  showMeasure(app2, meta0, value);
  const unit = value ? "value-weighted norm" : void 0;
  const draw8 = (partMeta, data) => {
    const tv = tokenView(partMeta);
    render8(
      box,
      data,
      { layer: app2.s.layer, heads: app2.s.heads, query: p.queryRow(tv.groups), unit },
      { onPick: (row) => pickQuery(tv.groups[row][0]) }
    );
  };
  if (!p.readsRows()) {
    const part5 = await p.layerPart();
    if (current()) draw8(part5.meta, { labels: tokenView(part5.meta).labels, values: part5.values, scale: part5.scale });
    return;
  }
  const q = p.queryIndex();
  const part4 = await p.rowsPart();
  if (!current()) return;
  const rows = sub(part4.arrays[value ? "value_weighted" : "attentions"], 0);
  render8(
    box,
    { labels: meta.tokens, rows: { query: q, weights: rows } },
    { layer: app2.s.layer, heads: app2.s.heads, query: q, unit },
    {
      onPick: pickQuery,
      onNeedAll: () => p.layerPart().then(
        (full) => {
          if (current())
            draw8(full.meta, { labels: tokenView(full.meta).labels, values: full.values, scale: full.scale });
        },
        () => {
        }
      )
    }
  );
}
function wire2(ctx) {
  const { app: app2, viewChanged } = ctx;
  wireMeasure(ctx, "hv-measure");
  byId("hv-layer").addEventListener("change", () => {
    app2.s.layer = Number(
      /** @type {HTMLSelectElement} */
      byId("hv-layer").value
    );
    viewChanged(["layer"]);
  });
  byId("hv-all").addEventListener("click", () => {
    app2.s.heads = Array.from({ length: app2.first?.meta.heads ?? 0 }, (_, h) => h);
    viewChanged(["heads"]);
  });
  byId("hv-none").addEventListener("click", () => {
    app2.s.heads = [];
    viewChanged(["heads"]);
  });
  byId("hv-svg").addEventListener("click", () => {
    const text = headViewSvg(byId("head-view"));
    if (text) download(text, "attnviz-head-view.svg", "image/svg+xml");
  });
}

// static/js/modes/sentence/cards/lens.js
var lens_exports = {};
__export(lens_exports, {
  draw: () => draw4
});
async function draw4({ app: app2, p, ticket, pickQuery }) {
  const current = ticket("lens");
  const meta = (
    /** @type {Compact} */
    app2.first.meta
  );
  const box = byId("lens-view");
  const lacking = meta.unavailable?.lens;
  if (lacking) return renderUnavailable(box, lacking);
  const part4 = await p.lensPart();
  if (!current()) return;
  const m = (
    /** @type {LensPartMeta} */
    part4.meta
  );
  const a = part4.arrays;
  render9(
    box,
    {
      tokens: meta.tokens,
      start: m.lens.start,
      predicts: m.lens.predicts,
      top: { k: m.top_k.k, ids: a["top_k.ids"], probs: a["top_k.probs"], vocab: m.top_k.vocab },
      lens: {
        rows: m.lens.rows,
        ids: a["lens.ids"],
        probs: a["lens.probs"],
        targets: a["lens.targets"],
        target_ranks: a["lens.target_ranks"],
        target_probs: a["lens.target_probs"],
        vocab: m.lens.vocab
      }
    },
    { query: p.queryIndex() },
    { onPick: pickQuery }
  );
}

// static/js/modes/sentence/cards/model.js
var model_exports = {};
__export(model_exports, {
  draw: () => draw5,
  wire: () => wire3
});

// static/js/core/csv.js
var CSV_TYPE = "text/csv;charset=utf-8";
var WEIGHTS_CORNER = "query \\ key";
var TOKEN_CORNER = "token";
function quote(text) {
  return `"${String(text).replaceAll('"', '""')}"`;
}
function numberCell(v, dtype = "F64") {
  return Number.isFinite(v) ? exact(v, dtype) : String(v);
}
function writeCsv(corner, columns, labels, rows, dtype = "F64") {
  if (rows.length !== labels.length) throw new RangeError(`${rows.length} rows for ${labels.length} labels`);
  const lines = [[corner, ...columns].map(quote).join(",")];
  labels.forEach((label, i) => {
    const cells = Array.from(rows[i], (v) => typeof v === "number" ? numberCell(v, dtype) : quote(v));
    lines.push([quote(label), ...cells].join(","));
  });
  return lines.map((line) => `${line}\r
`).join("");
}
function arrayCsv(corner, columns, labels, arr) {
  const [n, m] = arr.shape;
  if (arr.shape.length !== 2 || n !== labels.length || m !== columns.length) {
    throw new RangeError(`a ${arr.shape.join(" x ")} array for ${labels.length} x ${columns.length} labels`);
  }
  const rows = Array.from({ length: n }, (_, i) => arr.data.subarray(i * m, (i + 1) * m));
  return writeCsv(corner, columns, labels, rows, arr.dtype);
}
function tableCsv({ tokens, axes, embeddings }) {
  return writeCsv(TOKEN_CORNER, axes, tokens, embeddings);
}
var stateColumns = (d) => Array.from({ length: d }, (_, j) => `d${j}`);
function readCsv(text, sep = ",") {
  const rows = [];
  const quoted2 = [];
  let row = [];
  let flags = [];
  let cell = "";
  let inQuotes = false;
  let wasQuoted = false;
  const endCell = () => {
    row.push(wasQuoted ? cell : cell.trim());
    flags.push(wasQuoted);
    cell = "";
    wasQuoted = false;
  };
  const endRow = () => {
    endCell();
    rows.push(row);
    quoted2.push(flags);
    row = [];
    flags = [];
  };
  const s = text.startsWith("\uFEFF") ? text.slice(1) : text;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (inQuotes) {
      if (ch === '"' && s[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') inQuotes = false;
      else cell += ch;
    } else if (ch === '"' && !wasQuoted && cell.trim() === "") {
      inQuotes = true;
      wasQuoted = true;
      cell = "";
    } else if (ch === sep) {
      endCell();
    } else if (ch === "\r" || ch === "\n") {
      if (ch === "\r" && s[i + 1] === "\n") i++;
      endRow();
    } else if (!(wasQuoted && /\s/.test(ch))) {
      cell += ch;
    }
  }
  if (cell !== "" || wasQuoted || row.length) endRow();
  while (rows.length && rows[rows.length - 1].every((c, j) => c === "" && !quoted2[rows.length - 1][j])) {
    rows.pop();
    quoted2.pop();
  }
  return { rows, quoted: quoted2 };
}
function csvByteCap(limits) {
  const cell = Math.max(8 * limits.max_token_chars, 24) + 3;
  return (limits.max_tokens + 1) * (limits.max_dim + 1) * cell;
}
function partCsv(what, part4, layer = 0) {
  const tokens = part4.meta.tokens;
  if (what === "attention") return arrayCsv(WEIGHTS_CORNER, tokens, tokens, sub(part4.arrays.attentions, 0, 0));
  if (what === "layer_mean") return arrayCsv(WEIGHTS_CORNER, tokens, tokens, sub(part4.arrays.head_mean, 0));
  const states = sub(part4.arrays.hidden_states, layer);
  return arrayCsv(TOKEN_CORNER, stateColumns(states.shape[1]), tokens, states);
}

// static/js/modes/sentence/cards/model.js
async function draw5(ctx) {
  const { app: app2, p, ticket, chooseHead, pickQuery, showCount } = ctx;
  const current = ticket("model");
  const meta = (
    /** @type {Compact} */
    app2.first.meta
  );
  const thumbs = await p.thumbsPart();
  if (!current()) return;
  const grid = byId("mv-grid");
  const sel = { layer: app2.s.layer, head: app2.s.head, peak: app2.s.peak };
  const data = { layers: meta.layers, heads: meta.heads, thumbs: thumbsOf(thumbs), entropy: app2.entropy };
  const tv = tokenView(thumbs.meta);
  const value = thumbs.meta.measure === "value_weighted";
  const top = value ? thumbsTop(data.thumbs) : 1;
  showMeasure(app2, meta, value);
  byId("model-view-card").querySelector(".mv-split").classList.toggle(
    "stacked",
    tv.labels.length > 64
  );
  render5(
    grid,
    data,
    { ...sel, top, unit: value ? "value-weighted" : void 0 },
    { onSelect: ctx.pickCell ?? chooseHead }
  );
  byId("mv-shape").textContent = `${meta.layers} layers × ${meta.heads} heads`;
  showCount(meta.n, tv);
  byId("s-note").textContent = tv.note;
  byId("s-note").hidden = !tv.note;
  const { pool, size } = data.thumbs;
  const poolNote = byId("mv-pool");
  poolNote.hidden = pool === 1;
  poolNote.textContent = pool === 1 ? "" : `${tv.labels.length} tokens in ${size} pixels: each thumbnail pixel is the largest ${value ? "value" : "weight"} of a ${pool} × ${pool} block.`;
  byId("mv-legend-max").textContent = app2.s.peak ? "peak" : value ? fmt(top, 3) : "1";
  byId("mv-legend-unit").textContent = value ? "value-weighted norm ‖a v W_O‖" : "attention weight";
  const agg = app2.s.aggregate;
  const head = await p.headPart();
  if (!current()) return;
  const hv = tokenView(head.meta);
  const matrix = agg === "head" ? sub(head.arrays.view, 0, 0) : sub(head.arrays[agg], 0);
  const norms = agg === "value_weighted_sum" || head.meta.measure === "value_weighted" && agg !== "rollout";
  const vw = head.meta.measure === "value_weighted" ? ", value-weighted" : "";
  const what = {
    head: `head ${app2.s.head + 1}${vw}`,
    head_mean: `mean of ${meta.heads} heads${vw}`,
    head_max: `max of ${meta.heads} heads${vw}`,
    rollout: `rollout through it${vw}`,
    value_weighted_sum: `norm of ${meta.heads} heads' summed contributions`
  }[agg];
  render6(
    byId("mv-large"),
    {
      labels: hv.labels,
      matrix,
      title: `Layer ${app2.s.layer + 1}, ${what}`,
      unit: norms ? "value-weighted norm" : "weight",
      causal: Boolean(meta.causal)
    },
    { query: p.queryRow(hv.groups), peak: app2.s.peak || agg === "head_max" || norms },
    { onPick: (row) => pickQuery(hv.groups[row][0]) }
  );
  const cell = norms ? "value-weighted norm (what the key adds to the query's output)" : agg === "head" ? "weight" : "value";
  byId("mv-caption").textContent = agg === "head" ? `The chosen head: hover a cell for its exact ${cell}; click a row to make its token the query.` : `The chosen layer's heads together: hover a cell for its exact ${cell}; click a row to make its token the query.`;
  const rule = byId("mv-rule");
  const ruleKey = agg === "head" ? "value_weighted" : agg;
  const said = ruleKey === "value_weighted" && !byId("mv-measure-note").hidden;
  const ruleText = said ? "" : head.meta.rules?.[ruleKey] ?? "";
  rule.hidden = !ruleText;
  rule.textContent = ruleText;
  const sink = sinkNote(
    matrix,
    hv.labels,
    !norms && (agg === "head" || agg === "head_mean"),
    hv.groups,
    meta.special ?? null
  );
  byId("mv-sink").hidden = !sink;
  byId("mv-sink").textContent = sink;
}
function wire3(ctx) {
  const { app: app2, p, viewChanged, setError } = ctx;
  byId("mv-aggregate").addEventListener("change", (e) => {
    app2.s.aggregate = /** @type {Aggregate} */
    /** @type {HTMLSelectElement} */
    e.target.value;
    viewChanged(["aggregate"]);
  });
  wireMeasure(ctx, "mv-measure");
  byId("mv-peak").addEventListener("change", (e) => {
    app2.s.peak = /** @type {HTMLInputElement} */
    e.target.checked;
    viewChanged(["peak"]);
  });
  byId("mv-legend").style.background = WEIGHT_GRADIENT;
  byId("mv-png").addEventListener("click", async () => {
    if (!app2.first) return;
    const meta = app2.first.meta;
    const thumbs = thumbsOf(await p.thumbsPart());
    const top = p.valueWeighted() ? thumbsTop(thumbs) : 1;
    download(
      gridPng({ layers: meta.layers, heads: meta.heads, thumbs }, app2.s.peak, top),
      "attnviz-model-view.png"
    );
  });
  byId("mv-large-png").addEventListener("click", () => {
    const png = heatPng(byId("mv-large"));
    if (png) download(png, `attnviz-layer${app2.s.layer + 1}-head${app2.s.head + 1}.png`);
  });
  async function saveCsv(what, name, params) {
    if (!app2.parts) return;
    const layer = app2.s.layer;
    try {
      const part4 = await app2.parts.get(params);
      download(partCsv(what, part4, layer + 1), `attnviz-layer${layer + 1}-${name}.csv`, CSV_TYPE);
    } catch (err) {
      setError(`The CSV could not be made: ${/** @type {Error} */
      err.message}`);
    }
  }
  byId("mv-csv-head").addEventListener(
    "click",
    () => saveCsv("attention", `head${app2.s.head + 1}`, { fields: "attentions", layer: app2.s.layer, head: app2.s.head })
  );
  byId("mv-csv-mean").addEventListener(
    "click",
    () => saveCsv("layer_mean", "mean", { fields: "head_mean", layer: app2.s.layer })
  );
  byId("mv-csv-states").addEventListener(
    "click",
    () => saveCsv("hidden_states", "hidden-states", { fields: "hidden_states" })
  );
}

// static/js/modes/sentence/cards/qk.js
var qk_exports = {};
__export(qk_exports, {
  draw: () => draw6,
  wire: () => wire4
});

// static/js/views/qkview.js
function scoreRule(meta) {
  if (meta.attention) return meta.attention;
  if (meta.config?.scale === false) return { scale: 1, divide_by: null, scale_label: "(unscaled)", softcap: null };
  const hd = meta.head_dim;
  return { scale: 1 / Math.sqrt(hd), divide_by: Math.sqrt(hd), scale_label: `÷ √${hd}`, softcap: null };
}
var KEYS_MAX = 64;
var TOP_KEYS = 48;
var maxAbs = (rows) => {
  let m = 1e-9;
  for (const row of rows) for (const v of row) if (v !== null && Math.abs(v) > m) m = Math.abs(v);
  return m;
};
function queryKeyData(data, rows) {
  const i = data.query;
  const dtype = data.queries.dtype;
  const q = Array.from(sub(data.queries, i).data);
  const keys = rows.map((j) => Array.from(sub(data.keys, j).data));
  const hd = q.length;
  const rule = data.rule;
  const scaled = (sum) => rule.divide_by ? sum / rule.divide_by : sum * rule.scale;
  const products = keys.map((k) => k.map((v, c) => q[c] * v));
  const sums = products.map((row) => row.reduce((a, b) => a + b, 0));
  const scoreRow = data.scores.data;
  const weightRow = data.weights.data;
  const scores = rows.map((j) => scoreRow[j] === -Infinity ? null : scoreRow[j]);
  const weights = rows.map((j) => weightRow[j]);
  const masked = scores.map((s) => s === null);
  let mismatch = 0;
  scores.forEach((s, r) => {
    if (s !== null) mismatch = Math.max(mismatch, Math.abs(scaled(sums[r]) - s));
  });
  return { q, keys, hd, rule, scaled, products, sums, scores, weights, masked, mismatch, dtype };
}
function keyRows(data, all) {
  const i = data.query;
  const every = data.shown ? [...data.shown] : data.tokens.map((_, j) => j);
  const n = every.length;
  if (all || n <= KEYS_MAX) return every;
  const w = data.weights.data;
  const top = every.sort((a, b) => w[b] - w[a] || a - b).slice(0, TOP_KEYS);
  if (!top.includes(i)) top.push(i);
  return top.sort((a, b) => a - b);
}
var LABEL_MAX = 150;
var SUM_W = 70;
var SCORE_W = 96;
var BAR_W = 150;
var CBAR = 46;
var GAP = 26;
var rowSize = (n) => n <= 8 ? 24 : n <= 16 ? 20 : n <= 32 ? 16 : n <= 64 ? 12 : 9;
function geometry(rows, hd, width, labelW) {
  const row = rowSize(rows);
  const left = labelW + 12;
  const right = SUM_W + SCORE_W + BAR_W;
  const heatW = Math.max(hd * 6, width - left - CBAR - right - 12);
  const cell = heatW / hd;
  const qTop = 22;
  const kTop = qTop + row + GAP;
  const pTop = kTop + rows * row + GAP;
  const height = pTop + rows * row + 34;
  const x0 = left;
  const xBar = x0 + heatW + 6;
  const xSum = xBar + CBAR;
  const xScore = xSum + SUM_W;
  const xW = xScore + SCORE_W;
  return { row, left, heatW, cell, qTop, kTop, pTop, height, x0, xBar, xSum, xScore, xW, width: xW + BAR_W };
}
var diverging = (v, m) => lutColor(SCORE_LUT, Math.round((Math.max(-1, Math.min(1, v / m)) + 1) * 127.5));
function render10(container, data, sel, callbacks = {}) {
  const spoken2 = data.tokens.map(spokenToken);
  data = { ...data, tokens: data.tokens.map(shownToken) };
  const n = data.shown ? data.shown.length : data.tokens.length;
  const i = data.query;
  const rows = keyRows(data, Boolean(sel.allKeys));
  const d = queryKeyData(data, rows);
  let root2 = (
    /** @type {HTMLElement & {__qk?: any}} */
    container.firstElementChild
  );
  if (!root2 || !root2.classList.contains("qk") || container.childElementCount !== 1) {
    root2 = el("div", { className: "qk" }, [
      el("div", { className: "qk-head" }),
      el("p", { className: "qk-keys" }),
      el("div", { className: "qk-scroll" }, [
        el("div", { className: "qk-plot" }, [
          el("canvas", { className: "qk-canvas" }),
          el("div", { className: "qk-tip", hidden: true, role: "tooltip" })
        ])
      ]),
      el("p", { className: "qk-note" })
    ]);
    container.replaceChildren(root2);
  }
  root2.querySelector(".qk-head").replaceWith(
    header(data.tokens, sel.layer, sel.head, i, d, data.about ?? [])
  );
  const keysLine = (
    /** @type {HTMLElement} */
    root2.querySelector(".qk-keys")
  );
  if (n > KEYS_MAX) {
    const all = rows.length === n;
    const toggle = el("button", {
      type: "button",
      className: "qk-all",
      textContent: all ? `show the ${TOP_KEYS} strongest` : `show all ${n} keys`
    });
    toggle.onclick = () => callbacks.onAllKeys?.(!all);
    keysLine.replaceChildren(
      all ? `All ${n} keys. ` : `The ${rows.length} keys with the largest weights for this query, of ${n}, in text order. `,
      toggle
    );
    keysLine.hidden = false;
  } else {
    keysLine.replaceChildren();
    keysLine.hidden = true;
  }
  const picks = callbacks.onPick ? "Click a key row to make that token the query. " : "";
  const off = d.mismatch > 1e-3 * Math.max(1, ...d.sums.map(Math.abs)) ? ` Note: the model's scores differ from Σ ${d.rule.scale_label} by up to ${fmt(d.mismatch, 4)}.` : "";
  root2.querySelector(".qk-note").textContent = `${picks}Hover any cell or number for its exact value. Colours: blue negative, red positive.${off}`;
  const plot = (
    /** @type {HTMLElement} */
    root2.querySelector(".qk-plot")
  );
  const canvas = (
    /** @type {HTMLCanvasElement} */
    plot.querySelector("canvas")
  );
  const tip = (
    /** @type {HTMLElement} */
    plot.querySelector(".qk-tip")
  );
  plot.dataset.query = String(i);
  const ctx = (
    /** @type {CanvasRenderingContext2D} */
    canvas.getContext("2d")
  );
  const font = Math.min(12, rowSize(rows.length) - 1);
  ctx.font = `${font}px ${FONT}`;
  const labels = rows.map((j) => data.tokens[j]);
  let labelW = 40;
  for (const s of labels) labelW = Math.max(labelW, ctx.measureText(s).width + 8);
  labelW = Math.min(LABEL_MAX, Math.ceil(labelW));
  const g = geometry(rows.length, d.hd, Math.max(640, plot.clientWidth || container.clientWidth || 800), labelW);
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(g.width * dpr);
  canvas.height = Math.round(g.height * dpr);
  canvas.style.width = `${g.width}px`;
  canvas.style.height = `${g.height}px`;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, g.width, g.height);
  const qk = maxAbs([d.q, ...d.keys]);
  const visible = d.products.filter((_, r) => !d.masked[r]);
  const pm = maxAbs(visible.length ? visible : [[0]]);
  const cells = (values, y, m, grey) => {
    values.forEach((v, c) => {
      ctx.fillStyle = grey ? MASKED_GREY : diverging(v, m);
      ctx.fillRect(g.x0 + c * g.cell, y, Math.max(1, g.cell - 1), Math.max(1, g.row - 1));
    });
  };
  cells(d.q, g.qTop, qk, false);
  d.keys.forEach((k, r) => cells(k, g.kTop + r * g.row, qk, false));
  d.products.forEach(
    (p, r) => cells(p, g.pTop + r * g.row, pm, d.masked[r])
  );
  ctx.fillStyle = TEXT_DIM;
  ctx.font = `12px ${FONT}`;
  ctx.textBaseline = "alphabetic";
  ctx.textAlign = "left";
  const fit = (texts) => texts.find((t) => ctx.measureText(t).width <= g.heatW) ?? texts[texts.length - 1];
  ctx.fillText(fit([`q · query ${data.tokens[i]} (token ${i + 1})`, "q"]), g.x0, g.qTop - 6);
  ctx.fillText(
    fit(
      rows.length === n ? ["k · every key", "k"] : [`k · the ${rows.length} keys with the largest weights`, `k · ${rows.length} strongest`, "k"]
    ),
    g.x0,
    g.kTop - 6
  );
  ctx.fillText(fit(["q ⊙ k · elementwise products, one row per key", "q ⊙ k · products", "q ⊙ k"]), g.x0, g.pTop - 6);
  ctx.textAlign = "center";
  ctx.fillText("Σ q⊙k", g.xSum + SUM_W / 2, g.pTop - 6);
  ctx.fillText(d.rule.scale === 1 ? "score" : `score (${d.rule.scale_label})`, g.xScore + SCORE_W / 2, g.pTop - 6);
  ctx.textAlign = "left";
  ctx.fillText("softmax weight", g.xW, g.pTop - 6);
  ctx.textAlign = "center";
  ctx.fillText(`dimension (0–${d.hd - 1}) of the head`, g.x0 + g.heatW / 2, g.height - 8);
  ctx.textBaseline = "middle";
  const wmax = Math.max(
    1e-9,
    ...d.weights.map((w, r) => d.masked[r] ? 0 : w)
  );
  ctx.textAlign = "right";
  ctx.fillStyle = TEXT;
  ctx.font = `${font}px ${FONT}`;
  ctx.fillText("q", g.x0 - 6, g.qTop + g.row / 2);
  rows.forEach((j, r) => {
    ctx.font = `${j === i ? "bold " : ""}${font}px ${FONT}`;
    for (const top2 of [g.kTop, g.pTop]) ctx.fillText(labels[r], g.x0 - 6, top2 + (r + 0.5) * g.row, labelW);
  });
  ctx.font = `${font}px ${FONT}`;
  rows.forEach((j, r) => {
    const y = g.pTop + (r + 0.5) * g.row;
    ctx.fillStyle = TEXT;
    ctx.textAlign = "right";
    ctx.fillText(d.masked[r] ? "–" : fmt(d.sums[r], 2), g.xSum + SUM_W - 8, y);
    ctx.fillText(d.masked[r] ? "masked" : fmt(d.scores[r], 3), g.xScore + SCORE_W - 8, y);
    const w = d.masked[r] ? 0 : d.weights[r];
    const len = w / wmax * (BAR_W - 52);
    ctx.fillStyle = j === i ? SELECTED : "#6baed6";
    ctx.fillRect(g.xW, y - g.row * 0.35, len, g.row * 0.7);
    ctx.fillStyle = TEXT;
    ctx.textAlign = "left";
    ctx.fillText(d.masked[r] ? "masked" : fmt(w, 3), g.xW + len + 4, y);
  });
  const colourBar = (top2, h, m) => {
    for (let y = 0; y < h; y++) {
      ctx.fillStyle = diverging(m * (1 - 2 * y / Math.max(1, h - 1)), m);
      ctx.fillRect(g.xBar, top2 + y, 10, 1);
    }
    ctx.fillStyle = TEXT_DIM;
    ctx.font = `10px ${FONT}`;
    ctx.textAlign = "left";
    for (const [t, y] of [
      [m, top2],
      [0, top2 + h / 2],
      [-m, top2 + h]
    ])
      ctx.fillText(fmt(t, 1), g.xBar + 13, y);
  };
  colourBar(g.qTop, g.kTop - g.qTop + rows.length * g.row, qk);
  colourBar(g.pTop, rows.length * g.row, pm);
  ctx.strokeStyle = GRID;
  ctx.strokeRect(g.x0 - 0.5, g.kTop - 0.5, g.heatW, rows.length * g.row);
  const at = (e) => {
    const b = canvas.getBoundingClientRect();
    const x = e.clientX - b.left;
    const y = e.clientY - b.top;
    const inHeat = x >= g.x0 && x < g.x0 + g.heatW;
    const c = Math.floor((x - g.x0) / g.cell);
    if (inHeat && y >= g.qTop && y < g.qTop + g.row) return { block: "q", r: 0, c };
    for (
      const [block, top2] of
      /** @type {const} */
      [
        ["k", g.kTop],
        ["p", g.pTop]
      ]
    ) {
      const r = Math.floor((y - top2) / g.row);
      if (y < top2 || r >= rows.length) continue;
      if (inHeat) return { block, r, c };
      if (block === "p" && x >= g.xSum) return { block: "row", r, c: -1 };
    }
    return null;
  };
  const lines = (h, said = data.tokens) => {
    const who = (j2) => `${said[j2]} (token ${j2 + 1})`;
    const ex = (v) => exact(v, d.dtype);
    if (h.block === "q") return [`query ${who(i)} · dim ${h.c}`, `q = ${ex(d.q[h.c])}`];
    const j = rows[h.r];
    if (h.block === "k") return [`key ${who(j)} · dim ${h.c}`, `k = ${ex(d.keys[h.r][h.c])}`];
    if (h.block === "p" && d.masked[h.r]) {
      const window2 = (
        /** @type {{windows?: (number | null)[]}} */
        d.rule.windows?.[sel.layer] ?? null
      );
      const why = j > i || window2 === null ? "after the query" : `outside this layer's window of ${window2} tokens`;
      return [`key ${who(j)}: masked (${why})`];
    }
    if (h.block === "p") {
      return [
        `key ${who(j)} · dim ${h.c}`,
        `q·k = ${ex(d.q[h.c])} × ${ex(d.keys[h.r][h.c])}`,
        `= ${exact(d.products[h.r][h.c])}`
      ];
    }
    const cap = d.rule.softcap;
    const capped = cap && !d.masked[h.r] ? [
      `capped: ${cap} · tanh(score / ${cap}) = ${exact(cap * Math.tanh(
        /** @type {number} */
        d.scores[h.r] / cap
      ))}`
    ] : [];
    return [
      `key ${who(j)}`,
      `Σ q⊙k = ${exact(d.sums[h.r])}`,
      `${d.rule.scale_label} = ${exact(d.masked[h.r] ? null : d.scaled(d.sums[h.r]))}`,
      `score (model) = ${ex(d.scores[h.r])}`,
      ...capped,
      `weight = ${d.masked[h.r] ? "masked" : ex(d.weights[h.r])}`
    ];
  };
  canvas.onmousemove = (e) => {
    const h = at(e);
    tip.hidden = !h;
    canvas.style.cursor = h && h.block !== "q" && callbacks.onPick ? "pointer" : "";
    if (!h) return;
    tip.textContent = lines(h).join("\n");
    const b = canvas.getBoundingClientRect();
    tip.style.left = `${Math.min(e.clientX - b.left + 14, g.width - 220)}px`;
    tip.style.top = `${e.clientY - b.top + 14}px`;
  };
  canvas.onmouseleave = () => {
    tip.hidden = true;
  };
  canvas.onclick = (e) => {
    const h = at(e);
    if (h && h.block !== "q" && callbacks.onPick) callbacks.onPick(rows[h.r]);
  };
  const top = d.masked.reduce(
    (b, m, r) => !m && (b < 0 || d.weights[r] > d.weights[b]) ? r : b,
    -1
  );
  const text = describe(
    /** @type {HTMLElement} */
    root2.querySelector(".qk-scroll"),
    {
      summary: top < 0 ? `Query ${data.tokens[i]}: every key is masked.` : `Query ${data.tokens[i]} (token ${i + 1}): the largest weight goes to ${data.tokens[rows[top]]} (token ${rows[top] + 1}), ${fmt(d.weights[top], 3)}, score ${fmt(d.scores[top], 3)}.`,
      table: {
        caption: `Query ${data.tokens[i]}: each key's sum, score and weight`,
        head: ["key", "Σ q⊙k", d.rule.scale === 1 ? "score" : `score (${d.rule.scale_label})`, "weight"],
        rows: rows.map((j, r) => [
          `${data.tokens[j]} (${j + 1})`,
          d.masked[r] ? "–" : fmt(d.sums[r], 3),
          d.masked[r] ? "masked" : fmt(d.scores[r], 3),
          d.masked[r] ? "masked" : fmt(d.weights[r], 3)
        ])
      }
    }
  );
  keyCursor(canvas, text.live, {
    rows: rows.length,
    cols: d.hd + 1,
    describedBy: text.summary.id,
    label: `Query ${spoken2[i]}: q, every key, q ⊙ k, the scores and the weights. Arrow keys move over the keys (up, down) and the dimensions of their products (left, right), End to a key's score and weight${callbacks.onPick ? "; Enter makes the key the query" : ""}.`,
    text: (r, c) => lines(c < d.hd ? { block: "p", r, c } : { block: "row", r, c: -1 }, spoken2).join(", "),
    show: (r, c) => {
      tip.hidden = false;
      tip.textContent = lines(c < d.hd ? { block: "p", r, c } : { block: "row", r, c: -1 }).join("\n");
      const x = c < d.hd ? g.x0 + (c + 1) * g.cell + 8 : g.xSum;
      tip.style.left = `${Math.min(x, g.width - 220)}px`;
      tip.style.top = `${g.pTop + (r + 1) * g.row + 6}px`;
    },
    hide: () => {
      tip.hidden = true;
    },
    pick: callbacks.onPick ? (r) => callbacks.onPick?.(rows[r]) : void 0
  });
  root2.__qk = {
    rows,
    ...d,
    geometry: g,
    tipAt: (block, r, c) => lines({ block, r, c })
  };
}
function headNotes(meta, head, layer = 0) {
  const notes = [];
  const window2 = meta.attention?.windows?.[layer] ?? null;
  const norm = meta.attention?.qk_norm;
  if (norm === "head" || norm === "proj") {
    notes.push(
      `q and k are shown after the model's RMSNorm of ${norm === "head" ? "each head's vector" : "the whole projection"}${meta.rope ? ", before the rotation" : ""}: their lengths are set by the norm's weights, not by the token.`
    );
  }
  if (meta.rope) {
    const pairs = meta.rope.style === "halves" ? "coordinates i and i + d/2, as Hugging Face's Llama-style models" : "coordinates 2i and 2i + 1";
    const local = meta.rope.local_base != null && window2 !== null;
    const base = local ? (
      /** @type {number} */
      meta.rope.local_base
    ) : meta.rope.base;
    const part4 = meta.rope.rotary_dim ? ` Only the first ${meta.rope.rotary_dim} coordinates of each head turn; the rest pass as they are.` : "";
    const scaling = meta.rope.scaling && !local ? ` The frequencies are stretched by the checkpoint's "${meta.rope.scaling}" RoPE scaling.` : "";
    notes.push(
      `q and k are shown after the RoPE rotation: pair i (${pairs}) turned by position × ${base.toLocaleString("en")}^(−2i/d)${local ? " (this sliding layer's own base)" : ""}. The score of a query and a key then depends on how far apart the two tokens are.${part4}${scaling}`
    );
  }
  if (window2 !== null) {
    notes.push(
      `This layer slides a window: a query sees only the last ${window2.toLocaleString("en")} tokens, itself included; keys further back are masked like future ones.`
    );
  }
  const kv = meta.kv_heads ?? meta.heads;
  if (kv < meta.heads) {
    const group = meta.heads / kv;
    const g = Math.floor(head / group);
    const first = g * group + 1;
    notes.push(
      `Grouped-query attention: this head reads key/value head ${g + 1} of ${kv}, shared by query heads ${first}–${first + group - 1}: their keys and values are the same numbers.`
    );
  }
  if (
    /** @type {{backend?: string}} */
    meta.backend === "transformers"
  ) {
    notes.push(
      "Served through transformers: q and k are what the model's own code handed its attention (after any rotary embedding and q/k norm it applies), recorded through transformers' AttentionInterface."
    );
  }
  return notes;
}
function header(tokens, l, h, i, d, about) {
  const title = el("p", { className: "qk-title" }, [
    "Query ",
    el("span", { className: "qk-token", textContent: tokens[i] }),
    el("span", { className: "qk-dim", textContent: ` token ${i + 1} · layer ${l + 1}, head ${h + 1}` })
  ]);
  const cap = d.rule.softcap;
  const weighs = cap ? ` · weight = softmax over the keys of the soft-capped scores, ${cap} · tanh(score / ${cap})` : " · weight = softmax of the scores over the keys";
  const formula = el("p", { className: "qk-formula", textContent: `score = Σ qₖ·kₖ ${d.rule.scale_label}` }, [
    el("span", { className: "qk-dim", textContent: weighs })
  ]);
  return el("div", { className: "qk-head" }, [
    title,
    formula,
    ...about.map((text) => el("p", { className: "qk-about", textContent: text }))
  ]);
}
function headInput(tokens, arrays, query2, rule) {
  const row = (a) => sub(a, 0, 0, a.shape[2] === 1 ? 0 : query2);
  return {
    tokens,
    query: query2,
    rule,
    queries: sub(arrays.queries, 0, 0),
    keys: sub(arrays.keys, 0, 0),
    scores: row(arrays.scores),
    weights: row(arrays.attentions)
  };
}
function renderUnavailable2(container, meta) {
  const reason = (meta.unavailable?.queries ?? "").replace(/^queries: /, "");
  container.replaceChildren(
    el("div", { className: "qk qk-unavailable", role: "note" }, [
      el("p", { className: "qk-title", textContent: "The query-key view is not available for this model." }),
      el("p", { textContent: `Why: ${reason || `model ${meta.model} records no queries or keys`}.` }),
      el("p", {
        className: "qk-dim",
        textContent: "Unavailable: this view (q, k, their products, the scores) and the arrays queries, keys, values and scores. The model view, the head view and generation show the model's own attention weights, and the trajectories its hidden states, as transformers computed them."
      })
    ])
  );
}

// static/js/modes/sentence/cards/qk.js
async function draw6({ app: app2, p, ticket, pickQuery, viewChanged }) {
  const current = ticket("qk");
  const meta = (
    /** @type {Compact} */
    app2.first.meta
  );
  fillIndexSelect(
    /** @type {HTMLSelectElement} */
    byId("qk-layer"),
    meta.layers,
    "layer",
    app2.s.layer
  );
  fillIndexSelect(
    /** @type {HTMLSelectElement} */
    byId("qk-head"),
    meta.heads,
    "head",
    app2.s.head
  );
  const hide = app2.s.hideSpecial;
  const keys = meta.tokens.map((_, i) => i).filter((i) => !(hide && meta.special?.[i]));
  fillOptions(
    /** @type {HTMLSelectElement} */
    byId("qk-query"),
    keys.map((i) => [i, `${i + 1}. ${shownToken(meta.tokens[i])}`]),
    p.queryIndex()
  );
  if (meta.unavailable?.queries) return renderUnavailable2(byId("qk-view"), meta);
  const part4 = await p.queryPart();
  if (!current()) return;
  const input = {
    ...headInput(meta.tokens, part4.arrays, p.queryIndex(), scoreRule(meta)),
    about: [...headNotes(meta, app2.s.head, app2.s.layer), ...optionNotes(app2, p.queryIndex(), meta)]
  };
  if (hide) {
    const row = sub(part4.arrays.view, 0, 0, 0);
    const weights = new Float64Array(meta.n).fill(NaN);
    keys.forEach((j, r) => {
      weights[j] = row.data[r];
    });
    Object.assign(input, { shown: keys, weights: { dtype: row.dtype, shape: [meta.n], data: weights } });
  }
  return render10(
    byId("qk-view"),
    input,
    { layer: app2.s.layer, head: app2.s.head, allKeys: app2.s.allKeys },
    {
      onPick: pickQuery,
      onAllKeys: (all) => {
        app2.s.allKeys = all;
        viewChanged(["allKeys"]);
      }
    }
  );
}
function optionNotes(app2, q, meta) {
  const notes = [];
  if (app2.s.hideSpecial) {
    notes.push(
      "Special tokens hidden: each weight is renormalised over the keys shown, which is the softmax of their scores alone; the scores are the model's."
    );
  }
  if (app2.s.mergeWords) {
    const w = meta.words?.[q];
    const word = [];
    for (let i = q; i >= 0 && w != null && meta.words?.[i] === w; i--) word.unshift(i);
    for (let i = q + 1; i < meta.n && w != null && meta.words?.[i] === w; i++) word.push(i);
    const why = "Word pieces are not merged in this view: each piece has its own query and key vectors, and a word has none. The model and head views merge them (a word's row there is the mean of its pieces' rows, its column the sum of theirs).";
    if (word.length > 1) {
      const off = meta.offsets;
      const text = off && meta.text ? meta.text.slice(off[word[0]][0], off[word[word.length - 1]][1]) : "";
      notes.push(
        `${why} “${text}” is ${word.length} pieces, tokens ${word[0] + 1}–${word[word.length - 1] + 1} (${word.map((i) => meta.tokens[i]).join(" ")}): pick each as the query.`
      );
    } else {
      notes.push(why);
    }
  }
  return notes;
}
function wire4({ app: app2, chooseHead, pickQuery }) {
  const picked = (id) => Number(
    /** @type {HTMLSelectElement} */
    byId(id).value
  );
  byId("qk-layer").addEventListener("change", () => chooseHead(picked("qk-layer"), app2.s.head));
  byId("qk-head").addEventListener("change", () => chooseHead(app2.s.layer, picked("qk-head")));
  byId("qk-query").addEventListener("change", () => pickQuery(picked("qk-query")));
}

// static/js/modes/sentence/cards/traj.js
var traj_exports = {};
__export(traj_exports, {
  draw: () => draw7,
  wire: () => wire5
});

// static/js/views/trajectories.js
var AXES = ["x", "y", "z"];
var LEGEND_MAX = 24;
var FEW_ROWS = 8;
var POSITION_BANDS = 8;
var TABLE_MAX2 = 16;
var POSITION_SCALE = ["#0d0887", "#41049d", "#6a00a8", "#8f0da4", "#b12a90", "#cc4778", "#e16462"];
function defaultRows(groups, picked, query2) {
  const every = groups.map((_, r) => r);
  if (picked === "all" || picked === null && groups.length <= LEGEND_MAX) return every;
  if (Array.isArray(picked)) return every.filter((r) => groups[r].some((i) => picked.includes(i)));
  const at = Math.max(
    0,
    groups.findIndex((g) => g.includes(query2))
  );
  const start2 = Math.max(0, Math.min(at, groups.length - FEW_ROWS));
  return every.slice(start2, start2 + FEW_ROWS);
}
function positionColor(t) {
  const x = Math.max(0, Math.min(1, t)) * (POSITION_SCALE.length - 1);
  const k = Math.min(POSITION_SCALE.length - 2, Math.floor(x));
  const rgb = (h) => [1, 3, 5].map((o) => parseInt(h.slice(o, o + 2), 16));
  const [a, b] = [rgb(POSITION_SCALE[k]), rgb(POSITION_SCALE[k + 1])];
  const f = x - k;
  return "#" + a.map(
    (v, c) => Math.round(v + (b[c] - v) * f).toString(16).padStart(2, "0")
  ).join("");
}
var positionsOf = (trace) => trace.positions ?? trace.tokens.map((_, i) => i);
function colours(trace, picked) {
  const pos = positionsOf(trace);
  const last = Math.max(1, pos[pos.length - 1] ?? 1);
  return new Map(
    picked.map((r, k) => [r, picked.length <= PALETTE_SIZE ? tokenColor(k) : positionColor(pos[r] / last)])
  );
}
function pickedTokens(trace, tokens) {
  const n = trace.tokens.length;
  if (!Array.isArray(tokens)) return trace.tokens.map((_, i) => i);
  return [...new Set(tokens.map(Number))].filter((i) => Number.isInteger(i) && i >= 0 && i < n).sort((a, b) => a - b);
}
var titles2 = (p) => p.ratio.map((r, c) => `PC${c + 1} (${fmt(100 * r, 1)}%)`);
function names(trace, picked) {
  const count = /* @__PURE__ */ new Map();
  const pos = positionsOf(trace);
  for (const t of trace.tokens) count.set(t, (count.get(t) || 0) + 1);
  return new Map(
    picked.map((i) => {
      const t = trace.tokens[i];
      return [i, count.get(t) > 1 ? `${shownToken(t)} (token ${pos[i] + 1})` : shownToken(t)];
    })
  );
}
function pointsOf(coords, i) {
  const [L1, n, K] = coords.shape;
  return Array.from({ length: L1 }, (_, l) => Array.from(coords.data.subarray((l * n + i) * K, (l * n + i + 1) * K)));
}
function path(trace, i, k, name, ax, color) {
  const coords = (
    /** @type {NonNullable<TrajData["projection"]>} */
    trace.projection.coords
  );
  const pts = pointsOf(coords, i);
  const dtype = coords.dtype;
  const L = pts.length - 1;
  const layers = pts.map((_, l) => l);
  const t = {
    type: k === 3 ? "scatter3d" : "scatter",
    uid: `traj-${i}`,
    name: plotText(name),
    legendgroup: `traj-${i}`,
    mode: k === 3 ? "lines+markers" : "lines+markers+text",
    line: { color, width: k === 3 ? 5 : 2.5 },
    marker: {
      color: layers.map((l) => l === 0 ? "#ffffff" : color),
      size: layers.map((l) => k === 3 ? 3 + l * (4 / L) : 5 + l * (5 / L)),
      line: { color, width: 1.5 }
    },
    // The label sits at the end of the path (the last layer).
    text: layers.map((l) => l === L ? plotToken(trace.tokens[i]) : ""),
    textposition: "top right",
    textfont: { color, size: 13 },
    customdata: layers.map((l) => [
      plotText(name),
      l === 0 ? "0 (embeddings)" : String(l),
      ...pts[l].slice(0, k).map((v, c) => `${ax[c]} = ${exact(v, dtype)}`)
    ]),
    hovertemplate: "<b>%{customdata[0]}</b> · layer %{customdata[1]}<br>" + ax.slice(0, k).map((_, c) => `%{customdata[${c + 2}]}`).join("<br>") + "<extra></extra>"
  };
  AXES.slice(0, k).forEach((a, c) => {
    t[a] = layers.map((l) => pts[l][c]);
  });
  if (k === 2) t.cliponaxis = false;
  return t;
}
function groupedPaths(trace, picked, k, ax) {
  const coords = (
    /** @type {NonNullable<TrajData["projection"]>} */
    trace.projection.coords
  );
  const dtype = coords.dtype;
  const pos = positionsOf(trace);
  const last = Math.max(1, pos[pos.length - 1] ?? 1);
  const band = (r) => Math.min(POSITION_BANDS - 1, Math.floor(pos[r] / last * POSITION_BANDS));
  return Array.from({ length: POSITION_BANDS }, (_, c) => {
    const color = positionColor((c + 0.5) / POSITION_BANDS);
    const xyz = { x: [], y: [], z: [] };
    const custom = [];
    for (const i of picked) {
      if (band(i) !== c) continue;
      pointsOf(coords, i).forEach((p, l) => {
        AXES.slice(0, k).forEach((a, d) => xyz[a].push(p[d]));
        custom.push([
          plotToken(trace.tokens[i]),
          `${i}`,
          l === 0 ? "0 (embeddings)" : String(l),
          ...p.slice(0, k).map((v, d) => `${ax[d]} = ${exact(v, dtype)}`),
          `${pos[i] + 1}`
        ]);
      });
      AXES.slice(0, k).forEach((a) => xyz[a].push(null));
      custom.push(null);
    }
    const t = {
      // Lines only: a marker is an element of its own, and 512 tokens have 3,584 points.
      type: k === 3 ? "scatter3d" : "scatter",
      uid: `traj-band-${c}`,
      mode: "lines",
      showlegend: false,
      line: { color, width: k === 3 ? 3 : 1.5 },
      customdata: custom,
      connectgaps: false,
      hovertemplate: `<b>%{customdata[0]}</b> (token %{customdata[${k + 3}]}) · layer %{customdata[2]}<br>` + ax.slice(0, k).map((_2, d) => `%{customdata[${d + 3}]}`).join("<br>") + "<extra></extra>"
    };
    AXES.slice(0, k).forEach((a) => {
      t[a] = xyz[a];
    });
    return t;
  });
}
function layout2d(ax, empty) {
  const axis = (c) => ({ title: { text: ax[c] }, zerolinecolor: "#c3c9d3", gridcolor: "#eef0f3" });
  return baseLayout({
    margin: { l: 64, r: 16, t: 12, b: 52 },
    hovermode: "closest",
    legend: { title: { text: "token" }, itemclick: false, itemdoubleclick: false },
    uirevision: "traj-2d",
    xaxis: axis(0),
    yaxis: axis(1),
    annotations: empty
  });
}
function layout3d(trace, picked, ax, empty, colour) {
  const coords = (
    /** @type {NonNullable<TrajData["projection"]>} */
    trace.projection.coords
  );
  const L = coords.shape[0] - 1;
  const axis = (c) => ({
    title: { text: ax[c] },
    gridcolor: "#e3e6eb",
    zerolinecolor: "#c3c9d3",
    backgroundcolor: "#fbfcfd",
    showbackground: true
  });
  const labels = (picked.length > LEGEND_MAX ? [] : picked).map((i) => ({
    x: pointsOf(coords, i)[L][0],
    y: pointsOf(coords, i)[L][1],
    z: pointsOf(coords, i)[L][2],
    text: plotToken(trace.tokens[i]),
    showarrow: false,
    yshift: 11,
    font: { size: 12, color: colour.get(i) },
    bgcolor: "rgba(255,255,255,0.65)"
  }));
  return baseLayout({
    margin: { l: 0, r: 0, t: 8, b: 0 },
    legend: { title: { text: "token" }, itemclick: false, itemdoubleclick: false },
    uirevision: "traj-3d",
    annotations: empty,
    scene: {
      xaxis: axis(0),
      yaxis: axis(1),
      zaxis: axis(2),
      aspectmode: "cube",
      annotations: labels,
      camera: { eye: { x: 1.45, y: -1.4, z: 0.75 } },
      uirevision: "traj-3d"
    }
  });
}
function render11(container, data, sel, callbacks = {}) {
  const p = data.projection;
  let root2 = (
    /** @type {HTMLElement} */
    container.firstElementChild
  );
  if (!root2 || !root2.classList.contains("traj") || container.childElementCount !== 1) {
    root2 = el("div", { className: "traj" }, [
      el("p", { className: "traj-note" }),
      el("div", { className: "traj-plot" }),
      el("p", { className: "traj-scale", hidden: true })
    ]);
    container.replaceChildren(root2);
  }
  const note = (
    /** @type {HTMLElement} */
    root2.querySelector(".traj-note")
  );
  const plot = (
    /** @type {HTMLElement & {_trajPick?: any, _trajBound?: boolean, on?: any}} */
    root2.querySelector(".traj-plot")
  );
  const scale = (
    /** @type {HTMLElement} */
    root2.querySelector(".traj-scale")
  );
  if (!p || !p.coords) {
    note.textContent = "This trace has no projection to draw.";
    plot.hidden = true;
    scale.hidden = true;
    return Promise.resolve();
  }
  plot.hidden = false;
  const k = sel.dims === 3 && p.components >= 3 ? 3 : 2;
  const L = p.coords.shape[0] - 1;
  const picked = pickedTokens(data, sel.tokens);
  const ax = titles2(p);
  const shown = p.ratio.slice(0, k).reduce((a, b) => a + b, 0);
  const grouped = picked.length > LEGEND_MAX;
  const unit = data.unit ?? "tokens";
  const many = picked.length > PALETTE_SIZE;
  const start2 = data.defaulted && picked.length < data.tokens.length ? ` A long text starts with ${picked.length} ${unit} from the query on: pick more below, or all.` : "";
  note.textContent = `One PCA fitted on the hidden states of all ${L + 1} layers together (${ax.slice(0, k).join(", ")}: ${fmt(100 * shown, 1)}% of the variance). Each path runs from layer 0 (the embeddings${grouped ? "" : ", open marker"}) to layer ${L}${grouped ? "; hover a path for its token" : ", the label at its end"}; ${picked.length} of ${data.tokens.length} ${unit} shown${many ? ", coloured by position in the text (the scale below the plot)" : ""}.${start2}`;
  scale.hidden = !many;
  if (many) {
    const pos = positionsOf(data);
    const gradient = `linear-gradient(to right, ${POSITION_SCALE.join(", ")})`;
    scale.replaceChildren(
      el("span", { textContent: "token 1" }),
      el("span", { className: "traj-scale-bar", "aria-hidden": "true", style: `background: ${gradient}` }),
      el("span", { textContent: `token ${(pos[pos.length - 1] ?? 0) + 1}` }),
      el("span", { className: "traj-scale-about", textContent: "colour: position in the text" })
    );
  }
  plot.classList.toggle("traj-3d", k === 3);
  plot.dataset.dims = String(k);
  const nm = names(data, picked);
  const colour = colours(data, picked);
  const traces = grouped ? groupedPaths(data, picked, k, ax) : picked.map((i) => path(
    data,
    i,
    k,
    /** @type {string} */
    nm.get(i),
    ax,
    /** @type {string} */
    colour.get(i)
  ));
  const empty = picked.length ? [] : [
    {
      xref: "paper",
      yref: "paper",
      x: 0.5,
      y: 0.5,
      text: `No ${unit} picked`,
      showarrow: false,
      font: { size: 15, color: "#5b6475" }
    }
  ];
  if (k === 2 && !picked.length) traces.push({ type: "scatter", x: [], y: [], showlegend: false });
  const layout = (
    /** @type {any} */
    k === 3 ? layout3d(data, picked, ax, empty, colour) : layout2d(ax, empty)
  );
  layout.showlegend = picked.length > 0 && !grouped;
  plot._trajPick = callbacks.onPick || null;
  readable(plot, data, picked, k, ax, nm, grouped);
  return draw(plot, traces, layout, "attnviz-trajectories").then(() => {
    if (plot._trajBound) return;
    plot._trajBound = true;
    onPlot(plot, "plotly_click", (ev) => {
      const point = ev?.points?.[0];
      const m = /^traj-(\d+)$/.exec(point?.data?.uid || "");
      const i = m ? Number(m[1]) : Number(point?.customdata?.[1]);
      if (Number.isInteger(i) && plot._trajPick) plot._trajPick(i);
    });
  });
}
function readable(plot, data, picked, k, ax, nm, grouped) {
  const coords = (
    /** @type {NonNullable<TrajData["projection"]>} */
    data.projection.coords
  );
  const L = coords.shape[0] - 1;
  const paths2 = picked.map((i) => pointsOf(coords, i).map((p) => p.slice(0, k)));
  const far = farthest(
    paths2.map((p) => p[0]),
    paths2.map((p) => p[L])
  );
  const point = (p) => `(${p.map((v) => fmt(v, 2)).join(", ")})`;
  const text = describe(plot, {
    summary: !picked.length ? "No path shown." : `${picked.length} path${picked.length === 1 ? "" : "s"} from layer 0 to layer ${L} in ${ax.slice(0, k).join(", ")}` + (far && picked.length > 1 ? `; the farthest from its start: ${nm.get(picked[far.i])} (${fmt(far.d, 2)}).` : "."),
    table: picked.length && picked.length <= TABLE_MAX2 ? {
      caption: `Each path's point (${ax.slice(0, k).join(", ")}) at every layer`,
      head: ["token", ...Array.from({ length: L + 1 }, (_, l) => `layer ${l}`)],
      rows: picked.map((i, r) => [
        /** @type {string} */
        nm.get(i),
        ...paths2[r].map(point)
      ])
    } : null
  });
  const dtype = coords.dtype;
  keyCursor(plot, text.live, {
    rows: picked.length,
    cols: L + 1,
    describedBy: text.summary.id,
    label: `Trajectories of ${picked.length} token${picked.length === 1 ? "" : "s"} through the layers, ${k === 3 ? "3-D" : "2-D"} plot. Left and right arrows move along a path's layers, up and down between the paths.`,
    text: (r, l) => `${spokenToken(data.tokens[picked[r]])} · layer ${l}: ` + paths2[r][l].map((v, c) => `${ax[c]} = ${exact(v, dtype)}`).join(", "),
    show: k === 3 || grouped ? void 0 : (r, l) => plotlyOf(plot).Fx.hover(plot, [{ curveNumber: r, pointNumber: l }]),
    hide: () => plotlyOf(plot).Fx.unhover(plot)
  });
}

// static/js/modes/sentence/cards/traj.js
function fillTokenChips(box, tokens, shown, picked, onChange) {
  const key = shown.map((i) => `${i}:${tokens[i]}`).join("\0");
  if (box.dataset.key !== key) {
    box.dataset.key = key;
    box.replaceChildren(
      ...shown.map(
        (i) => el("button", {
          type: "button",
          className: "token-chip",
          dataset: { index: String(i) },
          textContent: shownToken(tokens[i]),
          "aria-label": spokenToken(tokens[i])
        })
      )
    );
  }
  box.onclick = (e) => {
    const b = (
      /** @type {Element} */
      e.target.closest("button.token-chip")
    );
    if (!b) return;
    b.setAttribute("aria-pressed", b.getAttribute("aria-pressed") === "true" ? "false" : "true");
    const on = [...box.querySelectorAll('button.token-chip[aria-pressed="true"]')].map(
      (c) => Number(
        /** @type {HTMLElement} */
        c.dataset.index
      )
    );
    onChange(on.length === shown.length ? null : on);
  };
  for (
    const b of
    /** @type {NodeListOf<HTMLElement>} */
    box.querySelectorAll("button.token-chip")
  ) {
    const on = !picked || picked.includes(Number(b.dataset.index));
    b.setAttribute("aria-pressed", on ? "true" : "false");
  }
}
async function draw7({ app: app2, p, ticket, pickQuery, viewChanged }) {
  const current = ticket("traj");
  const meta = (
    /** @type {Compact} */
    app2.first.meta
  );
  const s = app2.s;
  byId(s.dims === 2 ? "traj-2d" : "traj-3d").checked = true;
  const part4 = await p.projectionPart();
  if (!current()) return;
  const tv = part4.meta.token_view;
  const groups = tv ? tv.groups : meta.tokens.map((_, i) => [i]);
  const labels = tv ? tv.labels : meta.tokens;
  const heads = groups.map((g) => g[0]);
  const rows = defaultRows(groups, s.picked, p.queryIndex());
  const chipLabels = [];
  heads.forEach((i, r) => {
    chipLabels[i] = labels[r];
  });
  fillTokenChips(
    byId("traj-tokens"),
    chipLabels,
    heads,
    rows.map((r) => heads[r]),
    (picked) => {
      app2.s.picked = picked ?? "all";
      viewChanged(["picked"]);
    }
  );
  const proj = part4.meta.projection;
  const projection = proj ? {
    components: proj.components,
    coords: part4.arrays["projection.coords"],
    ratio: Array.from(part4.arrays["projection.explained_variance_ratio"].data)
  } : null;
  return render11(
    byId("traj-view"),
    {
      tokens: labels,
      positions: heads,
      projection,
      unit: s.mergeWords ? "words" : "tokens",
      defaulted: s.picked === null
    },
    { tokens: rows, dims: s.dims },
    { onPick: (r) => pickQuery(heads[r]) }
  );
}
function wire5({ app: app2, viewChanged }) {
  for (
    const input of
    /** @type {NodeListOf<HTMLInputElement>} */
    document.querySelectorAll('input[name="traj-dims"]')
  ) {
    input.addEventListener("change", () => {
      app2.s.dims = Number(input.value) === 2 ? 2 : 3;
      viewChanged(["dims"]);
    });
  }
  byId("traj-all").addEventListener("click", () => {
    app2.s.picked = "all";
    viewChanged(["picked"]);
  });
  byId("traj-none").addEventListener("click", () => {
    app2.s.picked = [];
    viewChanged(["picked"]);
  });
}

// static/js/modes/sentence/cards.js
var CARDS = (
  /** @type {const} */
  { lens: lens_exports, model: model_exports, gen: gen_exports, head: head_exports, qk: qk_exports, traj: traj_exports }
);
function createCards(ctx) {
  const views = (
    /** @type {Record<keyof typeof CARDS, () => Promise<unknown>>} */
    {}
  );
  for (
    const [name, card] of
    /** @type {[keyof typeof CARDS, Card][]} */
    Object.entries(CARDS)
  ) {
    card.wire?.(ctx);
    views[name] = () => card.draw(ctx);
  }
  return views;
}

// static/js/views/knockout.js
var TABLE_MAX3 = 400;
var MAX_SIDE3 = 520;
var BAR3 = 70;
var lossOf = (p) => -Math.log(p);
function lossRows(data) {
  const pr = data.predictions;
  if (!pr) return [];
  const n = data.tokens.length;
  const top = (r, i) => ({
    id: r.ids.data[i * r.k],
    label: r.vocab[String(r.ids.data[i * r.k])] ?? "?",
    prob: r.probs.data[i * r.k]
  });
  const rows = [];
  for (let i = 0; i + 1 < n; i++) {
    const clean = lossOf(pr.clean.target.data[i]);
    const knocked = lossOf(pr.knocked.target.data[i]);
    rows.push({
      i,
      token: data.tokens[i],
      next: data.tokens[i + 1],
      clean,
      knocked,
      change: knocked - clean,
      topClean: top(pr.clean, i),
      topKnocked: top(pr.knocked, i)
    });
  }
  return rows;
}
function largestChange(clean, knocked) {
  let best = 0;
  let at = 0;
  for (let p = 0; p < clean.data.length; p++) {
    const d = knocked.data[p] - clean.data[p];
    if (Math.abs(d) > Math.abs(best)) [best, at] = [d, p];
  }
  const n = clean.shape[1];
  return { i: Math.floor(at / n), j: at % n, value: best };
}
var signed = (v, digits = 3) => `${v > 0 ? "+" : v < 0 ? "−" : ""}${fmt(Math.abs(v), digits)}`;
function summaryText(data) {
  const rows = lossRows(data);
  const parts = [`Knocked out ${data.what}.`];
  if (rows.length) {
    const mean = (f) => rows.reduce((s, r) => s + f(r), 0) / rows.length;
    const c = mean((r) => r.clean);
    const k = mean((r) => r.knocked);
    const changed = rows.filter((r) => r.topClean.id !== r.topKnocked.id).length;
    parts.push(
      `Mean loss ${fmt(c, 3)} → ${fmt(k, 3)} (${signed(k - c)}) over ${rows.length} positions; ${changed} of ${rows.length} top predictions changed.`
    );
  }
  parts.push(changeText(data));
  return parts.join(" ");
}
function changeText(data) {
  const { layer, head, clean, knocked } = data.diff;
  const big = largestChange(clean, knocked);
  return big.value === 0 ? `Layer ${layer + 1} head ${head + 1}'s attention did not change.` : `Largest change: layer ${layer + 1} head ${head + 1}, ${quotedToken(data.tokens[big.i])} → ${quotedToken(data.tokens[big.j])} ${signed(big.value, 2)}.`;
}
function lossTable(data) {
  const rows = lossRows(data);
  const head = ["#", "token", "next", "clean", "knocked out", "change", "clean", "knocked out"];
  return el(
    "div",
    {
      className: "table-scroll ko-scroll",
      tabIndex: 0,
      role: "region",
      "aria-label": "Each position's loss and top prediction, clean and knocked out"
    },
    [
      el("table", { className: "data-table ko-table" }, [
        el("caption", {
          className: "sr-only",
          textContent: "Loss (−ln p of the next token) and top prediction at each position, clean and with the heads knocked out"
        }),
        el("thead", {}, [
          el("tr", {}, [
            el("td", { colSpan: 3 }),
            el("th", { scope: "colgroup", colSpan: 3, textContent: "loss (−ln p of next)" }),
            el("th", { scope: "colgroup", colSpan: 2, textContent: "top prediction" })
          ]),
          el(
            "tr",
            {},
            head.map((h) => el("th", { scope: "col", textContent: h }))
          )
        ]),
        el(
          "tbody",
          {},
          rows.map((r) => {
            const changed = r.topClean.id !== r.topKnocked.id;
            return el("tr", { dataset: { pos: String(r.i) } }, [
              el("th", { scope: "row", textContent: String(r.i + 1) }),
              el("td", { textContent: shownToken(r.token) }),
              el("td", { textContent: shownToken(r.next) }),
              el("td", { className: "num ko-loss-clean", textContent: fmt(r.clean, 3) }),
              el("td", { className: "num ko-loss-knocked", textContent: fmt(r.knocked, 3) }),
              el("td", {
                className: `num ko-change ${r.change > 0 ? "worse" : r.change < 0 ? "better" : ""}`,
                textContent: signed(r.change)
              }),
              el("td", { textContent: `${shownToken(r.topClean.label)} ${fmt(r.topClean.prob, 2)}` }),
              el(
                "td",
                { className: changed ? "ko-changed" : "" },
                changed ? [
                  el("span", { "aria-hidden": "true", textContent: "▲ " }),
                  `${shownToken(r.topKnocked.label)} ${fmt(r.topKnocked.prob, 2)}`,
                  el("span", { className: "sr-only", textContent: " (changed)" })
                ] : [`${shownToken(r.topKnocked.label)} ${fmt(r.topKnocked.prob, 2)}`]
              )
            ]);
          })
        )
      ])
    ]
  );
}
function diffMap(fig, data) {
  const { layer, head, clean, knocked } = data.diff;
  const n = clean.shape[0];
  const d = new Float64Array(n * n);
  let m = 0;
  for (let p = 0; p < n * n; p++) {
    d[p] = knocked.data[p] - clean.data[p];
    m = Math.max(m, Math.abs(d[p]));
  }
  const top = m > 0 ? m : 1;
  const title = `Layer ${layer + 1} head ${head + 1}: knocked out − clean attention`;
  const width = Math.max(220, Math.min(MAX_SIDE3 + 140 + BAR3, fig.clientWidth || 600));
  const labelW = n <= 40 ? 90 : 24;
  const cell = Math.max(1, Math.min(28, (width - labelW - BAR3 - 10) / n));
  const side = cell * n;
  const below = n <= 40 ? 70 : 16;
  const canvas = (
    /** @type {HTMLCanvasElement} */
    el("canvas", { className: "ko-canvas" })
  );
  const body = el("div", { className: "ko-body" }, [canvas]);
  fig.replaceChildren(el("p", { className: "hc-title", textContent: title }), body);
  const wide = labelW + side + BAR3;
  const tall = side + below + 8;
  const ctx = (
    /** @type {CanvasRenderingContext2D} */
    canvas.getContext("2d")
  );
  sizeCanvas(canvas, ctx, wide, tall);
  const img = new ImageData(n, n);
  for (let p = 0; p < n * n; p++) {
    const c = Math.round((Math.max(-1, Math.min(1, d[p] / top)) + 1) * 127.5) * 3;
    img.data.set([SCORE_LUT[c], SCORE_LUT[c + 1], SCORE_LUT[c + 2], 255], p * 4);
  }
  const src = document.createElement("canvas");
  src.width = src.height = n;
  src.getContext("2d").putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(src, labelW, 4, side, side);
  ctx.strokeStyle = GRID;
  ctx.strokeRect(labelW - 0.5, 3.5, side + 1, side + 1);
  ctx.fillStyle = TEXT;
  ctx.font = `11px ${FONT}`;
  if (n <= 40) {
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    data.tokens.forEach((t, i) => ctx.fillText(shownToken(t), labelW - 4, 4 + (i + 0.5) * cell, labelW - 8));
    data.tokens.forEach((t, j) => {
      ctx.save();
      ctx.translate(labelW + (j + 0.5) * cell, side + 10);
      ctx.rotate(-50 * Math.PI / 180);
      ctx.fillText(shownToken(t), 0, 0, below);
      ctx.restore();
    });
  }
  const bx = labelW + side + 12;
  for (let y = 0; y < side; y++) {
    const c = Math.round((1 - y / Math.max(1, side - 1)) * 255) * 3;
    ctx.fillStyle = `rgb(${SCORE_LUT[c]},${SCORE_LUT[c + 1]},${SCORE_LUT[c + 2]})`;
    ctx.fillRect(bx, 4 + y, 12, 1);
  }
  ctx.fillStyle = TEXT_DIM;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  for (const t of [1, 0, -1]) ctx.fillText(t === 0 ? "0" : signed(t * top, 2), bx + 16, 4 + (1 - t) / 2 * side);
  const labels = data.tokens.map(shownToken);
  const spoken2 = data.tokens.map(spokenToken);
  const cellText3 = (i, j) => `${spoken2[i]} → ${spoken2[j]}: ${signed(d[i * n + j], 4)} (clean ${fmt(clean.data[i * n + j], 4)}, knocked out ${fmt(knocked.data[i * n + j], 4)}; query ${i + 1}, key ${j + 1})`;
  const text = describe(body, {
    summary: `${n} × ${n} changes of attention weight (knocked out − clean), at most ${fmt(m, 3)} either way. ${changeText(data)}`,
    table: n * n <= TABLE_MAX3 ? matrixTable(`${title}, query rows by key columns`, "query", labels, labels, (i, j) => signed(d[i * n + j])) : null
  });
  keyCursor(canvas, text.live, {
    rows: n,
    cols: n,
    describedBy: text.summary.id,
    label: `${title}: heatmap of ${n} × ${n} changes, query rows by key columns. Arrow keys move between cells.`,
    text: cellText3
  });
  const tip = el("div", { className: "hc-tip", hidden: true, role: "tooltip" });
  body.append(tip);
  canvas.onmousemove = (e) => {
    const r = canvas.getBoundingClientRect();
    const i = Math.floor((e.clientY - r.top - 4) / cell);
    const j = Math.floor((e.clientX - r.left - labelW) / cell);
    if (i < 0 || j < 0 || i >= n || j >= n) {
      tip.hidden = true;
      return;
    }
    tip.hidden = false;
    tip.textContent = cellText3(i, j);
    tip.style.left = `${Math.min(labelW + (j + 1) * cell + 8, Math.max(0, wide - 220))}px`;
    tip.style.top = `${4 + (i + 1) * cell + 6}px`;
  };
  canvas.onmouseleave = () => {
    tip.hidden = true;
  };
  return d;
}
function render12(container, data, _selection = {}, _callbacks = {}) {
  const fig = el("figure", { className: "figure ko-diff" });
  const summary = el("p", { className: "ko-summary", textContent: summaryText(data) });
  const table = data.predictions ? lossTable(data) : el("p", {
    className: "hint",
    textContent: `No losses here: ${data.noPredictions ?? "the model predicts no next token"}.`
  });
  container.replaceChildren(summary, el("div", { className: "ko-cols" }, [table, fig]));
  const diff = diffMap(fig, data);
  container.__ko = { rows: lossRows(data), diff, summary: summary.textContent };
}

// static/js/modes/sentence/cards/knockout.js
function createKnockCard(ctx) {
  const { app: app2, ticket, edited, viewChanged, setError } = ctx;
  const knock = (
    /** @type {HTMLInputElement} */
    byId("mv-knock")
  );
  const mode = (
    /** @type {HTMLSelectElement} */
    byId("ko-mode")
  );
  const source = (
    /** @type {HTMLInputElement} */
    byId("ko-source")
  );
  const sourceBox = byId("ko-source-box");
  const heads = byId("ko-heads");
  const diffLayer = (
    /** @type {HTMLSelectElement} */
    byId("ko-diff-layer")
  );
  const diffHead = (
    /** @type {HTMLSelectElement} */
    byId("ko-diff-head")
  );
  const note = byId("ko-note");
  const view = byId("ko-view");
  let clean = null;
  function cleanParts() {
    const body = (
      /** @type {{ablate?: unknown}} */
      { .../** @type {import("../parts.js").Parts} */
      app2.parts.body }
    );
    delete body.ablate;
    const key = JSON.stringify(body);
    if (clean?.key !== key) clean = { key, parts: new TraceParts(body, 8) };
    return clean.parts;
  }
  function sync() {
    const why = blocked(app2);
    knock.disabled = why !== null;
    if (why !== null && knock.checked) {
      knock.checked = false;
      byId("mv-grid").classList.remove("knocking");
      byId("mv-knock-hint").hidden = true;
    }
    byId("mv-knock-label").title = why ?? "While on, a click on a head (or Enter on it) knocks it out, or puts it back";
    mode.value = app2.s.ablateMode;
    source.value = app2.s.ablateSource;
    if (app2.models) source.maxLength = app2.models.max_text_chars;
    sourceBox.hidden = app2.s.ablateMode !== "patch";
    heads.replaceChildren(...app2.s.ablate.map(headChip));
    byId("ko-clear").hidden = !app2.s.ablate.length;
    const meta = app2.first?.meta;
    if (meta) {
      const { layer, head } = compared(app2);
      fillIndexSelect(diffLayer, meta.layers, "layer", layer);
      fillIndexSelect(diffHead, meta.heads, "head", head);
    }
  }
  function mark2() {
    const out = new Set(blocked(app2) === null ? app2.s.ablate.map(ablateKey) : []);
    for (
      const b of
      /** @type {NodeListOf<HTMLElement>} */
      byId("mv-grid").querySelectorAll("button.mv-cell")
    ) {
      const on = out.has(`${b.dataset.layer}:${b.dataset.head}`);
      b.classList.toggle("knocked", on);
      const name = (b.getAttribute("aria-label") ?? "").replace(/, knocked out$/, "");
      b.setAttribute("aria-label", on ? `${name}, knocked out` : name);
    }
  }
  function toggle(layer, head) {
    const key = ablateKey({ layer, head });
    const max = app2.models?.max_ablate ?? Infinity;
    if (app2.s.ablate.some((a) => ablateKey(a) === key)) {
      app2.s.ablate = app2.s.ablate.filter((a) => ablateKey(a) !== key);
    } else if (app2.s.ablate.length >= max) {
      setError(`ablate: at most ${max} heads can be knocked out at once`);
      return;
    } else {
      app2.s.ablate = [...app2.s.ablate, { layer, head }].sort((a, b) => a.layer - b.layer || a.head - b.head);
    }
    sync();
    mark2();
    edited(0);
  }
  knock.addEventListener("change", () => {
    byId("mv-grid").classList.toggle("knocking", knock.checked);
    byId("mv-knock-hint").hidden = !knock.checked;
  });
  for (const m of ABLATE_MODES)
    if (![...mode.options].some((o) => o.value === m)) throw new Error(`ko-mode lacks ${m}`);
  mode.addEventListener("change", () => {
    app2.s.ablateMode = /** @type {import("../../../core/types.js").AblateMode} */
    mode.value;
    sync();
    edited(0);
  });
  source.addEventListener("input", () => {
    app2.s.ablateSource = source.value;
    edited();
  });
  heads.addEventListener("click", (e) => {
    const b = (
      /** @type {HTMLElement | null} */
      /** @type {HTMLElement} */
      e.target.closest("button.ko-chip")
    );
    if (b) toggle(Number(b.dataset.layer), Number(b.dataset.head));
  });
  byId("ko-clear").addEventListener("click", () => {
    app2.s.ablate = [];
    sync();
    edited(0);
  });
  diffLayer.addEventListener("change", () => {
    app2.s.diffLayer = Number(diffLayer.value);
    viewChanged(["diffLayer"]);
  });
  diffHead.addEventListener("change", () => {
    app2.s.diffHead = Number(diffHead.value);
    viewChanged(["diffHead"]);
  });
  async function draw8() {
    const current = ticket("knock");
    const first = (
      /** @type {Compact} */
      app2.first
    );
    const meta = first.meta;
    sync();
    const ablated = meta.ablated ?? [];
    const why = blocked(app2);
    if (why !== null) {
      note.textContent = `No knock-out here: ${why}.`;
      view.replaceChildren();
      return;
    }
    note.textContent = knockNote(app2.s, ablated, meta.n);
    if (!ablated.length) {
      view.replaceChildren();
      return;
    }
    const { layer, head } = compared(app2);
    const cleanRun = cleanParts();
    const knockedRun = (
      /** @type {import("../parts.js").Parts} */
      app2.parts
    );
    const att = { fields: "attentions", layer, head };
    const predicts = !meta.unavailable?.top_k;
    const top = { fields: "top_k", k: 1, pos_start: 0, pos_count: meta.n };
    const [ca, ka, cp, kp] = await Promise.all([
      cleanRun.get(att),
      knockedRun.get(att),
      predicts ? cleanRun.get(top) : null,
      predicts ? knockedRun.get(top) : null
    ]);
    if (!current()) return;
    render12(view, {
      tokens: meta.tokens,
      what: ablated.map((a) => `layer ${a.layer + 1} head ${a.head + 1}`).join(", ") + ` (${ablated[0].mode}${ablated[0].mode === "patch" ? ` from “${ablated[0].source}”` : ""})`,
      predictions: cp && kp ? { clean: predictions(cp), knocked: predictions(kp) } : null,
      noPredictions: meta.unavailable?.top_k?.replace(/^top_k: /, ""),
      diff: { layer, head, clean: square(ca), knocked: square(ka) }
    });
  }
  return { draw: draw8, knocking: () => knock.checked, mark: mark2, toggle, sync };
}
function compared(app2) {
  const meta = (
    /** @type {Compact} */
    app2.first.meta
  );
  const first = Math.min(...app2.s.ablate.map((a) => a.layer), meta.layers - 1);
  return { layer: app2.s.diffLayer ?? Math.min(meta.layers - 1, first + 1), head: app2.s.diffHead ?? app2.s.head };
}
function blocked(app2) {
  const info = app2.models?.models.find((m) => m.name === app2.s.model);
  if (info?.ablate_refused) return info.ablate_refused;
  if (app2.s.generate) return "a knock-out traces the text alone: clear the generation first";
  return null;
}
function headChip(a) {
  return el(
    "button",
    {
      type: "button",
      className: "token-chip ko-chip",
      dataset: { layer: String(a.layer), head: String(a.head) }
    },
    [
      `L${a.layer + 1} H${a.head + 1} `,
      el("span", { "aria-hidden": "true", textContent: "×" }),
      el("span", { className: "sr-only", textContent: `: put layer ${a.layer + 1} head ${a.head + 1} back` })
    ]
  );
}
function knockNote(s, ablated, n) {
  if (!ablated.length) {
    return s.ablateMode === "patch" && s.ablate.length && !s.ablateSource.trim() ? "Type a source text to patch from: its head outputs replace the knocked-out heads'." : "No head is knocked out. Turn on “knock out” in the model view and click heads (or focus one and press Enter).";
  }
  return ablated.some((a) => a.mode === "patch" && a.patched < n) ? `The source text has ${ablated[0].patched} tokens: the first ${ablated[0].patched} positions take its head outputs, the rest keep their own.` : "Every view above shows the model with these heads knocked out; this card sets it beside the clean run.";
}
function square(part4) {
  const a = part4.arrays.attentions;
  const n = a.shape[a.shape.length - 1];
  return (
    /** @type {NDArray} */
    { dtype: a.dtype, shape: [n, n], data: a.data }
  );
}
function predictions(part4) {
  const m = (
    /** @type {NonNullable<Compact["meta"]["top_k"]>} */
    part4.meta.top_k
  );
  return {
    target: part4.arrays["top_k.target_probs"],
    ids: part4.arrays["top_k.ids"],
    probs: part4.arrays["top_k.probs"],
    k: m.k,
    vocab: m.vocab
  };
}

// static/js/modes/sentence/draw.js
var CARDS2 = (
  /** @type {Record<string, string>} */
  {
    model: "model-view-card",
    gen: "gen-card",
    head: "head-view-card",
    qk: "qk-card",
    traj: "traj-card",
    lens: "lens-card",
    knock: "knock-card"
  }
);
function createDrawing(ctx) {
  const { app: app2, p, hooks, status, shown, fixed: fixed2, openParts, modelInfo, edited } = ctx;
  function show2(result, request) {
    const { meta } = result;
    app2.first = result;
    app2.entropy = null;
    app2.generation++;
    app2.parts = openParts(request.body);
    app2.parts.seed(request.params, result);
    hooks.setError(app2.problem);
    clampSentence(app2.s, meta.layers, meta.heads, meta.n);
    showCount(meta.n);
    const specials = [...new Set(meta.tokens.filter((_, i) => meta.special?.[i]))];
    byId("s-special-names").textContent = specials.length ? `(${specials.join(", ")})` : "(none in this text)";
    status.set(`${meta.n} tokens · ${meta.layers} layers × ${meta.heads} heads`);
    hooks.changed();
    prefetch(app2, p, shown);
    status.drawing(drawAll(), () => {
      hooks.traceDrawn();
      entropyTitles();
    });
  }
  function chooseHead(layer, head, also = [], { focus = true } = {}) {
    Object.assign(app2.s, { layer, head, heads: [head] });
    viewChanged(["layer", "head", "heads", ...also]);
    if (!focus) return;
    byId("mv-grid").querySelector(`button.mv-cell[data-layer="${layer}"][data-head="${head}"]`)?.focus();
  }
  function pickQuery(index) {
    app2.s.query = index;
    viewChanged(["query"]);
  }
  const tickets = {};
  function ticket(name) {
    const mine = tickets[name] = (tickets[name] || 0) + 1;
    const generation = app2.generation;
    return () => mine === tickets[name] && generation === app2.generation && app2.active;
  }
  function showCount(n, tv) {
    const cap = `${n} / ${modelInfo()?.max_tokens ?? "?"} tokens`;
    const rows = tv?.labels.length ?? n;
    const what = app2.s.mergeWords ? "words" : "tokens";
    byId("s-count").textContent = rows === n && !app2.s.mergeWords ? cap : `${rows} ${what} shown · ${cap}`;
  }
  const knockCard = fixed2 ? null : createKnockCard({ app: app2, ticket, edited, viewChanged, setError: hooks.setError });
  const pickCell = (layer, head) => knockCard?.knocking() ? knockCard.toggle(layer, head) : chooseHead(layer, head);
  const drawn = createCards({
    app: app2,
    p,
    ticket,
    chooseHead,
    pickCell,
    pickQuery,
    viewChanged,
    showCount,
    setError: hooks.setError
  });
  const cards = {
    ...drawn,
    async model() {
      await drawn.model();
      knockCard?.mark();
    },
    knock: async () => knockCard?.draw()
  };
  const VIEWS = (
    /** @type {typeof cards} */
    Object.fromEntries(Object.entries(cards).filter(([name]) => shown.includes(name)))
  );
  function hideOthers() {
    for (const [name, id] of Object.entries(CARDS2)) if (!shown.includes(name)) byId(id).hidden = true;
  }
  function entropyTitles() {
    const generation = app2.generation;
    p.entropyPart().then(
      (part4) => {
        if (generation !== app2.generation) return;
        app2.entropy = part4.arrays.entropy_mean;
        titles(byId("mv-grid"), app2.entropy);
      },
      () => {
      }
    );
  }
  function drawAll(which = Object.keys(VIEWS)) {
    if (!app2.first || !app2.active) return Promise.resolve();
    return drawViews(
      VIEWS,
      which.filter((name) => name in VIEWS),
      hooks.setError
    );
  }
  function viewChanged(keys) {
    hooks.changed();
    const which = viewsFed(SENTENCE_FEEDS, keys);
    if (keys.includes("layer") || keys.includes("head")) ctx.headChanged();
    if (app2.first) prefetch(app2, p, shown, which);
    status.drawing(drawAll(which), hooks.viewsDrawn);
  }
  return { show: show2, chooseHead, viewChanged, drawAll, hideOthers, knockCard };
}
function prefetch(app2, p, shown, which = shown) {
  const asks = {
    head: [p.readsRows() ? p.rowsPart : p.layerPart],
    model: [p.headPart],
    traj: [p.projectionPart],
    qk: app2.first?.meta.unavailable?.queries ? [] : [p.queryPart],
    // none without q and k
    gen: app2.first?.meta.generated ? [p.genPart] : [],
    lens: app2.first?.meta.unavailable?.lens ? [] : [p.lensPart]
    // none for an encoder
  };
  for (const name of ["head", "model", "gen", "qk", "traj", "lens"]) {
    if (!which.includes(name) || !shown.includes(name)) continue;
    for (const ask2 of asks[
      /** @type {keyof asks} */
      name
    ]) {
      ask2().catch(() => {
      });
    }
  }
}

// static/js/modes/sentence/inputs.js
function renderSentenceInputs(models, s, info, onExample, onPointer) {
  const select2 = (
    /** @type {HTMLSelectElement} */
    byId("s-model")
  );
  fillOptions(
    select2,
    models.models.map((m) => [m.name, m.name]),
    s.model ?? ""
  );
  const bridged = info?.backend === "transformers" ? " · through transformers" : "";
  const family = info?.run ? `trained here (run ${info.run})` : `${info?.family.toUpperCase()}${bridged}`;
  byId("s-model-info").textContent = info ? `${family} · ${info.layers} layers × ${info.heads} heads · d_model ${info.d_model} · up to ${info.max_tokens} tokens · ${info.device}` : "";
  const text = (
    /** @type {HTMLTextAreaElement} */
    byId("s-text")
  );
  if (text.value !== s.text) text.value = s.text;
  text.maxLength = models.max_text_chars;
  byId("s-hide-special").checked = s.hideSpecial;
  byId("s-merge-words").checked = s.mergeWords;
  byId("mv-peak").checked = s.peak;
  byId("mv-aggregate").value = s.aggregate;
  byId("s-gen-row").hidden = !info?.causal;
  const causal = models.models.filter((m) => m.causal).map((m) => m.name);
  const genNote = byId("s-gen-note");
  genNote.hidden = !info || info.causal;
  genNote.textContent = !info || info.causal ? "" : `Generate needs a causal model, one that predicts each next token from the tokens before it; ${info.name} is an encoder, which reads the whole text at once. ` + (causal.length ? `Causal models on this server: ${causal.join(", ")}; pick one above.` : "This server has no causal model: add a GPT-2-style folder (attnviz serve --model FOLDER) or train one in the Train tab.");
  const steps = (
    /** @type {HTMLInputElement} */
    byId("s-gen-steps")
  );
  steps.max = String(models.max_generate);
  if (s.generate) {
    steps.value = String(s.generate.steps);
    byId("s-gen-temp").value = String(s.generate.temperature);
    byId("s-gen-seed").value = String(s.generate.seed);
  }
  byId("s-gen-clear").hidden = !s.generate;
  const none = !models.models.length;
  const install = byId("s-install");
  install.hidden = !none;
  install.textContent = none ? `No pretrained model is installed on this server. Install the default one (all-MiniLM-L6-v2) with: ${models.install}, then restart the server.` : "";
  for (const id of ["s-text", "s-model", "s-hide-special", "s-merge-words"]) {
    byId(id).disabled = none;
  }
  for (
    const card of
    /** @type {NodeListOf<HTMLElement>} */
    document.querySelectorAll("#sentence-mode > section.card:not(.sentence-input):not(#gen-card)")
  ) {
    card.hidden = none;
  }
  const box = byId("s-examples");
  const examples = info?.examples ?? models.examples;
  if (box.dataset.examples !== JSON.stringify(examples)) {
    box.dataset.examples = JSON.stringify(examples);
    box.replaceChildren(
      ...examples.map((example) => {
        const b = el("button", { type: "button", className: "example", textContent: example, disabled: none });
        b.addEventListener("click", () => {
          onExample(example);
          showPointer(models, s.model, example, onPointer);
        });
        return b;
      })
    );
  }
  text.oninput = () => showPointer(models, s.model, text.value, onPointer);
  showPointer(models, s.model, s.text, onPointer);
}
function showPointer(models, model, text, onPointer) {
  const p = (models.example_heads || []).find((e) => e.model === model && e.text === text);
  byId("s-pointer").hidden = !p;
  byId("s-pointer-text").textContent = p ? p.note : "";
  byId("s-pointer-go").onclick = () => {
    if (p) onPointer(p);
  };
}
function tokenIndex(tokens, word) {
  const bare = (t) => t.replace(/^(##|Ġ|▁)/, "").trim().toLowerCase();
  return tokens.findIndex((t) => bare(t) === bare(word));
}
function wireInputs(ctx) {
  const { app: app2, modelInfo, renderInputs, edited, viewChanged } = ctx;
  function generate() {
    const num = (id, name, int, lo, hi) => {
      const v = Number(
        /** @type {HTMLInputElement} */
        byId(id).value
      );
      if (!Number.isFinite(v) || int && !Number.isInteger(v) || v < lo || v > hi) {
        throw new Error(`generate.${name}: must be ${int ? "a whole number" : "a number"} from ${lo} to ${hi}`);
      }
      return v;
    };
    try {
      app2.s.generate = {
        steps: num(
          "s-gen-steps",
          "steps",
          true,
          1,
          /** @type {ModelList} */
          app2.models.max_generate
        ),
        temperature: num("s-gen-temp", "temperature", false, 0, 2),
        seed: num("s-gen-seed", "seed", true, 0, 2 ** 31 - 1)
      };
    } catch (err) {
      ctx.setError(
        /** @type {Error} */
        err.message
      );
      return;
    }
    app2.s.step = null;
    renderInputs();
    edited(0);
  }
  byId("s-gen-go").addEventListener("click", generate);
  byId("s-gen-clear").addEventListener("click", () => {
    app2.s.generate = null;
    app2.s.step = null;
    renderInputs();
    edited(0);
  });
  byId("s-text").addEventListener("input", (e) => {
    app2.s.text = /** @type {HTMLTextAreaElement} */
    e.target.value;
    edited();
  });
  byId("s-model").addEventListener("change", (e) => {
    app2.s.model = /** @type {HTMLSelectElement} */
    e.target.value;
    const info = modelInfo();
    if (info) clampSentence(app2.s, info.layers, info.heads);
    if (!info?.causal) app2.s.generate = null;
    renderInputs();
    edited(0);
  });
  const option = (id, key) => byId(id).addEventListener("change", (e) => {
    app2.s[key] = /** @type {HTMLInputElement} */
    e.target.checked;
    viewChanged([key]);
  });
  option("s-hide-special", "hideSpecial");
  option("s-merge-words", "mergeWords");
}

// static/js/modes/sentence/job.js
function aboutSeconds(s) {
  const whole = Math.max(1, Math.round(s));
  if (whole < 60) return `about ${whole} s`;
  const min = Math.floor(whole / 60);
  const sec = whole % 60;
  return `about ${min} min${sec ? ` ${sec} s` : ""}`;
}
function jobText(job) {
  const left = job.left_s === null ? "" : ` · ${aboutSeconds(job.left_s)} left`;
  if (job.state === "queued") return `Waiting for the server's turn${left}`;
  if (job.stage === "thumbnails") {
    const done = Math.max(0, job.done - job.layers);
    return `A long text: every head's thumbnail, layer ${done} of ${job.total - job.layers}${left}`;
  }
  if (job.stage === "encoding") return "A long text: sending the trace…";
  return `A long text: running the model, layer ${job.layers_done} of ${job.layers}${left}`;
}
function renderJob(container, job, { cancel: cancel2 }) {
  if (!job) {
    container.hidden = true;
    container.replaceChildren();
    return;
  }
  let line = (
    /** @type {HTMLElement | null} */
    container.querySelector(".job-line")
  );
  let bar = (
    /** @type {HTMLProgressElement | null} */
    container.querySelector("progress")
  );
  if (!line || !bar) {
    line = document.createElement("span");
    line.className = "job-line";
    line.setAttribute("role", "status");
    bar = document.createElement("progress");
    bar.setAttribute("aria-label", "Progress of the trace");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "job-cancel";
    button.textContent = "Cancel";
    button.title = "Stop computing this text's trace; the views keep the last one";
    button.addEventListener("click", () => cancel2());
    container.replaceChildren(line, bar, button);
  }
  container.hidden = false;
  const text = jobText(job);
  if (line.textContent !== text) line.textContent = text;
  bar.max = Math.max(1, job.total);
  bar.value = Math.min(job.done, job.total);
}

// static/js/modes/sentence/index.js
var PART_FIELDS = "attentions,scores,queries,keys,values";
function createSentence(hooks, { openParts = (body) => new TraceParts(body), models = null, views = void 0 } = {}) {
  const fixed2 = models !== null;
  const shown = viewsShown(views);
  const app2 = createApp();
  const status = createStatus(hooks);
  const modelInfo = () => app2.models?.models.find((m) => m.name === app2.s.model) || null;
  const p = createParts(app2, modelInfo);
  let corpus = null;
  let anchor = null;
  const settle = () => {
    if (anchor?.el.isConnected) window.scrollBy(0, anchor.el.getBoundingClientRect().top - anchor.top);
    anchor = null;
  };
  const { show: show2, chooseHead, viewChanged, drawAll, hideOthers, knockCard } = createDrawing({
    app: app2,
    p,
    hooks: {
      ...hooks,
      traceDrawn() {
        settle();
        hooks.traceDrawn();
      },
      viewsDrawn() {
        settle();
        hooks.viewsDrawn();
      }
    },
    status,
    shown,
    fixed: fixed2,
    openParts,
    modelInfo,
    edited,
    headChanged: () => corpus?.sync()
  });
  const jobBox = jobContainer();
  const client = new TraceClient({
    delay: 150,
    onPending: (pending2) => status.waiting("request", pending2),
    onJob: (job) => renderJob(jobBox, job, { cancel: cancelJob }),
    onResult: (result, request) => show2(result, request),
    onError(message, code) {
      if (code === 404 && !fixed2) return modelGone(message);
      hooks.setError(message);
      status.set("not updated");
      byId("s-count").textContent = "";
    }
  });
  function cancelJob() {
    client.idle();
    status.set(app2.first ? "cancelled: the views show the last trace" : "cancelled");
    byId("s-text").focus();
  }
  async function modelGone(message) {
    const gone = app2.s.model;
    let list = null;
    try {
      list = await fetchModels(gone);
    } catch {
    }
    if (!list || !gone || list.models.some((m) => m.name === gone)) {
      hooks.setError(message);
      status.set("not updated");
      return;
    }
    app2.models = list;
    const names2 = list.models.map((m) => m.name);
    const shownModel = (
      /** @type {{model?: string} | undefined} */
      app2.parts?.body?.model
    );
    const back = shownModel && names2.includes(shownModel) ? shownModel : list.default;
    app2.s.model = back;
    const info = modelInfo();
    if (info) clampSentence(app2.s, info.layers, info.heads);
    if (!info?.causal) app2.s.generate = null;
    renderInputs();
    edited("link");
    app2.problem = `The model '${gone}' is no longer on this server (a trained run is removed when its owner forgets it, or when the server keeps too many), so it has left the model list` + (back ? `; showing ${back}.` : ".");
    hooks.setError(app2.problem);
  }
  function openHead(text, layer, head) {
    const at = document.activeElement;
    anchor = at && at !== document.body ? { el: at, top: at.getBoundingClientRect().top } : null;
    const traced = app2.first?.meta;
    if (traced && traced.text === text && !traced.generated && app2.s.text === text)
      return chooseHead(layer, head, [], { focus: false });
    Object.assign(app2.s, { text, layer, head, heads: [head], generate: null, step: null });
    byId("s-text").value = text;
    renderInputs();
    edited(0);
  }
  const atlas = fixed2 ? null : createAtlasCard({ model: () => app2.s.model, openHead, setError: hooks.setError });
  corpus = fixed2 ? null : createCorpus(app2, modelInfo, openHead, hooks.setError);
  if (fixed2) serverless();
  function renderInputs() {
    renderSentenceInputs(
      /** @type {ModelList} */
      app2.models,
      app2.s,
      modelInfo(),
      (text) => {
        app2.s.text = text;
        byId("s-text").value = text;
        edited(0);
      },
      showExampleHead
    );
    hideOthers();
    atlas?.sync();
    corpus?.sync();
    knockCard?.sync();
  }
  function showExampleHead(example) {
    const meta = app2.first?.meta;
    const query2 = meta && meta.text === example.text ? tokenIndex(meta.tokens, example.query) : -1;
    if (query2 >= 0) app2.s.query = query2;
    chooseHead(example.layer, example.head, query2 >= 0 ? ["query"] : []);
  }
  function edited(delay) {
    hooks.changed();
    if (fixed2 || !app2.models?.models.length) return;
    if (delay !== "link") app2.problem = null;
    else delay = 0;
    if (!app2.s.text.trim()) {
      client.idle();
      hooks.setError("text: must not be empty");
      return;
    }
    client.request(traceBody(app2.s, modelInfo()), p.thumbParams(), delay);
  }
  wireInputs({ app: app2, modelInfo, renderInputs, edited, viewChanged, setError: hooks.setError });
  let resizeTimer;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => drawAll(["model", "head", "lens"]), 200);
  });
  async function activate(state = null) {
    app2.active = true;
    if (!app2.models) {
      const list = models ?? await loadModels(status, hooks.setError, state?.model ?? null);
      if (!list) return;
      app2.models = list;
      if (!state) state = defaultSentence(list.default, list.examples[0] || "");
    }
    if (state) return load(state);
    renderInputs();
    hooks.changed();
    if (!app2.first) return edited(0);
    await status.drawing(drawAll(), hooks.viewsDrawn);
  }
  function load(state) {
    const problem2 = servedModel(
      /** @type {ModelList} */
      app2.models,
      state
    );
    app2.s = state;
    const info = modelInfo();
    if (info) clampSentence(app2.s, info.layers, info.heads);
    app2.problem = problem2;
    renderInputs();
    edited("link");
    hooks.setError(problem2);
  }
  return {
    activate,
    deactivate() {
      app2.active = false;
    },
    /** Draw a first response into every view (what the trace client does with its answer). */
    show: show2,
    getState: () => app2.s,
    /** The model list is read again on the next activation (a training run added a model). */
    forgetModels() {
      app2.models = null;
    },
    hasTrace: () => Boolean(app2.first),
    /** The trace as JSON: whole when the server allows it, else the head in view. */
    exportJson: () => traceJson(app2),
    /** The HTML export's body (core/api.js exportHtml) for what is in view (null before the first trace). */
    htmlRequest: () => htmlRequest(app2, p, shown)
  };
}
function jobContainer() {
  const box = document.createElement("div");
  box.className = "job-progress";
  box.hidden = true;
  const row = byId("s-count").parentElement;
  row?.after(box);
  return box;
}
function viewsShown(views) {
  const shown = views ?? Object.keys(SENTENCE_FEEDS);
  for (const name of shown) {
    if (!(name in SENTENCE_FEEDS))
      throw new Error(`views: no view named ${name} (views: ${Object.keys(SENTENCE_FEEDS).join(", ")})`);
  }
  return shown;
}
function createApp() {
  return {
    s: defaultSentence(),
    models: null,
    first: null,
    parts: null,
    entropy: null,
    active: false,
    problem: null,
    generation: 0
  };
}
function createCorpus(app2, modelInfo, openHead, setError) {
  return createCorpusCard({
    model: () => app2.s.model,
    info: modelInfo,
    models: () => app2.models,
    text: () => app2.s.text,
    selection: () => ({ layer: app2.s.layer, head: app2.s.head }),
    openHead,
    setError
  });
}
function serverless() {
  byId("atlas-card").remove();
  byId("corpus-card").remove();
  byId("mv-knock-label").hidden = true;
}
async function loadModels(status, setError, open) {
  status.waiting("models", true);
  try {
    return await fetchModels(open);
  } catch (err) {
    setError(`Could not load the models: ${/** @type {Error} */
    err.message}`);
    return null;
  } finally {
    status.waiting("models", false);
  }
}
function traceBody(s, info) {
  const knocks = !info?.ablate_refused;
  const ablate = knocks && !s.generate ? ablateBody(s) : [];
  return {
    model: s.model,
    text: s.text,
    ...s.generate ? { generate: s.generate } : {},
    ...ablate.length ? { ablate } : {}
  };
}
function servedModel(models, state) {
  const names2 = models.models.map((m) => m.name);
  let problem2 = null;
  if (state.model === null || !names2.includes(state.model)) {
    if (state.model !== null) {
      problem2 = `This link names the model '${state.model}', which this server does not have` + (models.default ? `; showing ${models.default}.` : ".");
    }
    state.model = models.default;
  }
  return problem2;
}
async function traceJson(app2) {
  if (!app2.first) return null;
  const body = (
    /** @type {Parts} */
    app2.parts.body
  );
  const numbers = app2.first.meta.json_numbers ?? Infinity;
  if (numbers <= /** @type {ModelList} */
  app2.models.max_json_values) {
    return { text: await fetchTraceJson(body), name: "attnviz-sentence-trace.json", note: "" };
  }
  const { layer, head } = app2.s;
  const lacking = app2.first.meta.unavailable ?? {};
  const fields = PART_FIELDS.split(",").filter((f) => !(f in lacking)).join(",");
  const text = await fetchTraceJson(body, { fields, layer, head });
  return {
    text,
    name: `attnviz-sentence-layer${layer + 1}-head${head + 1}.json`,
    note: `exported layer ${layer + 1}, head ${head + 1}: the whole trace has ${numbers.toLocaleString("en")} numbers, over this server's JSON cap`
  };
}
function htmlRequest(app2, p, shown) {
  if (!app2.first || !app2.parts) return null;
  const s = app2.s;
  return {
    trace: app2.parts.body,
    selection: {
      layer: s.layer,
      head: s.head,
      query: p.queryIndex(),
      hide_special: s.hideSpecial,
      merge_words: s.mergeWords,
      views: shown.filter((v) => v !== "lens" && v !== "knock")
    }
  };
}

// static/js/views/heatmaps.js
var ANNOTATE_MAX = 12;
var SIDE_BY_SIDE_MAX = 7;
var TABLE_MAX4 = 16;
function cellDigits(z) {
  let m = 0;
  for (const row of z) for (const v of row) if (v !== null) m = Math.max(m, Math.abs(v));
  return m >= 100 ? 0 : m >= 10 ? 1 : 2;
}
function cellTexts(z, lutIndex, lut, size) {
  if (!size) return [];
  const digits = cellDigits(z);
  return z.flatMap(
    (row, i) => row.flatMap((v, j) => {
      if (v === null) return [];
      const c = Math.max(0, Math.min(255, lutIndex(v))) * 3;
      return [
        {
          x: j,
          y: i,
          text: fmt(v, digits),
          showarrow: false,
          captureevents: false,
          font: { size, color: inkOn([lut[c], lut[c + 1], lut[c + 2]]) }
        }
      ];
    })
  );
}
function widestText(z) {
  const digits = cellDigits(z);
  let chars2 = 0;
  for (const row of z) for (const v of row) if (v !== null) chars2 = Math.max(chars2, fmt(v, digits).length);
  return chars2;
}
async function drawFitted(el2, traces, tokens, title, cells, filename) {
  const fitted = (
    /** @type {HTMLElement & {__fit?: () => Promise<void>}} */
    el2
  );
  if (!fitted.__fit && typeof ResizeObserver === "function") {
    let timer;
    let width = el2.clientWidth;
    new ResizeObserver(() => {
      if (Math.abs(el2.clientWidth - width) < 1) return;
      width = el2.clientWidth;
      clearTimeout(timer);
      timer = setTimeout(() => fitted.__fit?.(), 250);
    }).observe(el2);
  }
  fitted.__fit = () => drawFitted(el2, traces, tokens, title, cells, filename);
  const n = tokens.length;
  const head = fitTitle(title, el2.clientWidth);
  const chars2 = cells ? widestText(cells.z) : 0;
  const font = () => {
    if (!cells) return 0;
    const c = cellSize(el2, n);
    return cellFont(c.w, c.h, chars2, cells.largest);
  };
  const texts = (size2) => cells ? cellTexts(cells.z, cells.lutIndex, cells.lut, size2) : [];
  const guess = font();
  await draw(el2, traces, layoutFor(tokens, head, texts(guess)), filename);
  const size = font();
  if (size !== guess) await draw(el2, traces, layoutFor(tokens, head, texts(size)), filename);
  el2.dataset.cellFont = String(size);
}
function heatmap(tokens, z, kind, dtype, colorbar, extra) {
  const customdata = z.map(
    (row, i) => row.map((v, j) => [
      plotToken(tokens[i]),
      plotToken(tokens[j]),
      v === null ? "masked (−∞ before the softmax)" : `${kind} ${exact(v, dtype)}`
    ])
  );
  return {
    type: "heatmap",
    z,
    x: tokens.map((_, j) => j),
    y: tokens.map((_, i) => i),
    customdata,
    hovertemplate: "query <b>%{customdata[0]}</b><br>key <b>%{customdata[1]}</b><br>%{customdata[2]}<extra></extra>",
    hoverongaps: true,
    colorbar: { thickness: 12, len: 1, title: { text: colorbar, side: "right", font: { size: 12 } } },
    ...extra
  };
}
var TITLE_PX = 14;
var CELL_FONTS = [13, 11, 9];
var EM = 0.62;
function fitTitle(title, width) {
  const plain = title.replace(/<[^>]+>/g, "");
  const at = title.lastIndexOf(" · ");
  if (plain.length * TITLE_PX * 0.56 <= width - 16 || at < 0) return { text: title, lines: 1 };
  return { text: `${title.slice(0, at)}<br>${title.slice(at + 3)}`, lines: 2 };
}
function cellFont(cellW, cellH, chars2, largest) {
  for (const size of CELL_FONTS) {
    if (size <= largest && chars2 * size * EM + 4 <= cellW && size * 1.3 <= cellH) return size;
  }
  return 0;
}
function cellSize(el2, n) {
  const area = (
    /** @type {any} */
    el2._fullLayout?._size
  );
  if (area && area.w > 0) return { w: area.w / n, h: area.h / n };
  return { w: Math.max(0, el2.clientWidth - 190) / n, h: Math.max(0, el2.clientHeight - 130) / n };
}
function layoutFor(tokens, title, annotations) {
  return baseLayout({
    annotations,
    title: { text: title.text, font: { size: TITLE_PX }, x: 0.02, xanchor: "left" },
    plot_bgcolor: MASKED_GREY,
    // masked cells are gaps: they show this grey
    margin: { l: 80, r: 10, t: title.lines > 1 ? 58 : 40, b: 70 },
    xaxis: tokenAxis(tokens, { title: { text: "key" }, automargin: true, tickangle: tokens.length > 12 ? -60 : 0 }),
    yaxis: tokenAxis(tokens, { title: { text: "query" }, autorange: "reversed", automargin: true })
  });
}
function render13(card, data, sel, callbacks) {
  const { meta } = data;
  const layerPicker = (
    /** @type {HTMLSelectElement} */
    card.querySelector("[data-role=layer]")
  );
  const headPicker = (
    /** @type {HTMLSelectElement} */
    card.querySelector("[data-role=head]")
  );
  fillIndexSelect(layerPicker, meta.layers, "layer", sel.layer);
  fillIndexSelect(headPicker, meta.heads, "head", sel.head);
  headPicker.disabled = meta.heads === 1;
  layerPicker.disabled = meta.layers === 1;
  layerPicker.onchange = () => callbacks.onSelect({ layer: Number(layerPicker.value) });
  headPicker.onchange = () => callbacks.onSelect({ head: Number(headPicker.value) });
  const vw = data.valueWeighted;
  for (
    const input of
    /** @type {NodeListOf<HTMLInputElement>} */
    card.querySelectorAll("[data-role=measure] input")
  ) {
    input.checked = input.value === (vw ? "value_weighted" : "weights");
    input.onchange = () => {
      if (input.checked)
        callbacks.onSelect({ measure: (
          /** @type {import("../core/types.js").Measure} */
          input.value
        ) });
    };
  }
  const caption = card.querySelector("[data-role=weights-caption]");
  if (caption) {
    caption.textContent = vw ? "Value-weighted: ||a_ij v_j W_O^h||, each weight times the norm of its key's value through the head's slice of the output projection (Kobayashi et al., 2020)." : "Weights: softmax of each score row.";
  }
  const tokens = meta.tokens;
  const n = tokens.length;
  const height = `${Math.max(380, Math.min(760, 160 + n * 10))}px`;
  card.querySelector("[data-role=grid]").classList.toggle("stacked", n > SIDE_BY_SIDE_MAX);
  const where = `layer ${sel.layer + 1}, head ${sel.head + 1}`;
  const m = data.scoreMax > 0 ? data.scoreMax : 1;
  const scoreTitle = meta.config?.scale === false ? "score = q·k (unscaled)" : meta.attention && !meta.attention.divide_by ? `score = q·k ${meta.attention.scale_label}${meta.attention.softcap ? `, soft-capped at ${meta.attention.softcap} before the softmax` : ""}` : `score = q·k / √d<sub>h</sub> (d<sub>h</sub> = ${meta.head_dim})${meta.attention?.softcap ? `, soft-capped at ${meta.attention.softcap} before the softmax` : ""}`;
  const scoresEl = (
    /** @type {HTMLElement} */
    card.querySelector("[data-role=scores]")
  );
  const weightsEl = (
    /** @type {HTMLElement} */
    card.querySelector("[data-role=weights]")
  );
  scoresEl.style.height = height;
  weightsEl.style.height = height;
  const masked = meta.config?.mask === "causal" ? " · grey = masked" : "";
  const scores = nested(data.scores).map((row) => row.map((v) => v === -Infinity ? null : v));
  const weights = nested(vw ?? data.weights);
  let top = 1;
  if (vw) {
    top = 0;
    for (const v of vw.data) top = Math.max(top, v);
    if (!(top > 0)) top = 1;
  }
  const kind = vw ? "value-weighted norm" : "weight";
  const name = vw ? "Value-weighted ‖a v W_O‖" : "Weights";
  const largest = n <= 6 ? 13 : 11;
  const written = n <= ANNOTATE_MAX;
  const drawn = Promise.all([
    drawFitted(
      scoresEl,
      [
        heatmap(tokens, scores, "score", data.scores.dtype, scoreTitle, {
          colorscale: SCORE_SCALE,
          zmin: -m,
          zmax: m,
          uid: "scores"
        })
      ],
      tokens,
      `Scores · ${where}${masked}`,
      written ? { z: scores, lutIndex: (v) => Math.round((v / m + 1) * 127.5), lut: SCORE_LUT, largest } : null,
      "attnviz-scores"
    ),
    drawFitted(
      weightsEl,
      [
        heatmap(
          tokens,
          weights,
          kind,
          (vw ?? data.weights).dtype,
          vw ? "value-weighted norm ‖a v W_O‖" : "attention weight (softmax), rows sum to 1",
          { colorscale: WEIGHT_SCALE, zmin: 0, zmax: top, uid: "weights" }
        )
      ],
      tokens,
      `${name} · ${where}${vw ? "" : ` · mean entropy ${fmt(data.entropy, 2)} nats`}`,
      written ? { z: weights, lutIndex: (v) => Math.round(v / top * 255), lut: WEIGHT_LUT, largest } : null,
      "attnviz-weights"
    )
  ]);
  const labels = tokens.map(shownToken);
  const causal = meta.config?.mask === "causal";
  readable2(
    scoresEl,
    tokens,
    scores,
    "score",
    data.scores.dtype,
    `Scores, ${where}`,
    strongestText(labels, labels, { shape: [n, n], data: scores.flat() }, { word: "largest", causal })
  );
  readable2(
    weightsEl,
    tokens,
    weights,
    kind,
    (vw ?? data.weights).dtype,
    `${name}, ${where}`,
    vw ? strongestText(labels, labels, vw, { causal }) : `mean entropy ${fmt(data.entropy, 2)} nats, ` + strongestText(labels, labels, data.weights, { causal })
  );
  return drawn;
}
function readable2(plot, tokens, z, kind, dtype, what, summary) {
  const n = tokens.length;
  const shown = tokens.map(shownToken);
  const spoken2 = tokens.map(spokenToken);
  const text = describe(plot, {
    summary: `${what}: ${summary}`,
    table: n <= TABLE_MAX4 ? matrixTable(
      `${what}: query rows by key columns`,
      "query",
      shown,
      shown,
      (i, j) => z[i][j] === null ? "masked" : fmt(z[i][j], 3)
    ) : null
  });
  keyCursor(plot, text.live, {
    rows: n,
    cols: n,
    describedBy: text.summary.id,
    label: `${what}: heatmap of ${n} × ${n} ${kind}s, query rows by key columns. Arrow keys move between cells.`,
    text: (i, j) => `${spoken2[i]} → ${spoken2[j]}: ` + (z[i][j] === null ? "masked (−∞ before the softmax)" : `${kind} ${exact(z[i][j], dtype)}`),
    show: (i, j) => plotlyOf(plot).Fx.hover(plot, { xval: j, yval: i }),
    hide: () => plotlyOf(plot).Fx.unhover(plot)
  });
}

// static/js/views/beforeafter.js
var SHOWN = 3;
function vectorCell(vector) {
  const values = Array.from(vector.data);
  const shown = values.slice(0, SHOWN).map((v) => fmt(v, 2));
  if (values.length > SHOWN) shown.push("…");
  return el("td", {
    textContent: `[${shown.join(", ")}]`,
    title: `[${values.map((v) => exact(v, vector.dtype)).join(", ")}]`
  });
}
function render14(card, data, sel) {
  const table = (
    /** @type {HTMLTableElement} */
    card.querySelector("[data-role=table]")
  );
  const l = Math.min(sel.vlayer, data.hidden.shape[0] - 1);
  const head = el("thead", {}, [
    el("tr", {}, [
      el("th", { textContent: "token" }),
      el("th", { textContent: "before (layer 0)" }),
      el("th", { textContent: `after layer ${l}` })
    ])
  ]);
  const body = el(
    "tbody",
    {},
    data.tokens.map(
      (token, i) => el("tr", { dataset: { token: String(i) } }, [
        el("td", { className: "token", textContent: shownToken(token) }),
        vectorCell(sub(data.hidden, 0, i)),
        vectorCell(sub(data.hidden, l, i))
      ])
    )
  );
  table.replaceChildren(head, body);
}

// static/js/modes/toy/paste.js
function parseNumber(text, decimalComma = false) {
  let s = String(text).trim();
  if (decimalComma && /^[-+]?\d+,\d+$/.test(s)) s = s.replace(",", ".");
  if (s === "" || !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return null;
  const v = Number(s);
  return Number.isFinite(v) ? v : null;
}
function isBlock(text) {
  return /[\t,\n\r]/.test(text.trim());
}
function parseRows(text) {
  const sep = text.includes("	") ? "	" : ",";
  const { rows, quoted: quoted2 } = readCsv(text, sep);
  const width = Math.max(0, ...rows.map((r) => r.length));
  rows.forEach((r, i) => {
    while (r.length < width) {
      r.push("");
      quoted2[i].push(false);
    }
  });
  for (let j = width - 1; j >= 0; j--) {
    if (rows.every((r, i) => r[j] === "" && !quoted2[i][j])) {
      rows.forEach((r, i) => {
        r.splice(j, 1);
        quoted2[i].splice(j, 1);
      });
    }
  }
  return { rows, quoted: quoted2, decimalComma: sep === "	" };
}
function parseBlock(text) {
  const { rows, quoted: quoted2, decimalComma } = parseRows(text);
  const num = (i, j) => !quoted2[i][j] && parseNumber(rows[i][j], decimalComma) !== null;
  if (!rows.length || !rows[0].length) return { axes: null, labels: null, values: [] };
  const width = rows[0].length;
  const all = rows.map((_, i) => i);
  const header2 = width > 1 ? rows[0].slice(1).some((_, j) => !num(0, j + 1)) : rows.length > 1 && !num(0, 0) && all.slice(1).every((i) => num(i, 0));
  const body = header2 ? all.slice(1) : all;
  const labels = body.length > 0 && (width > 1 ? body.some((i) => !num(i, 0)) : body.every((i) => !num(i, 0)));
  const skip = labels ? 1 : 0;
  return {
    axes: header2 ? rows[0].slice(skip) : null,
    labels: labels ? body.map((i) => rows[i][0]) : null,
    values: body.map((i) => rows[i].slice(skip).map((c) => parseNumber(c, decimalComma) ?? c))
  };
}

// static/js/modes/toy/table.js
var cellText2 = (v) => typeof v === "number" ? String(v) : String(v ?? "");
function gridCells(table) {
  return [...table.rows].map(
    (row) => [...row.cells].map((c) => {
      const e = (
        /** @type {HTMLInputElement | HTMLButtonElement | null} */
        c.querySelector("input, button")
      );
      return e && !e.disabled && !e.hidden ? e : null;
    })
  );
}
function gridMove(cells, r, c, key, ctrl) {
  const all = cells.flat().filter(Boolean);
  if (key === "Home" && ctrl) return all[0] ?? null;
  if (key === "End" && ctrl) return all[all.length - 1] ?? null;
  if (key === "Home") return cells[r].find(Boolean) ?? null;
  if (key === "End") return [...cells[r]].reverse().find(Boolean) ?? null;
  const step = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[key];
  if (!step) return null;
  for (let i = r + step[0], j = c + step[1]; i >= 0 && i < cells.length && j >= 0; i += step[0], j += step[1]) {
    if (step[1] && j >= cells[i].length) break;
    const e = cells[i][j];
    if (e) return e;
  }
  return null;
}
function createTable(table, { getState, getLimits, onEdit, onNotice }) {
  table.setAttribute("role", "grid");
  let readOnly = false;
  let stop = { r: 0, c: 1 };
  let editing = false;
  function where(e) {
    const cell = (
      /** @type {HTMLTableCellElement | null} */
      e.closest("td, th")
    );
    const row = (
      /** @type {HTMLTableRowElement | null} */
      cell?.parentElement ?? null
    );
    return cell && row ? { r: row.rowIndex, c: cell.cellIndex } : null;
  }
  function rove(e) {
    for (
      const x of
      /** @type {NodeListOf<HTMLElement>} */
      table.querySelectorAll("input, button")
    ) x.tabIndex = -1;
    e.tabIndex = 0;
    stop = where(e) ?? stop;
  }
  function restoreStop() {
    const cells = gridCells(table);
    const r = Math.min(stop.r, cells.length - 1);
    const row = cells[r] ?? [];
    const e = row[Math.min(stop.c, row.length - 1)] ?? row.slice(0, stop.c).reverse().find(Boolean) ?? cells.flat().find(Boolean);
    if (e) rove(e);
    return e ?? null;
  }
  function render26() {
    const focused = table.contains(document.activeElement);
    const { tokens, axes, embeddings } = getState();
    const d = dims(getState());
    const limits = getLimits();
    const head = el("thead");
    const names2 = el("tr", {}, [el("th", { className: "corner", scope: "col", textContent: "token" })]);
    const removers = el("tr", {}, [el("th")]);
    axes.forEach((name, j) => {
      names2.append(
        el("th", { scope: "col" }, [
          el("input", {
            type: "text",
            className: "axis",
            value: name,
            maxLength: limits.max_token_chars,
            title: name,
            dataset: { kind: "axis", c: j },
            "aria-label": `Name of dimension ${j + 1}`
          })
        ])
      );
      removers.append(
        el("th", {}, [
          el("button", {
            type: "button",
            className: "remove",
            textContent: "×",
            disabled: d <= 1,
            dataset: { removeCol: j },
            title: "Remove this dimension",
            "aria-label": `Remove dimension ${j + 1}`
          })
        ])
      );
    });
    head.append(names2, removers);
    const body = el("tbody");
    tokens.forEach((label, i) => {
      const row = el("tr", {}, [
        el("th", { scope: "row" }, [
          el("input", {
            type: "text",
            className: "label",
            value: label,
            maxLength: limits.max_token_chars,
            dataset: { kind: "label", r: i },
            "aria-label": `Label of token ${i + 1}`
          })
        ])
      ]);
      embeddings[i].forEach((v, j) => {
        row.append(
          el("td", {}, [
            el("input", {
              type: "text",
              inputMode: "decimal",
              className: typeof v === "number" ? "value" : "value invalid",
              value: cellText2(v),
              dataset: { kind: "value", r: i, c: j },
              "aria-label": `Token ${i + 1}, dimension ${j + 1}`
            })
          ])
        );
      });
      row.append(
        el("td", {}, [
          el("button", {
            type: "button",
            className: "remove",
            textContent: "×",
            disabled: tokens.length <= 1,
            dataset: { removeRow: i },
            title: "Remove this token",
            "aria-label": `Remove token ${i + 1}`
          })
        ])
      );
      body.append(row);
    });
    table.replaceChildren(head, body);
    if (readOnly) lockCells();
    const e = restoreStop();
    if (focused && e && !table.contains(document.activeElement)) e.focus();
  }
  function lockCells() {
    table.setAttribute("aria-readonly", "true");
    for (
      const e of
      /** @type {NodeListOf<HTMLInputElement>} */
      table.querySelectorAll("input")
    ) e.readOnly = true;
    for (
      const b of
      /** @type {NodeListOf<HTMLButtonElement>} */
      table.querySelectorAll("button.remove")
    ) {
      b.disabled = true;
      b.hidden = true;
    }
  }
  function lock() {
    readOnly = true;
    lockCells();
    restoreStop();
  }
  function addToken() {
    const s = getState();
    if (s.tokens.length >= getLimits().max_tokens) return;
    s.tokens.push(`t${s.tokens.length + 1}`);
    s.embeddings.push(Array(dims(s)).fill(0));
    onEdit({ structural: true });
  }
  function addDim() {
    const s = getState();
    if (dims(s) >= getLimits().max_dim) return;
    s.axes.push(`x${dims(s) + 1}`);
    s.embeddings.forEach((row) => row.push(0));
    onEdit({ structural: true });
  }
  table.addEventListener("input", (event) => {
    const t = event.target;
    const s = getState();
    const { kind } = t.dataset;
    if (kind === "value") {
      const v = parseNumber(t.value);
      s.embeddings[+t.dataset.r][+t.dataset.c] = v ?? t.value;
      t.classList.toggle("invalid", v === null);
    } else if (kind === "label") {
      s.tokens[+t.dataset.r] = t.value;
    } else if (kind === "axis") {
      s.axes[+t.dataset.c] = t.value;
      t.title = t.value;
    } else {
      return;
    }
    onEdit({ structural: false });
  });
  table.addEventListener("click", (event) => {
    const b = event.target.closest("button");
    if (!b) return;
    const s = getState();
    if (b.dataset.removeRow !== void 0 && s.tokens.length > 1) {
      const i = +b.dataset.removeRow;
      s.tokens.splice(i, 1);
      s.embeddings.splice(i, 1);
      onEdit({ structural: true });
    } else if (b.dataset.removeCol !== void 0 && dims(s) > 1) {
      const j = +b.dataset.removeCol;
      s.axes.splice(j, 1);
      s.embeddings.forEach((row) => row.splice(j, 1));
      for (const m of Object.values(s.config.weights || {})) {
        m.splice(j, 1);
        m.forEach((row) => row.splice(j, 1));
      }
      onEdit({ structural: true });
    }
  });
  function go(e) {
    editing = false;
    rove(e);
    e.focus();
    if (e instanceof HTMLInputElement) e.select();
  }
  function edit(t) {
    if (readOnly) return;
    editing = true;
    t.setSelectionRange(t.value.length, t.value.length);
  }
  table.addEventListener("focusin", (event) => {
    const t = (
      /** @type {HTMLElement} */
      event.target
    );
    if (t.matches("input, button")) rove(t);
  });
  table.addEventListener("focusout", (event) => {
    if (!table.contains(
      /** @type {Node | null} */
      event.relatedTarget
    )) editing = false;
  });
  table.addEventListener("pointerdown", (event) => {
    if (
      /** @type {HTMLElement} */
      event.target.matches("input")
    ) editing = !readOnly;
  });
  table.addEventListener("keydown", (event) => {
    const t = (
      /** @type {HTMLElement} */
      event.target
    );
    if (!t.matches("input, button")) return;
    const input = t instanceof HTMLInputElement ? t : null;
    const { key } = event;
    if (editing && input) {
      if (key === "Escape" || key === "F2") {
        event.preventDefault();
        editing = false;
        input.select();
      } else if (key === "Enter") {
        event.preventDefault();
        const { kind, r, c } = input.dataset;
        const next2 = kind === "axis" ? `[data-kind="value"][data-r="0"][data-c="${c}"]` : `[data-kind="${kind}"][data-r="${Number(r) + 1}"]` + (kind === "value" ? `[data-c="${c}"]` : "");
        const target = (
          /** @type {HTMLElement | null} */
          table.querySelector(next2)
        );
        if (target) go(target);
        else {
          editing = false;
          input.select();
        }
      }
      return;
    }
    const at = where(t);
    const next = at && gridMove(gridCells(table), at.r, at.c, key, event.ctrlKey || event.metaKey);
    if (next || ["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End"].includes(key)) {
      event.preventDefault();
      if (next) go(next);
      return;
    }
    if (!input) return;
    if (key === "Enter" || key === "F2") {
      event.preventDefault();
      edit(input);
    } else if (!readOnly && !event.ctrlKey && !event.metaKey && !event.altKey && (key.length === 1 || key === "Backspace" || key === "Delete")) {
      editing = true;
    }
  });
  table.addEventListener("paste", (event) => {
    const t = event.target;
    const text = event.clipboardData ? event.clipboardData.getData("text/plain") : "";
    if (!t.dataset.kind || !text || !isBlock(text)) return;
    event.preventDefault();
    const { kind } = t.dataset;
    const row0 = kind === "axis" ? 0 : +t.dataset.r;
    const col0 = kind === "label" ? 0 : +t.dataset.c;
    pasteBlock(parseBlock(text), row0, col0);
    const again = table.querySelector(
      `[data-kind="${kind}"]` + (kind === "axis" ? `[data-c="${col0}"]` : `[data-r="${row0}"]`) + (kind === "value" ? `[data-c="${col0}"]` : "")
    );
    if (again) again.focus();
  });
  function pasteBlock(block, row0, col0) {
    const s = getState();
    const limits = getLimits();
    const cut = (text) => String(text).slice(0, limits.max_token_chars);
    const width = Math.max(block.axes ? block.axes.length : 0, ...block.values.map((r) => r.length), 0);
    const height = block.values.length;
    const whole = Boolean(block.axes && block.labels);
    if (whole) [row0, col0] = [0, 0];
    const n = Math.min(limits.max_tokens, whole ? height : Math.max(s.tokens.length, row0 + height));
    const d = Math.min(limits.max_dim, whole ? width : Math.max(dims(s), col0 + width));
    const clipped = row0 + height > n || col0 + width > d;
    const grew = !whole && (n > s.tokens.length || d > dims(s));
    if (whole) {
      s.preset = null;
      s.tokens.length = 0;
      s.axes.length = 0;
      s.embeddings.length = 0;
    }
    while (s.axes.length < d) s.axes.push(`x${s.axes.length + 1}`);
    s.embeddings.forEach((row) => {
      while (row.length < d) row.push(0);
    });
    while (s.tokens.length < n) {
      s.tokens.push(`t${s.tokens.length + 1}`);
      s.embeddings.push(Array(d).fill(0));
    }
    (block.axes || []).forEach((name, j) => {
      if (col0 + j < d) s.axes[col0 + j] = cut(name);
    });
    block.values.forEach((vals, i) => {
      if (row0 + i >= n) return;
      if (block.labels) s.tokens[row0 + i] = cut(block.labels[i]);
      vals.forEach((v, j) => {
        if (col0 + j < d) s.embeddings[row0 + i][col0 + j] = v;
      });
    });
    const rows = Math.min(height, n - row0);
    const cols = Math.min(width, d - col0);
    let said = whole ? `pasted ${rows} x ${cols} with names: it replaces the table` : !height ? `pasted ${cols} dimension names from dimension ${col0 + 1}` : !width ? `pasted ${rows} token names from token ${row0 + 1}` : `pasted ${rows} x ${cols} at token ${row0 + 1}, dimension ${col0 + 1}` + (block.axes ? " with dimension names" : block.labels ? " with token names" : "");
    if (grew) said += `; the table grew to ${n} x ${d}`;
    if (clipped) said += `; clipped to ${limits.max_tokens} tokens x ${limits.max_dim} dimensions`;
    onNotice(said);
    onEdit({ structural: true });
  }
  return { render: render26, addToken, addDim, pasteBlock, lock };
}

// static/js/modes/toy/controls.js
var $ = byId;
var MATRIX_TITLES = { q: "W_Q (query)", k: "W_K (key)", v: "W_V (value)", o: "W_O (output)" };
function createControls({ getState, getLimits, onEdit, onPreset }) {
  const form = (
    /** @type {HTMLFormElement} */
    $("config")
  );
  const f = (
    /** @type {any} */
    form.elements
  );
  const presetSelect = (
    /** @type {HTMLSelectElement} */
    $("preset")
  );
  const about = $("preset-about");
  const source = $("preset-source");
  const weightsBox = $("custom-weights");
  let presets = [];
  function setPresets(list) {
    presets = list;
    fillOptions(
      presetSelect,
      list.map((p) => [p.id, p.name])
    );
    for (const [i, o] of [...presetSelect.options].entries()) o.title = list[i].about;
  }
  function showPreset(id, note) {
    const p = presets.find((x) => x.id === id);
    if (p) presetSelect.value = p.id;
    else presetSelect.selectedIndex = -1;
    about.textContent = p ? p.about + note : "Your own table.";
    source.textContent = p ? `Source: ${p.source}` : "";
    source.hidden = !p;
  }
  presetSelect.addEventListener("change", () => {
    const p = presets.find((x) => x.id === presetSelect.value);
    if (p) onPreset(p);
  });
  $("preset-reset").addEventListener("click", () => {
    const p = presets.find((x) => x.id === presetSelect.value) || presets[0];
    if (p) onPreset(p);
  });
  function render26({ weights = true } = {}) {
    const s = getState();
    const cfg = s.config;
    const limits = getLimits();
    const d = dims(s);
    fillOptions(
      f.layers,
      Array.from({ length: limits.max_layers }, (_, i) => [i + 1, String(i + 1)])
    );
    fillOptions(
      f.heads,
      headChoices(d, limits.max_heads).map((h) => [h, `${h} (d_h = ${d / h})`])
    );
    f.layers.value = String(cfg.layers);
    f.heads.value = String(cfg.heads);
    for (const key of ["projections", "mask", "positional", "norm"]) f[key].value = cfg[key];
    for (const key of ["scale", "residual", "ffn"]) f[key].checked = Boolean(cfg[key]);
    $("cfg-positional-note").hidden = !(cfg.positional === "rope" && d / cfg.heads === 1);
    if (document.activeElement !== f.seed) f.seed.value = String(cfg.seed);
    if (weights || weightsBox.hidden !== (cfg.projections !== "custom")) renderWeights();
  }
  function renderWeights() {
    const cfg = getState().config;
    weightsBox.hidden = cfg.projections !== "custom";
    if (weightsBox.hidden) {
      weightsBox.replaceChildren();
      return;
    }
    weightsBox.replaceChildren(
      ...["q", "k", "v", "o"].map((name) => {
        const m = cfg.weights[name];
        const box = document.createElement("div");
        box.className = "matrix";
        const h = document.createElement("h3");
        h.textContent = MATRIX_TITLES[name];
        const scroll = document.createElement("div");
        scroll.className = "table-scroll";
        const table = document.createElement("table");
        table.className = "grid-table";
        table.dataset.matrix = name;
        m.forEach((row, i) => {
          const tr = table.insertRow();
          row.forEach((v, j) => {
            const input = document.createElement("input");
            input.type = "text";
            input.inputMode = "decimal";
            input.className = typeof v === "number" ? "value" : "value invalid";
            input.value = cellText2(v);
            input.dataset.i = i;
            input.dataset.j = j;
            input.setAttribute("aria-label", `${MATRIX_TITLES[name]} row ${i + 1} column ${j + 1}`);
            tr.insertCell().append(input);
          });
        });
        scroll.append(table);
        box.append(h, scroll);
        return box;
      })
    );
  }
  weightsBox.addEventListener("input", (event) => {
    const t = (
      /** @type {HTMLInputElement} */
      event.target
    );
    const name = t.closest("table")?.dataset.matrix;
    const w = (
      /** @type {Record<string, any>} */
      getState().config.weights
    );
    if (!name || !w) return;
    const v = parseNumber(t.value);
    w[name][Number(t.dataset.i)][Number(t.dataset.j)] = v ?? t.value;
    t.classList.toggle("invalid", v === null);
    onEdit({ structural: false });
  });
  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("input", (event) => {
    const t = (
      /** @type {HTMLInputElement} */
      event.target
    );
    const cfg = (
      /** @type {Record<string, any>} */
      getState().config
    );
    const key = t.name;
    if (!key) return;
    let structural = false;
    if (key === "layers" || key === "heads") cfg[key] = Number(t.value);
    else if (key === "seed") cfg.seed = /^\s*\d+\s*$/.test(t.value) ? Number(t.value) : t.value;
    else if (t.type === "checkbox") cfg[key] = t.checked;
    else cfg[key] = t.value;
    if (key === "projections") {
      cfg.weights = t.value === "custom" ? Object.fromEntries(["q", "k", "v", "o"].map((k) => [k, identity(dims(getState()))])) : null;
      structural = true;
    }
    onEdit({ structural, config: key });
  });
  return { setPresets, showPreset, render: render26 };
}

// static/js/views/distances.js
function render15(card, data, sel, callbacks) {
  const { tokens, distances } = data;
  const [L1, n] = distances.shape;
  const a = Math.min(sel.a, n - 1);
  const b = Math.min(sel.b, n - 1);
  const items = (
    /** @type {[number, string][]} */
    tokens.map((t, i) => [i, `${i + 1}. ${t}`])
  );
  for (
    const [role, value] of
    /** @type {const} */
    [
      ["a", a],
      ["b", b]
    ]
  ) {
    const select2 = (
      /** @type {HTMLSelectElement} */
      card.querySelector(`[data-role=${role}]`)
    );
    fillOptions(select2, items, value);
    select2.onchange = () => callbacks.onSelect({ [role]: Number(select2.value) });
  }
  const series = Array.from({ length: L1 }, (_, l) => distances.data[(l * n + a) * n + b]);
  const current = Math.min(sel.vlayer, L1 - 1);
  const dtype = distances.dtype;
  const parts = [
    el("span", { className: "pair", textContent: `${tokens[a]} ↔ ${tokens[b]}` }),
    el("span", { textContent: ": " })
  ];
  series.forEach((v, l) => {
    if (l > 0) parts.push(el("span", { textContent: " → " }));
    parts.push(
      el("span", {
        className: l === current ? "value current" : "value",
        textContent: fmt(v, 3),
        title: `layer ${l}: ${exact(v, dtype)}`
      })
    );
  });
  const readout = (
    /** @type {HTMLElement} */
    card.querySelector("[data-role=readout]")
  );
  readout.replaceChildren(...parts);
  const layers = series.map((_, l) => l);
  const pair = `${plotToken(tokens[a])} ↔ ${plotToken(tokens[b])}`;
  const plot = (
    /** @type {HTMLElement} */
    card.querySelector("[data-role=plot]")
  );
  const { live } = describe(plot, { summary: "" });
  keyCursor(plot, live, {
    rows: 1,
    cols: L1,
    describedBy: readout.id || void 0,
    label: `Distance between ${spokenToken(tokens[a])} and ${spokenToken(tokens[b])} at each layer: line plot. Arrow keys step through the layers.`,
    text: (_, l) => `${spokenToken(tokens[a])} ↔ ${spokenToken(tokens[b])}, layer ${l}: ${exact(series[l], dtype)}`,
    show: (_, l) => plotlyOf(plot).Fx.hover(plot, [{ curveNumber: 0, pointNumber: l }]),
    hide: () => plotlyOf(plot).Fx.unhover(plot)
  });
  return draw(
    plot,
    [
      {
        type: "scatter",
        mode: "lines+markers",
        uid: "distance",
        name: pair,
        x: layers,
        y: series,
        // User text goes through customdata: a template would read "%{...}" in a token label.
        customdata: series.map((v) => [pair, exact(v, dtype)]),
        hovertemplate: "%{customdata[0]}<br>layer %{x}: %{customdata[1]}<extra></extra>",
        line: { color: SELECTED, width: 2.5 },
        marker: { size: 7 }
      }
    ],
    baseLayout({
      margin: { l: 60, r: 20, t: 16, b: 46 },
      showlegend: false,
      xaxis: {
        title: { text: "layer (0 = input)" },
        tickmode: "array",
        tickvals: layers,
        range: [-0.3, L1 - 1 + 0.3],
        zeroline: false
      },
      yaxis: { title: { text: "distance" }, rangemode: "tozero" },
      shapes: [
        {
          type: "line",
          xref: "x",
          yref: "paper",
          x0: current,
          x1: current,
          y0: 0,
          y1: 1,
          line: { color: "#9aa3b2", width: 1, dash: "dot" }
        }
      ]
    }),
    "attnviz-distance"
  );
}

// static/js/views/vectors.js
function frames(data) {
  const { d, axes } = data.meta;
  const memo = /* @__PURE__ */ new Map();
  const layerOf = (arr) => (l) => {
    if (!memo.has(l)) memo.set(l, nested(sub(arr, l)));
    return (
      /** @type {number[][]} */
      memo.get(l)
    );
  };
  const p = data.projection;
  const most = data.flat ? 2 : 3;
  if (d <= 3 || !p) {
    const k = Math.min(d, most);
    return {
      k,
      arrows: true,
      titles: axes.slice(0, Math.min(d, 3)),
      dtype: data.hidden.dtype,
      at: layerOf(data.hidden)
    };
  }
  const titles3 = p.ratio.map((r, i) => `PC${i + 1} (${fmt(100 * r, 0)}% var)`);
  return { k: Math.min(p.components, most), arrows: false, titles: titles3, dtype: p.coords.dtype, at: layerOf(p.coords) };
}
function sharedRange(f, layers) {
  let lo = f.arrows ? 0 : Infinity;
  let hi = f.arrows ? 0 : -Infinity;
  for (let l = 0; l <= layers; l++)
    for (const row of f.at(l))
      for (const v of row) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
  const pad = Math.max((hi - lo) * 0.08, 0.05);
  return [lo - pad, hi + pad];
}
var column = (rows, c) => rows.map((r) => r[c]);
function segments(points, k) {
  const out = { x: [], y: [], z: [], color: [] };
  points.forEach((p, i) => {
    const c = tokenColor(i);
    for (const [axis, j] of [
      ["x", 0],
      ["y", 1],
      ["z", 2]
    ].slice(0, k))
      out[axis].push(0, p[j], null);
    out.color.push(c, c, c);
  });
  return out;
}
function paths(f, layers, k) {
  const out = { x: [], y: [], z: [], color: [] };
  const n = f.at(0).length;
  for (let i = 0; i < n; i++) {
    for (let l = 0; l <= layers; l++) {
      const p = f.at(l)[i];
      for (const [axis, j] of [
        ["x", 0],
        ["y", 1],
        ["z", 2]
      ].slice(0, k))
        out[axis].push(p[j]);
      out.color.push(tokenColor(i));
    }
    for (const axis of ["x", "y", "z"].slice(0, k)) out[axis].push(null);
    out.color.push(tokenColor(i));
  }
  return out;
}
function hover(trace, f, l) {
  return f.at(l).map(
    (p, i) => `<b>${plotToken(trace.tokens[i])}</b> · layer ${l}<br>` + p.map((v, j) => `${plotText(f.titles[j])} = ${exact(v, f.dtype)}`).join("<br>")
  );
}
function tipLabels(trace, pts, k) {
  const labels = trace.tokens.map(plotToken);
  if (k !== 2) return labels;
  for (const [, members2] of labelGroups(pts)) {
    if (members2.length < 2) continue;
    labels[members2[0]] = members2.map((i) => labels[i]).join(", ");
    for (const i of members2.slice(1)) labels[i] = "";
  }
  return labels;
}
function tips(trace, f, l, k, role) {
  const pts = f.at(l);
  const after = role === "after";
  const t = {
    type: k === 3 ? "scatter3d" : "scatter",
    mode: after && k < 3 ? "markers+text" : "markers",
    name: after ? `after layer ${l}` : "start (layer 0)",
    uid: role,
    x: column(pts, 0),
    y: k >= 2 ? column(pts, 1) : pts.map((_, i) => i),
    text: tipLabels(trace, pts, k),
    textposition: "top center",
    textfont: { size: 13, color: trace.tokens.map((_, i) => tokenColor(i)) },
    hovertext: hover(trace, f, l),
    hoverinfo: "text",
    showlegend: !(f.arrows && k === 3) && (after || !f.arrows),
    marker: {
      size: after ? 5 : 4,
      color: after || k === 3 ? trace.tokens.map((_, i) => tokenColor(i)) : "#ffffff",
      line: { width: 2, color: trace.tokens.map((_, i) => tokenColor(i)) },
      symbol: k === 3 && !after ? "circle-open" : "circle"
    }
  };
  if (k === 3) t.z = column(pts, 2);
  return t;
}
function labelGroups(points) {
  const groups = /* @__PURE__ */ new Map();
  points.forEach((p, i) => {
    const key = p.map((v) => v.toPrecision(6)).join(",");
    if (!groups.has(key)) groups.set(key, [p, []]);
    groups.get(key)[1].push(i);
  });
  return [...groups.values()];
}
function cones(points) {
  return points.flatMap((p, i) => {
    const len = Math.hypot(...p);
    if (len < 1e-9) return [];
    const c = tokenColor(i);
    const u = p.map((v) => v / len);
    return [
      {
        type: "cone",
        x: [p[0]],
        y: [p[1]],
        z: [p[2]],
        u: [u[0]],
        v: [u[1]],
        w: [u[2]],
        anchor: "tip",
        sizemode: "absolute",
        sizeref: 0.09,
        showscale: false,
        colorscale: [
          [0, c],
          [1, c]
        ],
        hoverinfo: "skip",
        showlegend: false,
        name: ""
      }
    ];
  });
}
function draw3d(el2, trace, f, l, view) {
  const data = [];
  const line = (seg, dash, width, name, uid) => [
    {
      type: "scatter3d",
      mode: "lines",
      name,
      uid,
      x: seg.x,
      y: seg.y,
      z: seg.z,
      line: { color: seg.color, width, dash },
      hoverinfo: "skip",
      connectgaps: false,
      showlegend: false,
      legendgroup: uid
    },
    {
      type: "scatter3d",
      mode: "lines",
      name,
      uid: `${uid}-legend`,
      x: [null],
      y: [null],
      z: [null],
      line: { color: "#7b8494", width: Math.min(width, 4), dash },
      hoverinfo: "skip",
      legendgroup: uid
    }
  ];
  if (view.trails && trace.layers >= 1) data.push(...line(paths(f, trace.layers, 3), "dot", 3, "trajectory", "trails"));
  if (f.arrows && l > 0) data.push(...line(segments(f.at(0), 3), "dash", 4, "start (dashed)", "ghosts"));
  if (f.arrows) data.push(...line(segments(f.at(l), 3), "solid", 7, `after layer ${l}`, "arrows"));
  if (f.arrows && trace.n <= 24) data.push(...cones(f.at(l)));
  data.push(tips(trace, f, 0, 3, "before"), tips(trace, f, l, 3, "after"));
  const annotations = labelGroups(f.at(l)).map(([p, members2]) => ({
    x: p[0],
    y: p[1],
    z: p[2],
    text: members2.map((i) => plotToken(trace.tokens[i])).join(", "),
    showarrow: false,
    yshift: 12,
    font: { size: 13, color: tokenColor(members2[0]) },
    bgcolor: "rgba(255,255,255,0.6)"
  }));
  const range = sharedRange(f, trace.layers);
  const axis = (i) => ({
    title: { text: plotText(f.titles[i]) },
    range,
    autorange: false,
    zeroline: true,
    zerolinecolor: "#8a93a3",
    gridcolor: "#e3e6eb",
    backgroundcolor: "#fbfcfd"
  });
  return draw(
    el2,
    data,
    baseLayout({
      margin: { l: 0, r: 0, t: 10, b: 0 },
      showlegend: true,
      legend: { x: 0.01, y: 0.99, bgcolor: "rgba(255,255,255,0.8)" },
      uirevision: `3d-${trace.d}`,
      scene: {
        xaxis: axis(0),
        yaxis: axis(1),
        zaxis: axis(2),
        aspectmode: "cube",
        annotations,
        camera: { eye: { x: 1.45, y: -1.5, z: 0.75 } },
        uirevision: `3d-${trace.d}`
      }
    }),
    "attnviz-vectors"
  );
}
function draw2d(el2, trace, f, l, view) {
  const { k } = f;
  const data = [];
  const annotations = [];
  const yOf = (p, i) => k === 2 ? p[1] : i;
  if (view.trails && trace.layers >= 1 && k === 2) {
    const p = paths(f, trace.layers, 2);
    data.push({
      type: "scatter",
      mode: "lines",
      uid: "trails",
      name: "trajectory",
      x: p.x,
      y: p.y,
      line: { color: "#9aa3b2", width: 1.5, dash: "dot" },
      hoverinfo: "skip"
    });
  }
  if (f.arrows && l > 0) {
    const ghost = { x: [], y: [] };
    f.at(0).forEach((p, i) => {
      ghost.x.push(0, p[0], null);
      ghost.y.push(k === 2 ? 0 : i, yOf(p, i), null);
    });
    data.push({
      type: "scatter",
      mode: "lines",
      uid: "ghosts",
      name: "start (dashed)",
      ...ghost,
      line: { color: "#7b8494", width: 2, dash: "dash" },
      hoverinfo: "skip"
    });
  }
  if (f.arrows) {
    f.at(l).forEach(
      (p, i) => annotations.push({
        x: p[0],
        y: yOf(p, i),
        ax: 0,
        ay: k === 2 ? 0 : i,
        xref: "x",
        yref: "y",
        axref: "x",
        ayref: "y",
        showarrow: true,
        arrowhead: 2,
        arrowsize: 1.2,
        arrowwidth: 2.5,
        arrowcolor: tokenColor(i),
        text: ""
      })
    );
  }
  data.push(tips(trace, f, 0, k, "before"), tips(trace, f, l, k, "after"));
  const range = sharedRange(f, trace.layers);
  const yaxis = k === 2 ? { title: { text: plotText(f.titles[1]) }, range, scaleanchor: "x", zerolinecolor: "#8a93a3" } : {
    tickmode: "array",
    tickvals: trace.tokens.map((_, i) => i),
    ticktext: trace.tokens.map(plotToken),
    autorange: "reversed",
    showgrid: false,
    zeroline: false
  };
  return draw(
    el2,
    data,
    baseLayout({
      margin: { l: 70, r: 20, t: 20, b: 50 },
      legend: { orientation: "h", y: -0.15 },
      annotations,
      xaxis: { title: { text: plotText(f.titles[0]) }, range, zerolinecolor: "#8a93a3" },
      yaxis
    }),
    "attnviz-vectors"
  );
}
function render16(card, data, sel, callbacks) {
  const trace = data.meta;
  const l = Math.min(sel.vlayer, trace.layers);
  const slider = (
    /** @type {HTMLInputElement} */
    card.querySelector("[data-role=layer]")
  );
  const trails = (
    /** @type {HTMLInputElement} */
    card.querySelector("[data-role=trails]")
  );
  slider.max = String(trace.layers);
  slider.value = String(l);
  card.querySelector("[data-role=layer-out]").textContent = String(l);
  trails.checked = sel.trails;
  slider.oninput = () => callbacks.onSelect({ vlayer: Number(slider.value) });
  trails.onchange = () => callbacks.onSelect({ trails: trails.checked });
  const f = frames(data);
  const plot = (
    /** @type {HTMLElement} */
    card.querySelector("[data-role=plot]")
  );
  const caption = f.arrows ? `Arrows from the origin in (${trace.axes.slice(0, f.k).join(", ")}). Dashed: the input (layer 0). Solid: after layer ${l}. Dotted: each token's path over all layers.` : `d = ${trace.d}, shown by PCA fitted once on every layer's vectors (${f.titles.join(", ")}). Open circles: layer 0. Filled: after layer ${l}.`;
  card.querySelector("[data-role=caption]").textContent = caption;
  const drawn = f.k === 3 ? draw3d(plot, trace, f, l, sel) : draw2d(plot, trace, f, l, sel);
  readable3(plot, trace, f, l);
  return drawn;
}
var TABLE_MAX5 = 32;
function readable3(plot, trace, f, l) {
  const where = f.arrows ? `(${f.titles.join(", ")})` : `the PCA coordinates (${f.titles.join(", ")})`;
  const far = farthest(f.at(0), f.at(l));
  const coords = (p) => `(${p.map((v) => fmt(v, 2)).join(", ")})`;
  const text = describe(plot, {
    summary: l === 0 || !far ? `${trace.n} token vectors at the input, in ${where}.` : `${trace.n} token vectors after layer ${l}, in ${where}: farthest from its start, ${shownToken(trace.tokens[far.i])} (${fmt(far.d, 2)}).`,
    table: trace.n <= TABLE_MAX5 ? {
      caption: `Each token's coordinates in ${where}, at the start and after layer ${l}`,
      head: ["token", "start (layer 0)", `after layer ${l}`],
      rows: trace.tokens.map((t, i) => [shownToken(t), coords(f.at(0)[i]), coords(f.at(l)[i])])
    } : null
  });
  const layers = [0, l];
  keyCursor(plot, text.live, {
    rows: 2,
    cols: trace.n,
    describedBy: text.summary.id,
    label: `Token vectors ${f.k === 3 ? "in 3-D" : "in 2-D"}: each token at the start and after layer ${l}. Left and right arrows move between tokens, up and down between the start and the layer.`,
    text: (r, i) => {
      const point = f.at(layers[r])[i];
      return `${spokenToken(trace.tokens[i])} · layer ${layers[r]}: ` + point.map((v, j) => `${f.titles[j]} = ${exact(v, f.dtype)}`).join(", ");
    },
    show: f.k === 3 ? void 0 : (r, i) => {
      const data = (
        /** @type {any} */
        plot.data ?? []
      );
      const curve = data.findIndex((t) => t.uid === (r === 0 ? "before" : "after"));
      if (curve >= 0) plotlyOf(plot).Fx.hover(plot, [{ curveNumber: curve, pointNumber: i }]);
    },
    hide: () => plotlyOf(plot).Fx.unhover(plot)
  });
}

// static/js/modes/toy/index.js
var FIRST = "hidden_states,distances,projection,entropy_mean,score_range,attentions,scores";
var HEAD = "attentions,scores";
function createToy(hooks, { openParts = (body) => new TraceParts(body), fixed: fixed2 = false, flat: flat2 = false } = {}) {
  const { limits, defaults, presets } = hooks;
  const app2 = {
    /** @type {ToyState} */
    state: (
      /** @type {any} */
      null
    ),
    /** @type {any} */
    data: null,
    // the last good trace's first-screen arrays
    /** @type {import("../sentence/parts.js").Parts | null} */
    parts: null,
    /** @type {object | null} */
    body: null,
    layers: 1,
    started: false,
    active: false,
    touched: false,
    // the reader has edited the inputs since they were loaded (a preset, a link, a step)
    /** @type {string | null} */
    linkProblem: null,
    // shown until the next edit
    /** @type {string[]} */
    said: [],
    // what the last edit did unasked (a paste, heads changed)
    /** @type {string[]} */
    saying: []
    // what the edit in progress did, said with its trace
  };
  const status = createStatus(hooks);
  const setStatus = (text) => status.set([text, ...app2.said].join(" · "));
  function show2(result, request) {
    const { meta, arrays } = result;
    const p = meta.projection ? {
      components: meta.projection.components,
      ratio: Array.from(arrays["projection.explained_variance_ratio"].data),
      coords: arrays["projection.coords"]
    } : null;
    let scoreMax = 0;
    for (const v of arrays.score_range.data) scoreMax = Math.max(scoreMax, v);
    app2.data = {
      meta,
      hidden: arrays.hidden_states,
      distances: arrays.distances,
      projection: p,
      entropyMean: arrays.entropy_mean,
      scoreMax,
      flat: flat2
    };
    app2.body = request.body;
    app2.parts = openParts(request.body);
    const { layer, head } = request.params;
    app2.parts.seed({ fields: HEAD, layer, head }, result);
    hooks.setError(app2.linkProblem);
    setStatus(
      `n = ${meta.n}, d = ${meta.d}, ${meta.layers} layer${meta.layers > 1 ? "s" : ""}, ${meta.heads} head${meta.heads > 1 ? "s" : ""}`
    );
    status.drawing(drawAll(), hooks.traceDrawn);
  }
  const client = new TraceClient({
    onPending: (p) => status.waiting("request", p),
    onResult: (result, request) => show2(result, request),
    onError(message) {
      hooks.setError(message);
      setStatus("not updated");
    }
  });
  const select2 = (change) => viewChanged(change);
  const VIEWS = {
    async attention() {
      const { layer, head, measure } = app2.state.view;
      const value = measure === "value_weighted";
      const fields = value ? `${HEAD},value_weighted` : HEAD;
      const part4 = await /** @type {import("../sentence/parts.js").Parts} */
      app2.parts.get({ fields, layer, head });
      const { meta } = app2.data;
      const entropy = app2.data.entropyMean.data[layer * meta.heads + head];
      return render13(
        byId("attention-card"),
        {
          meta,
          scores: sub(part4.arrays.scores, 0, 0),
          weights: sub(part4.arrays.attentions, 0, 0),
          valueWeighted: value ? sub(part4.arrays.value_weighted, 0, 0) : void 0,
          scoreMax: app2.data.scoreMax,
          entropy
        },
        { layer, head, measure },
        { onSelect: select2 }
      );
    },
    vectors: () => render16(byId("vectors-card"), app2.data, app2.state.view, { onSelect: select2 }),
    beforeAfter: () => render14(
      byId("before-after-card"),
      { tokens: app2.data.meta.tokens, hidden: app2.data.hidden },
      app2.state.view
    ),
    distances: () => render15(
      byId("distances-card"),
      { tokens: app2.data.meta.tokens, distances: app2.data.distances },
      app2.state.view,
      { onSelect: select2 }
    )
  };
  function drawAll(which = Object.keys(VIEWS)) {
    if (!app2.data || !app2.active) return Promise.resolve();
    return drawViews(VIEWS, which, hooks.setError);
  }
  function viewChanged(change) {
    Object.assign(app2.state.view, change);
    normalize(app2.state, limits);
    hooks.changed();
    status.drawing(drawAll(viewsFed(TOY_FEEDS, Object.keys(change))), hooks.viewsDrawn);
  }
  function userEdited(change) {
    app2.linkProblem = null;
    app2.touched = true;
    edited(change);
  }
  const table = createTable(
    /** @type {HTMLTableElement} */
    byId("embeddings"),
    {
      getState: () => app2.state,
      getLimits: () => limits,
      onEdit: userEdited,
      onNotice: (text) => {
        app2.saying.push(importing ? `${importing}: ${text}` : text);
      }
    }
  );
  let importing = "";
  const controls = createControls({
    getState: () => app2.state,
    getLimits: () => limits,
    onEdit: userEdited,
    onPreset: (preset) => {
      app2.linkProblem = null;
      load(fromPreset(preset, defaults));
    }
  });
  controls.setPresets(presets);
  byId("add-token").addEventListener("click", () => table.addToken());
  byId("add-dim").addEventListener("click", () => table.addDim());
  byId("export-csv").addEventListener("click", () => {
    download(tableCsv(app2.state), "attnviz-table.csv", CSV_TYPE);
  });
  const importCsv = (
    /** @type {HTMLInputElement} */
    byId("import-csv")
  );
  importCsv.addEventListener("change", async () => {
    const file = importCsv.files?.[0];
    importCsv.value = "";
    if (!file) return;
    const cap = csvByteCap(limits);
    if (file.size > cap) {
      const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
      setStatus(
        `${file.name} is too large (${mb(file.size)}): a table of at most ${limits.max_tokens} tokens × ${limits.max_dim} dimensions fits in ${mb(cap)}`
      );
      return;
    }
    const text = await file.text();
    const block = parseBlock(text);
    if (!block.values.length && !block.axes) {
      setStatus(`${file.name} has no rows to import`);
      return;
    }
    importing = file.name;
    try {
      table.pasteBlock(parseBlock(text), 0, 0);
    } finally {
      importing = "";
    }
  });
  function edited({ structural = false } = {}) {
    const s = app2.state;
    const heads = s.config.heads;
    normalize(s, limits, app2.layers);
    app2.said = app2.saying;
    app2.saying = [];
    const note = headsNote(heads, s, limits);
    if (note) app2.said.push(note);
    app2.layers = s.config.layers;
    if (structural) table.render();
    controls.render({ weights: structural });
    const preset = presets.find((p) => p.id === s.preset);
    controls.showPreset(s.preset, presetNote(s, preset, limits, defaults, app2.touched));
    byId("table-size").textContent = `${s.tokens.length} × ${dims(s)}`;
    byId("toy-mode").style.setProperty("--table-cols", String(dims(s)));
    byId("add-token").disabled = s.tokens.length >= limits.max_tokens;
    byId("add-dim").disabled = dims(s) >= limits.max_dim;
    hooks.changed();
    if (fixed2) return lock();
    if (!app2.active) return;
    const first = !app2.started;
    app2.started = true;
    const bad = problem(s, limits);
    if (bad) {
      hooks.setError(bad);
      client.idle();
      setStatus("not updated");
      return;
    }
    const { layer, head } = s.view;
    client.request(toRequest(s, defaults), { fields: FIRST, layer, head }, first ? 0 : void 0);
  }
  function lock() {
    table.lock();
    const panel = (
      /** @type {HTMLElement} */
      byId("toy-mode").querySelector(".panel")
    );
    panel.classList.add("read-only");
    for (
      const e of
      /** @type {NodeListOf<HTMLInputElement>} */
      panel.querySelectorAll("input, select, textarea, button")
    ) {
      if (e.id === "export-csv") continue;
      if (e.tagName === "INPUT" && e.type === "text") e.readOnly = true;
      else e.disabled = true;
    }
    for (const id of ["add-token", "add-dim", "preset-reset"]) byId(id).hidden = true;
    const importLabel = byId("import-csv").closest("label");
    if (importLabel) importLabel.hidden = true;
    const keys = byId("table-keys");
    if (keys.previousElementSibling) keys.previousElementSibling.hidden = true;
    keys.textContent = "Tab reaches the table once; the arrow keys move between its cells, which are read only here.";
    for (const card of [byId("embeddings").closest(".card"), byId("config").closest(".card")]) {
      if (!card || card.querySelector(".read-only-note")) continue;
      const note = document.createElement("p");
      note.className = "read-only-note";
      note.textContent = "Read-only copy: open attnviz to edit.";
      (card.querySelector(":scope > .card-head") ?? card.querySelector("h2"))?.after(note);
    }
  }
  function load(state) {
    app2.state = normalize(state, limits);
    if (!flat2 && dims(app2.state) >= 3) load3d().catch(() => void 0);
    app2.touched = false;
    app2.layers = app2.state.config.layers;
    edited({ structural: true });
  }
  return {
    /** Show the toy lab; `state` (a link's) replaces the current one. @param {ToyState | null} [state] */
    activate(state = null) {
      app2.active = true;
      if (state) return load(state);
      if (!app2.state) return load(normalize(fromPreset(presets[0], defaults), limits));
      if (!app2.started) return edited({ structural: true });
      return status.drawing(drawAll(), hooks.viewsDrawn);
    },
    deactivate() {
      app2.active = false;
    },
    /** Say why a link was not followed, until the next edit. @param {string} text */
    setLinkProblem(text) {
      app2.linkProblem = text;
      hooks.setError(text);
    },
    /** Draw a first response into every view (what the trace client does with its answer). */
    show: show2,
    getState: () => app2.state,
    hasTrace: () => Boolean(app2.data),
    /** The HTML export's body (core/api.js exportHtml) for what is in view (null before the first trace). */
    htmlRequest() {
      if (!app2.body) return null;
      const { layer, head, vlayer, a, b, trails } = app2.state.view;
      return { trace: app2.body, selection: { layer, head, view: { vlayer, a, b, trails } } };
    },
    /** The whole trace as the JSON API sends it. */
    exportJson: async () => app2.body ? { text: await fetchTraceJson(app2.body), name: "attnviz-trace.json", note: "" } : null
  };
}

// static/js/core/trainrun.js
var decoded = /* @__PURE__ */ new WeakMap();
function snapshotOf(cp, kind) {
  return (kind === "cross" ? cp.cross : kind === "encoder" ? cp.encoder : null) ?? cp.thumbs;
}
function thumbsOf2(cp, kind = "self") {
  const snap = snapshotOf(cp, kind);
  let t = decoded.get(snap);
  if (!t) {
    const raw = atob(snap.values);
    const data = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) data[i] = raw.charCodeAt(i);
    const shape = snap.shape;
    t = {
      values: { dtype: "U8", shape, data },
      scale: { dtype: "F32", shape: shape.slice(0, 2), data: new Float32Array(snap.scale.flat()) },
      pool: 1,
      size: shape[3]
    };
    decoded.set(snap, t);
  }
  return t;
}
function headMatrix(cp, layer, head, kind = "self") {
  const t = thumbsOf2(cp, kind);
  const [, H, T, S] = t.values.shape;
  const k = layer * H + head;
  const scale = t.scale.data[k] / 255;
  const data = new Float32Array(T * S);
  const src = t.values.data;
  for (let i = 0; i < T * S; i++) data[i] = src[k * T * S + i] * scale;
  return { dtype: "F32", shape: [T, S], data };
}
var ATTENTION = (
  /** @type {const} */
  {
    cross: { name: "cross-attention", axes: ["decoder, writing", "source"] },
    self: { name: "decoder self-attention", axes: ["query", "key"] },
    encoder: { name: "encoder self-attention", axes: ["source query", "source key"] }
  }
);
function attentionAxes(on, kind) {
  if (!on.source || kind === "self") {
    return { labels: on.tokens, rowLabels: on.tokens, axes: ["query", "key"], causal: true };
  }
  const axes = (
    /** @type {[string, string]} */
    [...ATTENTION[kind].axes]
  );
  if (kind === "encoder") return { labels: on.source, rowLabels: on.source, axes, causal: false };
  return { labels: on.source, rowLabels: on.writes ?? on.tokens, axes, causal: false };
}
function shownSteps(run) {
  const have = run.variants.flatMap((v) => v.checkpoints.map((c) => c.step));
  const going = run.state === "running" || run.state === "queued";
  const steps = new Set(going ? [...run.checkpoint_steps, ...have] : have);
  return [...steps].sort((a, b) => a - b);
}
function variantFigures(v) {
  const last = v.checkpoints[v.checkpoints.length - 1];
  const n = v.history.step.length;
  return `${n.toLocaleString("en")} step${n === 1 ? "" : "s"}${last ? `, held-out ${fmt(last.heldout, 3)}` : ""}`;
}
function inLine(place, wait) {
  const n = place ?? 1;
  const tail = n % 100 >= 11 && n % 100 <= 13 ? "th" : { 1: "st", 2: "nd", 3: "rd" }[n % 10] ?? "th";
  const where = n === 1 ? "next in line" : `${n}${tail} in line`;
  if (wait == null) return where;
  const s = Math.max(0, Math.round(wait));
  const about = s < 1 ? "starting any moment" : s < 90 ? `about ${s} s` : `about ${Math.round(s / 60)} min`;
  return `${where}, ${about}`;
}
var EVERY = (n) => Math.max(1, Math.ceil(n / 1500));

// static/js/modes/train/reducer.js
var EVENTS = (
  /** @type {const} */
  ["state", "queue", "steps", "checkpoint", "variant", "claims", "end"]
);
var initialState = () => ({ run: null, view: defaultTrainView(), follow: true });
function opened(run) {
  const view = {
    ...defaultTrainView(),
    attention: run.probe.source ? (
      /** @type {const} */
      "cross"
    ) : (
      /** @type {const} */
      "self"
    )
  };
  let newest = run.variants.length - 1;
  while (newest >= 0 && !run.variants[newest].checkpoints.length) newest--;
  if (newest >= 0) {
    const v = run.variants[newest];
    view.variant = newest;
    view.checkpoint = shownSteps(run).indexOf(v.checkpoints[v.checkpoints.length - 1].step);
  }
  return { run, view, follow: true };
}
var withVariant = (run, i, change) => ({ ...run, variants: run.variants.map((v, j) => j === i ? change(v) : v) });
function reduce(state, event) {
  if (event.type === "state") return opened(event.data);
  const run = state.run;
  if (!run) return state;
  switch (event.type) {
    case "queue": {
      const { state: s, place, wait_s } = event.data;
      return { ...state, run: { ...run, state: s, place, wait_s } };
    }
    case "steps": {
      const d = event.data;
      if (!run.variants[d.variant]) return state;
      return {
        ...state,
        run: withVariant(run, d.variant, (v) => ({
          ...v,
          history: {
            step: [...v.history.step, ...d.step],
            loss: [...v.history.loss, ...d.loss],
            grad_norms: [...v.history.grad_norms, ...d.grad_norms],
            seconds: [...v.history.seconds, ...d.seconds]
          }
        }))
      };
    }
    case "checkpoint": {
      const d = event.data;
      if (!run.variants[d.variant]) return state;
      const next = withVariant(run, d.variant, (v) => ({ ...v, checkpoints: [...v.checkpoints, d.checkpoint] }));
      if (!state.follow) return { ...state, run: next };
      const view = { ...state.view, checkpoint: shownSteps(next).indexOf(d.checkpoint.step) };
      if (d.variant !== view.variant && d.checkpoint.step === 0) view.variant = d.variant;
      return { ...state, run: next, view };
    }
    case "variant": {
      const { variant, ...d } = event.data;
      if (!run.variants[variant]) return state;
      return { ...state, run: withVariant(run, variant, (v) => ({ ...v, ...d })) };
    }
    case "claims":
      return { ...state, run: { ...run, claims: event.data.claims } };
    case "end": {
      const step = shownSteps(run)[state.view.checkpoint];
      const next = {
        ...run,
        ...event.data,
        variants: run.variants.map(
          (v) => v.state === "waiting" || v.state === "running" ? { ...v, state: "cancelled" } : v
        )
      };
      const steps = shownSteps(next);
      const at = steps.filter((s) => s <= step).length - 1;
      return {
        ...state,
        run: next,
        view: { ...state.view, checkpoint: state.follow || at < 0 ? steps.length - 1 : at }
      };
    }
    default:
      return state;
  }
}

// static/js/modes/train/app.js
function createApp2() {
  return {
    /** @type {import("../../core/types.js").TrainOptions | null} */
    options: null,
    /** @type {ReturnType<typeof import("./form.js").createForm> | null} */
    form: null,
    /** The run, the views' choices, following: what the run's events change (reducer.js). */
    t: initialState(),
    /** @type {TrainDecoded | null} */
    decoded: null,
    // what an encoder-decoder last wrote when asked
    /** @type {string | null} */
    refused: null,
    // why the model could not write what was asked
    /** @type {TrainRunSummary[] | null} */
    runs: null,
    // the server's runs (fetchRuns)
    /** @type {TrainLink | null} */
    link: null,
    // a link's, until the options are in to apply it
    /** @type {EventSource | null} */
    source: null,
    active: false,
    /** @type {ReturnType<typeof setInterval> | undefined} */
    player: void 0,
    /** @type {Set<string>} */
    dirty: /* @__PURE__ */ new Set(),
    frame: 0
  };
}

// static/js/modes/train/views/trainask.js
var part2 = (card, role) => (
  /** @type {HTMLElement} */
  card.querySelector(`[data-role=${role}]`)
);
function render17(card, data, sel) {
  const r = data.run;
  const seq2seq = Boolean(r.probe.source);
  const done = r.variants.map((v, i) => (
    /** @type {[number, string]} */
    [i, v.label || "model"]
  )).filter(([i]) => r.variants[i].state === "done" || r.variants[i].state === "cancelled");
  card.hidden = !seq2seq || !done.length;
  if (seq2seq && done.length) {
    const input = (
      /** @type {HTMLInputElement} */
      part2(card, "text")
    );
    if (!input.value) input.value = r.probe.prompt || "";
    fillOptions(
      /** @type {HTMLSelectElement} */
      part2(card, "variant"),
      done,
      Math.min(sel.variant, done.length - 1)
    );
    part2(card, "variant-box").hidden = r.variants.length < 2;
  }
  asked(card, data);
}
function asked(card, data) {
  const ask2 = data.run?.ask;
  const a = ask2?.alphabet ?? "";
  const range = [...a].every((c, i) => c.charCodeAt(0) === a.charCodeAt(0) + i);
  part2(card, "rule").textContent = ask2 ? `${range ? `${a[0]} to ${a[a.length - 1]}` : a}, 1 to ${ask2.max_len} of them (it trained on ${ask2.min_len} to ${ask2.max_len})` : "";
  const say = part2(card, "say");
  say.hidden = !data.refused;
  say.textContent = data.refused ? `The model was not asked: ${data.refused}` : "";
  part2(card, "text").setAttribute("aria-invalid", String(Boolean(data.refused)));
}

// static/js/modes/train/views/traindecoded.js
function render18(container, data, sel) {
  if (!container.querySelector(":scope > .t-try-out")) {
    container.replaceChildren(
      el("p", { className: "readout t-try-out", "aria-live": "polite" }),
      el("figure", { className: "figure" }, [
        el("div", { className: "heat-large t-try-heat" }),
        el("figcaption", {}, [
          el("span", {
            textContent: "The chosen head (pick it above, with the attention) on the model's last pass over what it wrote: exact weights (float32)."
          })
        ])
      ])
    );
  }
  const out = (
    /** @type {HTMLElement} */
    container.querySelector(".t-try-out")
  );
  const figure = (
    /** @type {HTMLElement} */
    container.querySelector("figure")
  );
  const d = data.decoded;
  figure.hidden = !d;
  if (!d) {
    out.replaceChildren();
    return;
  }
  const right = d.output === d.expected;
  out.replaceChildren(
    el("span", { className: "dim", textContent: `${d.source.slice(0, -1).join("")} → ` }),
    el("b", { textContent: d.output || "(nothing)" }),
    el("span", {
      className: right ? "holds" : "fails",
      textContent: right ? " ✓" : ` ✗ (the answer is ${d.expected})`
    })
  );
  const { layer, head, attention } = sel;
  const rows = attention === "encoder" ? d.encoder : attention === "cross" ? d.cross : d.self;
  const l = Math.min(layer, rows.length - 1);
  const m = rows[l][head];
  const matrix = {
    dtype: (
      /** @type {"F32"} */
      "F32"
    ),
    shape: [m.length, m[0].length],
    data: new Float32Array(m.flat())
  };
  render6(
    /** @type {HTMLElement} */
    container.querySelector(".t-try-heat"),
    {
      ...attentionAxes({ source: d.source, tokens: d.tokens, writes: d.writes }, attention),
      matrix,
      title: `${ATTENTION[attention].name}, layer ${l + 1}, head ${head + 1}`
    }
  );
}

// static/js/modes/train/views/traingrads.js
function render19(card, data, sel, callbacks) {
  const picker = (
    /** @type {HTMLSelectElement} */
    card.querySelector("[data-role=variant]")
  );
  fillOptions(
    picker,
    data.run.variants.map((v2, i) => [i, v2.label || "model"]),
    sel.variant
  );
  picker.parentElement.hidden = data.run.variants.length < 2;
  picker.onchange = () => callbacks.onSelect({ variant: Number(picker.value) });
  const v = data.run.variants[sel.variant];
  const h = v.history;
  const layers = h.grad_norms[0]?.length ?? v.arch.layers;
  const k = EVERY(h.step.length);
  const keep = (j) => j % k === 0 || j === h.step.length - 1;
  const x = h.step.filter((_, j) => keep(j));
  const split = data.run.probe.source ? v.arch.layers : 0;
  const name = (l) => !split ? `layer ${l + 1}` : l < split ? `encoder ${l + 1}` : `decoder ${l - split + 1}`;
  const traces = Array.from({ length: layers }, (_, l) => ({
    type: "scatter",
    mode: "lines",
    uid: `grad-${l}`,
    name: name(l),
    x,
    y: h.grad_norms.filter((_2, j) => keep(j)).map((g) => g[l]),
    line: { color: headColor(l), width: 1.4, dash: split && l < split ? "dot" : "solid" },
    hovertemplate: `${name(l)}<br>step %{x}: %{y:.4g}<extra></extra>`
  }));
  const plot = (
    /** @type {HTMLElement} */
    card.querySelector("[data-role=plot]")
  );
  const ys = traces.flatMap((t) => t.y).filter((y) => y > 0);
  const ticks = logTicks(Math.min(...ys), Math.max(...ys));
  const first = h.grad_norms[0];
  const last = h.grad_norms[h.grad_norms.length - 1];
  const text = describe(plot, {
    summary: !last ? "Gradient norms: no steps yet." : `Gradient norm${data.run.variants.length > 1 ? ` of ${v.label || "model"}` : ""}, step ${h.step[0]} → ${h.step[h.step.length - 1].toLocaleString("en-US")}: ` + traces.map((t, l) => `${t.name} ${fmt(first[l], 3)} → ${fmt(last[l], 3)}`).join(", ") + "."
  });
  keyCursor(plot, text.live, {
    rows: layers,
    cols: x.length,
    describedBy: text.summary.id,
    label: "Gradient norm per layer and step, line plot (log scale). Left and right arrows move along the steps, up and down between the layers.",
    text: (l, j) => `${traces[l].name}, step ${x[j]}: ${Number(traces[l].y[j]).toPrecision(4)}`,
    show: (l, j) => plotlyOf(plot).Fx.hover(plot, [{ curveNumber: l, pointNumber: j }]),
    hide: () => plotlyOf(plot).Fx.unhover(plot)
  });
  return draw(
    plot,
    traces,
    baseLayout({
      margin: { l: 56, r: 12, t: 30, b: 44 },
      legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
      xaxis: { title: { text: "step" }, range: [0, data.run.steps], zeroline: false },
      yaxis: { title: { text: "gradient norm" }, type: "log", ...ticks }
    }),
    "attnviz-gradients"
  );
}
function logTicks(lo, hi) {
  if (!(lo > 0) || !(hi >= lo)) return { dtick: 1 };
  if (Math.log10(hi / lo) >= 2) return { dtick: 1 };
  const pick = (digits) => {
    const out = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      for (const d of digits) {
        const v = Number((d * 10 ** e).toPrecision(1));
        if (v >= lo / 1.05 && v <= hi * 1.05) out.push(v);
      }
    }
    return out;
  };
  let vals = pick([1, 2, 5]);
  if (vals.length < 3) vals = pick([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  return { tickvals: vals, ticktext: vals.map((v) => String(v)) };
}

// static/js/modes/train/views/trainheads.js
var part3 = (card, role) => (
  /** @type {HTMLElement} */
  card.querySelector(`[data-role=${role}]`)
);
function render20(card, data, sel, callbacks) {
  const r = data.run;
  const steps = shownSteps(r);
  const slider = (
    /** @type {HTMLInputElement} */
    part3(card, "checkpoint")
  );
  slider.max = String(Math.max(0, steps.length - 1));
  slider.value = String(sel.checkpoint);
  slider.disabled = steps.length < 2;
  slider.oninput = () => callbacks.onCheckpoint(Number(slider.value));
  part3(card, "play").disabled = steps.length < 2;
  part3(card, "look").textContent = r.probe.look;
  const kinds = (
    /** @type {(keyof ATTENTION)[]} */
    r.probe.source ? ["cross", "self", "encoder"] : []
  );
  part3(card, "attention-box").hidden = !kinds.length;
  const picker = (
    /** @type {HTMLSelectElement} */
    part3(card, "attention")
  );
  fillOptions(
    picker,
    kinds.map((k) => [k, ATTENTION[k].name]),
    sel.attention
  );
  picker.onchange = () => callbacks.onSelect({ attention: (
    /** @type {AttentionKind} */
    picker.value
  ) });
  part3(card, "exact-where").textContent = data.live === false ? "This file holds the run's 8-bit snapshots; the live page's model gives exact numbers." : r.probe.source ? "Ask the model below for exact numbers on any string." : "Open the model in sentence mode for exact numbers.";
  const step = steps[sel.checkpoint];
  grids(part3(card, "grids"), { run: r, step }, sel, {
    onSelect: (variant, layer2, head2) => callbacks.onSelect({ variant, layer: layer2, head: head2 })
  });
  const v = r.variants[sel.variant];
  const cp = v.checkpoints.find((c) => c.step === step);
  const out = part3(card, "checkpoint-out");
  out.textContent = step === void 0 ? "no checkpoints" : `step ${step}` + (cp ? ` · held-out ${fmt(cp.heldout, 3)}` : "");
  slider.setAttribute("aria-valuetext", out.textContent || "");
  const sample = part3(card, "sample");
  sample.hidden = !cp?.sample;
  const verb = r.probe.verb || "continues";
  sample.replaceChildren(
    ...cp?.sample !== null && cp?.sample !== void 0 ? [
      el("span", { className: "dim", textContent: `At step ${step} the model ${verb} ` }),
      el("b", { textContent: r.probe.prompt || "" }),
      ...r.probe.source ? [
        el("span", { className: "dim", textContent: " as " }),
        el("b", { textContent: cp.sample || "(nothing)" })
      ] : [el("span", { textContent: cp.sample })]
    ] : []
  );
  const large = part3(card, "large");
  if (!cp) {
    large.replaceChildren(
      el("p", {
        className: "hint",
        textContent: r.state === "queued" ? "Waiting for a training slot: the heads are shown from the run's first checkpoint, once it starts." : step === void 0 ? "No checkpoint was taken: the run ended before its first." : `${v.label || "The model"} has no checkpoint at step ${step}: choose another step, or a head of another model.`
      })
    );
    return;
  }
  const { layer, head, attention } = sel;
  const what = r.probe.source ? `${ATTENTION[attention].name}, ` : "";
  render6(large, {
    ...attentionAxes(r.probe, attention),
    matrix: headMatrix(cp, layer, head, attention),
    approx: true,
    title: `${v.label ? `${v.label}, ` : ""}${what}layer ${layer + 1}, head ${head + 1} at step ${step}`
  });
}
function missing(v, run) {
  if ((run.state === "running" || run.state === "queued") && (v.state === "running" || v.state === "waiting"))
    return "not there yet";
  const last = v.checkpoints[v.checkpoints.length - 1];
  return last ? `stopped at step ${last.step}` : "not trained: the run ended before it";
}
function grids(container, data, sel, callbacks) {
  const { run, step } = data;
  container.style.setProperty("--t-heads", String(Math.max(...run.variants.map((v) => v.arch.heads))));
  if (container.childElementCount !== run.variants.length) {
    container.replaceChildren(
      ...run.variants.map(
        (v, i) => el("div", { className: "t-variant", dataset: { variant: String(i) } }, [
          el("p", { className: "t-variant-label" }),
          el("div", { className: "mv-grid", role: "group", "aria-label": `Heads of ${v.label || "the model"}` })
        ])
      )
    );
  }
  run.variants.forEach((v, i) => {
    const box = (
      /** @type {HTMLElement} */
      container.children[i]
    );
    const grid = (
      /** @type {HTMLElement} */
      box.querySelector(".mv-grid")
    );
    const cp = v.checkpoints.find((c) => c.step === step);
    const label = (
      /** @type {HTMLElement} */
      box.querySelector(".t-variant-label")
    );
    label.textContent = `${v.label || "model"} · ${cp ? `step ${step} · held-out ${fmt(cp.heldout, 3)}` : missing(v, run)}`;
    box.classList.toggle("chosen", i === sel.variant);
    grid.hidden = !cp;
    if (!cp) return;
    const on = i === sel.variant;
    render5(
      grid,
      { layers: v.arch.layers, heads: v.arch.heads, thumbs: thumbsOf2(cp, sel.attention), entropy: null },
      { layer: on ? sel.layer : -1, head: on ? sel.head : -1 },
      { onSelect: (layer, head) => callbacks.onSelect(i, layer, head) }
    );
  });
}

// static/js/modes/train/views/trainloss.js
function render21(container, data, sel) {
  const { run } = data;
  const traces = [];
  run.variants.forEach((v, i) => {
    const name = plotText(v.label || "model");
    const color = headColor(i);
    const k = EVERY(v.history.step.length);
    const x = v.history.step.filter((_, j) => j % k === 0 || j === v.history.step.length - 1);
    const y = v.history.loss.filter((_, j) => j % k === 0 || j === v.history.loss.length - 1);
    traces.push({
      type: "scatter",
      mode: "lines",
      uid: `train-${i}`,
      name,
      x,
      y,
      legendgroup: name,
      line: { color, width: i === sel.variant ? 2.2 : 1.2 },
      opacity: 0.85,
      hovertemplate: `${name}<br>step %{x}: batch loss %{y:.4f}<extra></extra>`
    });
    traces.push({
      type: "scatter",
      mode: "markers",
      uid: `heldout-${i}`,
      name: `${name} (held-out)`,
      legendgroup: name,
      showlegend: false,
      x: v.checkpoints.map((c) => c.step),
      y: v.checkpoints.map((c) => c.heldout),
      marker: { color, size: 7, line: { color: "#fff", width: 1 } },
      hovertemplate: `${name}<br>step %{x}: held-out loss %{y:.4f}<extra></extra>`
    });
  });
  readable4(container, run);
  const shapes = [];
  if (run.baseline !== null && run.baseline !== void 0) {
    shapes.push({
      type: "line",
      xref: "paper",
      x0: 0,
      x1: 1,
      y0: run.baseline,
      y1: run.baseline,
      line: { color: "#8a93a3", width: 1.5, dash: "dash" }
    });
  }
  return draw(
    container,
    traces,
    baseLayout({
      margin: { l: 56, r: 12, t: run.variants.length > 1 ? 30 : 12, b: 44 },
      showlegend: run.variants.length > 1,
      legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
      xaxis: { title: { text: "step" }, range: [0, run.steps], zeroline: false },
      yaxis: { title: { text: "loss (nats)" }, rangemode: "tozero" },
      shapes,
      annotations: shapes.length ? [
        {
          xref: "paper",
          x: 1,
          y: run.baseline,
          xanchor: "right",
          yanchor: "bottom",
          text: `bigram ${fmt(run.baseline, 3)}`,
          showarrow: false,
          font: { size: 11, color: "#5b6475" }
        }
      ] : []
    }),
    "attnviz-loss"
  );
}
function readable4(plot, run) {
  const many = run.variants.length > 1;
  const name = (v) => v.label || "model";
  const summary = run.variants.map((v) => {
    const last = v.checkpoints[v.checkpoints.length - 1];
    return `${many ? `${name(v)}: ` : ""}${curveText("loss", v.history.step, v.history.loss)}` + (last ? `, held-out ${fmt(last.heldout, 3)} at step ${last.step.toLocaleString("en-US")}` : "");
  }).join("; ") + (run.baseline !== null && run.baseline !== void 0 ? `; the bigram baseline ${fmt(run.baseline, 3)}` : "");
  const steps = [...new Set(run.variants.flatMap((v) => v.checkpoints.map((c) => c.step)))].sort((a, b) => a - b);
  const text = describe(plot, {
    summary: `${summary}.`,
    table: steps.length ? {
      caption: "Held-out loss at each checkpoint (nats)",
      head: ["step", ...run.variants.map(name)],
      rows: steps.map((s) => [
        s.toLocaleString("en-US"),
        ...run.variants.map((v) => {
          const c = v.checkpoints.find((cp) => cp.step === s);
          return c ? fmt(c.heldout, 4) : "–";
        })
      ])
    } : null
  });
  const drawn = run.variants.map((v) => {
    const k = EVERY(v.history.step.length);
    const keep = (j) => j % k === 0 || j === v.history.step.length - 1;
    return { x: v.history.step.filter((_, j) => keep(j)), y: v.history.loss.filter((_, j) => keep(j)) };
  });
  const cols = Math.max(0, ...drawn.map((d) => d.x.length));
  keyCursor(plot, text.live, {
    rows: run.variants.length,
    cols,
    describedBy: text.summary.id,
    label: `Loss per step, line plot${many ? ` of ${run.variants.length} models` : ""}. Left and right arrows move along the steps${many ? ", up and down between the models" : ""}.`,
    text: (i, j) => {
      const d = drawn[i];
      if (!d.x.length) return `${name(run.variants[i])}: no steps yet`;
      const p = Math.min(j, d.x.length - 1);
      return `${name(run.variants[i])}, step ${d.x[p]}: batch loss ${d.y[p].toFixed(4)}`;
    },
    show: (i, j) => {
      const n = drawn[i].x.length;
      if (n) plotlyOf(plot).Fx.hover(plot, [{ curveNumber: 2 * i, pointNumber: Math.min(j, n - 1) }]);
    },
    hide: () => plotlyOf(plot).Fx.unhover(plot)
  });
}

// static/js/modes/train/views/trainmodels.js
function render22(card, data, sel, callbacks) {
  const r = data.run;
  const claims = (
    /** @type {HTMLElement} */
    card.querySelector("[data-role=claims]")
  );
  claims.hidden = !r.claims;
  claims.replaceChildren(
    ...r.claims ? [
      el("p", {
        className: "hint",
        textContent: "The preset's claims, measured on these models (the tests check them on seeds 0 to 4):"
      }),
      el(
        "ul",
        {},
        r.claims.map(
          (c) => el("li", {
            className: c.holds ? "holds" : "fails",
            textContent: `${c.holds ? "✓" : "✗"} ${c.claim}: ${fmt(c.value, 3)}`
          })
        )
      )
    ] : []
  );
  const seq2seq = Boolean(r.probe.source);
  const folder = data.folder;
  card.querySelector("[data-role=models]").replaceChildren(
    ...r.variants.map((v, i) => {
      const scores = v.alignment ?? v.induction ?? null;
      const kind = v.alignment ? "aligned cross-attention head" : "induction head";
      const best = scores ? Math.max(...scores.flat()) : null;
      const where = best === null || !scores ? "" : (() => {
        const k = scores.flat().indexOf(best);
        return ` · best ${kind} L${Math.floor(k / v.arch.heads) + 1} H${k % v.arch.heads + 1}: ${fmt(best, 2)}`;
      })();
      const name = el("span", {
        className: "t-model-name",
        textContent: v.model || (seq2seq ? `${r.id}${v.label ? ` ${v.label}` : ""}` : v.label || "model")
      });
      const figures = el("span", {
        className: "dim",
        textContent: ` ${v.label ? `${v.label} · ` : ""}` + (v.model_step != null ? `interrupted · its model as of step ${v.model_step} · ` : `${v.state} · `) + `${variantFigures(v)} · ${v.params.toLocaleString("en")} parameters${where}`
      });
      if (!folder) {
        return el("div", { className: "t-model" }, [
          name,
          figures,
          el("span", {
            className: "hint t-model-why",
            textContent: `${seq2seq ? "Asking it" : "Opening it in sentence mode or downloading its folder"} takes the live page: this file holds the run, not the model.`
          })
        ]);
      }
      const open = el("button", { type: "button", textContent: "Open in sentence mode", disabled: !v.model });
      open.addEventListener("click", () => v.model && callbacks.onOpen(v.model, r.probe.text, r.probe.query));
      const save = el("a", {
        className: "button",
        textContent: "Download folder",
        title: "config.json, model.safetensors and tokenizer.json, zipped: attnviz serve --model FOLDER serves it",
        href: folder(i),
        download: ""
      });
      save.hidden = !v.model;
      const why = el("span", {
        className: "hint t-model-why",
        textContent: "Not opened in sentence mode nor saved as a folder: both take a model that reads one text, and an encoder-decoder reads a source and writes its answer. Ask it above."
      });
      return el("div", { className: "t-model" }, [name, figures, ...seq2seq ? [why] : [open, save]]);
    })
  );
}

// static/js/modes/train/views/trainprogress.js
function render23(card, data) {
  const r = data.run;
  const part4 = (role) => (
    /** @type {HTMLElement} */
    card.querySelector(`[data-role=${role}]`)
  );
  const total = r.steps * r.variants.length;
  const done = r.variants.reduce((n2, v2) => n2 + v2.history.step.length, 0);
  part4("progress").value = total ? done / total : 0;
  const v = r.variants.find((x) => x.state === "running") || r.variants[r.variants.length - 1];
  const h = v.history;
  const n = h.step.length;
  const rate = n > 1 ? (n - 1) / Math.max(1e-6, h.seconds[n - 1] - h.seconds[0]) : 0;
  const last = v.checkpoints[v.checkpoints.length - 1];
  const who = r.variants.length > 1 ? `${v.label}: ` : "";
  const each = r.variants.length > 1 ? r.variants.map((x) => `${x.label}: ${variantFigures(x)}`).join(" · ") : variantFigures(r.variants[0]);
  part4("rate").textContent = r.state === "queued" ? `Waiting for a training slot: ${inLine(r.place, r.wait_s)}. It starts by itself when the runs ahead end.` : r.state === "running" ? `${who}step ${n} / ${r.steps} · ${fmt(rate, 0)} steps/s · batch loss ${fmt(h.loss[n - 1], 3)}` + (last ? ` · held-out ${fmt(last.heldout, 3)}` : "") : `${ended(r.state, r.reason)} · ${each}`;
  part4("id").textContent = r.id;
  const cancel2 = (
    /** @type {HTMLButtonElement} */
    part4("cancel")
  );
  cancel2.disabled = r.state !== "running" && r.state !== "queued";
  const owner = (
    /** @type {HTMLElement | null} */
    card.querySelector("[data-role=owner]")
  );
  if (data.live) {
    cancel2.hidden = !r.can_cancel;
    if (owner) {
      owner.hidden = !!r.can_cancel;
      owner.textContent = r.can_cancel ? "" : r.shared ? "Shared by the operator: you can read it, not cancel it" : "Opened by its link: you can read it, not cancel it";
    }
  }
}
function ended(state, reason) {
  if (!reason || reason === state) return state;
  return reason.startsWith(state) ? reason : `${state}: ${reason}`;
}

// static/js/modes/train/draw.js
var PLAY_MS = 450;
function createDrawing2({ app: app2, hooks, status, live }) {
  const run = () => (
    /** @type {TrainRun} */
    app2.t.run
  );
  function changed(what) {
    const views = what.some((w) => ["run", "end", "variant"].includes(w)) ? Object.keys(VIEWS) : what.includes("checkpoint") ? ["loss", "heads", "progress"] : what.includes("steps") ? ["loss", "grads", "progress"] : what.includes("decoded") ? ["decoded"] : viewsFed(TRAIN_FEEDS, what);
    for (const v of views) app2.dirty.add(v);
    if (!app2.frame && app2.active) app2.frame = requestAnimationFrame(flush);
  }
  async function flush() {
    app2.frame = 0;
    const which = [...app2.dirty];
    app2.dirty.clear();
    if (!app2.t.run || !which.length) return;
    await status.drawing(drawViews(VIEWS, which, hooks.setError), hooks.viewsDrawn);
  }
  const VIEWS = {
    progress() {
      const r = run();
      render23(byId("t-run-card"), { run: r, live });
      status.set(
        r.state === "running" ? `training ${r.id}` : r.state === "queued" ? `run ${r.id}: waiting for a training slot` : `run ${r.id}: ${r.state}`
      );
      hooks.changed();
      byId("train-mode").dataset.run = r.state;
    },
    loss: () => render21(byId("t-loss"), { run: run() }, app2.t.view),
    grads: () => render19(byId("t-grads-card"), { run: run() }, app2.t.view, { onSelect: choose }),
    heads: () => render20(byId("t-heads-card"), { run: run(), live }, app2.t.view, {
      onSelect: choose,
      onCheckpoint(index) {
        app2.t = { ...app2.t, follow: index >= shownSteps(run()).length - 1 };
        choose({ checkpoint: index });
      }
    }),
    models() {
      const r = run();
      render22(
        byId("t-models-card"),
        { run: r, folder: live ? (i) => modelFolderUrl(r.id, i) : null },
        {},
        { onOpen: hooks.openModel }
      );
      if (live) render17(byId("t-try-card"), { run: r, refused: app2.refused }, app2.t.view);
    },
    decoded: () => render18(byId("t-try-view"), { decoded: app2.decoded }, app2.t.view)
  };
  function choose(change) {
    app2.t = { ...app2.t, view: { ...app2.t.view, ...change } };
    changed(Object.keys(change));
  }
  function play() {
    const button = byId("t-play");
    if (app2.player) {
      clearInterval(app2.player);
      app2.player = void 0;
      button.setAttribute("aria-pressed", "false");
      button.textContent = "▶ play";
      return;
    }
    if (!app2.t.run) return;
    app2.t = { ...app2.t, follow: false };
    if (app2.t.view.checkpoint >= shownSteps(run()).length - 1)
      app2.t = { ...app2.t, view: { ...app2.t.view, checkpoint: -1 } };
    button.setAttribute("aria-pressed", "true");
    button.textContent = "❚❚ pause";
    app2.player = setInterval(() => {
      const last = shownSteps(run()).length - 1;
      if (app2.t.view.checkpoint >= last) return play();
      choose({ checkpoint: app2.t.view.checkpoint + 1 });
    }, PLAY_MS);
  }
  return { changed, choose, play };
}

// static/js/modes/train/form.js
var PICKS = ["layers", "heads", "d_model", "positional", "norm"];
var CHECKS = ["scale", "residual", "ffn"];
var NUMBERS = ["steps", "lr", "batch", "seed"];
function settingsOf(run) {
  if (run.preset) return { task: run.task, preset: run.preset };
  const arch = run.variants[0].arch;
  const out = { task: run.task };
  if (run.compare) out.compare = run.compare;
  for (const k of PICKS) out[k] = String(arch[k]);
  for (const k of CHECKS) out[k] = arch[k] ? "1" : "0";
  for (const k of NUMBERS) out[k] = String(
    /** @type {Record<string, number>} */
    run.opt[k]
  );
  return out;
}
var field = (name) => (
  /** @type {HTMLInputElement} */
  /** @type {HTMLFormElement} */
  byId("t-form").elements.namedItem(name)
);
var select = (id) => (
  /** @type {HTMLSelectElement} */
  byId(id)
);
function fillForm(options, arch, opt) {
  const lim = options.limits;
  const range = (a, b) => Array.from({ length: b - a + 1 }, (_, i) => a + i);
  fillOptions(
    select("t-layers"),
    range(1, lim.max_layers).map((n) => [n, String(n)]),
    arch.layers
  );
  fillOptions(
    select("t-heads"),
    range(1, lim.max_heads).map((n) => [n, String(n)]),
    arch.heads
  );
  const widths = [8, 16, 32, 48, 64, 96, 128, 192, 256].filter((d) => d <= lim.max_d_model);
  fillOptions(
    select("t-d-model"),
    widths.map((d) => [d, String(d)]),
    arch.d_model
  );
  const names2 = (
    /** @type {Record<string, string>} */
    {
      none: "none",
      sinusoidal: "sinusoidal",
      learned: "learned",
      rope: "RoPE",
      pre: "pre-norm",
      post: "post-norm"
    }
  );
  fillOptions(
    select("t-positional"),
    options.switches.positional.map((v) => [v, names2[v]]),
    arch.positional
  );
  fillOptions(
    select("t-norm"),
    options.switches.norm.map((v) => [v, names2[v]]),
    arch.norm
  );
  for (const k of ["scale", "residual", "ffn"]) field(k).checked = Boolean(arch[k]);
  for (const k of ["steps", "lr", "batch", "seed"]) field(k).value = String(opt[k]);
  field("steps").max = String(lim.max_steps);
  field("batch").max = String(lim.max_batch);
}
function readForm(options) {
  const num = (k, int, lo, hi) => {
    const v = Number(field(k).value);
    if (!Number.isFinite(v) || int && !Number.isInteger(v) || v < lo || v > hi) {
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
    ffn: field("ffn").checked
  };
  const opt = {
    steps: num("steps", true, 1, lim.max_steps),
    lr: num("lr", false, 1e-6, 1),
    batch: num("batch", true, 1, lim.max_batch),
    seed: num("seed", true, 0, 2 ** 31 - 1)
  };
  return { arch, opt };
}
function formSettings() {
  const task = select("t-task").value;
  const preset = select("t-preset").value;
  if (preset) return { task, preset };
  const out = { task };
  if (select("t-compare").value) out.compare = select("t-compare").value;
  for (const k of PICKS) out[k] = field(k).value;
  for (const k of CHECKS) out[k] = field(k).checked ? "1" : "0";
  for (const k of NUMBERS) out[k] = field(k).value;
  return out;
}
function createForm(options) {
  const form = (
    /** @type {HTMLFormElement} */
    byId("t-form")
  );
  const taskInfo = () => (
    /** @type {import("../../core/types.js").TrainTaskInfo} */
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
      ...presets.map((p) => (
        /** @type {[string, string]} */
        [p.id, p.title]
      ))
    ]);
    const preset = presetInfo();
    const about = byId("t-preset-about");
    about.hidden = !preset;
    about.textContent = preset ? `${preset.question} ${preset.shows}` : "";
    byId("t-compare-row").hidden = Boolean(preset);
    for (
      const input of
      /** @type {NodeListOf<HTMLInputElement>} */
      form.querySelectorAll("input, select")
    ) {
      input.disabled = Boolean(preset);
    }
    if (preset) fillForm(options, preset.variants[0].arch, preset.opt);
  }
  function applySettings(s) {
    const problems = [];
    const pick = (box, k, v) => {
      const values = [...box.options].map((o) => o.value);
      if (values.includes(v)) box.value = v;
      else problems.push(`${k}: ${JSON.stringify(v)} is not one of ${values.filter(Boolean).join(", ")}`);
    };
    if (s.task !== void 0) pick(select("t-task"), "task", s.task);
    select("t-preset").value = "";
    fillForm(options, taskInfo().arch, taskInfo().opt);
    renderInputs();
    if (s.preset) {
      pick(select("t-preset"), "preset", s.preset);
      renderInputs();
      if (presetInfo()) return problems;
    }
    if (s.compare !== void 0) pick(select("t-compare"), "compare", s.compare);
    for (const k of PICKS)
      if (s[k] !== void 0) pick(
        /** @type {HTMLSelectElement} */
        /** @type {unknown} */
        field(k),
        k,
        s[k]
      );
    for (const k of CHECKS) {
      if (s[k] === "1" || s[k] === "0") field(k).checked = s[k] === "1";
      else if (s[k] !== void 0) problems.push(`${k}: ${JSON.stringify(s[k])} is not 1 or 0`);
    }
    for (const k of NUMBERS) if (s[k] !== void 0) field(k).value = s[k];
    try {
      readForm(options);
    } catch (err) {
      problems.push(
        /** @type {Error} */
        err.message
      );
    }
    return problems;
  }
  function counted() {
    const n = (
      /** @type {HTMLTextAreaElement} */
      byId("t-text").value.length
    );
    byId("t-text-count").textContent = n ? `${n.toLocaleString("en")} / ${options.limits.max_text_chars.toLocaleString("en")} characters` : "";
  }
  function body() {
    const task = taskInfo().name;
    const preset = presetInfo();
    if (preset) return { task, preset: preset.id };
    const { arch, opt } = readForm(options);
    const compare = select("t-compare").value || null;
    const text = (
      /** @type {HTMLTextAreaElement} */
      byId("t-text").value
    );
    return { task, arch, opt, compare, ...task === "charlm" && text.trim() ? { text } : {} };
  }
  fillOptions(
    select("t-task"),
    options.tasks.map((t) => (
      /** @type {[string, string]} */
      [t.name, t.title]
    ))
  );
  fillOptions(select("t-compare"), [
    ["", "nothing: one model"],
    ...Object.keys(options.switches).map((k) => (
      /** @type {[string, string]} */
      [k, k]
    ))
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
  return { body, settings: formSettings, apply: applySettings };
}

// static/js/modes/train/link.js
var TRAIN_HASH = "#train";
function encodeTrainLink(link) {
  const query2 = new URLSearchParams(link.settings).toString();
  return `${TRAIN_HASH}${link.run ? `/${encodeURIComponent(link.run)}` : ""}${query2 ? `?${query2}` : ""}`;
}
function decodeTrainLink(hash) {
  const m = /^#train(?:\/([^?]*))?(?:\?(.*))?$/.exec(hash);
  if (!m) return null;
  let run;
  try {
    run = m[1] ? decodeURIComponent(m[1]) : null;
  } catch {
    run = m[1];
  }
  return { run: run || null, settings: Object.fromEntries(new URLSearchParams(m[2] || "")) };
}

// static/js/modes/train/views/trainrecurrent.js
var NAMES = { transformer: "transformer", lstm: "LSTM", gru: "GRU" };
var nameOf = (m) => NAMES[m.name] ?? m.name;
var pct = (x) => `${Math.round(100 * x)}%`;
var ms = (s) => `${fmt(1e3 * s, s < 0.01 ? 1 : 0)} ms`;
function render24(card, data, sel, callbacks) {
  const part4 = (role) => (
    /** @type {HTMLElement} */
    card.querySelector(`[data-role=${role}]`)
  );
  const { options, run } = data;
  const task = (
    /** @type {HTMLSelectElement} */
    part4("task")
  );
  fillOptions(
    task,
    options.tasks.map((t) => [t.name, t.title]),
    sel.task
  );
  task.onchange = () => callbacks.onSelect({ task: task.value });
  const seed = (
    /** @type {HTMLInputElement} */
    part4("seed")
  );
  seed.max = String(options.max_seed);
  if (document.activeElement !== seed) seed.value = String(sel.seed);
  seed.onchange = () => callbacks.onSelect({ seed: Number(seed.value) });
  const running = run?.state === "running";
  const start2 = (
    /** @type {HTMLButtonElement} */
    part4("start")
  );
  start2.disabled = data.starting || running || !options.slots;
  start2.onclick = () => callbacks.onStart();
  const info = options.tasks.find((t) => t.name === sel.task);
  part4("about").textContent = info ? `${info.about} Each model trains ${info.steps} steps on the same batches.` : "";
  part4("id").textContent = run ? run.id : "";
  card.dataset.state = run ? run.state : "";
  const progress = (
    /** @type {HTMLProgressElement} */
    part4("progress")
  );
  progress.value = run ? run.progress : 0;
  part4("doing").textContent = !run ? options.slots ? "Not run yet: press Run comparison." : "This server does not train." : running ? `${run.task}, seed ${run.seed}: ${run.doing} (${pct(run.progress)})` : `${run.task}, seed ${run.seed}: ${run.state}${run.reason ? `: ${run.reason}` : ""} · ` + run.models.map(
    (m) => `${nameOf(m)} ${m.params.toLocaleString("en-US")} parameters` + (m.train_seconds !== null ? `, trained in ${fmt(m.train_seconds, 1)} s` : "")
  ).join(" · ");
  const claims = part4("claims");
  claims.hidden = !run?.claims;
  claims.replaceChildren(
    ...run?.claims ? [
      el("p", {
        className: "hint",
        textContent: "What it showed, as claims measured on this run (the tests check them on several seeds):"
      }),
      el(
        "ul",
        {},
        run.claims.map(
          (c) => el("li", {
            className: c.holds ? "holds" : "fails",
            textContent: `${c.holds ? "✓" : "✗"} ${c.claim}: ${fmt(c.value, 3)}`
          })
        )
      )
    ] : []
  );
  const shows = part4("shows");
  shows.hidden = !run?.shows;
  shows.textContent = run?.shows ?? "";
  const plots = part4("plots");
  const measured = Boolean(run && run.models.some((m) => m.accuracy.length));
  plots.hidden = !measured;
  if (!run || !measured) return Promise.resolve();
  return Promise.all([accuracyPlot(part4("accuracy"), run), timePlot(part4("time"), run)]);
}
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
    hovertemplate: `${plotText(nameOf(m))}<br>%{x} ${plotText(run.distance)}: %{y:.0%} right<extra></extra>`
  }));
  const first = run.distances[0];
  const last = run.distances[run.distances.length - 1];
  readable5(plot, models, {
    what: "Accuracy against the distance to remember",
    summary: `Share predicted right at ${first} and at ${last} ${run.distance}: ` + models.map((m) => `${nameOf(m)} ${pct(m.accuracy[0])} and ${pct(m.accuracy[m.accuracy.length - 1])}`).join("; ") + ".",
    caption: `Share predicted right, by ${run.distance}`,
    corner: run.distance,
    xs: run.distances,
    ys: (m) => m.accuracy,
    cell: pct,
    point: (m, x, y) => `${nameOf(m)}, ${x} ${run.distance}: ${pct(y)} right`
  });
  return draw(
    plot,
    traces,
    baseLayout({
      margin: { l: 56, r: 12, t: 30, b: 44 },
      legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
      showlegend: true,
      xaxis: { title: { text: run.distance }, tickvals: run.distances, zeroline: false },
      yaxis: { title: { text: "share right" }, range: [0, 1.05], tickformat: ".0%" }
    }),
    "attnviz-recurrent-accuracy"
  );
}
function timePlot(plot, run) {
  const models = run.models.filter((m) => m.step_seconds.length);
  const traces = models.map((m) => ({
    type: "scatter",
    mode: "lines+markers",
    uid: `time-${m.name}`,
    name: plotText(nameOf(m)),
    x: run.lengths.slice(0, m.step_seconds.length),
    y: m.step_seconds.map((s) => 1e3 * s),
    line: { color: headColor(run.models.indexOf(m)), width: 2 },
    marker: { size: 7 },
    hovertemplate: `${plotText(nameOf(m))}<br>%{x} tokens: %{y:.1f} ms a step<extra></extra>`
  }));
  const first = run.lengths[0];
  const whole = models.filter((m) => m.step_seconds.length === run.lengths.length);
  readable5(plot, models, {
    what: "Time per training step against the sequence length",
    summary: !models.length ? "Not timed yet: the steps are timed once every model has trained." : whole.length === run.models.length ? `A training step at ${first} and at ${run.lengths[run.lengths.length - 1]} tokens: ` + whole.map(
      (m) => `${nameOf(m)} ${ms(m.step_seconds[0])} and ${ms(m.step_seconds[m.step_seconds.length - 1])}`
    ).join("; ") + " (one CPU thread)." : "A training step so far (one CPU thread): " + models.map((m) => {
      const n = m.step_seconds.length;
      return `${nameOf(m)} ${ms(m.step_seconds[0])} at ${first}` + (n > 1 ? ` to ${ms(m.step_seconds[n - 1])} at ${run.lengths[n - 1]} tokens` : " tokens");
    }).join("; ") + ".",
    caption: "Milliseconds per training step, by sequence length (tokens)",
    corner: "tokens",
    xs: run.lengths,
    ys: (m) => m.step_seconds,
    cell: ms,
    point: (m, x, y) => `${nameOf(m)}, ${x} tokens: ${ms(y)} a step`
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
        range: [Math.log10(first / 1.25), Math.log10(run.lengths[run.lengths.length - 1] * 1.25)]
      },
      yaxis: {
        title: { text: "ms per training step" },
        type: "log",
        ...models.length ? logTicks2(models.flatMap((m) => m.step_seconds)) : { range: [0, 3] }
      }
    }),
    "attnviz-recurrent-time"
  );
}
function logTicks2(seconds) {
  if (!seconds.length) return {};
  const lo = 1e3 * Math.min(...seconds) / 1.5;
  const hi = 1e3 * Math.max(...seconds) * 1.5;
  const ticks = [];
  for (let p = Math.floor(Math.log10(lo)); p <= Math.ceil(Math.log10(hi)); p++) {
    for (const m of [1, 2, 5]) {
      const t = m * 10 ** p;
      if (t >= lo && t <= hi) ticks.push(t);
    }
  }
  return {
    tickvals: ticks,
    ticktext: ticks.map((t) => t < 1 ? String(Number(t.toPrecision(1))) : t.toLocaleString("en-US"))
  };
}
function readable5(plot, models, spec) {
  const text = describe(plot, {
    summary: spec.summary,
    table: models.length ? {
      caption: spec.caption,
      head: [spec.corner, ...models.map(nameOf)],
      rows: spec.xs.map((x, j) => [
        String(x),
        ...models.map((m) => {
          const y = spec.ys(m)[j];
          return y === void 0 ? "–" : spec.cell(y);
        })
      ])
    } : null
  });
  keyCursor(plot, text.live, {
    rows: models.length,
    cols: spec.xs.length,
    describedBy: text.summary.id,
    label: `${spec.what}, line plot of ${models.length} models. Left and right arrows move along a line, up and down between the models.`,
    text: (i, j) => {
      const ys = spec.ys(models[i]);
      const k = Math.min(j, ys.length - 1);
      return k < 0 ? `${nameOf(models[i])}: not measured yet` : spec.point(models[i], spec.xs[k], ys[k]);
    },
    show: (i, j) => {
      const n = spec.ys(models[i]).length;
      if (n) plotlyOf(plot).Fx.hover(plot, [{ curveNumber: i, pointNumber: Math.min(j, n - 1) }]);
    },
    hide: () => plotlyOf(plot).Fx.unhover(plot)
  });
}

// static/js/modes/train/recurrent.js
var POLL_MS2 = 500;
function createRecurrent(card, hooks) {
  const app2 = {
    /** @type {RecurrentOptions | null} */
    options: null,
    /** @type {RecurrentRun | null} */
    run: null,
    sel: { task: "", seed: 0 },
    starting: false,
    active: false,
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    timer: void 0
  };
  function draw8() {
    if (!app2.active || !app2.options) return;
    render24(card, { options: app2.options, run: app2.run, starting: app2.starting }, app2.sel, {
      onSelect(change) {
        app2.sel = { ...app2.sel, ...change };
        draw8();
      },
      onStart: start2
    }).catch((err) => hooks.setError(`The comparison could not be drawn (${err.message}).`));
  }
  async function start2() {
    const { task, seed } = app2.sel;
    if (!Number.isInteger(seed) || seed < 0) {
      hooks.setError("seed: a whole number, 0 or more");
      return;
    }
    hooks.setError(null);
    app2.starting = true;
    draw8();
    try {
      app2.run = await startRecurrent({ task, seed });
      poll(app2.run.id);
    } catch (err) {
      hooks.setError(`The comparison could not start: ${/** @type {Error} */
      err.message}`);
    } finally {
      app2.starting = false;
      draw8();
    }
  }
  function poll(id) {
    clearTimeout(app2.timer);
    app2.timer = setTimeout(async () => {
      if (app2.run?.id !== id) return;
      try {
        const r = await fetchRecurrent(id);
        if (app2.run?.id !== id) return;
        app2.run = r;
        draw8();
        if (r.state === "running") poll(id);
      } catch (err) {
        hooks.setError(`Lost the comparison ${id}: ${/** @type {Error} */
        err.message}`);
      }
    }, POLL_MS2);
  }
  return {
    /** Show the card; its options the first time. */
    async activate() {
      app2.active = true;
      if (!app2.options) {
        try {
          app2.options = await fetchRecurrentOptions();
        } catch (err) {
          hooks.setError(`Could not load the comparison's options: ${/** @type {Error} */
          err.message}`);
          return;
        }
        const options = (
          /** @type {RecurrentOptions} */
          app2.options
        );
        app2.sel = { task: options.default, seed: 0 };
      }
      card.hidden = false;
      draw8();
    },
    deactivate() {
      app2.active = false;
    },
    /** The id of the comparison shown, or null. */
    id: () => app2.run?.id ?? null
  };
}

// static/js/modes/train/views/trainruns.js
function render25(container, data, sel, callbacks) {
  const runs3 = data.runs;
  if (!runs3) {
    container.replaceChildren();
    return;
  }
  const item = (r) => {
    const what = r.preset ? `preset ${r.preset}` : r.compare ? `${r.task}, compare ${r.compare}` : r.task;
    const figures = r.variants.map(
      (v) => `${v.label ? `${v.label}: ` : ""}${v.steps.toLocaleString("en")} / ${r.steps.toLocaleString("en")} steps${v.heldout === null ? "" : `, held-out ${fmt(v.heldout, 3)}`}`
    );
    const whose = r.yours ? "yours" : r.shared ? "shared" : r.can_cancel ? "" : "opened by link";
    const open = r.id === sel.open;
    const button = open ? el("span", { className: "dim", textContent: "shown above" }) : el("button", { type: "button", textContent: "Open", "aria-label": `Open: run ${r.id}` });
    if (!open) button.addEventListener("click", () => callbacks.onOpen(r.id));
    return el("li", { className: `t-run-item${open ? " open" : ""}`, dataset: { run: r.id, state: r.state } }, [
      el("span", { className: "t-model-name", textContent: r.id }),
      el("span", {
        className: "dim",
        textContent: `${whose ? `${whose} · ` : ""}${what} · ${r.state === "queued" ? `queued, ${inLine(r.place, null)}` : r.state} · ${figures.join(" · ")}`
      }),
      button
    ]);
  };
  container.replaceChildren(
    el("h3", { textContent: "Runs on this server" }),
    runs3.length ? el("ul", {}, runs3.map(item)) : el("p", {
      className: "hint",
      textContent: "None yet. A run you train, or open by its link, is listed here while the server keeps it; no one else's."
    })
  );
}

// static/js/modes/train/runs.js
var CHANGES = {
  state: "run",
  queue: "run",
  steps: "steps",
  checkpoint: "checkpoint",
  variant: "variant",
  claims: "variant",
  end: "end"
};
async function start(ctx) {
  const { app: app2, hooks, status } = ctx;
  let body;
  try {
    body = /** @type {NonNullable<typeof app.form>} */
    app2.form.body();
  } catch (err) {
    hooks.setError(
      /** @type {Error} */
      err.message
    );
    return;
  }
  hooks.setError(null);
  stopFollowing(ctx);
  status.waiting("start", true);
  try {
    const accepted = await startRun(body);
    follow(ctx, accepted.id);
    hooks.linked();
    refreshRuns(ctx);
  } catch (err) {
    hooks.setError(`Training could not start: ${/** @type {Error} */
    err.message}`);
  } finally {
    status.waiting("start", false);
  }
}
function show(ctx, r) {
  const { app: app2 } = ctx;
  app2.t = opened(r);
  app2.decoded = null;
  app2.refused = null;
  ctx.changed(["run"]);
  showRuns(ctx);
}
function follow(ctx, id) {
  const { app: app2, hooks } = ctx;
  app2.t = { ...app2.t, view: defaultTrainView(), follow: true };
  const source = runEvents(id);
  app2.source = source;
  for (const type of EVENTS) {
    source.addEventListener(type, (e) => {
      if (app2.source !== source) return;
      const data = JSON.parse(
        /** @type {MessageEvent} */
        e.data
      );
      if (type === "state") return show(ctx, data);
      app2.t = reduce(
        app2.t,
        /** @type {TrainEvent} */
        { type, data }
      );
      if (type === "end") {
        source.close();
        app2.source = null;
      }
      ctx.changed([CHANGES[type]]);
      if (type === "end" || type === "queue" && data.state === "running") refreshRuns(ctx);
    });
  }
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED && app2.source === source) {
      hooks.setError("Lost the run's events: its server went away. Start it again.");
      app2.source = null;
      ctx.changed(["end"]);
    }
  };
}
function stopFollowing({ app: app2 }) {
  app2.source?.close();
  app2.source = null;
}
async function openRun(ctx, id) {
  const { hooks, status } = ctx;
  status.waiting("run", true);
  try {
    const r = (
      /** @type {TrainRun} */
      await fetchRun(id)
    );
    stopFollowing(ctx);
    if (r.state === "running" || r.state === "queued") follow(ctx, r.id);
    else show(ctx, r);
    hooks.linked();
    return r;
  } catch (err) {
    return (
      /** @type {Error} */
      err
    );
  } finally {
    status.waiting("run", false);
  }
}
async function openListed(ctx, id) {
  const { app: app2, hooks } = ctx;
  const r = await openRun(ctx, id);
  if (r instanceof Error) {
    hooks.setError(`Could not open run ${id}: ${r.message}`);
    refreshRuns(ctx);
    return;
  }
  hooks.setError(null);
  app2.form?.apply(settingsOf(r));
  hooks.linked();
}
async function openLink(ctx, link) {
  const { app: app2, hooks } = ctx;
  const problems = (
    /** @type {NonNullable<typeof app.form>} */
    app2.form.apply(link.settings)
  );
  const kept = problems.length ? ` Not all of the link's settings could be kept: ${problems.join("; ")}.` : "";
  if (!link.run) {
    if (kept) hooks.setError(kept.trim());
    return;
  }
  const err = await openRun(ctx, link.run);
  if (!(err instanceof Error)) {
    if (kept) hooks.setError(kept.trim());
    refreshRuns(ctx);
    return;
  }
  const gone = (
    /** @type {Error & {status?: number}} */
    err.status === 404
  );
  hooks.setError(
    gone ? `This link's run ${link.run} is no longer on this server: runs live in the server's memory, it keeps only the last few, and a restart forgets them. The form holds the link's settings: press Train to train it again.${kept}` : `Could not open this link's run ${link.run}: ${err.message}${kept}`
  );
}
async function refreshRuns(ctx) {
  try {
    ctx.app.runs = (await fetchRuns()).runs;
  } catch (err) {
    ctx.hooks.setError(`Could not list this server's runs: ${/** @type {Error} */
    err.message}`);
  }
  showRuns(ctx);
}
function showRuns(ctx) {
  const { app: app2 } = ctx;
  render25(
    byId("t-runs"),
    { runs: app2.runs },
    { open: app2.t.run?.id ?? null },
    { onOpen: (id) => openListed(ctx, id) }
  );
}
async function ask(ctx) {
  const { app: app2, status } = ctx;
  const r = app2.t.run;
  if (!r) return;
  const text = (
    /** @type {HTMLInputElement} */
    byId("t-try-text").value.trim()
  );
  const variant = Number(
    /** @type {HTMLSelectElement} */
    byId("t-try-variant").value || 0
  );
  status.waiting("decode", true);
  try {
    app2.decoded = await decodeRun(r.id, { source: text, variant });
    app2.refused = null;
  } catch (err) {
    app2.refused = /** @type {Error} */
    err.message;
    app2.decoded = null;
  } finally {
    status.waiting("decode", false);
  }
  ctx.changed(["decoded"]);
  asked(byId("t-try-card"), { run: app2.t.run, refused: app2.refused });
}
async function cancel({ app: app2, hooks }) {
  if (!app2.t.run) return;
  try {
    await cancelRun(app2.t.run.id);
  } catch (err) {
    hooks.setError(`Could not cancel: ${/** @type {Error} */
    err.message}`);
  }
}

// static/js/modes/train/index.js
function createTrain(hooks, { run: saved = null } = {}) {
  const app2 = createApp2();
  const status = createStatus(hooks);
  const live = !saved;
  const recurrent = live ? createRecurrent(byId("recurrent-card"), hooks) : null;
  const base = { app: app2, hooks, status, live };
  const { changed, play } = createDrawing2(base);
  const ctx = { ...base, changed };
  function wire7() {
    byId("t-start").addEventListener("click", () => start(ctx));
    byId("t-cancel").addEventListener("click", () => cancel(ctx));
    byId("t-play").addEventListener("click", play);
    byId("t-try").addEventListener("submit", (e) => {
      e.preventDefault();
      ask(ctx);
    });
  }
  async function activate(link = null) {
    app2.active = true;
    if (saved) {
      if (!app2.t.run) {
        byId("t-play").addEventListener("click", play);
        show(ctx, saved);
      } else changed(["run"]);
      return;
    }
    if (link) app2.link = link;
    recurrent?.activate();
    if (!app2.options) {
      status.waiting("options", true);
      let options;
      try {
        options = await fetchTrainOptions();
      } catch (err) {
        hooks.setError(`Could not load the training options: ${/** @type {Error} */
        err.message}`);
        return;
      } finally {
        status.waiting("options", false);
      }
      app2.options = options;
      app2.form = createForm(options);
      wire7();
      if (!options.slots) hooks.setError("This server does not train models (ATTNVIZ_TRAIN_SLOTS=0).");
      byId("t-start").disabled = !options.slots;
    }
    const pending2 = app2.link;
    app2.link = null;
    if (pending2) await openLink(ctx, pending2);
    if (app2.t.run) changed(["run"]);
    else status.set("choose a task and train");
    refreshRuns(ctx);
  }
  return {
    activate,
    deactivate() {
      app2.active = false;
      recurrent?.deactivate();
    },
    hasRun: () => Boolean(app2.t.run),
    /** The id of the recurrent comparison shown ("Why not an RNN?"), or null. */
    recurrentId: () => recurrent?.id() ?? null,
    /** The run open (the page's copy, kept up to date by its events), or null. */
    currentRun: () => app2.t.run,
    /** What the views show of it: the variant, the head, the checkpoint. */
    view: () => app2.t.view,
    /** The tab's link: the run open, and the form's settings. */
    link() {
      if (!app2.form) return app2.link ? encodeTrainLink(app2.link) : TRAIN_HASH;
      return encodeTrainLink({ run: app2.t.run?.id ?? null, settings: app2.form.settings() });
    },
    /** The run open has ended (done, cancelled, failed): the header's Export HTML can save it. */
    hasEnded: () => Boolean(app2.t.run) && app2.t.run?.state !== "running" && app2.t.run?.state !== "queued",
    /** The run open as one HTML file that opens offline (the header's Export HTML), or null. */
    exportHtml: () => app2.t.run ? exportRunHtml(app2.t.run.id) : null,
    /** The run as fetchRun gives it (the server's copy, not the page's). */
    async exportJson() {
      if (!app2.t.run) return null;
      const r = app2.t.run;
      return { text: JSON.stringify(await fetchRun(r.id), null, 1), name: `attnviz-run-${r.id}.json`, note: "" };
    }
  };
}

// static/js/main.js
var root = document.documentElement;
var MODES = (
  /** @type {Mode[]} */
  ["learn", "toy", "sentence", "train"]
);
var TRAIN_HASH2 = "#train";
var trainLink = (hash) => {
  const train = decodeTrainLink(hash);
  return train && { mode: "train", train };
};
var learnLink = (hash) => {
  const learn = decodeLearnHash(hash);
  return learn && { mode: "learn", learn };
};
var app = {
  /** @type {Mode} */
  mode: "toy",
  drawn: 0,
  /** @type {Record<Mode, string | null>} */
  errors: { learn: null, toy: null, sentence: null, train: null },
  /** @type {Record<Mode, string>} */
  status: { learn: "", toy: "", sentence: "", train: "" },
  /** @type {Record<Mode, boolean>} */
  pending: { learn: false, toy: false, sentence: false, train: false },
  /** @type {ReturnType<typeof createLearn> | null} */
  learn: null,
  /** @type {ReturnType<typeof createToy> | null} */
  toy: null,
  /** @type {ReturnType<typeof createSentence> | null} */
  sentence: null,
  /** @type {ReturnType<typeof createTrain> | null} */
  train: null
};
var exporting = false;
var inView = () => app.mode === "learn" ? app.learn?.lab() ?? null : app.mode;
function showMessages() {
  const lab = inView();
  const line = byId("error");
  const error = app.errors[app.mode] || (lab && lab !== app.mode ? app.errors[lab] : null);
  line.textContent = error || "";
  line.hidden = !error;
  const wait = busy.retryAt ? Math.max(1, Math.ceil((busy.retryAt - Date.now()) / 1e3)) : 0;
  const said = wait ? `busy, retrying in ${wait} s` : lab ? app.status[lab] : app.status[app.mode];
  byId("status").textContent = said;
  byId("status").title = said ?? "";
  root.dataset.busy = wait ? "1" : "0";
  root.dataset.pending = Object.values(app.pending).some(Boolean) ? "1" : "0";
  const ready = lab && { toy: app.toy?.hasTrace(), sentence: app.sentence?.hasTrace(), train: app.train?.hasRun() }[lab];
  byId("export-json").disabled = !ready;
  const html = (
    /** @type {HTMLButtonElement} */
    byId("export-html")
  );
  html.disabled = !(lab === "train" ? app.train?.hasEnded() : ready) || exporting;
  for (
    const a of
    /** @type {NodeListOf<HTMLAnchorElement>} */
    document.querySelectorAll(".skip-links a")
  ) {
    a.hidden = a.dataset.skip === "table" ? lab !== "toy" : a.dataset.skip === "views" ? !lab : false;
  }
  html.title = lab === "train" ? "The run as one HTML file, its views with the checkpoints to scrub, to open offline (once it has ended)" : "One HTML file of the views in view, to open anywhere, offline";
}
var messages = (mode) => ({
  /** @param {string | null} message */
  setError(message) {
    app.errors[mode] = message || null;
    showMessages();
  },
  /** @param {string} text */
  setStatus(text) {
    app.status[mode] = text;
    showMessages();
  },
  /** @param {boolean} pending */
  setPending(pending2) {
    app.pending[mode] = pending2;
    showMessages();
  }
});
var traceDrawn = () => {
  root.dataset.traces = String(++app.drawn);
  if (app.drawn === 1) performance.mark("attnviz:first-trace", { detail: inView() });
  showMessages();
};
var viewsDrawn = () => {
  root.dataset.views = String(+(root.dataset.views || 0) + 1);
};
var checked = () => {
  root.dataset.checks = String(+(root.dataset.checks || 0) + 1);
};
var andCheck = (hook, lab) => () => {
  hook();
  if (app.mode === "learn" && app.learn?.lab() === lab) app.learn.labChanged();
};
var share = {
  /** @type {{toy: import("./core/types.js").ToyState | null, sentence: import("./core/types.js").SentenceState | null}} */
  pending: { toy: null, sentence: null },
  /** @type {import("./core/state.js").ShareContext | null} */
  context: null
};
function writeUrl() {
  if (app.mode === "learn") {
    const n = app.learn?.current();
    if (n) history.replaceState(null, "", encodeLearnHash(n));
    else if (!decodeLearnHash(location.hash)) history.replaceState(null, "", LEARN_HASH);
    return;
  }
  if (app.mode === "train") return history.replaceState(null, "", app.train?.link() ?? TRAIN_HASH2);
  const toy = share.pending.toy ?? app.toy?.getState() ?? null;
  const sentence = share.pending.sentence ?? app.sentence?.getState() ?? null;
  if (toy || sentence) history.replaceState(null, "", encodeShare(app.mode, toy, sentence, share.context ?? void 0));
}
function setMode(mode, state = null) {
  app.mode = mode;
  if (!state && (mode === "toy" || mode === "sentence") && share.pending[mode]) state = share.pending[mode];
  for (const m of MODES) {
    byId(`mode-${m}`).setAttribute("aria-selected", String(m === mode));
    byId(`${m}-mode`).hidden = m !== mode;
  }
  if (mode === "sentence" || mode === "learn") byId(`${mode}-mode`).prepend(byId("error"));
  else byId(`${mode}-mode`).querySelector(".panel").prepend(byId("error"));
  root.dataset.mode = mode;
  showMessages();
  const toy = (
    /** @type {ReturnType<typeof createToy>} */
    app.toy
  );
  const sentence = (
    /** @type {ReturnType<typeof createSentence>} */
    app.sentence
  );
  const train = (
    /** @type {ReturnType<typeof createTrain>} */
    app.train
  );
  const learn = (
    /** @type {ReturnType<typeof createLearn>} */
    app.learn
  );
  if (mode !== "learn") learn.deactivate();
  if (mode !== "toy") toy.deactivate();
  if (mode !== "sentence") sentence.deactivate();
  if (mode !== "train") train.deactivate();
  if (mode === "learn") {
    writeUrl();
    return learn.activate(state);
  }
  if (mode === "sentence") {
    if (!state) writeUrl();
    return sentence.activate(state);
  }
  if (mode === "train") {
    if (!state) writeUrl();
    return train.activate(state);
  }
  toy.activate(state);
  writeUrl();
}
function openLab(lab, state) {
  if (app.mode !== "learn") return;
  for (
    const m of
    /** @type {Mode[]} */
    ["toy", "sentence", "train"]
  ) byId(`${m}-mode`).hidden = m !== lab;
  const toy = (
    /** @type {ReturnType<typeof createToy>} */
    app.toy
  );
  const train = (
    /** @type {ReturnType<typeof createTrain>} */
    app.train
  );
  if (lab === "toy") {
    train.deactivate();
    if (state) share.pending.toy = null;
    toy.activate(state ?? share.pending.toy);
  } else {
    toy.deactivate();
    train.activate(state);
  }
  showMessages();
}
function follow2(link) {
  if (link?.mode === "learn") return setMode("learn", link.learn);
  if (link?.mode === "train") return setMode("train", link.train);
  share.pending = {
    toy: link?.mode === "sentence" ? link.toy : null,
    sentence: link && link.mode !== "sentence" ? link.sentence : null
  };
  if (link?.mode === "sentence") return setMode("sentence", link.sentence);
  return setMode("toy", link?.toy || null);
}
function watchBusy() {
  let ticker;
  busy.addEventListener("change", () => {
    clearInterval(ticker);
    if (busy.retryAt) ticker = setInterval(showMessages, 250);
    showMessages();
  });
}
function skipTarget(which) {
  const lab = inView();
  if (which === "lab") return byId(`${app.mode}-mode`);
  if (!lab) return null;
  const panel = byId(`${lab}-mode`);
  if (which === "table") return lab === "toy" ? byId("embeddings").querySelector('[tabindex="0"]') : null;
  if (lab === "sentence") {
    return [
      .../** @type {NodeListOf<HTMLElement>} */
      panel.querySelectorAll(":scope > section.card:not(.sentence-input)")
    ].find((c) => !c.hidden) ?? null;
  }
  return panel.querySelector("main.plots");
}
function wire6() {
  for (
    const a of
    /** @type {NodeListOf<HTMLAnchorElement>} */
    document.querySelectorAll(".skip-links a")
  ) {
    a.addEventListener("click", (event) => {
      event.preventDefault();
      const target = skipTarget(a.dataset.skip);
      if (!target) return;
      if (target.tabIndex < 0 && !target.hasAttribute("tabindex")) target.tabIndex = -1;
      target.focus();
    });
  }
  byId("export-json").addEventListener("click", async () => {
    const mode = inView();
    if (!mode) return;
    const say = messages(mode);
    try {
      const out = await { toy: app.toy, sentence: app.sentence, train: app.train }[mode]?.exportJson();
      if (!out) return;
      download(out.text, out.name);
      if (out.note) say.setStatus(out.note);
    } catch (err) {
      say.setError(`The export failed: ${/** @type {Error} */
      err.message}`);
    }
  });
  byId("export-html").addEventListener("click", async () => {
    const mode = inView();
    if (!mode) return;
    const say = messages(mode);
    const body = mode === "toy" ? app.toy?.htmlRequest() : mode === "sentence" ? app.sentence?.htmlRequest() : null;
    const made = mode === "train" ? app.train?.exportHtml() : body ? exportHtml(body) : null;
    if (!made) return;
    exporting = true;
    say.setStatus("making the HTML file…");
    try {
      const { blob, name } = await made;
      download(blob, name);
      say.setStatus(`saved ${name}: it opens offline, with no server`);
    } catch (err) {
      say.setError(`The HTML export failed: ${/** @type {Error} */
      err.message}`);
    } finally {
      exporting = false;
      showMessages();
    }
  });
  byId("copy-link").addEventListener("click", async () => {
    writeUrl();
    const copied = await copyText(location.href);
    messages(inView() ?? app.mode).setStatus(copied ? "link copied" : "copy the address bar to share");
  });
  for (const m of MODES) {
    byId(`mode-${m}`).addEventListener("click", () => {
      if (app.mode !== m) setMode(m);
    });
  }
  for (
    const button of
    /** @type {NodeListOf<HTMLElement>} */
    document.querySelectorAll("button.png[data-plot]")
  ) {
    button.addEventListener(
      "click",
      () => downloadPng(byId(
        /** @type {string} */
        button.dataset.plot
      ), `attnviz-${button.dataset.plot}`)
    );
  }
}
async function init() {
  root.dataset.pending = "1";
  watchBusy();
  if (!hasPlotly()) {
    messages("toy").setError("Plotly.js did not load; the plots cannot be drawn.");
    return;
  }
  let presets;
  try {
    presets = await fetchPresets();
  } catch (err) {
    messages("toy").setError(`Could not load the presets: ${/** @type {Error} */
    err.message}`);
    root.dataset.pending = "0";
    return;
  }
  const { limits, config_defaults: defaults } = presets;
  if (!presets.presets.length) {
    messages("toy").setError("The server has no presets.");
    root.dataset.pending = "0";
    return;
  }
  share.context = { presets: presets.presets, limits, defaults };
  const changed = (mode) => () => {
    share.pending[mode] = null;
    writeUrl();
  };
  app.toy = createToy({
    ...messages("toy"),
    traceDrawn: andCheck(traceDrawn, "toy"),
    viewsDrawn: andCheck(viewsDrawn, "toy"),
    changed: changed("toy"),
    limits,
    defaults,
    presets: presets.presets
  });
  app.sentence = createSentence({ ...messages("sentence"), traceDrawn, viewsDrawn, changed: changed("sentence") });
  app.train = createTrain({
    ...messages("train"),
    viewsDrawn: andCheck(viewsDrawn, "train"),
    changed: showMessages,
    linked() {
      if (app.mode === "train") writeUrl();
    },
    openModel(name, text, query2) {
      app.sentence.forgetModels();
      setMode("sentence", { ...defaultSentence(name, text), query: query2 });
    }
  });
  const train = app.train;
  app.learn = createLearn({
    ...messages("learn"),
    checked,
    limits,
    defaults,
    openLab,
    linked() {
      if (app.mode === "learn") writeUrl();
    },
    explore: (lab) => setMode(lab),
    toyState: () => app.toy?.getState() ?? null,
    trainRun: () => train.currentRun(),
    trainView: () => train.view(),
    recurrentId: () => train.recurrentId()
    // the comparison shown in its card (step 1)
  });
  wire6();
  let link = null;
  try {
    link = learnLink(location.hash) ?? trainLink(location.hash) ?? decodeShare(location.hash, limits, defaults, presets.presets);
  } catch (err) {
    app.toy.setLinkProblem(
      `This link could not be read (${/** @type {Error} */
      err.message}); showing the first preset.`
    );
  }
  window.addEventListener("hashchange", () => {
    try {
      const next = learnLink(location.hash) ?? trainLink(location.hash) ?? decodeShare(location.hash, limits, defaults, presets.presets);
      if (next) follow2(next);
    } catch (err) {
      messages(app.mode).setError(`This link could not be read (${/** @type {Error} */
      err.message}).`);
    }
  });
  follow2(link);
}
init();
