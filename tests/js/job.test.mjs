// A long trace computed as a job: core/api.js follows the server's 202 (its state read until
// done, then its result), and modes/sentence/job.js says how far it is. fetch is replaced by a
// scripted server here; the real one is in tests/api/test_trace_jobs.py and the browser.
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

const isPost = (url) => url.startsWith("/api/trace") && !url.includes("/jobs/");
const json = (status, body) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });

test("a 202 is followed to its result, each state told; asked with Prefer: respond-async", async () => {
  let polls = 0;
  const calls = scripted((url) => {
    if (isPost(url)) return json(202, job({ done: 0, layers_done: 0 }));
    if (url === "/api/trace/jobs/j1") return json(200, ++polls < 2 ? job({}) : job({ state: "done", done: 60 }));
    return new Response(new ArrayBuffer(0), { status: 500 }); // the result: the decoder's to read
  });
  const told = [];
  await assert.rejects(
    fetchTrace({ model: "m", text: "t" }, { fields: "thumbs" }, undefined, (j) => told.push(j.done)),
  );
  assert.equal(calls[0].prefer, "respond-async");
  assert.deepEqual(told, [0, 12, 60]);
  assert.deepEqual(
    calls.map((c) => c.url),
    ["/api/trace?fields=thumbs", "/api/trace/jobs/j1", "/api/trace/jobs/j1", "/api/trace/jobs/j1/result"],
  );
});

test("a failed job is an ApiError with its message and status", async () => {
  scripted((url) =>
    isPost(url) ? json(202, job({})) : json(200, job({ state: "failed", message: "over the limit", status: 503 })),
  );
  const err = await fetchTrace({ model: "m", text: "t" }).catch((e) => e);
  assert.ok(err instanceof ApiError);
  assert.equal(err.message, "over the limit");
  assert.equal(err.status, 503);
});

test("aborting the request cancels the job on the server", async () => {
  const controller = new AbortController();
  const calls = scripted((url) => {
    if (isPost(url)) return json(202, job({}));
    if (url === "/api/trace/jobs/j1" && calls.at(-1).method === "DELETE") return json(200, job({ state: "cancelled" }));
    return json(200, job({}));
  });
  const asked = fetchTrace({ model: "m", text: "t" }, {}, controller.signal);
  await new Promise((r) => setTimeout(r, 50));
  controller.abort();
  await assert.rejects(asked, { name: "AbortError" });
  assert.ok(calls.some((c) => c.url === "/api/trace/jobs/j1" && c.method === "DELETE"));
});

test("the parts' jobs are told while any is followed, then null once none is left", async () => {
  const answers = { a: 0, b: 0 };
  scripted((url) => {
    const which = url.includes("layer=0") ? "a" : url.includes("layer=1") ? "b" : url.includes("/jobs/a") ? "a" : "b";
    if (isPost(url))
      return json(202, job({ id: which, url: `/api/trace/jobs/${which}`, result: `/api/trace/jobs/${which}/result` }));
    if (url.endsWith("/result")) return new Response(new ArrayBuffer(0), { status: 500 });
    const polls = ++answers[which];
    const done = which === "a" ? polls >= 1 : polls >= 3; // b outlasts a
    const urls = { url: `/api/trace/jobs/${which}`, result: `/api/trace/jobs/${which}/result` };
    return json(200, job({ id: which, ...urls, state: done ? "done" : "running" }));
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
