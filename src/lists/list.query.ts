/**
 * Strict parsing of a list's query string. Unknown, repeated and empty parameters are
 * refused, never dropped; numbers are never clamped; each parameter is checked against its
 * TypeBox schema, the same one the OpenAPI document shows.
 */
import { Type, type TObject, type TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { RELATIONS, type Collection, type Relation } from "../collections/define.js";
import { Id, Text } from "../collections/fields.js";
import { ApiError, type ErrorCode } from "../platform/errors.js";
import { compareTimes, parseRfc3339, type ParsedTime } from "../platform/time.js";

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

export interface ListQuery {
  limit: number;
  cursor: string | undefined;
  name: string | undefined;
  code: string | undefined;
  /** Inclusive bounds on the event date, in milliseconds. */
  since: number | undefined;
  until: number | undefined;
  relations: Partial<Record<Relation, string>>;
  /** Canonical form of every filter (all but limit and cursor), which a cursor is bound to. */
  filterKey: string;
}

interface Param {
  schema: TSchema;
  error: ErrorCode;
  /** The parameter's value, or undefined when the raw text breaks its rules. */
  parse(raw: string): unknown;
  expects: string;
}

/** A parameter whose value is its text, checked against its schema. */
function textParam(schema: TSchema, error: ErrorCode, expects: string): Param {
  const check = TypeCompiler.Compile(schema);
  return { schema, error, expects, parse: (raw) => (check.Check(raw) ? raw : undefined) };
}

const TIME: Param = {
  schema: Type.String({
    format: "date-time",
    description: "RFC 3339 date-time with seconds and zone, e.g. 2026-11-22T10:15:30Z. Inclusive; matches the event date.",
  }),
  error: "invalid_time",
  // The strict RFC 3339 parser is the check (the schema's date-time format uses it too).
  parse: parseRfc3339,
  expects: "an RFC 3339 date-time with time and zone, such as 2026-11-22T10:15:30Z",
};

const LIMIT = Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: "Items per page, 1 to 100." });
const LIMIT_CHECK = TypeCompiler.Compile(LIMIT);
const TEXT_EXPECTS = "text of 1 to 200 characters";

const PARAMS: Record<string, Param> = {
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
  name: textParam(
    Text("Case-insensitive prefix of the name (on transactions, of `employeeName`). Orders by name, ascending."),
    "invalid_parameter",
    TEXT_EXPECTS,
  ),
  code: textParam(
    Text("Case-insensitive prefix of the code. Orders by code, ascending (by name when `name` is sent too)."),
    "invalid_parameter",
    TEXT_EXPECTS,
  ),
  createdSince: TIME,
  createdUntil: TIME,
  ...Object.fromEntries(
    RELATIONS.map((r): [string, Param] => [
      r,
      textParam(
        Id(`Only records whose \`${r}\` is this.`),
        "invalid_parameter",
        "an identifier of 1 to 64 characters from A-Z a-z 0-9 . _ : -",
      ),
    ]),
  ),
};

/** The parameters a collection's list accepts. */
export function acceptedParams(collection: Collection): string[] {
  return [
    "limit",
    "cursor",
    "name",
    ...(collection.codeField === undefined ? [] : ["code"]),
    ...(collection.eventField === undefined ? [] : ["createdSince", "createdUntil"]),
    ...collection.relations,
  ];
}

/** The query schema of a collection's list, for the OpenAPI document. */
export function querySchema(collection: Collection): TObject {
  const properties = Object.fromEntries(acceptedParams(collection).map((name) => [name, Type.Optional(PARAMS[name]!.schema)]));
  return Type.Object(properties, { additionalProperties: false });
}

function quoted(raw: string): string {
  return JSON.stringify(raw.length > 100 ? `${raw.slice(0, 100)}...` : raw);
}

export function parseListQuery(collection: Collection, rawQuery: string): ListQuery {
  const { values, texts } = parseParams(rawQuery, acceptedParams(collection));
  return toListQuery(values, texts);
}

