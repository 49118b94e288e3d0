// A saved file (static/js/offline/) links the page's modules itself: offline/loader.js rewrites
// each module's relative imports to blob: URLs. These tests hold every module to the import
// forms it rewrites, and the import graph to no cycle; and source.js's pure pieces.
import assert from "node:assert/strict";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { Refusal } from "../../static/js/core/controller.js";
import { cutRow, normal, openEmbedded, refusal, unshuffle } from "../../static/js/offline/source.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../static/js");
const LOADER = readFileSync(join(ROOT, "offline/loader.js"), "utf8");
// The loader's own pattern, read from its source (a classic script: nothing to import).
const literal = /const IMPORT = \/(.+)\/([a-z]*);/.exec(LOADER);
assert.ok(literal, "loader.js defines const IMPORT = /.../flags;");
const IMPORT = new RegExp(literal[1], literal[2]);

/** @param {string} dir @returns {string[]} */
const walk = (dir) =>
  readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith(".js") ? [p] : [];
  });
const MODULES = walk(ROOT).filter((p) => !p.endsWith("offline/loader.js"));

/** The code without its comments (strings kept: none of ours holds a comment opener). @param {string} s */
const code = (s) => s.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");

/** Each static import or re-export statement of a module, whole. @param {string} s */
const statements = (s) =>
  [
    ...code(s).matchAll(
      /^\s*(import\s[^;]*?["'][^"']+["']|import\s*["'][^"']+["']|export\s*(?:\*(?:\s*as\s+\w+)?|\{[^}]*\})\s*from\s*["'][^"']+["'])/gm,
    ),
  ].map((m) => m[1]);

