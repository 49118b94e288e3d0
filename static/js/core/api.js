// Talking to the attnviz API: presets, models, and traces in the compact form, asked for in
// parts (the first screen, then one head, one layer, the trajectories) and never out of order.

import { COMPACT_MEDIA_TYPE, decodeCompact } from "./compact.js";

/** @typedef {import("./types.js").Compact} Compact */
/** @typedef {Record<string, string | number | boolean | null | undefined>} Params */

export class ApiError extends Error {
  /** @param {string} message @param {number} status */
  constructor(message, status) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

/**
 * The one-line message of an error response: `message`, else the validation details.
 * @param {number} status
 * @param {any} body
 */
function errorMessage(status, body) {
  if (body && typeof body.message === "string" && body.message) return body.message;
  if (body && Array.isArray(body.detail) && body.detail.length) {
    return body.detail
      .map((/** @type {any} */ d) => {
        const loc = (d.loc || []).filter((/** @type {string} */ p) => p !== "body" && p !== "query").join(".");
        return loc ? `${loc}: ${d.msg}` : String(d.msg);
      })
      .join("; ");
  }
  if (body && typeof body.detail === "string") return body.detail;
  return `The server answered ${status}.`;
}

/** @param {Response} response */
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

// -- A busy server ------------------------------------------------------------------------------
// A server at its bound answers 503 with Retry-After (seconds); every request here then waits
// that long (plus up to a fifth more, so a crowd does not come back at once) and tries again.
// `busy` tells the page when the next try is due, for its status line.

/** Tries of one request before a 503 is shown as an error. */
const BUSY_TRIES = 30;

/** Dispatches "change" events; `busy.retryAt` is the time (ms) of the latest next try, or 0. */
export const busy = Object.assign(new EventTarget(), { retryAt: 0 });
/** @type {Map<object, number>} */
const retrying = new Map();

/** @param {object} who @param {number} at ms, or 0 for "no longer waiting" */
function setRetry(who, at) {
  if (at) retrying.set(who, at);
  else retrying.delete(who);
  const next = retrying.size ? Math.max(...retrying.values()) : 0;
  if (next !== busy.retryAt) {
    busy.retryAt = next;
    busy.dispatchEvent(new Event("change"));
  }
}

/**
 * Seconds to wait from a 503's Retry-After (whole seconds; at least one).
 * @param {Response} response
 */
export function retryAfterSeconds(response) {
  const s = Number(response.headers.get("Retry-After"));
  return Number.isFinite(s) && s >= 1 ? s : 1;
}

/** @param {number} ms @param {AbortSignal | null | undefined} signal */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(new DOMException("The request was aborted.", "AbortError"));
      },
      { once: true },
    );
  });
}

/**
 * fetch, tried again after each 503's Retry-After.
 * @param {string} url @param {RequestInit} init
 */
async function fetchPatiently(url, init) {
  const who = {};
  try {
    for (let tries = 1; ; tries++) {
      const response = await fetch(url, init);
      if (response.status !== 503 || tries >= BUSY_TRIES) return response;
      const ms = 1000 * retryAfterSeconds(response) * (1 + Math.random() / 5);
      setRetry(who, Date.now() + ms);
      await sleep(ms, init.signal);
    }
  } finally {
    setRetry(who, 0);
  }
}

/**
 * `read()` (a request and the reading of its answer), once more after 300 ms when the
 * connection fails on the way (a replica going away behind a proxy cuts its answers): every
 * request here is a pure function of its input, so asking again is safe.
 * @template T
 * @param {() => Promise<T>} read @param {AbortSignal} [signal]
 * @returns {Promise<T>}
 */
async function onceMoreIfCut(read, signal) {
  try {
    return await read();
  } catch (err) {
    if (!(err instanceof TypeError) || signal?.aborted) throw err; // TypeError: a network failure
    await sleep(300, signal);
    return read();
  }
}

/** @param {string} path */
function getJson(path) {
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently(path, { headers: { Accept: "application/json" } });
    if (!response.ok) throw await failure(response);
    return response.json();
  });
}

