// The compact form of a trace (what fetchTrace in api.js asks for, with Accept:
// application/vnd.attnviz.trace+safetensors): a safetensors file. 8 bytes (little-endian) give
// the header's length; the header is JSON naming every array's dtype, shape and byte range, and
// its __metadata__.attnviz is the JSON of the trace's other fields. Arrays are typed-array views
// on the response's own buffer: decoding copies nothing (the header pads the data to 8 bytes, and
// arrays come largest dtype first, so every view is aligned). Pure: no DOM, runs in Node for the
// tests.

/** @typedef {import("./types.js").NDArray} NDArray */
/** @typedef {import("./types.js").Compact} Compact */

export const COMPACT_MEDIA_TYPE = "application/vnd.attnviz.trace+safetensors";

const TYPES = /** @type {const} */ ({ F64: Float64Array, F32: Float32Array, I32: Int32Array, U8: Uint8Array });

/**
 * Decode a compact body.
 * @param {ArrayBuffer} buffer
 * @returns {Compact}
 */
export function decodeCompact(buffer) {
  if (buffer.byteLength < 8) throw new Error("the response is too short to be a trace");
  const view = new DataView(buffer);
  const length = view.getUint32(0, true) + view.getUint32(4, true) * 2 ** 32;
  if (length > buffer.byteLength - 8) throw new Error("the trace's header runs past its end");
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, length)));
  const meta = JSON.parse(header.__metadata__?.attnviz ?? "{}");
  const base = 8 + length;
  /** @type {Record<string, NDArray>} */
  const arrays = {};
  for (const [name, info] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const Type = TYPES[/** @type {keyof typeof TYPES} */ (info.dtype)];
    if (!Type) throw new Error(`${name}: unsupported dtype ${info.dtype}`);
    const [begin, end] = info.data_offsets;
    const count = (end - begin) / Type.BYTES_PER_ELEMENT;
    if (count !== info.shape.reduce((a, b) => a * b, 1) || base + end > buffer.byteLength) {
      throw new Error(`${name}: its bytes do not match its shape ${JSON.stringify(info.shape)}`);
    }
    const at = base + begin;
    const data =
      at % Type.BYTES_PER_ELEMENT === 0 ? new Type(buffer, at, count) : new Type(buffer.slice(at, base + end)); // unaligned (never from attnviz): copy
    arrays[name] = { dtype: info.dtype, shape: info.shape, data };
  }
  return { meta, arrays };
}

/**
 * The block of `arr` at the leading indices (a view, no copy): sub(attentions, 2, 4) is
 * layer 2, head 4, shape [n, n].
 * @param {NDArray} arr
 * @param {...number} index
 * @returns {NDArray}
 */
export function sub(arr, ...index) {
  let offset = 0;
  let size = arr.data.length;
  index.forEach((i, d) => {
    if (!(i >= 0 && i < arr.shape[d])) throw new RangeError(`index ${i} out of range for axis ${d}`);
    size /= arr.shape[d];
    offset += i * size;
  });
  return { dtype: arr.dtype, shape: arr.shape.slice(index.length), data: arr.data.subarray(offset, offset + size) };
}

/**
 * An array as nested JS arrays (what Plotly draws), -Infinity kept.
 * @param {NDArray} arr
 * @returns {any[]}
 */
export function nested(arr) {
  const { shape, data } = arr;
  if (shape.length === 0) return /** @type {any} */ (data[0]);
  if (shape.length === 1) return Array.from(data);
  return Array.from({ length: shape[0] }, (_, i) => nested(sub(arr, i)));
}
