/**
 * The webhook events: `<singular>.created` for every collection, `<singular>.updated` for
 * master data (transactions never change), and the body each is sent as.
 */
import type { Collection } from "../collections/define.js";
import type { RecordChange } from "../collections/record.js";
import { COLLECTIONS } from "../collections/registry.js";
import { formatTime } from "../platform/time.js";

export function eventType(collection: Collection, change: RecordChange["change"]): string {
  return `${collection.singular}.${change}`;
}

export const EVENT_TYPES: readonly string[] = COLLECTIONS.flatMap((c) =>
  c.kind === "master" ? [eventType(c, "created"), eventType(c, "updated")] : [eventType(c, "created")],
);

/** The collection of each `created` event whose data is read from its record (a transaction never changes). */
export const TRANSACTION_EVENTS: ReadonlyMap<string, Collection> = new Map(
  COLLECTIONS.filter((c) => c.kind === "transaction").map((c) => [eventType(c, "created"), c]),
);

const DATA = ',"data":';

/** The body of a webhook: `data` is the record exactly as its list returns it (`toApiJson`). */
export function messagePayload(type: string, at: number, data: string): string {
  return `{"type":${JSON.stringify(type)},"timestamp":"${formatTime(at)}"${DATA}${data}}`;
}

/** The `data` of a body made by messagePayload, as text: the type and timestamp before it hold no `,"data":`. */
export function payloadData(payload: string): string {
  return payload.slice(payload.indexOf(DATA) + DATA.length, -1);
}
