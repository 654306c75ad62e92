/**
 * Strict query strings for every list-like endpoint. Unknown, repeated and empty parameters
 * are refused, never dropped; numbers are never clamped; each value is checked against its
 * TypeBox schema, the same one the OpenAPI document shows. The paging parameters (`limit`,
 * `cursor`) are declared here; the record lists add their filters (lists/list.query.ts).
 */
import { Type, type TObject, type TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { ApiError, type ErrorCode } from "./errors.js";
import { compareTimes, parseRfc3339, type ParsedTime } from "./time.js";

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

/** A query parameter: its schema (for the OpenAPI document), how its text is read, and its error. */
export interface Param {
  schema: TSchema;
  error: ErrorCode;
  /** The parameter's value, or undefined when the raw text breaks its rules. */
  parse(raw: string): unknown;
  /** What a valid value is, for the error's detail. */
  expects: string;
}

/** A parameter whose value is its text, checked against its schema. */
export function textParam(schema: TSchema, error: ErrorCode, expects: string): Param {
  const check = TypeCompiler.Compile(schema);
  return { schema, error, expects, parse: (raw) => (check.Check(raw) ? raw : undefined) };
}

const LIMIT = Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: "Items per page, 1 to 100." });
const LIMIT_CHECK = TypeCompiler.Compile(LIMIT);

/** `limit` and `cursor`, which every list-like endpoint takes. */
export const PAGE_PARAMS: Readonly<Record<"limit" | "cursor", Param>> = {
  limit: {
    schema: LIMIT,
    error: "invalid_limit",
    // Digits only: "1e2", "+5" and "5.0" are not how an integer is written here.
    parse: (raw) => (/^\d{1,6}$/.test(raw) && LIMIT_CHECK.Check(Number(raw)) ? Number(raw) : undefined),
    expects: `an integer from 1 to ${MAX_LIMIT}`,
  },
  cursor: textParam(
    Type.String({ description: "The `cursor` of the previous page, exactly as received." }),
    "invalid_cursor",
    "the cursor of a previous response",
  ),
};

/** What a page is asked for: how many items, and after which (the cursor, still opaque). */
export interface PageRequest {
  limit: number;
  cursor: string | undefined;
}

/** The query schema of an endpoint that takes these parameters, for the OpenAPI document. */
export function querySchemaOf(params: Readonly<Record<string, Param>>): TObject {
  const properties = Object.fromEntries(Object.entries(params).map(([name, param]) => [name, Type.Optional(param.schema)]));
  return Type.Object(properties, { additionalProperties: false });
}

/** The query string of a request URL, undecoded. */
export function rawQuery(url: string): string {
  const at = url.indexOf("?");
  return at === -1 ? "" : url.slice(at + 1);
}

function quoted(raw: string): string {
  return JSON.stringify(raw.length > 100 ? `${raw.slice(0, 100)}...` : raw);
}

/**
 * A query string reads `+` as a space, so a time zone `+01:00` sent unencoded arrives as
 * ` 01:00`: when the value would be valid with its spaces as `+`, the error says so.
 */
function plusHint(raw: string, param: Param): string {
  return raw.includes(" ") && param.parse(raw.replaceAll(" ", "+")) !== undefined
    ? '; a "+" in a query string means a space: send it as %2B'
    : "";
}

/** Each parameter's value and its text, in the order sent; unknown, repeated, empty and malformed ones are refused. */
export function parseParams(
  rawQuery: string,
  accepted: Readonly<Record<string, Param>>,
): { values: Map<string, unknown>; texts: [string, string][] } {
  const values = new Map<string, unknown>();
  const texts: [string, string][] = [];
  for (const [name, raw] of new URLSearchParams(rawQuery)) {
    const param = Object.hasOwn(accepted, name) ? accepted[name] : undefined;
    if (param === undefined) throw new ApiError("unknown_parameter", `unknown filter parameter "${name}"`, { param: name });
    if (values.has(name)) throw new ApiError("repeated_parameter", `parameter "${name}" is repeated; send it once`, { param: name });
    if (raw === "") throw new ApiError("empty_parameter", `parameter "${name}" is empty; send a value or leave it out`, { param: name });
    const value = param.parse(raw);
    if (value === undefined) {
      throw new ApiError(param.error, `${name} must be ${param.expects}; got ${quoted(raw)}${plusHint(raw, param)}`, { param: name });
    }
    values.set(name, value);
    texts.push([name, raw]);
  }
  return { values, texts };
}

/** The page a query string asks for, from parameters already parsed. */
export function pageRequestOf(values: ReadonlyMap<string, unknown>): PageRequest {
  return { limit: (values.get("limit") as number | undefined) ?? DEFAULT_LIMIT, cursor: values.get("cursor") as string | undefined };
}

/** The canonical form of a query's filters (every parameter but the page's), which a cursor is bound to. */
export function filterKeyOf(texts: readonly [string, string][]): string {
  return JSON.stringify(texts.filter(([k]) => k !== "limit" && k !== "cursor").sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** `limit` and `cursor` of a list that takes no filters (the webhook admin lists). */
export function parsePageRequest(rawQuery: string): PageRequest {
  return pageRequestOf(parseParams(rawQuery, PAGE_PARAMS).values);
}

/** `createdSince` or `createdUntil`: an inclusive bound of a time window, described for the list it bounds. */
export function timeParam(description: string): Param {
  return {
    schema: Type.String({
      format: "date-time",
      description: `RFC 3339 date-time with seconds and zone, e.g. 2026-11-22T10:15:30Z. ${description}`,
    }),
    error: "invalid_time",
    // The strict RFC 3339 parser is the check (the schema's date-time format uses it too).
    parse: parseRfc3339,
    expects: "an RFC 3339 date-time with time and zone, such as 2026-11-22T10:15:30Z",
  };
}

/** A time window's inclusive bounds in milliseconds, from its two parsed parameters (`createdSince` and `createdUntil` unless named); 400 when they are the wrong way round. */
export function timeWindowOf(
  values: ReadonlyMap<string, unknown>,
  names: [since: string, until: string] = ["createdSince", "createdUntil"],
): { since: number | undefined; until: number | undefined } {
  const since = values.get(names[0]) as ParsedTime | undefined;
  const until = values.get(names[1]) as ParsedTime | undefined;
  if (since !== undefined && until !== undefined && compareTimes(since, until) > 0) {
    throw new ApiError("invalid_time_window", `${names[0]} must be earlier than or equal to ${names[1]}`, { param: names[0] });
  }
  return {
    // Stored times are whole milliseconds: a lower bound with a finer fraction rounds up.
    since: since === undefined ? undefined : since.ms + (since.subMillisecond > 0 ? 1 : 0),
    until: until?.ms,
  };
}