/** GET /api/presets -> {presets, limits, config_defaults} */
export const fetchPresets = () => getJson("/api/presets");

/** Model name -> the training run it comes from: a trace of such a model says so in the
 * X-Attnviz-Run header, by which a proxy sends it to the replica that has the run. */
const runs = new Map();

/** GET /api/models -> {models, default, examples, max_text_chars, max_json_values, install};
 * `open`: a model a link names (a trained run's, whose name is the capability to open it), listed
 * too when the server has it.
 * @param {string | null} [open]
 * @returns {Promise<import("./types.js").ModelList>} */
export async function fetchModels(open = null) {
  const query = open ? `?${new URLSearchParams({ open })}` : "";
  const list = /** @type {import("./types.js").ModelList} */ (await getJson(`/api/models${query}`));
  runs.clear();
  for (const m of list.models) if (m.run) runs.set(m.name, m.run);
  return list;
}

/**
 * GET /api/models/{name}/composition -> the Q-, K- and V-composition scores of every pair of
 * heads in different layers, from the weights (waiting out a busy server; a trained run's model
 * names its run).
 * @param {string} model @returns {Promise<import("./types.js").Composition>}
 */
export function fetchComposition(model) {
  return modelJson(model, "composition");
}

/**
 * GET /api/models/{name}/atlas -> every head of the model scored on the atlas's probe (waiting
 * out a busy server; a trained run's model names its run, as a trace does).
 * @param {string} model @returns {Promise<import("./types.js").Atlas>}
 */
export function fetchAtlas(model) {
  return modelJson(model, "atlas");
}

/**
 * GET /api/models/{name}/{what} as JSON, waiting out a busy server, once more if the answer was
 * cut; a trained run's model names its run, as a trace does.
 * @param {string} model @param {string} what @returns {Promise<any>}
 */
function modelJson(model, what) {
  const run = runs.get(model);
  /** @type {Record<string, string>} */
  const headers = { Accept: "application/json" };
  if (run) headers["X-Attnviz-Run"] = run;
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently(`/api/models/${encodeURIComponent(model)}/${what}`, { headers });
    if (!response.ok) throw await failure(response);
    return response.json();
  });
}

/**
 * POST /api/models/{name}/corpus -> one head's queries and keys of every token of a set of texts
 * in 2-D, and the heads' clusters (waiting out a busy server; a trained run's model names its
 * run, as a trace does).
 * @param {string} model @param {import("./types.js").CorpusRequest} body @param {AbortSignal} [signal]
 * @returns {Promise<import("./types.js").Corpus>}
 */
export function fetchCorpus(model, body, signal) {
  return postPatiently(`/api/models/${encodeURIComponent(model)}/corpus`, body, runs.get(model), signal);
}

/**
 * POST `body` as JSON to `url` and read the JSON answer, waiting out a busy server and asking
 * once more if the answer was cut; `run` (a training run's id) goes as X-Attnviz-Run, which a
 * proxy in front of replicas sends to the one that has it (deploy/nginx); `token`, when given,
 * as the bearer.
 * @param {string} url @param {object} body @param {string | null | undefined} run
 * @param {AbortSignal} [signal] @param {string | null} [token] @returns {Promise<any>}
 */
function postPatiently(url, body, run, signal, token = null) {
  /** @type {Record<string, string>} */
  const headers = { "Content-Type": "application/json", Accept: "application/json" };
  if (run) headers["X-Attnviz-Run"] = run;
  if (token) headers.Authorization = `Bearer ${token}`;
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently(url, { method: "POST", headers, body: JSON.stringify(body), signal });
    if (!response.ok) throw await failure(response);
    return response.json();
  }, signal);
}

/** The headers of a trace request for `body`. @param {any} body @param {string} accept */
function traceHeaders(body, accept) {
  /** @type {Record<string, string>} */
  const headers = { "Content-Type": "application/json", Accept: accept };
  const run = body && typeof body.model === "string" ? runs.get(body.model) : undefined;
  if (run) headers["X-Attnviz-Run"] = run;
  return headers;
}

