// The "Attention on the picture" card, shown for a trace with images (meta.images): the chosen
// query's attention over one image's token grid laid over the picture itself (views/picture.js):
// the chosen head's weights, its layer's mean over heads, or rollout to its layer, each the
// server's row (parts.js pictureRowPart) cut to the tile's positions. A split picture picks a
// tile or its global view. A patch as the query (picked here, or in any view) shows its row
// over the picture and the text's tokens' weights as bars. Below, the vision tower's chosen
// layer and head, patch to patch (the trace field `vision`, asked for once the panel comes near
// the window): a patch picked shows its row over the picture. The picture is the trace's own
// copy where it carries one (meta.images[i].data_url: a saved file's preview), else the one the
// trace request carried (its body's images), named as the input card lists them (state.images);
// beside it, how the model's processor resized it (meta.images[i].resized). Each draw counts
// itself in its view box's data-drawn (#picture-view, #vision-view).

import { sub } from "../../../core/compact.js";
import { byId, fillOptions, whenNear } from "../../../core/dom.js";
import { quotedToken } from "../../../core/tokens.js";
import { cellOf, defaultTile, largest, outsideImages, tileName, tileValues } from "../../../views/patches.js";
import * as view from "../../../views/picture.js";

/** @typedef {import("../cards.js").CardContext} CardContext */
/** @typedef {import("../../../core/types.js").Compact} Compact */
/** @typedef {import("../../../core/types.js").ImageBlock} ImageBlock */
/** @typedef {"head" | "head_mean" | "rollout"} How */

const OTHERS = 32; // the text's tokens drawn as bars beside a patch's row: its largest weights

/** The card's own choices (not in the link): kept while the trace stays, reset by a new one. */
const choice = {
  generation: -1,
  image: 0,
  tile: 0,
  how: /** @type {How} */ ("head"),
  vLayer: 0,
  vHead: 0,
  /** @type {{i: number, j: number} | null} */
  patch: null,
  /** @type {"picture" | "vision" | null} where the focus goes on the next draw (a pick by keyboard) */
  refocus: null,
};

/** @param {CardContext} ctx */
const blocksOf = (ctx) => /** @type {Compact} */ (ctx.app.first).meta.images ?? [];

/**
 * Image `i`'s picture: the trace's own copy (meta.images[i].data_url, a saved file's), else the
 * one the trace request carried; its name, and how the processor resized it, in words.
 * @param {CardContext} ctx @param {number} i
 */
function pictureOf(ctx, i) {
  const sent = /** @type {{images?: string[]} | undefined} */ (ctx.app.parts?.body)?.images ?? [];
  const block = blocksOf(ctx)[i];
  const named = ctx.app.s.images.find((image) => image.url === sent[i]);
  return {
    src: block?.data_url || sent[i] || "",
    name: named?.name || `image ${i + 1}`,
    resized: block?.resized ?? "",
  };
}

/** The part the overlay draws first, as the card's choices ask it (draw.js asks it ahead).
 * @param {CardContext["p"]} p */
export const asked = (p) => p.pictureRowPart(choice.how);

/** Count a draw in the view box's data-drawn. @param {HTMLElement} box */
const counted = (box) => (box.dataset.drawn = String(Number(box.dataset.drawn ?? 0) + 1));

/** Put the card's pickers from the trace and the choices. @param {CardContext} ctx */
function pickers(ctx) {
  const blocks = blocksOf(ctx);
  const meta = /** @type {Compact} */ (ctx.app.first).meta;
  if (choice.generation !== ctx.app.generation) {
    Object.assign(choice, { generation: ctx.app.generation, image: 0, patch: null, vLayer: 0, vHead: 0 });
    choice.tile = defaultTile(blocks[0]);
  }
  choice.image = Math.min(choice.image, blocks.length - 1);
  const block = blocks[choice.image];
  choice.tile = Math.min(choice.tile, block.tiles.length - 1);
  byId("pic-image-label").hidden = blocks.length < 2;
  fillOptions(
    /** @type {HTMLSelectElement} */ (byId("pic-image")),
    blocks.map((_, i) => [i, pictureOf(ctx, i).name]),
    choice.image,
  );
  const picture = pictureOf(ctx, choice.image);
  byId("pic-resized").textContent = picture.resized
    ? `${picture.name}, ${block.width} × ${block.height} pixels: ${picture.resized}.`
    : "";
  byId("pic-resized").hidden = !picture.resized;
  byId("pic-tile-label").hidden = block.tiles.length < 2;
  fillOptions(
    /** @type {HTMLSelectElement} */ (byId("pic-tile")),
    block.tiles.map((t, k) => [k, tileName(t, k)]),
    choice.tile,
  );
  /** @type {HTMLSelectElement} */ (byId("pic-how")).value = choice.how;
  const vision = meta.vision;
  if (vision) {
    choice.vLayer = Math.min(choice.vLayer, vision.layers - 1);
    choice.vHead = Math.min(choice.vHead, vision.heads - 1);
    fillOptions(
      /** @type {HTMLSelectElement} */ (byId("vt-layer")),
      Array.from({ length: vision.layers }, (_, l) => [l, `layer ${l + 1}`]),
      choice.vLayer,
    );
    fillOptions(
      /** @type {HTMLSelectElement} */ (byId("vt-head")),
      Array.from({ length: vision.heads }, (_, h) => [h, `head ${h + 1}`]),
      choice.vHead,
    );
  }
  byId("vt-layer").parentElement?.parentElement?.toggleAttribute("hidden", !vision);
}

