/**
 * Field schemas shared by the collections. Each is a TypeBox schema: the one source of
 * validation (sync input, query parameters), TypeScript types and the OpenAPI document.
 */
import { FormatRegistry, Kind, Type, TypeRegistry, type TSchema, type TUnsafe } from "@sinclair/typebox";
import { parseRfc3339 } from "../platform/time.js";

// Text that both engines store and compare alike: well-formed UTF-16 (no lone surrogates)
// and no control characters (PostgreSQL refuses NUL in text).
FormatRegistry.Set("text", (value) => value.isWellFormed() && !/[\u0000-\u001f\u007f]/.test(value));
FormatRegistry.Set("date-time", (value) => parseRfc3339(value) !== undefined);

export const ID_PATTERN = "^[A-Za-z0-9._:-]{1,64}$";

export const Id = (description: string) => Type.String({ pattern: ID_PATTERN, minLength: 1, maxLength: 64, description });

export const Text = (description: string, maxLength = 200) => Type.String({ minLength: 1, maxLength, format: "text", description });

export const DateTime = (description: string) => Type.String({ format: "date-time", description, examples: ["2026-11-22T10:15:30.123Z"] });

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

// TypeBox's own String schema documents `enum` but does not check it.
TypeRegistry.Set<{ enum: readonly string[] }>("StringEnum", (schema, value) => typeof value === "string" && schema.enum.includes(value));

/** A string that is one of `values`, checked and documented as `enum`. */
export const StringEnum = (values: readonly string[]): TUnsafe<string> =>
  Type.Unsafe<string>({ [Kind]: "StringEnum", enum: [...values], type: "string" });