// -- Trace jobs ---------------------------------------------------------------------------------
// A text whose trace will take long (a long text on a large model) is answered 202 with a job
// when the request says it can wait (Prefer: respond-async): its events (its state, as it
// changes and every half second) are told to `onJob`, and once done its result is the answer.
// Aborting the request cancels the job (DELETE); a newer request of the page cancels it on the
// server anyway.

const JOB_ENDED = ["done", "cancelled", "failed"];

/** @typedef {import("./types.js").TraceJob} TraceJob */

/** DELETE /api/trace/jobs/{id}: stop a trace job at its next layer. @param {string} url */
export function cancelTraceJob(url) {
  return fetch(url, { method: "DELETE" }).catch(() => null); // gone already: nothing to stop
}

/**
 * Follow a trace job until it ends: its states to `onJob`, then its result's response (or the
 * job's error). Aborted: the job is cancelled.
 * @param {TraceJob} job @param {AbortSignal | undefined} signal
 * @param {((job: TraceJob) => void) | undefined} onJob
 * @returns {Promise<Response>}
 */
async function followJob(job, signal, onJob) {
  const stop = () => cancelTraceJob(job.url);
  signal?.addEventListener("abort", stop, { once: true });
  try {
    onJob?.(job);
    const ended = JOB_ENDED.includes(job.state) ? job : await jobEnd(job, signal, onJob);
    if (ended.state === "done") return await fetch(ended.result, { signal });
    throw new ApiError(ended.message || `The trace was ${ended.state}.`, ended.status || 409);
  } finally {
    signal?.removeEventListener("abort", stop);
  }
}

/**
 * A trace job's events until its end, each state told to `onJob`; its last state. Its stream
 * refused (the job gone: a restart, another replica), the server's words for it.
 * @param {TraceJob} job @param {AbortSignal | undefined} signal
 * @param {((job: TraceJob) => void) | undefined} onJob
 * @returns {Promise<TraceJob>}
 */
function jobEnd(job, signal, onJob) {
  return new Promise((resolve, reject) => {
    const source = new EventSource(job.events);
    const aborted = () => {
      source.close();
      reject(new DOMException("The request was aborted.", "AbortError"));
    };
    signal?.addEventListener("abort", aborted, { once: true });
    const settle = (/** @type {() => void} */ how) => {
      source.close();
      signal?.removeEventListener("abort", aborted);
      how();
    };
    for (const type of ["state", "progress", "end"]) {
      source.addEventListener(type, (e) => {
        const now = /** @type {TraceJob} */ (JSON.parse(/** @type {MessageEvent} */ (e).data));
        onJob?.(now);
        if (type === "end" || JOB_ENDED.includes(now.state)) settle(() => resolve(now));
      });
    }
    source.onerror = () => {
      // The browser reconnects by itself (with Last-Event-ID) unless the server said no.
      if (source.readyState !== EventSource.CLOSED) return;
      settle(() =>
        fetch(job.url, { headers: { Accept: "application/json" } }).then(
          async (r) => reject(r.ok ? new ApiError("Lost the trace's progress; ask again.", 503) : await failure(r)),
          () => reject(new ApiError("Lost the trace's progress: the server went away.", 503)),
        ),
      );
    };
  });
}

// -- Learn ---------------------------------------------------------------------------------------

/** GET /api/learn -> {steps}: the Learn mode's path. */
export const fetchLearn = () => getJson("/api/learn");

/**
 * POST /api/learn/{id}/check: whether a step's tasks are done in the lab's state (a toy
 * table and view, a run and its view, or a recurrent comparison), and why (waiting out a busy
 * server). A tab that holds the operator's token sends it as the bearer: the operator's checks
 * are answered, and kept for no learner.
 * @param {string} id the step's id @param {object} body @param {AbortSignal} [signal]
 * @param {string | null} [token] the operator's token this tab holds
 * @returns {Promise<import("./types.js").LearnAnswer>}
 */
export function checkLearn(id, body, signal, token = null) {
  // A check of a run or a comparison carries its id, for the replica that has it.
  const { run, recurrent } = /** @type {{run?: string | null, recurrent?: string | null}} */ (body);
  const url = `/api/learn/${encodeURIComponent(id)}/check`;
  return postPatiently(url, body, run ?? recurrent ?? null, signal, token);
}

