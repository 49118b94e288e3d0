// The compact form's decoder (static/js/core/compact.js) on bodies built here by the safetensors
// rules (tests/test_js.py also decodes a body the server made, in Node and in Python).
import assert from "node:assert/strict";
import { test } from "node:test";

import { decodeCompact, nested, sub } from "../../static/js/core/compact.js";

/** A safetensors body: {name: [dtype, shape, TypedArray]} in the given order, header padded. */
function body(tensors, meta, pad = true) {
  let offset = 0;
  const header = { __metadata__: { attnviz: JSON.stringify(meta) } };
  const chunks = [];
  for (const [name, [dtype, shape, data]] of Object.entries(tensors)) {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    header[name] = { dtype, shape, data_offsets: [offset, offset + bytes.length] };
    chunks.push(bytes);
    offset += bytes.length;
  }
  let text = JSON.stringify(header);
  if (pad) while ((8 + text.length) % 8) text += " ";
  const head = new TextEncoder().encode(text);
  const out = new Uint8Array(8 + head.length + offset);
  new DataView(out.buffer).setUint32(0, head.length, true);
  out.set(head, 8);
  let at = 8 + head.length;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out.buffer;
}

test("arrays come back as views of the right dtype and shape, meta as JSON", () => {
  const f64 = new Float64Array([0.1, 1 / 3, -2.5, 1e-300]);
  const f32 = new Float32Array([0.5, -Infinity, 3.25, 7, 8, 9]);
  const u8 = new Uint8Array([0, 1, 254, 255]);
  const buffer = body(
    { a: ["F64", [2, 2], f64], s: ["F32", [2, 3], f32], t: ["U8", [4], u8] },
    { tokens: ["a", "b"], n: 2, projection: null },
  );
  const { meta, arrays } = decodeCompact(buffer);
  assert.deepEqual(meta, { tokens: ["a", "b"], n: 2, projection: null });
  assert.ok(arrays.a.data instanceof Float64Array && arrays.a.data.buffer === buffer);
  assert.deepEqual(Array.from(arrays.a.data), Array.from(f64));
  assert.deepEqual(arrays.s.shape, [2, 3]);
  assert.equal(arrays.s.data[1], -Infinity);
  assert.deepEqual(nested(arrays.s), [
    [0.5, -Infinity, 3.25],
    [7, 8, 9],
  ]);
  assert.deepEqual(Array.from(arrays.t.data), [0, 1, 254, 255]);
});

test("sub() is a view of the block at the leading indices", () => {
  const data = new Float32Array(2 * 3 * 4).map((_, i) => i);
  const { arrays } = decodeCompact(body({ x: ["F32", [2, 3, 4], data] }, {}));
  const block = sub(arrays.x, 1, 2);
  assert.deepEqual(block.shape, [4]);
  assert.deepEqual(Array.from(block.data), [20, 21, 22, 23]);
  assert.equal(block.data.buffer, arrays.x.data.buffer);
  assert.deepEqual(nested(sub(arrays.x, 0)), [
    [0, 1, 2, 3],
    [4, 5, 6, 7],
    [8, 9, 10, 11],
  ]);
  assert.throws(() => sub(arrays.x, 2), RangeError);
});

test("an unaligned array is copied, not misread", () => {
  const u8 = new Uint8Array([9]);
  const f32 = new Float32Array([1.5, 2.5]);
  const { arrays } = decodeCompact(body({ t: ["U8", [1], u8], f: ["F32", [2], f32] }, {}, false));
  assert.deepEqual(Array.from(arrays.f.data), [1.5, 2.5]);
});

test("broken bodies are errors that say what is wrong", () => {
  assert.throws(() => decodeCompact(new ArrayBuffer(4)), /too short/);
  const good = body({ f: ["F32", [2], new Float32Array([1, 2])] }, {});
  assert.throws(() => decodeCompact(good.slice(0, good.byteLength - 4)), /do not match its shape/);
  const bad = body({ f: ["F32", [3], new Float32Array([1, 2])] }, {});
  assert.throws(() => decodeCompact(bad), /do not match its shape/);
  const i64 = body({ f: ["I64", [1], new BigInt64Array([1n])] }, {});
  assert.throws(() => decodeCompact(i64), /unsupported dtype I64/);
  const view = new DataView(new ArrayBuffer(16));
  view.setUint32(0, 1000, true);
  assert.throws(() => decodeCompact(view.buffer), /runs past its end/);
});