/** Draw the card: hidden without images; else the picture's attention, then the vision
 * tower's (each in the background: the views' draw never waits for them). @param {CardContext} ctx */
export function draw(ctx) {
  const blocks = blocksOf(ctx);
  byId("picture-card").hidden = !blocks.length;
  if (!blocks.length) return Promise.resolve();
  pickers(ctx);
  drawAttention(ctx);
  drawVision(ctx);
  return Promise.resolve();
}

/** @param {CardContext} ctx */
function drawAttention(ctx) {
  const current = ctx.ticket("picture");
  const box = byId("picture-view");
  attention(ctx, current)
    .catch((err) => {
      if (!current()) return;
      box.replaceChildren();
      byId("pic-note").textContent =
        `The attention on the picture could not be drawn: ${/** @type {Error} */ (err).message}`;
    })
    .finally(() => {
      if (current()) counted(box);
    });
}

/** @param {CardContext} ctx @param {() => boolean} current */
async function attention(ctx, current) {
  const { app, p } = ctx;
  await Promise.allSettled([p.thumbsPart()]); // the first screen first
  if (!current()) return;
  const meta = /** @type {Compact} */ (app.first).meta;
  const blocks = blocksOf(ctx);
  const block = blocks[choice.image];
  const tile = block.tiles[choice.tile];
  const query = p.queryIndex();
  const how = choice.how;
  const part = await p.pictureRowPart(how);
  if (!current()) return;
  const row = how === "head" ? sub(part.arrays.attentions, 0, 0, 0) : sub(part.arrays[how], 0, query);
  const at = cellOf(blocks, query);
  const name = at
    ? `patch row ${at.i + 1}, column ${at.j + 1} of image ${at.image + 1}`
    : quotedToken(meta.tokens[query]);
  const whose = {
    head: `layer ${app.s.layer + 1}, head ${app.s.head + 1}`,
    head_mean: `layer ${app.s.layer + 1}, mean of ${meta.heads} heads`,
    rollout: `rollout to layer ${app.s.layer + 1}`,
  }[how];
  const focus = choice.refocus === "picture";
  choice.refocus = null;
  const picture = pictureOf(ctx, choice.image);
  view.render(
    byId("picture-view"),
    {
      src: picture.src,
      alt:
        `${picture.name}: ${block.description ?? `${block.width} × ${block.height} pixels`}` +
        (picture.resized ? `; ${picture.resized}` : ""),
      width: block.width,
      height: block.height,
      box: tile.box,
      rows: tile.rows,
      cols: tile.cols,
      values: tileValues(row.data, tile),
      dtype: row.dtype,
      what: `${name}'s attention (${whose})`,
      unit: "patch",
      marked: at && at.image === choice.image && at.tile === choice.tile ? { i: at.i, j: at.j } : null,
      others: at
        ? largest(outsideImages(row.data, blocks), OTHERS).map(({ index, v }) => ({ label: meta.tokens[index], v }))
        : [],
      pickHow: "makes that patch the query",
    },
    { focus },
    {
      onPick(i, j) {
        choice.refocus = byId("picture-view").contains(document.activeElement) ? "picture" : null;
        ctx.pickQuery(tile.start + i * tile.cols + j);
      },
    },
  );
  const rule = part.meta.rules?.[how];
  const where =
    block.tiles.length === 1
      ? "the picture"
      : tile.label === "global"
        ? "the whole picture"
        : tileName(tile, choice.tile);
  const said = [
    `${tile.rows} × ${tile.cols} tokens over ${where}` +
      (tile.merge > 1 ? ` (each ${tile.merge} × ${tile.merge} patches merged)` : "") +
      ".",
  ];
  if (at) {
    const outside = outsideImages(row.data, blocks).length;
    said.push(
      outside > OTHERS
        ? `The query is a patch: the bars under the picture are the weights of the ${OTHERS} text tokens it attends to most (of ${outside}).`
        : "The query is a patch: the bars under the picture are the text's tokens' weights.",
    );
  }
  if (meta.causal && !at && query < block.start)
    said.push(`A causal model's query sees no later token: ${quotedToken(meta.tokens[query])} comes before the image.`);
  if (rule) said.push(rule);
  byId("pic-note").textContent = said.join(" ");
}