/**
 * POST /api/learn/{id}/open: the step the learner has open, the class view's "on step N" (a
 * step opened is not always checked at once: a train step with no run has nothing to check).
 * Credits nothing; the operator's tab sends its token, and is kept for no learner. Never
 * throws: a record not kept is the class view's loss only.
 * @param {string} id the step's id @param {string | null} [token] the operator's token this tab holds
 * @returns {Promise<boolean>} whether the server took it
 */
export async function openedLearn(id, token = null) {
  /** @type {Record<string, string>} */
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  try {
    const response = await fetch(`/api/learn/${encodeURIComponent(id)}/open`, { method: "POST", headers });
    return response.ok;
  } catch {
    return false;
  }
}

/**
 * GET /api/learn/progress: the caller's Learn progress as the server keeps it (its checks'
 * answers), the nickname, and whether this server's operator sees the class.
 * @returns {Promise<import("./types.js").LearnKept>}
 */
export const fetchLearnProgress = () => getJson("/api/learn/progress");

/**
 * PUT /api/learn/progress/nickname: the name the operator's class view shows (null: none). A
 * broken rule is an ApiError naming it; asked once (a refusal is the learner's to read).
 * @param {string | null} nickname @returns {Promise<import("./types.js").LearnKept>}
 */
export async function setNickname(nickname) {
  const response = await fetch("/api/learn/progress/nickname", {
    method: "PUT",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify({ nickname }),
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/**
 * GET /api/learn/class: every learner's progress, for the operator, whose token goes as the
 * bearer of this request alone (an ApiError with status 403 for anyone else).
 * @param {string} token @param {AbortSignal} [signal]
 * @returns {Promise<import("./types.js").LearnClass>}
 */
export async function fetchClass(token, signal) {
  const response = await fetch("/api/learn/class", {
    headers: { Accept: "application/json", Authorization: `Bearer ${token}` },
    cache: "no-store",
    signal,
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}

// -- Training -----------------------------------------------------------------------------------

/** GET /api/train/options -> {tasks, presets, switches, limits, slots}
 * @returns {Promise<import("./types.js").TrainOptions>} */
export const fetchTrainOptions = () => getJson("/api/train/options");

/** GET /api/train -> {runs}: the runs this server keeps, newest first, in brief. */
export const fetchRuns = () => getJson("/api/train");

/** GET /api/train/{id} -> the run's whole state. @param {string} id */
export const fetchRun = (id) => getJson(`/api/train/${encodeURIComponent(id)}`);

/**
 * POST /api/train: start a run (waiting out a busy server). -> {id, state, events, url}
 * @param {object} body
 */
export function startRun(body) {
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently("/api/train", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw await failure(response);
    return response.json();
  });
}

/**
 * POST /api/train/{id}/decode: what a finished encoder-decoder variant writes for a string,
 * with every head's attention, exact.
 * @param {string} id @param {{source: string, variant: number}} body
 * @returns {Promise<import("./types.js").TrainDecoded>}
 */
export async function decodeRun(id, body) {
  const response = await fetch(`/api/train/${encodeURIComponent(id)}/decode`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/**
 * GET /api/train/{id}/events: the run's server-sent events (`state` first, then `steps`,
 * `checkpoint`, `variant`, `claims`, `end`); the browser reconnects by itself.
 * @param {string} id
 */
export const runEvents = (id) => new EventSource(`/api/train/${encodeURIComponent(id)}/events`);

/**
 * GET /api/train/{id}/model.zip: the URL of a finished variant's model folder, zipped.
 * @param {string} id @param {number} variant
 */
export const modelFolderUrl = (id, variant) => `/api/train/${encodeURIComponent(id)}/model.zip?variant=${variant}`;

/**
 * GET /api/train/{id}/export: the URL of an ended run as one HTML file that opens offline.
 * @param {string} id
 */
export const runHtmlUrl = (id) => `/api/train/${encodeURIComponent(id)}/export`;

/**
 * GET /api/train/{id}/export: an ended run as one HTML file that opens offline. -> {blob, name}
 * (the name from Content-Disposition)
 * @param {string} id
 */
export async function exportRunHtml(id) {
  const response = await fetch(runHtmlUrl(id));
  if (!response.ok) throw await failure(response);
  const name =
    /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "")?.[1] ?? `attnviz-run-${id}.html`;
  return { blob: await response.blob(), name };
}

/**
 * POST /api/export: the page's views of a trace as one HTML file that opens offline (waiting
 * out a busy server). -> {blob, name} (the name from Content-Disposition)
 * @param {{trace: object, selection: object}} body
 */
export function exportHtml(body) {
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently("/api/export", {
      method: "POST",
      headers: { ...traceHeaders(body.trace, "text/html"), "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw await failure(response);
    const name = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "")?.[1] ?? "attnviz.html";
    return { blob: await response.blob(), name };
  });
}

// -- Why not an RNN ---------------------------------------------------------------------------

/** GET /api/recurrent/options -> {tasks, default, lengths, max_seed, slots} */
export const fetchRecurrentOptions = () => getJson("/api/recurrent/options");

/**
 * POST /api/recurrent: start comparing the transformer with an LSTM and a GRU on a task
 * (waiting out a busy server). -> the comparison as it starts
 * @param {{task: string, seed: number}} body
 * @returns {Promise<import("./types.js").RecurrentRun>}
 */
export function startRecurrent(body) {
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently("/api/recurrent", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw await failure(response);
    return response.json();
  });
}

/**
 * GET /api/recurrent/{id}/events: the comparison's server-sent events (`state` first, then
 * `progress`, then `end`: each the whole comparison); the browser reconnects by itself.
 * @param {string} id
 */
export const recurrentEvents = (id) => new EventSource(`/api/recurrent/${encodeURIComponent(id)}/events`);

/**
 * DELETE /api/recurrent/{id}: stop a comparison (one waiting in line ends there); its state.
 * @param {string} id
 * @returns {Promise<import("./types.js").RecurrentRun>}
 */
export async function cancelRecurrent(id) {
  const response = await fetch(`/api/recurrent/${encodeURIComponent(id)}`, { method: "DELETE" });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/**
 * GET /api/recurrent: the caller's comparisons the server keeps, newest first.
 * @returns {Promise<{comparisons: import("./types.js").RecurrentSummary[]}>}
 */
export const fetchComparisons = () => getJson("/api/recurrent");

/**
 * GET /api/recurrent/{id}: the comparison as it stands.
 * @param {string} id
 * @returns {Promise<import("./types.js").RecurrentRun>}
 */
export const fetchRecurrent = (id) => getJson(`/api/recurrent/${encodeURIComponent(id)}`);

/**
 * PATCH /api/train/{id}: name a run (its owner, or the operator); null gives it back the name
 * of what it trains. -> the run's state (its title and named)
 * @param {string} id @param {string | null} title
 * @returns {Promise<import("./types.js").TrainRun>}
 */
export async function renameRun(id, title) {
  const response = await fetch(`/api/train/${encodeURIComponent(id)}`, {
    method: "PATCH",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify({ title }),
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/** DELETE /api/train/{id}: cancel a running run. @param {string} id */
export async function cancelRun(id) {
  const response = await fetch(`/api/train/${encodeURIComponent(id)}`, { method: "DELETE" });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/**
 * The query string of a request's parameters (null and undefined left out).
 * @param {Params} params
 */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

/**
 * POST /api/trace: a part of the trace of `body`, in the compact form. A long one comes as a
 * job the server computes (202): followed here, each state told to `onJob`, until its result.
 * @param {object} body
 * @param {Params} [params]
 * @param {AbortSignal} [signal]
 * @param {(job: TraceJob) => void} [onJob]
 * @returns {Promise<Compact>}
 */
export function fetchTrace(body, params = {}, signal, onJob) {
  return onceMoreIfCut(async () => {
    let response = await fetchPatiently(`/api/trace${query(params)}`, {
      method: "POST",
      headers: { ...traceHeaders(body, COMPACT_MEDIA_TYPE), Prefer: "respond-async" },
      body: JSON.stringify(body),
      signal,
    });
    if (response.status === 202) response = await followJob(await response.json(), signal, onJob);
    if (!response.ok) throw await failure(response);
    return decodeCompact(await response.arrayBuffer());
  }, signal);
}

/**
 * POST /api/trace as JSON (what an export saves): the text as the server sent it.
 * @param {object} body
 * @param {Params} [params]
 */
export function fetchTraceJson(body, params = {}) {
  return onceMoreIfCut(async () => {
    const response = await fetchPatiently(`/api/trace${query(params)}`, {
      method: "POST",
      headers: traceHeaders(body, "application/json"),
      body: JSON.stringify(body),
    });
    if (!response.ok) throw await failure(response);
    return response.text();
  });
}

/**
 * The parts of one trace (one input), each asked for once: the server computed the trace for
 * the first request and keeps it, so later parts are quick; if it forgot, it recomputes.
 */
export class TraceParts {
  /**
   * @param {object} body the trace request @param {number} [keep] parts remembered
   * @param {(job: TraceJob | null) => void} [onJob] a part the server computes as a job (a
   *   remote model's, waiting for its deployment): its states, each time read, then null once
   *   no part's job is left
   */
  constructor(body, keep = 48, onJob = undefined) {
    this.body = body;
    this.keep = keep;
    this.onJob = onJob;
    /** @type {Map<string, Promise<Compact>>} */
    this.parts = new Map();
    /** The parts' jobs still followed, by id, each's last state. @type {Map<string, TraceJob>} */
    this.jobs = new Map();
  }

  /** @param {Params} params */
  fetch(params) {
    const onJob = this.onJob;
    if (!onJob) return fetchTrace(this.body, params);
    /** @type {string | null} */
    let id = null;
    /** @param {TraceJob} job */
    const told = (job) => {
      id = job.id;
      this.jobs.set(job.id, job);
      onJob(job);
    };
    const ended = () => {
      if (id === null || !this.jobs.delete(id)) return;
      const left = [...this.jobs.values()];
      onJob(left.length ? left[left.length - 1] : null);
    };
    const part = fetchTrace(this.body, params, undefined, told);
    part.then(ended, ended);
    return part;
  }

  /**
   * Remember a part already at hand (the first response holds the first head).
   * @param {Params} params @param {Compact} part
   */
  seed(params, part) {
    this.parts.set(query(params), Promise.resolve(part));
  }

  /**
   * @param {Params} params
   * @returns {Promise<Compact>}
   */
  get(params) {
    const key = query(params);
    let part = this.parts.get(key);
    if (part) {
      this.parts.delete(key); // most recent last
    } else {
      part = this.fetch(params);
      part.catch(() => this.parts.delete(key)); // ask again next time
    }
    this.parts.set(key, part);
    while (this.parts.size > this.keep) this.parts.delete(/** @type {string} */ (this.parts.keys().next().value));
    return part;
  }
}

/**
 * Debounced first requests of a trace. Each new request aborts the one in flight, so a stale
 * response can never overwrite a newer one. Callbacks: onPending(bool), onResult(compact,
 * request), onError(message).
 */
export class TraceClient {
  /**
   * @param {{delay?: number, onPending: (p: boolean) => void,
   *   onResult: (c: Compact, r: {body: object, params: Params}) => void,
   *   onError: (message: string, status?: number) => void,
   *   onJob?: (job: TraceJob | null) => void}} options onError: the message, and
   *   the server's status code when it answered (404: no model of that name); onJob: the
   *   state of the job computing a long trace, each time it is read, then null once it ends
   */
  constructor({ delay = 150, onPending, onResult, onError, onJob = () => {} }) {
    this.delay = delay;
    this.onPending = onPending;
    this.onResult = onResult;
    this.onError = onError;
    this.onJob = onJob;
    /** Whether the request in flight is a job (the server computes it, followed). */
    this.following = false;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.timer = undefined;
    /** @type {AbortController | null} */
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
    this.timer = undefined;
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
    /** @param {TraceJob} job */
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
      const e = /** @type {Error} */ (err);
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
}
