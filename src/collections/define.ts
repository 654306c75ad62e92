/**
 * A collection is data, not code: its fields, which of them are optional, which one is its
 * name (and code, event date, relationships). From that one declaration come the sync input
 * schema, the list item schema, the filters its list accepts and the columns it is indexed by.
 */
import { Type, type TObject, type TProperties, type TSchema } from "@sinclair/typebox";
import { DateTime, Id, Nullable } from "./fields.js";

export const RELATIONS = ["employeeId", "productId", "costCenterId", "sectorId"] as const;
export type Relation = (typeof RELATIONS)[number];

/** Column of the record tables that holds each relationship filter. */
export const RELATION_COLUMNS = {
  employeeId: "employee_id",
  productId: "product_id",
  costCenterId: "cost_center_id",
  sectorId: "sector_id",
} as const satisfies Record<Relation, string>;

export type CollectionName =
  | "withdrawals"
  | "returns"
  | "exchanges"
  | "training-records"
  | "employees"
  | "cost-centers"
  | "sectors"
  | "products"
  | "devices";

export interface CollectionSpec {
  name: CollectionName;
  /** Singular, for event types and docs: `withdrawal`, `cost-center`. */
  singular: string;
  kind: "transaction" | "master";
  description: string;
  /** Every field beyond `id`, `createdAt` and `updatedAt`, in the order the API returns them. */
  fields: TProperties;
  /** Fields that may be missing or null on input and are returned as null when unknown. */
  optional?: readonly string[];
  /** The field the `name` filter and name order use. */
  nameField: string;
  /** The field the `code` filter and code order use (cost centers). */
  codeField?: string;
  /** The event date that `createdSince`/`createdUntil` match (transactions). */
  eventField?: string;
  /** Relationship filters this list accepts; each names a field of the record. */
  relations: readonly Relation[];
}

export interface Collection extends CollectionSpec {
  /** SQL table holding this collection's records. */
  table: string;
  optional: readonly string[];
  /** Fields holding RFC 3339 times, normalised to UTC milliseconds on the way in. */
  timeFields: readonly string[];
  input: TObject;
  item: TObject;
}

const CreatedAt = DateTime("When cribline first stored the record (server clock; never changes).");
const UpdatedAt = DateTime("When the record's content last changed.");

export function defineCollection(spec: CollectionSpec): Collection {
  const optional = spec.optional ?? [];
  const input: TProperties = { id: Id("Identifier assigned by the source system; unique per tenant in this collection.") };
  const item: TProperties = { id: input.id as TSchema };
  for (const [field, schema] of Object.entries(spec.fields)) {
    input[field] = optional.includes(field) ? Type.Optional(Nullable(schema)) : schema;
    item[field] = optional.includes(field) ? Nullable(schema) : schema;
  }
  item.createdAt = CreatedAt;
  if (spec.kind === "master") item.updatedAt = UpdatedAt;
  const title = spec.singular.replace(/(^|-)(\w)/g, (_, _dash: string, c: string) => c.toUpperCase());
  return {
    ...spec,
    table: spec.name.replace(/-/g, "_"),
    optional,
    timeFields: Object.entries(spec.fields)
      .filter(([, schema]) => (schema as { format?: string }).format === "date-time")
      .map(([field]) => field),
    input: Type.Object(input, { additionalProperties: false, $id: `${title}Input`, description: spec.description }),
    item: Type.Object(item, { additionalProperties: false, $id: title, description: spec.description }),
  };
}
