/**
 * Name and code order: ascending by the lower-cased value in code-point order. The key is
 * computed here, in the application, at write time, so both engines order alike (SQLite's
 * lower() folds ASCII only); the database compares it byte-wise (code-point order).
 *
 * The one letter with two lower-case forms, the sigma (ς at the end of a word, σ elsewhere), is
 * folded to σ: "ΝΙΚΌΛΑΟΣ" then begins "Νικόλαος" in any case, and a prefix, whose last letter
 * may end a word that the name goes on with, keys like the start of the name. The key is
 * stored: changing this needs a migration that recomputes it (see 0006).
 */
const FINAL_SIGMA = "ς";

export function sortKey(text: string): string {
  return text.toLowerCase().replaceAll(FINAL_SIGMA, "σ");
}

const MAX_CODE_POINT = 0x10ffff;

/**
 * The smallest string greater than every string that starts with `prefix`, or undefined
 * when there is none. `name_key >= prefix AND name_key < prefixEnd(prefix)` is an index
 * range where LIKE would need escaping and, on PostgreSQL, a special operator class.
 */
export function prefixEnd(prefix: string): string | undefined {
  const points = [...prefix].map((c) => c.codePointAt(0) ?? 0);
  while (points.length > 0 && points[points.length - 1] === MAX_CODE_POINT) points.pop();
  const last = points.pop();
  if (last === undefined) return undefined;
  // Skip the surrogate range, which is not made of code points of its own.
  const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
  return String.fromCodePoint(...points, next);
}
