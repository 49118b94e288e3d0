// Every endpoint URL of the page lives in static/js/core/api.js: no other module (nor its
// comments) names a path under /api/, so the API client is the one place that knows the server.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../static/js/", import.meta.url));
const API = "core/api.js";

/** Every .js file under `dir`, as paths relative to static/js. @param {string} dir */
function modules(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return modules(path);
    return entry.name.endsWith(".js") ? [relative(ROOT, path).split("\\").join("/")] : [];
  });
}

test("no module but core/api.js names an /api/ path", () => {
  const all = modules(ROOT);
  // The walk reaches every folder: the entry, core/, views/ and each mode.
  for (const path of [
    "main.js",
    API,
    "views/modelview.js",
    "modes/toy/index.js",
    "modes/sentence/index.js",
    "modes/train/index.js",
  ]) {
    assert.ok(all.includes(path), `${path} not found under static/js`);
  }
  const api = readFileSync(join(ROOT, API), "utf8");
  for (const endpoint of ["/api/presets", "/api/models", "/api/trace", "/api/train"]) {
    assert.ok(api.includes(endpoint), `${API} does not name ${endpoint}`);
  }
  const offenders = all
    .filter((path) => path !== API)
    .flatMap((path) =>
      readFileSync(join(ROOT, path), "utf8")
        .split("\n")
        .map((line, i) => (line.includes("/api/") ? `${path}:${i + 1}: ${line.trim()}` : null))
        .filter((x) => x !== null),
    );
  assert.deepEqual(offenders, [], "endpoint URLs belong in core/api.js");
});
