// A long trace computed as a job: core/api.js follows the server's 202 (its events until its
// end, then its result), and modes/sentence/job.js says how far it is. fetch and EventSource
// are replaced by a scripted server here; the real one is in tests/api/test_trace_jobs.py and
// the browser.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ApiError, TraceParts, fetchTrace } from "../../static/js/core/api.js";
import { aboutSeconds, jobText } from "../../static/js/modes/sentence/job.js";

const job = (over) => ({
  id: "j1",
  state: "running",
  stage: "forward",
  layers: 30,
  layers_done: 12,
  done: 12,
  total: 60,
  elapsed_s: 10,
  left_s: 40,
  estimate_s: 50,
  limit_s: 300,
  message: null,
  status: null,
  url: "/api/trace/jobs/j1",
  result: "/api/trace/jobs/j1/result",
  events: "/api/trace/jobs/j1/events",
  ...over,
});

test("the line says the layers done of the total and the time left", () => {
  assert.equal(jobText(job({})), "A long text: running the model, layer 12 of 30 · about 40 s left");
  assert.equal(
    jobText(job({ stage: "thumbnails", layers_done: 30, done: 35, left_s: 130 })),
    "A long text: every head's thumbnail, layer 5 of 30 · about 2 min 10 s left",
  );
  assert.equal(
    jobText(job({ state: "queued", stage: "waiting", left_s: 50 })),
    "Waiting for the server's turn · about 50 s left",
  );
  // A model on NDIF: what the deployment said, and how long it has waited.
  assert.equal(
    jobText(job({ remote: "Waiting in NDIF's queue: Moved to position 2 in Queue.", elapsed_s: 75 })),
    "Waiting in NDIF's queue: Moved to position 2 in Queue. · about 1 min 15 s so far",
  );
  // A part of a remote model's trace before the deployment said anything: how long it waited.
  assert.equal(jobText(job({ left_s: null, elapsed_s: 3 })), "Asking the model's deployment · about 3 s so far");
  assert.equal(aboutSeconds(0.2), "about 1 s");
  assert.equal(aboutSeconds(120), "about 2 min");
});

/** A fetch answering each call from `answer(url, init)`, the calls kept. */
function scripted(answer) {
  const calls = [];
  globalThis.fetch = async (url, init = {}) => {
    calls.push({ url, method: init.method || "GET", prefer: init.headers?.Prefer });
    return answer(url, init, calls.length);
  };
  return calls;
}

/**
 * An EventSource sending, one every few milliseconds, the events `script(url)` lists
 * ([type, data] pairs; ["error"]: the server refuses the stream, which closes); it stays open
 * after the last until closed. The URLs opened are kept.
 */
function scriptedEvents(script) {
  const opened = [];
  globalThis.EventSource = class {
    static CLOSED = 2;
    constructor(url) {
      opened.push(url);
      this.readyState = 1;
      this.listeners = {};
      const events = script(url);
      let i = 0;
      const next = () => {
        if (this.readyState === 2 || i >= events.length) return;
        const [type, data] = events[i++];
        if (type === "error") {
          this.readyState = 2;
          this.onerror?.();
          return;
        }
        for (const f of this.listeners[type] ?? []) f({ data: JSON.stringify(data) });
        setTimeout(next, 3);
      };
      setTimeout(next, 3);
    }
    addEventListener(type, f) {
      (this.listeners[type] ??= []).push(f);
    }
    close() {
      this.readyState = 2;
    }
  };
  return opened;
}

const isPost = (url) => url.startsWith("/api/trace") && !url.includes("/jobs/");
const json = (status, body) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });

