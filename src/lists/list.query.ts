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
import { compareTimes, parseRfc3339 } from "../platform/time.js";

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
  /** Turns the raw text into the value the schema checks; undefined when it cannot. */
  convert(raw: string): unknown;
  expects: string;
}

const asText = (raw: string) => raw;

const TIME: Param = {
  schema: Type.String({
    format: "date-time",
    description: "RFC 3339 date-time with seconds and zone, e.g. 2026-11-22T10:15:30Z. Inclusive; matches the event date.",
  }),
  error: "invalid_time",
  convert: (raw) => (parseRfc3339(raw) === undefined ? undefined : raw),
  expects: "an RFC 3339 date-time with time and zone, such as 2026-11-22T10:15:30Z",
};

const PARAMS: Record<string, Param> = {
  limit: {
    schema: Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: "Items per page, 1 to 100." }),
    error: "invalid_limit",
    convert: (raw) => (/^\d{1,6}$/.test(raw) ? Number(raw) : undefined),
    expects: `an integer from 1 to ${MAX_LIMIT}`,
  },
  cursor: {
    schema: Type.String({ description: "The `cursor` of the previous page, exactly as received." }),
    error: "invalid_cursor",
    convert: asText,
    expects: "the cursor of a previous response",
  },
  name: {
    schema: Text("Case-insensitive prefix of the name (on transactions, of `employeeName`). Orders by name, ascending."),
    error: "invalid_parameter",
    convert: asText,
    expects: "text of 1 to 200 characters",
  },
  code: {
    schema: Text("Case-insensitive prefix of the code. Orders by code, ascending (by name when `name` is sent too)."),
    error: "invalid_parameter",
    convert: asText,
    expects: "text of 1 to 200 characters",
  },
  createdSince: TIME,
  createdUntil: TIME,
  ...Object.fromEntries(
    RELATIONS.map((r): [string, Param] => [
      r,
      {
        schema: Id(`Only records whose \`${r}\` is this.`),
        error: "invalid_parameter",
        convert: asText,
        expects: "an identifier of 1 to 64 characters from A-Z a-z 0-9 . _ : -",
      },
    ]),
  ),
};

const CHECKS = Object.fromEntries(Object.entries(PARAMS).map(([name, p]) => [name, TypeCompiler.Compile(p.schema)]));

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
  const accepted = acceptedParams(collection);
  const values = new Map<string, string>();
  for (const [name, raw] of new URLSearchParams(rawQuery)) {
    if (!accepted.includes(name)) throw new ApiError("unknown_parameter", `unknown filter parameter "${name}"`, { param: name });
    if (values.has(name)) throw new ApiError("repeated_parameter", `parameter "${name}" is repeated; send it once`, { param: name });
    if (raw === "") throw new ApiError("empty_parameter", `parameter "${name}" is empty; send a value or leave it out`, { param: name });
    const param = PARAMS[name]!;
    const converted = param.convert(raw);
    if (converted === undefined || !CHECKS[name]!.Check(converted)) {
      throw new ApiError(param.error, `${name} must be ${param.expects}; got ${quoted(raw)}`, { param: name });
    }
    values.set(name, raw);
  }
  return toListQuery(values);
}

function toListQuery(values: Map<string, string>): ListQuery {
  const since = values.has("createdSince") ? parseRfc3339(values.get("createdSince")!) : undefined;
  const until = values.has("createdUntil") ? parseRfc3339(values.get("createdUntil")!) : undefined;
  if (since !== undefined && until !== undefined && compareTimes(since, until) > 0) {
    throw new ApiError("invalid_time_window", "createdSince must be earlier than or equal to createdUntil", { param: "createdSince" });
  }
  const relations: Partial<Record<Relation, string>> = {};
  for (const r of RELATIONS) if (values.has(r)) relations[r] = values.get(r)!;
  const firstRelation = RELATIONS.find((r) => values.has(r));
  if ((since !== undefined || until !== undefined) && firstRelation !== undefined) {
    throw new ApiError(
      "window_with_relationship_filter",
      `the time window (createdSince, createdUntil) cannot be combined with ${firstRelation}; page the window alone and filter on your side`,
      { param: firstRelation },
    );
  }
  const limit = values.has("limit") ? Number(values.get("limit")) : DEFAULT_LIMIT;
  const filters = [...values].filter(([k]) => k !== "limit" && k !== "cursor").sort(([a], [b]) => (a < b ? -1 : 1));
  return {
    limit,
    cursor: values.get("cursor"),
    name: values.get("name"),
    code: values.get("code"),
    // Stored times are whole milliseconds: a lower bound with a finer fraction rounds up.
    since: since === undefined ? undefined : since.ms + (since.subMillisecond > 0 ? 1 : 0),
    until: until?.ms,
    relations,
    filterKey: JSON.stringify(filters),
  };
}
