// The images of a trace as blocks of the rows and columns a view shows: each image's positions
// (meta.images[i].start..stop) one labelled block ("image 1: 8 × 8 patches"), which can be
// collapsed to one row and one column. Collapsed, the block's key column is the SUM of the
// weights over its keys and its query row the MEAN of its query rows (as merged word pieces
// are, services/tokenview.py), in float64 from the trace's own numbers; rows that summed to 1
// still do. Also the browser's checks of an image file before it is sent. Pure: no DOM, runs in
// Node for the tests.

/** @typedef {import("../../core/types.js").NDArray} NDArray */
/** @typedef {import("../../core/types.js").ImageMeta} ImageMeta */

/** An image with at least this many tokens starts collapsed. */
export const COLLAPSE_FROM = 64;

/** What a collapsed block's numbers are, for hover texts, tables and notes. */
export const COLLAPSE_RULE =
  "A collapsed image's column is the sum of the weights over its patches (keys); its row is the mean of its patches' rows (queries).";

/**
 * One image's block in words: "image 1: 8 × 8 patches", or for a split picture "image 1: 4
 * tiles of 4 × 4 and a global 4 × 4".
 * @param {ImageMeta} image
 */
export function blockLabel(image) {
  const name = `image ${image.image + 1}`;
  const tiles = image.tiles ?? [];
  const grid = (/** @type {{rows: number, cols: number}} */ t) => `${t.rows} × ${t.cols}`;
  if (tiles.length <= 1) return `${name}: ${grid(tiles[0] ?? image)} patches`;
  const global = tiles.filter((t) => t.label === "global");
  const parts = tiles.filter((t) => t.label !== "global");
  const shapes = [...new Set(parts.map(grid))];
  const split = `${parts.length} tile${parts.length === 1 ? "" : "s"} of ${shapes.join(" or ")}`;
  return `${name}: ${split}${global.map((t) => ` and a global ${grid(t)}`).join("")}`;
}

/**
 * The image blocks among the rows a view shows: for each image, the shown rows (indices into
 * `groups`, the token view's original tokens per row) that are its positions; an image whose
 * tokens are hidden (hide special tokens) has none and is left out.
 * @param {ImageMeta[] | null | undefined} images meta.images
 * @param {number[][]} groups
 * @returns {{image: number, label: string, rows: number[], tokens: number}[]}
 */
export function imageBlocks(images, groups) {
  return (images ?? [])
    .map((image) => {
      const inside = (/** @type {number} */ i) => i >= image.start && i < image.stop;
      const rows = groups.flatMap((g, r) => (g.length && g.every(inside) ? [r] : []));
      return { image: image.image, label: blockLabel(image), rows, tokens: image.stop - image.start };
    })
    .filter((b) => b.rows.length > 0);
}

/**
 * The shown rows' labels with each image patch named by its place: "image 1 · 3,4" (row 3,
 * column 4 of its grid, 1-based), "image 1 · tile 2 · 3,4" in a split picture ("global" for
 * its global view); the processor's tags around the tiles keep their token.
 * @param {ImageMeta[] | null | undefined} images @param {number[][]} groups @param {string[]} labels
 */
export function patchLabels(images, groups, labels) {
  /** @type {Map<number, string>} */
  const named = new Map();
  for (const image of images ?? []) {
    const tiles = image.tiles ?? [];
    tiles.forEach((t, k) => {
      const tile = tiles.length > 1 ? (t.label === "global" ? " · global" : ` · tile ${k + 1}`) : "";
      for (let q = 0; q < t.rows * t.cols; q++) {
        named.set(t.start + q, `image ${image.image + 1}${tile} · ${Math.floor(q / t.cols) + 1},${(q % t.cols) + 1}`);
      }
    });
  }
  return labels.map((label, r) => (groups[r].length === 1 ? (named.get(groups[r][0]) ?? label) : label));
}

/** True when the images start collapsed: one has at least COLLAPSE_FROM tokens. @param {ImageMeta[] | null | undefined} images */
export const collapsedByDefault = (images) => (images ?? []).some((i) => i.stop - i.start >= COLLAPSE_FROM);

/**
 * The rows a view draws: every shown row alone, except each collapsed block's, which are one.
 * `labels` are the new rows' (a collapsed block's: "image 1"); `block[r]` the block index of
 * new row r when it is a collapsed block, else null.
 * @param {string[]} labels the shown rows' labels
 * @param {ReturnType<typeof imageBlocks>} blocks
 * @param {boolean} collapsed
 * @returns {{groups: number[][], labels: string[], block: (number | null)[]}}
 */