test("a 202 is followed to its result, each state told; asked with Prefer: respond-async", async () => {
  const calls = scripted((url) => {
    if (isPost(url)) return json(202, job({ done: 0, layers_done: 0 }));
    return new Response(new ArrayBuffer(0), { status: 500 }); // the result: the decoder's to read
  });
  const opened = scriptedEvents(() => [
    ["state", job({ done: 6 })],
    ["progress", job({})],
    ["end", job({ state: "done", done: 60 })],
  ]);
  const told = [];
  await assert.rejects(
    fetchTrace({ model: "m", text: "t" }, { fields: "thumbs" }, undefined, (j) => told.push(j.done)),
  );
  assert.equal(calls[0].prefer, "respond-async");
  assert.deepEqual(told, [0, 6, 12, 60]);
  assert.deepEqual(opened, ["/api/trace/jobs/j1/events"]);
  assert.deepEqual(
    calls.map((c) => c.url),
    ["/api/trace?fields=thumbs", "/api/trace/jobs/j1/result"],
  );
});

test("a failed job is an ApiError with its message and status", async () => {
  scripted(() => json(202, job({})));
  scriptedEvents(() => [["end", job({ state: "failed", message: "over the limit", status: 503 })]]);
  const err = await fetchTrace({ model: "m", text: "t" }).catch((e) => e);
  assert.ok(err instanceof ApiError);
  assert.equal(err.message, "over the limit");
  assert.equal(err.status, 503);
});

test("a job whose stream is refused is the server's words for it", async () => {
  scripted((url) =>
    isPost(url)
      ? json(202, job({}))
      : json(404, { message: "job_id: this server restarted since that job was started", detail: [] }),
  );
  scriptedEvents(() => [["error"]]);
  const err = await fetchTrace({ model: "m", text: "t" }).catch((e) => e);
  assert.ok(err instanceof ApiError);
  assert.equal(err.status, 404);
  assert.match(err.message, /restarted since that job was started/);
});

test("aborting the request cancels the job on the server", async () => {
  const controller = new AbortController();
  const calls = scripted((url) => {
    if (isPost(url)) return json(202, job({}));
    if (url === "/api/trace/jobs/j1" && calls.at(-1).method === "DELETE") return json(200, job({ state: "cancelled" }));
    return json(200, job({}));
  });
  scriptedEvents(() => [["state", job({})]]); // and no more: it computes on
  const asked = fetchTrace({ model: "m", text: "t" }, {}, controller.signal);
  await new Promise((r) => setTimeout(r, 50));
  controller.abort();
  await assert.rejects(asked, { name: "AbortError" });
  assert.ok(calls.some((c) => c.url === "/api/trace/jobs/j1" && c.method === "DELETE"));
});

test("the parts' jobs are told while any is followed, then null once none is left", async () => {
  scripted((url) => {
    const which = url.includes("layer=0") ? "a" : "b";
    if (isPost(url)) {
      const urls = { url: `/api/trace/jobs/${which}`, result: `/api/trace/jobs/${which}/result` };
      return json(202, job({ id: which, ...urls, events: `/api/trace/jobs/${which}/events` }));
    }
    return new Response(new ArrayBuffer(0), { status: 500 }); // a result: the decoder's to read
  });
  scriptedEvents((url) => {
    const which = url.includes("/jobs/a/") ? "a" : "b";
    const done = job({ id: which, state: "done" });
    // b outlasts a
    return which === "a"
      ? [["end", done]]
      : [
          ["state", job({ id: which })],
          ["progress", job({ id: which })],
          ["progress", job({ id: which })],
          ["progress", job({ id: which })],
          ["end", done],
        ];
  });
  const told = [];
  const parts = new TraceParts({ model: "m", text: "t" }, 8, (j) => told.push(j ? j.id : null));
  const a = parts.get({ layer: 0 }).catch(() => "a ended");
  const b = parts.get({ layer: 1 }).catch(() => "b ended");
  assert.equal(await a, "a ended");
  assert.equal(told.at(-1), "b"); // a ended: b is still followed, and shown
  assert.equal(await b, "b ended");
  assert.equal(told.at(-1), null);
  assert.ok(told.includes("a") && told.filter((t) => t === null).length === 1);
});