/** The query string of a request URL, undecoded. */
export function rawQuery(url: string): string {
  const at = url.indexOf("?");
  return at === -1 ? "" : url.slice(at + 1);
}

/** A page of a list that takes no filters (the webhook admin lists): `limit` and `cursor`. */
export interface PageQuery {
  limit: number;
  cursor: string | undefined;
}

export const PAGE_PARAMS = ["limit", "cursor"];

/** The query schema of a list that takes only `limit` and `cursor`, for the OpenAPI document. */
export const pageQuerySchema = (): TObject =>
  Type.Object(Object.fromEntries(PAGE_PARAMS.map((name) => [name, Type.Optional(PARAMS[name]!.schema)])), { additionalProperties: false });

export function parsePageQuery(rawQuery: string): PageQuery {
  const { values } = parseParams(rawQuery, PAGE_PARAMS);
  return { limit: (values.get("limit") as number | undefined) ?? DEFAULT_LIMIT, cursor: values.get("cursor") as string | undefined };
}

/** Each parameter's parsed value and its text; unknown, repeated, empty and malformed ones are refused. */
function parseParams(rawQuery: string, accepted: readonly string[]): { values: Map<string, unknown>; texts: [string, string][] } {
  const values = new Map<string, unknown>();
  const texts: [string, string][] = [];
  for (const [name, raw] of new URLSearchParams(rawQuery)) {
    if (!accepted.includes(name)) throw new ApiError("unknown_parameter", `unknown filter parameter "${name}"`, { param: name });
    if (values.has(name)) throw new ApiError("repeated_parameter", `parameter "${name}" is repeated; send it once`, { param: name });
    if (raw === "") throw new ApiError("empty_parameter", `parameter "${name}" is empty; send a value or leave it out`, { param: name });
    const param = PARAMS[name]!;
    const value = param.parse(raw);
    if (value === undefined) throw new ApiError(param.error, `${name} must be ${param.expects}; got ${quoted(raw)}`, { param: name });
    values.set(name, value);
    texts.push([name, raw]);
  }
  return { values, texts };
}

/** `values` holds each parameter's parsed value; `texts` their text, for the filter key. */
function toListQuery(values: Map<string, unknown>, texts: [string, string][]): ListQuery {
  const since = values.get("createdSince") as ParsedTime | undefined;
  const until = values.get("createdUntil") as ParsedTime | undefined;
  if (since !== undefined && until !== undefined && compareTimes(since, until) > 0) {
    throw new ApiError("invalid_time_window", "createdSince must be earlier than or equal to createdUntil", { param: "createdSince" });
  }
  const relations: Partial<Record<Relation, string>> = {};
  for (const r of RELATIONS) if (values.has(r)) relations[r] = values.get(r) as string;
  const firstRelation = RELATIONS.find((r) => values.has(r));
  if ((since !== undefined || until !== undefined) && firstRelation !== undefined) {
    throw new ApiError(
      "window_with_relationship_filter",
      `the time window (createdSince, createdUntil) cannot be combined with ${firstRelation}; page the window alone and filter on your side`,
      { param: firstRelation },
    );
  }
  const limit = (values.get("limit") as number | undefined) ?? DEFAULT_LIMIT;
  const filters = texts.filter(([k]) => k !== "limit" && k !== "cursor").sort(([a], [b]) => (a < b ? -1 : 1));
  return {
    limit,
    cursor: values.get("cursor") as string | undefined,
    name: values.get("name") as string | undefined,
    code: values.get("code") as string | undefined,
    // Stored times are whole milliseconds: a lower bound with a finer fraction rounds up.
    since: since === undefined ? undefined : since.ms + (since.subMillisecond > 0 ? 1 : 0),
    until: until?.ms,
    relations,
    filterKey: JSON.stringify(filters),
  };
}
