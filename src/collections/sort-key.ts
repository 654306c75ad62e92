/**
 * Name and code order: ascending by the lower-cased value in code-point order. The key is
 * computed here, in the application, at write time, so both engines order alike (SQLite's
 * lower() folds ASCII only); the database compares it byte-wise (code-point order).
 */
export function sortKey(text: string): string {
  // One code point at a time where it matters: String#toLowerCase depends on context only
  // for the capital sigma (ς at the end of a word, σ elsewhere), and then a prefix could
  // lower-case differently from the start of the name it begins.
  if (!text.includes("Σ")) return text.toLowerCase();
  let key = "";
  for (const c of text) key += c.toLowerCase();
  return key;
}

const MAX_CODE_POINT = 0x10ffff;

/**
 * The smallest string greater than every string that starts with `prefix`, or undefined
 * when there is none. `name_key >= prefix AND name_key < prefixEnd(prefix)` is an index
 * range where LIKE would need escaping and, on PostgreSQL, a special operator class.
 */
export function prefixEnd(prefix: string): string | undefined {
  const points = [...prefix].map((c) => c.codePointAt(0)!);
  while (points.length > 0 && points[points.length - 1] === MAX_CODE_POINT) points.pop();
  const last = points.pop();
  if (last === undefined) return undefined;
  // Skip the surrogate range, which is not made of code points of its own.
  const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
  return String.fromCodePoint(...points, next);
}
