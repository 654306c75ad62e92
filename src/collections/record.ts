/**
 * The two mappers between the API shape and the stored row: a row never reaches a client,
 * and a synced record is stored in one canonical form, so that "same content" is a plain
 * string comparison.
 */
import { RELATION_COLUMNS, type Collection } from "./define.js";
import { formatTime, parseRfc3339 } from "../platform/time.js";
import { sortKey } from "./sort-key.js";
import { lateEventAt } from "../lists/window.js";
import type { RecordRow, RecordTable } from "../storage/schema.js";

export type ApiRecord = Record<string, unknown>;

export function toApiRecord(collection: Collection, row: Pick<RecordRow, "id" | "created_at" | "updated_at" | "body">): ApiRecord {
  const record: ApiRecord = { id: row.id, ...(JSON.parse(row.body) as ApiRecord), createdAt: formatTime(row.created_at) };
  if (collection.kind === "master") record.updatedAt = formatTime(row.updated_at);
  return record;
}

/** What a synced record stores, but for the tenant and what depends on when it is stored. */
export type StoredContent = Omit<RecordRow, "tenant_id" | "created_at" | "updated_at" | "late_event_at">;

/** The row of a record first stored at `createdAt`. */
export function toNewRow(content: StoredContent, tenantId: number, createdAt: number): RecordTable {
  return {
    ...content,
    tenant_id: tenantId,
    created_at: createdAt,
    updated_at: createdAt,
    late_event_at: lateEventAt(content.event_at, createdAt),
  };
}

function timeMs(value: unknown): number {
  // Input was validated against the collection's schema, so every time field parses.
  return parseRfc3339(value as string)!.ms;
}

/**
 * Canonical stored form of a validated input record: fields in the collection's order,
 * optional fields null when missing, times in UTC at millisecond precision.
 */
export function toStoredContent(collection: Collection, input: ApiRecord): StoredContent {
  const fields: ApiRecord = {};
  for (const field of Object.keys(collection.fields)) {
    const value = input[field] ?? null;
    fields[field] = value !== null && collection.timeFields.includes(field) ? formatTime(timeMs(value)) : value;
  }
  const related = (relation: keyof typeof RELATION_COLUMNS) =>
    collection.relations.includes(relation) ? ((fields[relation] as string | null) ?? null) : null;
  return {
    id: input.id as string,
    event_at: collection.eventField === undefined ? null : timeMs(fields[collection.eventField]),
    name_key: sortKey(fields[collection.nameField] as string),
    code_key: collection.codeField === undefined ? null : sortKey(fields[collection.codeField] as string),
    employee_id: related("employeeId"),
    product_id: related("productId"),
    cost_center_id: related("costCenterId"),
    sector_id: related("sectorId"),
    body: JSON.stringify(fields),
  };
}