test("every module's imports are relative ES imports the loader rewrites", () => {
  assert.ok(MODULES.length > 20, "found the page's modules");
  for (const path of MODULES) {
    const src = readFileSync(path, "utf8");
    const rel = relative(ROOT, path);
    assert.doesNotMatch(code(src), /\bimport\s*\(/, `${rel}: no dynamic import() (the file cannot resolve it)`);
    assert.doesNotMatch(code(src), /\brequire\s*\(/, `${rel}: no require()`);
    for (const stmt of statements(src)) {
      const found = [...stmt.matchAll(new RegExp(IMPORT.source, "gm"))];
      assert.equal(found.length, 1, `${rel}: the loader rewrites this import: ${stmt}`);
      assert.match(found[0][4], /^\.{1,2}\/[\w./-]+\.js$/, `${rel}: a relative .js path: ${stmt}`);
    }
    // Every `from "..."` and `import "..."` anywhere in the code is one the loader sees.
    const all = [...code(src).matchAll(/\b(?:from|import)\s*["']([^"']+)["']/g)].map((m) => m[1]);
    const rewritten = [...code(src).matchAll(new RegExp(IMPORT.source, "gm"))].map((m) => m[4]);
    assert.deepEqual(rewritten, all, `${rel}: every specifier is relative and rewritten`);
  }
});

test("the import graph has no cycle", () => {
  /** @type {Map<string, string[]>} */
  const edges = new Map();
  for (const path of MODULES) {
    const deps = [...code(readFileSync(path, "utf8")).matchAll(new RegExp(IMPORT.source, "gm"))].map((m) =>
      resolve(dirname(path), m[4]),
    );
    edges.set(path, deps);
  }
  const state = new Map(); // 1: on the path, 2: done
  /** @param {string} p @param {string[]} trail */
  const visit = (p, trail) => {
    if (state.get(p) === 2) return;
    assert.notEqual(state.get(p), 1, `a cycle: ${[...trail, p].map((x) => relative(ROOT, x)).join(" -> ")}`);
    state.set(p, 1);
    for (const d of edges.get(p) || []) {
      assert.ok(edges.has(d), `${relative(ROOT, p)} imports ${relative(ROOT, d)}, which is not there`);
      visit(d, [...trail, p]);
    }
    state.set(p, 2);
  };
  for (const p of edges.keys()) visit(p, []);
});

/** A compact body of F32 arrays (as the server writes one), shuffled as html.py shuffles it.
 * @param {Record<string, {shape: number[], data: number[]}>} arrays @param {object} meta */
function body(arrays, meta) {
  /** @type {Record<string, any>} */
  const header = { __metadata__: { attnviz: JSON.stringify(meta) } };
  let at = 0;
  for (const [name, a] of Object.entries(arrays)) {
    header[name] = { dtype: "F32", shape: a.shape, data_offsets: [at, at + 4 * a.data.length] };
    at += 4 * a.data.length;
  }
  let head = JSON.stringify(header);
  head += " ".repeat((8 - ((8 + head.length) % 8)) % 8);
  const out = new Uint8Array(8 + head.length + at);
  new DataView(out.buffer).setUint32(0, head.length, true);
  out.set(new TextEncoder().encode(head), 8);
  let base = 8 + head.length;
  for (const a of Object.values(arrays)) {
    const bytes = new Uint8Array(new Float32Array(a.data).buffer);
    const n = a.data.length;
    for (let b = 0; b < 4; b++) for (let i = 0; i < n; i++) out[base + b * n + i] = bytes[i * 4 + b];
    base += 4 * n;
  }
  return out.buffer;
}

/** The same body as the server sends it (unshuffled). @param {Parameters<typeof body>} args */
const plain = (...args) => unshuffle(body(...args));

test("unshuffle gives back every float", () => {
  const data = [0.5, 1e-7, 0.25, -3, 0.123456789, 1];
  const buf = unshuffle(body({ x: { shape: [2, 3], data } }, {}));
  const head = new DataView(buf).getUint32(0, true);
  assert.deepEqual(Array.from(new Float32Array(buf, 8 + head, 6)), data.map(Math.fround));
});

test("the token options' false is their default; any thumbnails answer any side", async () => {
  assert.deepEqual(normal({ fields: "view", hide_special: false, merge_words: true, layer: 0, x: null }), {
    fields: "view",
    merge_words: "true",
    layer: "0",
  });
  const thumbs = plain({ v: { shape: [1], data: [1] } }, { which: "thumbs" });
  const parts = openEmbedded([{ params: { fields: "thumbs", thumb: 80, hide_special: false }, body: thumbs }]);
  assert.equal((await parts.get({ fields: "thumbs", thumb: 123, merge_words: false })).meta.which, "thumbs");
  await assert.rejects(
    parts.get({ fields: "thumbs", thumb: 123, merge_words: true }),
    /This file has no thumbnails with words merged; it holds the thumbnails of the tokens as the model reads them\.$/,
  );
  await assert.rejects(
    parts.get({ fields: "thumbs", thumb: 0, thumb_layer: 1 }),
    /This file has no 8-bit weights for layer 2; it holds no 8-bit weights at all\./,
  );
});

test("a query's row is cut from the part of every row; a hidden row is refused", async () => {
  // 1 layer, 1 head, 3 tokens; view under hide_special: token 0 hidden, rows [1], [2].
  const att = [0.1, 0.2, 0.7, 0.3, 0.3, 0.4, 0.5, 0.25, 0.25];
  const view = [0.4, 0.6, 0.5, 0.5];
  const meta = { token_view: { groups: [[1], [2]] }, query: null, layer: 0, head: 0 };
  const whole = plain(
    {
      attentions: { shape: [1, 1, 3, 3], data: att },
      view: { shape: [1, 1, 2, 2], data: view },
      keys: { shape: [1, 3, 1], data: [1, 2, 3] },
    },
    meta,
  );
  const params = { fields: "attentions,keys,view", layer: 0, head: 0, hide_special: true };
  const parts = openEmbedded([{ params, body: whole }]);
  const row = await parts.get({ ...params, query: 2 });
  assert.equal(row.meta.query, 2);
  assert.deepEqual(row.arrays.attentions.shape, [1, 1, 1, 3]);
  assert.deepEqual(Array.from(row.arrays.attentions.data), att.slice(6).map(Math.fround));
  assert.deepEqual(Array.from(row.arrays.view.data), view.slice(2).map(Math.fround));
  assert.deepEqual(Array.from(row.arrays.keys.data), [1, 2, 3]);
  await assert.rejects(parts.get({ ...params, query: 0 }), /token 1 is hidden/);
  assert.throws(() => cutRow({ meta: {}, arrays: { attentions: row.arrays.attentions } }, 1), /out of range/);
});

test("a part the file lacks is refused in one true sentence: what it has of that head, where it holds that kind", async () => {
  const b = plain({ v: { shape: [1], data: [1] } }, {});
  const parts = openEmbedded([
    { params: { fields: "thumbs", thumb: 80 }, body: b },
    { params: { fields: "view", layer: 1, head: 0 }, body: b },
    { params: { fields: "view", layer: 1, head: 1 }, body: b },
    { params: { fields: "view", layer: 1, head: 2 }, body: b },
    { params: { fields: "view", layer: 0, head: 4 }, body: b },
    { params: { fields: "queries,keys,scores,attentions", layer: 0, head: 4 }, body: b },
    { params: { fields: "head_mean", layer: 1 }, body: b },
  ]);
  const said = async (/** @type {any} */ params) =>
    parts.get(params).then(
      () => assert.fail("answered"),
      (err) => {
        assert.ok(err instanceof Refusal);
        return err.message;
      },
    );
  assert.equal(
    await said({ fields: "view", layer: 3, head: 0 }),
    "This file has no exact weights for layer 4, head 1, only its small 8-bit thumbnail in the model " +
      "view's grid; it holds layer 1 head 5 and layer 2 heads 1–3 exactly.",
  );
  // The head's exact weights are here, its queries and keys are not: the sentence says both.
  assert.equal(
    await said({ fields: "queries,keys,scores,attentions", layer: 1, head: 0, query: 3 }),
    "This file has no queries and keys for layer 2, head 1, only its exact weights and its small " +
      "8-bit thumbnail in the model view's grid; it holds the queries and keys of layer 1 head 5.",
  );
  assert.equal(
    await said({ fields: "head_max", layer: 1 }),
    "This file has no head max for layer 2; it holds no head max at all.",
  );
  // Never a developer's command or the request's parameters (issue 41).
  assert.doesNotMatch(await said({ fields: "view", layer: 3, head: 0 }), /attnviz export|--budget|fields=|asked:/);
  assert.match(refusal({ fields: "view", layer: "0", head: "0" }, []), /it holds no exact weights at all/);
  // A long list is capped, the rest counted.
  const many = Array.from({ length: 20 }, (_, k) => ({ fields: "view", layer: String(k), head: "0" }));
  assert.match(refusal({ fields: "view", layer: "30", head: "0" }, many), /layer 8 head 1 and 12 more exactly\.$/);
  parts.seed({ fields: "view", layer: 3, head: 0 }, { meta: { seeded: true }, arrays: {} });
  assert.equal((await parts.get({ layer: 3, head: 0, fields: "view" })).meta.seeded, true);
});
