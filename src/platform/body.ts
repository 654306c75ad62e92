/**
 * A JSON request body read against its TypeBox schema, the same one the OpenAPI document
 * shows: unknown fields are refused, never dropped, nothing is coerced, and an optional field
 * left out takes its schema's `default`. The first field at fault, in the schema's order, is a
 * 400 with the error code its rule names and words that say what to send instead.
 */
import { Type, type Static, type TObject, type TSchema } from "@sinclair/typebox";
import { TypeCompiler, ValueErrorType, type TypeCheck } from "@sinclair/typebox/compiler";
import { ApiError, type ErrorCode } from "./errors.js";

/** How a field's faults are told. */
export interface FieldRule {
  /** The error code of a value that breaks the field's schema. */
  code: ErrorCode;
  /** The code when the field is missing; `code` when not given. */
  missing?: ErrorCode;
  /** What a valid value is, for a person: "a list of event types". */
  expects: string;
}

/** The body of an action that takes none: nothing, or `{}`. */
export const NoBody = Type.Object({}, { additionalProperties: false });

export type FieldRules<T extends TObject> = { readonly [K in keyof T["properties"]]: FieldRule };

const checks = new WeakMap<TSchema, TypeCheck<TSchema>>();

function checkOf(schema: TSchema): TypeCheck<TSchema> {
  let check = checks.get(schema);
  if (check === undefined) {
    check = TypeCompiler.Compile(schema);
    checks.set(schema, check);
  }
  return check;
}

const invalidBody = (detail: string) => new ApiError("invalid_body", detail);

function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 100 ? `${text.slice(0, 100)}...` : text;
}

/** The first value a list holds twice. */
function repeatedIn(list: readonly unknown[]): unknown {
  const seen = new Set<string>();
  for (const item of list) {
    const key = JSON.stringify(item);
    if (seen.has(key)) return item;
    seen.add(key);
  }
  return undefined;
}

/** Why `value` breaks `schema`, in words about `field`. */
function fault(field: string, schema: TSchema, value: unknown, expects: string): string {
  const first = checkOf(schema).Errors(value).First();
  if (first?.type === ValueErrorType.ArrayUniqueItems && Array.isArray(value)) {
    return `"${field}" must be ${expects}; ${preview(repeatedIn(value))} is listed twice`;
  }
  // An item of a list: name the item, not the whole list.
  if (first !== undefined && first.path !== "" && Array.isArray(value)) {
    return `"${field}" must be ${expects}; ${preview(first.value)} is not one`;
  }
  return `"${field}" must be ${expects}; got ${preview(value)}`;
}

/**
 * The body as its schema's type, or a 400. A body left out (or `null`) counts as `{}`, so an
 * action whose fields are all optional takes no body at all.
 */
export function readBody<T extends TObject>(schema: T, rules: FieldRules<T>, body: unknown): Static<T> {
  const fields = Object.keys(schema.properties);
  const required = new Set(schema.required ?? []);
  if ((body === undefined || body === null) && required.size > 0) {
    throw invalidBody(`send a JSON object with ${[...required].map((f) => `"${f}"`).join(" and ")}`);
  }
  const given = body ?? {};
  if (typeof given !== "object" || Array.isArray(given)) throw invalidBody("the request body must be a JSON object");
  const input = given as Record<string, unknown>;
  for (const name of Object.keys(input)) {
    if (!fields.includes(name)) {
      throw invalidBody(
        fields.length === 0
          ? `unknown field "${name}": this request takes no body`
          : `unknown field "${name}"; the fields are ${fields.join(", ")}`,
      );
    }
  }
  const read: Record<string, unknown> = {};
  for (const field of fields) {
    const schemaOf = schema.properties[field] as TSchema;
    const rule = rules[field as keyof T["properties"]];
    const value = input[field];
    if (value === undefined) {
      if (required.has(field)) throw new ApiError(rule.missing ?? rule.code, `the "${field}" field is required: ${rule.expects}`);
      if (schemaOf.default !== undefined) read[field] = schemaOf.default;
      continue;
    }
    if (!checkOf(schemaOf).Check(value)) throw new ApiError(rule.code, fault(field, schemaOf, value, rule.expects));
    read[field] = value;
  }
  return read as Static<T>;
}
