/**
 * The two mappers between the API shape and the stored row: a row never reaches a client,
 * and a synced record is stored in one canonical form, so that "same content" is a plain
 * string comparison.
 */
import { RELATION_COLUMNS, type Collection } from "./define.js";
import { formatTime, parseRfc3339 } from "../platform/time.js";
import { sortKey } from "./sort-key.js";
import { lateEventAt } from "./late-event.js";
import type { RecordRow } from "../storage/schema.js";

export type ApiRecord = Record<string, unknown>;

/**
 * A stored row as the API returns it, as JSON text. The body is the record's canonical JSON
 * written by cribline itself (see toStoredContent), so it is spliced in, not parsed and
 * serialised again on every read.
 */
export function toApiJson(collection: Collection, row: Pick<RecordRow, "id" | "created_at" | "updated_at" | "body">): string {
  const updatedAt = collection.kind === "master" ? `,"updatedAt":"${formatTime(row.updated_at)}"` : "";
  return `{"id":${JSON.stringify(row.id)},${row.body.slice(1, -1)},"createdAt":"${formatTime(row.created_at)}"${updatedAt}}`;
}

/** A stored row as the API returns it. */
export function toApiRecord(collection: Collection, row: Pick<RecordRow, "id" | "created_at" | "updated_at" | "body">): ApiRecord {
  return JSON.parse(toApiJson(collection, row)) as ApiRecord;
}

/** What a synced record stores, but for the tenant and what depends on when it is stored. */
export type StoredContent = Omit<RecordRow, "tenant_id" | "created_at" | "updated_at" | "late_event_at">;

/** A record that a sync batch created or changed: what webhooks announce. */
export interface RecordChange {
  change: "created" | "updated";
  content: StoredContent;
  /** When the record was first stored (its createdAt). */
  createdAt: number;
}

/** The values of a new row, in RECORD_COLUMNS order, for a record first stored at `createdAt`. */
export function newRowValues(content: StoredContent, tenantId: number, createdAt: number): unknown[] {
  return [
    tenantId,
    content.id,
    createdAt,
    createdAt,
    content.event_at,
    lateEventAt(content.event_at, createdAt),
    content.name_key,
    content.code_key,
    content.employee_id,
    content.product_id,
    content.cost_center_id,
    content.sector_id,
    content.body,
  ];
}

/** A collection's fields in order, each marked when it is a time: made once, as a sync batch reads them for every record. */
const FIELD_LISTS = new WeakMap<Collection, ReadonlyArray<{ field: string; time: boolean }>>();

function fieldsOf(collection: Collection): ReadonlyArray<{ field: string; time: boolean }> {
  let list = FIELD_LISTS.get(collection);
  if (list === undefined) {
    list = Object.keys(collection.fields).map((field) => ({ field, time: collection.timeFields.includes(field) }));
    FIELD_LISTS.set(collection, list);
  }
  return list;
}

/**
 * Canonical stored form of a validated input record: fields in the collection's order,
 * optional fields null when missing, times in UTC at millisecond precision.
 */
export function toStoredContent(collection: Collection, input: ApiRecord): StoredContent {
  const fields: ApiRecord = {};
  let eventAt: number | null = null;
  for (const { field, time } of fieldsOf(collection)) {
    const value = input[field] ?? null;
    if (value !== null && time) {
      // Validated against the collection's schema, so every time field parses.
      const ms = parseRfc3339(value as string)?.ms;
      if (ms === undefined) throw new Error(`${collection.name}.${field} was not validated as a date-time`);
      if (field === collection.eventField) eventAt = ms;
      fields[field] = formatTime(ms);
    } else {
      fields[field] = value;
    }
  }
  const related = (relation: keyof typeof RELATION_COLUMNS) =>
    collection.relations.includes(relation) ? ((fields[relation] as string | null) ?? null) : null;
  return {
    id: input.id as string,
    event_at: eventAt,
    name_key: sortKey(fields[collection.nameField] as string),
    code_key: collection.codeField === undefined ? null : sortKey(fields[collection.codeField] as string),
    employee_id: related("employeeId"),
    product_id: related("productId"),
    cost_center_id: related("costCenterId"),
    sector_id: related("sectorId"),
    body: JSON.stringify(fields),
  };
}