/** @param {CardContext} ctx */
function drawVision(ctx) {
  const current = ctx.ticket("picture-vision");
  const box = byId("vision-view");
  vision(ctx, current)
    .catch((err) => {
      if (!current()) return;
      box.replaceChildren();
      byId("vt-note").textContent =
        `The vision tower's heads could not be shown: ${/** @type {Error} */ (err).message}`;
    })
    .finally(() => {
      if (current()) counted(box);
    });
}

/** @param {CardContext} ctx @param {() => boolean} current */
async function vision(ctx, current) {
  const { app, p } = ctx;
  const box = byId("vision-view");
  await whenNear(box);
  await Promise.allSettled([p.thumbsPart(), p.pictureRowPart(choice.how)]); // the picture's attention first
  if (!current()) return;
  const meta = /** @type {Compact} */ (app.first).meta;
  const block = blocksOf(ctx)[choice.image];
  const tile = block.tiles[choice.tile];
  const part = await p.visionPart(choice.image, choice.tile, choice.vLayer, choice.vHead);
  if (!current()) return;
  const grid = part.meta.vision?.tiles.find((t) => t.image === choice.image && t.tile === choice.tile);
  const matrix = sub(part.arrays.vision, 0, 0); // [P][P]: query patches by key patches
  const P = matrix.shape[0];
  const rows = grid?.rows ?? tile.rows * tile.merge;
  const cols = grid?.cols ?? tile.cols * tile.merge;
  if (rows * cols !== P) throw new Error(`the tile's ${rows} × ${cols} patches are not the ${P} rows sent`);
  const patch = choice.patch ?? { i: Math.floor(rows / 2), j: Math.floor(cols / 2) };
  choice.patch = { i: Math.min(patch.i, rows - 1), j: Math.min(patch.j, cols - 1) };
  const { i, j } = choice.patch;
  const focus = choice.refocus === "vision";
  choice.refocus = null;
  const picture = pictureOf(ctx, choice.image);
  view.render(
    box,
    {
      src: picture.src,
      alt: `${picture.name} under the vision tower's patches`,
      width: block.width,
      height: block.height,
      box: tile.box,
      rows,
      cols,
      values: Array.from(sub(matrix, i * cols + j).data),
      dtype: matrix.dtype,
      what: `patch row ${i + 1}, column ${j + 1}'s attention (vision layer ${choice.vLayer + 1}, head ${choice.vHead + 1})`,
      unit: "patch",
      marked: choice.patch,
      pickHow: "shows that patch's row",
    },
    { focus },
    {
      onPick(pi, pj) {
        choice.refocus = box.contains(document.activeElement) ? "vision" : null;
        choice.patch = { i: pi, j: pj };
        drawVision(ctx);
      },
    },
  );
  const note = [`${rows} × ${cols} patches of the vision tower.`];
  const told = meta.vision?.note;
  if (told) note.push(told.charAt(0).toUpperCase() + told.slice(1));
  else if (grid?.class_token) note.push("Its class token is left out: a row sums to 1 less the class token's share.");
  byId("vt-note").textContent = note.join(" ");
}

/** The card's pickers: image, tile, what it shows, the vision tower's layer and head. @param {CardContext} ctx */
export function wire(ctx) {
  /** @param {string} id @param {(value: string) => void} set @param {boolean} [both] redraw the vision panel too */
  const on = (id, set, both = false) =>
    byId(id).addEventListener("change", (e) => {
      set(/** @type {HTMLSelectElement} */ (e.target).value);
      if (both) choice.patch = null;
      pickers(ctx);
      drawAttention(ctx);
      if (both) drawVision(ctx);
    });
  on(
    "pic-image",
    (v) => Object.assign(choice, { image: Number(v), tile: defaultTile(blocksOf(ctx)[Number(v)]) }),
    true,
  );
  on("pic-tile", (v) => (choice.tile = Number(v)), true);
  on("pic-how", (v) => (choice.how = /** @type {How} */ (v)));
  /** @param {string} id @param {(value: number) => void} set */
  const onVision = (id, set) =>
    byId(id).addEventListener("change", (e) => {
      set(Number(/** @type {HTMLSelectElement} */ (e.target).value));
      drawVision(ctx);
    });
  onVision("vt-layer", (v) => (choice.vLayer = v));
  onVision("vt-head", (v) => (choice.vHead = v));
}