export function collapsePlan(labels, blocks, collapsed) {
  /** @type {Map<number, number>} */
  const first = new Map(); // a block's first shown row -> its index
  const inBlock = new Set();
  if (collapsed) {
    blocks.forEach((b, k) => {
      first.set(b.rows[0], k);
      for (const r of b.rows) inBlock.add(r);
    });
  }
  /** @type {{groups: number[][], labels: string[], block: (number | null)[]}} */
  const plan = { groups: [], labels: [], block: [] };
  labels.forEach((label, r) => {
    const k = first.get(r);
    if (k !== undefined) {
      plan.groups.push(blocks[k].rows);
      plan.labels.push(`image ${blocks[k].image + 1}`);
      plan.block.push(k);
    } else if (!inBlock.has(r)) {
      plan.groups.push([r]);
      plan.labels.push(label);
      plan.block.push(null);
    }
  });
  return plan;
}

/** True when the plan changes nothing (no block collapsed). @param {{groups: number[][]}} plan */
export const identityPlan = (plan) => plan.groups.every((g) => g.length === 1);

/**
 * A rows x columns matrix under the plan: entry (a, b) is the mean over the rows of group a of
 * the sum over the columns of group b, in float64. The very matrix when the plan changes
 * nothing.
 * @param {NDArray} matrix [R][C], R = C = the shown rows
 * @param {number[][]} groups
 * @returns {NDArray}
 */
export function collapseMatrix(matrix, groups) {
  if (groups.every((g) => g.length === 1)) return matrix;
  const C = matrix.shape[1] ?? matrix.shape[0];
  const m = groups.length;
  const out = new Float64Array(m * m);
  groups.forEach((rows, a) => {
    groups.forEach((cols, b) => {
      let total = 0;
      for (const i of rows) for (const j of cols) total += matrix.data[i * C + j];
      out[a * m + b] = total / rows.length;
    });
  });
  return { dtype: "F64", shape: [m, m], data: out };
}

/**
 * One layer's 8-bit weights of every head (values [H][n][n], weight = value * scale[h] / 255)
 * under the plan: the collapsed weights themselves as values, with a scale of 255 per head
 * (so that value * scale / 255 is the weight). The very arrays when the plan changes nothing.
 * @param {NDArray} values @param {NDArray} scale @param {number[][]} groups
 * @returns {{values: NDArray, scale: NDArray}}
 */
export function collapseLayer(values, scale, groups) {
  if (groups.every((g) => g.length === 1)) return { values, scale };
  const [H, n] = values.shape;
  const m = groups.length;
  const out = new Float64Array(H * m * m);
  for (let h = 0; h < H; h++) {
    const weights = Float64Array.from(
      values.data.subarray(h * n * n, (h + 1) * n * n),
      (v) => (v * scale.data[h]) / 255,
    );
    const head = collapseMatrix({ dtype: "F64", shape: [n, n], data: weights }, groups);
    out.set(head.data, h * m * m);
  }
  return {
    values: { dtype: "F64", shape: [H, m, m], data: out },
    scale: { dtype: "F64", shape: [H], data: new Float64Array(H).fill(255) },
  };
}

/**
 * The hover text's line for cell (row, col) of a view drawn under the plan: what a collapsed
 * block's number is; "" for a cell of two ordinary rows.
 * @param {{block: (number | null)[], groups: number[][]}} plan
 * @param {number} row @param {number} col
 */
export function collapsedNote(plan, row, col) {
  const rows = plan.block[row] !== null ? plan.groups[row].length : 0;
  const cols = plan.block[col] !== null ? plan.groups[col].length : 0;
  const said = [];
  if (cols) said.push(`the sum over the image's ${cols} keys`);
  if (rows) said.push(`the mean of its ${rows} query rows`);
  return said.length ? `exact: ${said.join(", ")}` : "";
}

/**
 * Why a file cannot be sent as an image (null when it can): its type, its size, how many the
 * text already has, each against the server's caps (the model list's ``images``).
 * @param {{name: string, type: string, size: number}} file
 * @param {{max_images: number, max_bytes: number, types: string[]}} caps
 * @param {number} count the images already added
 */
export function imageProblem(file, caps, count) {
  const kinds = caps.types.map((t) => t.replace(/^image\//, "").toUpperCase()).join(", ");
  if (!caps.types.includes(file.type))
    return `images: ${file.name} is ${file.type ? `of type ${file.type}` : "of no image type"}; an image must be one of ${kinds}.`;
  if (file.size > caps.max_bytes)
    return `images: ${file.name} is ${sizeText(file.size)}; each image may be at most ${sizeText(caps.max_bytes)}.`;
  if (count >= caps.max_images)
    return `images: at most ${caps.max_images} image${caps.max_images === 1 ? "" : "s"} per text; remove one to add ${file.name}.`;
  return null;
}

/** A byte count in words: "812 bytes", "48.2 KB", "10 MB". @param {number} bytes */
export function sizeText(bytes) {
  if (bytes < 1024) return `${bytes} bytes`;
  const [unit, size] = bytes < 1024 ** 2 ? ["KB", bytes / 1024] : ["MB", bytes / 1024 ** 2];
  return `${Number(size.toFixed(size < 10 ? 1 : 0))} ${unit}`;
}
