/**
 * Validation of a sync batch against the collection's input schema. Every invalid record is
 * reported with its index and the field at fault; nothing is fixed up silently.
 */
import { TypeCompiler, ValueErrorType, type TypeCheck, type ValueError } from "@sinclair/typebox/compiler";
import type { TObject, TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { Collection } from "../collections/define.js";
import type { ApiRecord } from "../collections/record.js";
import { ApiError, type RecordError } from "../platform/errors.js";

export const MAX_BATCH = 1000;
/**
 * The most fields named for one record: every offending record is named, but one with thousands
 * of unknown fields (a 4 MiB body holds that many) would make the answer many times the request.
 */
export const MAX_FIELDS_REPORTED = 20;

const compiled = new Map<string, TypeCheck<TObject>>();

function checker(collection: Collection): TypeCheck<TObject> {
  let check = compiled.get(collection.name);
  if (check === undefined) {
    check = TypeCompiler.Compile(collection.input);
    compiled.set(collection.name, check);
  }
  return check;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The field a validator error path (a JSON Pointer) names, as it was sent; nested as a.b. */
function fieldOf(path: string): string {
  return path
    .split("/")
    .slice(1)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
    .join(".");
}

/** A message a person can act on, for the validator's error kinds that need one. */
function messageOf(error: ValueError, field: string): string {
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return "required field is missing";
    case ValueErrorType.ObjectAdditionalProperties:
      return field === "createdAt" || field === "updatedAt" ? `${field} is assigned by cribline; do not send it` : "unknown field";
    case ValueErrorType.StringFormat:
      return error.schema.format === "date-time"
        ? "must be an RFC 3339 date-time with seconds and zone, such as 2026-11-22T10:15:30Z"
        : "must be text without control characters";
    case ValueErrorType.StringPattern:
      return "must be 1 to 64 characters from A-Z a-z 0-9 . _ : -";
    case ValueErrorType.Union: {
      const members = ((error.schema.anyOf ?? []) as TSchema[]).filter((schema) => schema.type !== "null");
      if (members.length > 0 && members.every((schema) => schema.const !== undefined)) {
        return `must be one of ${members.map((schema) => JSON.stringify(schema.const)).join(", ")}`;
      }
      // A nullable field: what its one other form says of the value.
      const [only] = members.length === 1 ? members : [];
      const first = only === undefined ? undefined : Value.Errors(only, error.value).First();
      return first === undefined ? error.message : messageOf(first, field);
    }
    default:
      return error.message;
  }
}

/** A record's offending fields, one message each (the first is the most telling), and how many there are. */
function recordErrors(check: TypeCheck<TObject>, record: unknown, index: number): { errors: RecordError[]; fields: number } {
  if (!isPlainObject(record)) return { errors: [{ index, field: "(record)", message: "each record must be a JSON object" }], fields: 1 };
  // The compiled check is fast; the error walk is not, so it runs only on a failed record.
  if (check.Check(record)) return { errors: [], fields: 0 };
  const errors: RecordError[] = [];
  const seen = new Set<string>();
  for (const error of check.Errors(record)) {
    const field = fieldOf(error.path);
    if (seen.has(field)) continue;
    seen.add(field);
    if (errors.length < MAX_FIELDS_REPORTED) errors.push({ index, field, message: messageOf(error, field) });
  }
  return { errors, fields: seen.size };
}

/** Returns the batch's records, or throws a 400 naming every offending index and field. */
export function validateBatch(collection: Collection, body: unknown): ApiRecord[] {
  if (!isPlainObject(body) || !Array.isArray(body.data)) {
    throw new ApiError("invalid_body", 'the body must be a JSON object {"data": [record, ...]}');
  }
  const extra = Object.keys(body).find((key) => key !== "data");
  if (extra !== undefined) throw new ApiError("invalid_body", `unknown body field "${extra}": the body is {"data": [...]}`);
  const records: unknown[] = body.data;
  if (records.length < 1 || records.length > MAX_BATCH) {
    throw new ApiError("invalid_body", `data must hold 1 to ${MAX_BATCH} records, got ${records.length}`);
  }
  const check = checker(collection);
  const errors: RecordError[] = [];
  let fields = 0;
  const firstIndex = new Map<string, number>();
  records.forEach((record, index) => {
    const found = recordErrors(check, record, index);
    errors.push(...found.errors);
    fields += found.fields;
    const id = isPlainObject(record) ? record.id : undefined;
    if (typeof id !== "string") return;
    const earlier = firstIndex.get(id);
    if (earlier === undefined) firstIndex.set(id, index);
    else {
      errors.push({ index, field: "id", message: `id "${id}" appears already at index ${earlier}; send each record once` });
      fields += 1;
    }
  });
  if (errors.length > 0) {
    const more = fields > errors.length ? ` (the first ${MAX_FIELDS_REPORTED} of a record are listed)` : "";
    throw new ApiError("invalid_records", `${fields} invalid field(s) in the batch${more}; nothing was applied`, { errors });
  }
  return records as ApiRecord[];
}
