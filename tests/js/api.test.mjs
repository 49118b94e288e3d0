// static/js/core/api.js on a busy server: a 503 is waited out for its Retry-After and tried again,
// and `busy` says when the next try is due. fetch is replaced by a scripted server here; the
// real server's 503s are tested in tests/api/test_hosting.py and in the browser.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ApiError, busy, fetchModels, retryAfterSeconds } from "../../static/js/core/api.js";

/** A fetch that answers from `script` (status, headers) in turn and records each call's time. */
function scripted(script) {
  const calls = [];
  globalThis.fetch = async (url) => {
    calls.push({ url, at: Date.now() });
    const [status, headers] = script[Math.min(calls.length - 1, script.length - 1)];
    const body = status === 200 ? { models: [] } : { message: "busy: full", detail: [] };
    return new Response(JSON.stringify(body), { status, headers });
  };
  return calls;
}

test("a 503 is tried again after its Retry-After, and busy says when", async () => {
  const calls = scripted([
    [503, { "Retry-After": "1" }],
    [200, {}],
  ]);
  const seen = [];
  const listener = () => seen.push(busy.retryAt);
  busy.addEventListener("change", listener);
  const t0 = Date.now();
  const body = await fetchModels();
  busy.removeEventListener("change", listener);
  assert.deepEqual(body, { models: [] });
  assert.equal(calls.length, 2);
  const waited = calls[1].at - calls[0].at;
  assert.ok(waited >= 1000 && waited <= 1300, `waited ${waited} ms`); // 1 s plus up to a fifth
  assert.equal(seen.length, 2); // set, then cleared
  assert.ok(seen[0] >= t0 + 1000 && seen[0] <= t0 + 1300);
  assert.equal(seen[1], 0);
  assert.equal(busy.retryAt, 0);
});

test("any other error is not retried", async () => {
  const calls = scripted([[422, {}]]);
  await assert.rejects(fetchModels(), (e) => e instanceof ApiError && e.status === 422);
  assert.equal(calls.length, 1);
});

test("Retry-After is read as whole seconds, at least one", () => {
  const r = (v) => new Response("", { status: 503, headers: v === null ? {} : { "Retry-After": v } });
  assert.equal(retryAfterSeconds(r("7")), 7);
  assert.equal(retryAfterSeconds(r(null)), 1);
  assert.equal(retryAfterSeconds(r("0")), 1);
  assert.equal(retryAfterSeconds(r("soon")), 1);
});

test("a request cut on the way is asked once more, and only once", async () => {
  let calls = 0;
  globalThis.fetch = async () => {
    calls++;
    throw new TypeError("Failed to fetch");
  };
  await assert.rejects(fetchModels(), TypeError);
  assert.equal(calls, 2);
  calls = 0;
  globalThis.fetch = async () => {
    calls++;
    if (calls === 1) throw new TypeError("Failed to fetch");
    return new Response(JSON.stringify({ models: ["m"] }), { status: 200 });
  };
  assert.deepEqual(await fetchModels(), { models: ["m"] });
  assert.equal(calls, 2);
});
