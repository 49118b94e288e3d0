// The trace's fields as the server declares them (attnviz/capture/fields, made into
// generated/fields.js): a part is asked for by the parameters its fields read and no others
// (ask), a row of a per-query array is cut as the server cuts it (rowCut), and a part's kind of
// numbers is said in a reader's words (words). Pure: runs in Node for the tests.

import { FIELDS } from "./generated/fields.js";

/** @typedef {import("./api.js").Params} Params */
/** @typedef {import("./generated/fields.js").FieldInfo} FieldInfo */

/** A field's declaration; an unknown name is a mistake in the page. @param {string} name */
export function field(name) {
  const info = FIELDS[name];
  if (!info) throw new Error(`no trace field ${name}`);
  return info;
}

/**
 * The query parameters of a part of `fields` (comma-separated names): the `choices` that those
 * fields read, the rest and any null or undefined left out (Python's REGISTRY.ask), so that a
 * part is asked for, and kept, by what changes it alone.
 * @param {string} fields @param {Params} choices
 * @returns {Params}
 */
export function ask(fields, choices) {
  const read = new Set(fields.split(",").flatMap((name) => field(name).params));
  /** @type {Params} */
  const out = { fields };
  for (const [k, v] of Object.entries(choices)) if (read.has(k) && v !== null && v !== undefined) out[k] = v;
  return out;
}

/**
 * How an array of a part of every query row is cut to one query's: "row" (its row `query`),
 * "shown" (the row that shows the query under the token options), or null (not by query).
 * @param {string} name an array's name
 * @returns {"row" | "shown" | null}
 */
export function rowCut(name) {
  const info = FIELDS[name];
  if (!info?.per_head || !info.params.includes("query")) return null;
  return info.drawn ? "shown" : "row";
}

/** A field's kind of numbers in a reader's words ("exact weights"). @param {string} name */
export const words = (name) => FIELDS[name]?.words ?? name.replace(/_/g, " ");
