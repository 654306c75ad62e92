/**
 * Where a text stops being JSON (RFC 8259), for a 400 that points at the spot. `JSON.parse`
 * names a position for some faults and not for others, so the grammar is walked here, only
 * once a body has been refused. It keeps its own stack of open arrays and objects, so a
 * deeply nested body cannot overflow the call stack.
 */

export interface JsonFault {
  /** Index of the first character that breaks the grammar; the text's length when it ends too soon. */
  offset: number;
  /** What the grammar allowed there, for a person. */
  expected: string;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const ESCAPE = /\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4})/y;

type Want = "value" | "valueOrClose" | "nameOrClose" | "name" | "colon" | "next";

const EXPECTED: Record<Want, string> = {
  value: "a value",
  valueOrClose: 'a value or "]"',
  nameOrClose: 'a "name" in double quotes or "}"',
  name: 'a "name" in double quotes',
  colon: '":"',
  next: "",
};

function skipSpace(text: string, at: number): number {
  let i = at;
  while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i += 1;
  return i;
}

/** The end of the string that opens at `at`, or the fault inside it. */
function stringEnd(text: string, at: number): number | JsonFault {
  let i = at + 1;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 34) return i + 1; // "
    if (c < 0x20) return { offset: i, expected: "a control character escaped (such as \\n)" };
    if (c === 92) {
      ESCAPE.lastIndex = i;
      if (!ESCAPE.test(text)) return { offset: i, expected: 'an escape such as \\n, \\" or \\u00e9' };
      i = ESCAPE.lastIndex;
    } else {
      i += 1;
    }
  }
  return { offset: text.length, expected: 'the closing "' };
}

/** The end of the number, literal or string at `at`, or the fault; containers are the caller's. */
function scalarEnd(text: string, at: number): number | JsonFault {
  const c = text[at];
  if (c === '"') return stringEnd(text, at);
  for (const literal of ["true", "false", "null"]) if (text.startsWith(literal, at)) return at + literal.length;
  NUMBER.lastIndex = at;
  if (NUMBER.test(text)) return NUMBER.lastIndex;
  return { offset: at, expected: "a value" };
}

/** The first fault of `text` as JSON, or undefined when it is JSON. */
export function jsonFault(text: string): JsonFault | undefined {
  const open: string[] = [];
  let want: Want = "value";
  // A leading byte order mark is allowed, as the parser allows it.
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  for (;;) {
    i = skipSpace(text, i);
    const c = text[i];
    const top = open.at(-1);
    if (want === "next") {
      if (top === undefined) return i === text.length ? undefined : { offset: i, expected: "the end of the body" };
      if (c === ",") {
        want = top === "{" ? "name" : "value";
      } else if (c === (top === "{" ? "}" : "]")) {
        open.pop();
      } else {
        return { offset: i, expected: top === "{" ? '"," or "}"' : '"," or "]"' };
      }
      i += 1;
      continue;
    }
    if (want === "colon") {
      if (c !== ":") return { offset: i, expected: EXPECTED.colon };
      want = "value";
      i += 1;
      continue;
    }
    if ((want === "valueOrClose" && c === "]") || (want === "nameOrClose" && c === "}")) {
      open.pop();
      want = "next";
      i += 1;
      continue;
    }
    if (want === "name" || want === "nameOrClose") {
      if (c !== '"') return { offset: i, expected: EXPECTED[want] };
      const end = stringEnd(text, i);
      if (typeof end !== "number") return end;
      want = "colon";
      i = end;
      continue;
    }
    if (i === text.length) return { offset: i, expected: EXPECTED[want] };
    if (c === "{" || c === "[") {
      open.push(c);
      want = c === "{" ? "nameOrClose" : "valueOrClose";
      i += 1;
      continue;
    }
    const end = scalarEnd(text, i);
    if (typeof end !== "number") return end.expected === "a value" ? { offset: i, expected: EXPECTED[want] } : end;
    want = "next";
    i = end;
  }
}

/** "line 3, column 14" of an offset in the text (both counted from 1, columns in characters). */
export function lineAndColumn(text: string, offset: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
    line += 1;
    lineStart = i + 1;
  }
  return `line ${line}, column ${offset - lineStart + 1}`;
}
