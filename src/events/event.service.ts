/**
 * The events list and one event, as JSON text: an event is its id (its webhooks' `webhook-id`),
 * its type, when it was recorded and the record as its list showed it then. Only events within
 * the retention period are shown, whether or not the sweeper has removed the older ones yet.
 */
import type { Kysely } from "kysely";
import { toApiJson } from "../collections/record.js";
import type { PageReader } from "../lists/list.service.js";
import { keptSince } from "../platform/config.js";
import type { CursorCodec } from "../platform/cursor.js";
import { ApiError } from "../platform/errors.js";
import { checkCursorTenant, openCursor, pageJson, pageOf } from "../platform/pager.js";
import { formatTime } from "../platform/time.js";
import type { Schema } from "../storage/schema.js";
import { payloadData, TRANSACTION_EVENTS } from "../webhooks/events.js";
import { idTime, isIdOf, MESSAGE_ID_PREFIX } from "../webhooks/ids.js";
import { parseEventQuery, type EventQuery } from "./event.query.js";
import { eventQuery, eventsQuery, type EventRange, type EventRow } from "./event.repository.js";

/** What the events list is read with: the days events are kept (0: for ever) and the clock. */
export interface EventReading {
  keepDays: number;
  clock: () => number;
}

/** The ids a page reads: within the window and the retention period, below the cursor's. */
function rangeOf(query: EventQuery, reading: EventReading, afterId: string | undefined): EventRange {
  const range: EventRange = {};
  if (query.type !== undefined) range.type = query.type;
  const lows = [query.since, keptSince(reading.keepDays, reading.clock())].filter((t) => t !== undefined);
  if (lows.length > 0) range.low = idTime(MESSAGE_ID_PREFIX, Math.max(...lows));
  // Every id made at a time begins with idTime of it: below the next millisecond's is at or before it.
  const highs = [query.until === undefined ? undefined : idTime(MESSAGE_ID_PREFIX, query.until + 1), afterId].filter(
    (h) => h !== undefined,
  );
  if (highs.length > 0) range.high = highs.reduce((a, b) => (a < b ? a : b));
  return range;
}

export function eventJson(row: EventRow): string {
  const collection = TRANSACTION_EVENTS.get(row.type);
  let data;
  if (row.payload !== null) data = payloadData(row.payload);
  else if (collection !== undefined && row.body !== null && row.record_created_at !== null)
    data = toApiJson(collection, { id: row.record_id ?? "", body: row.body, created_at: Number(row.record_created_at), updated_at: 0 });
  else throw new Error(`event ${row.id} (${row.type}) has neither a payload nor a stored record`);
  return `{"id":${JSON.stringify(row.id)},"type":${JSON.stringify(row.type)},"createdAt":"${formatTime(Number(row.created_at))}","data":${data}}`;
}

/** The page of the events list that the query string asks for. */
export async function eventsPage(
  db: Kysely<Schema>,
  cursors: CursorCodec,
  reader: PageReader,
  reading: EventReading,
  queryString: string,
): Promise<string> {
  let query, opened;
  try {
    query = parseEventQuery(queryString);
    opened = query.cursor === undefined ? undefined : openCursor(cursors, query.cursor, "events", query.filterKey);
  } catch (error) {
    await reader.tenantOfKey();
    throw error;
  }
  const range = rangeOf(query, reading, opened?.position.id);
  const rows = (await db.executeQuery(eventsQuery(db, reader.keyHash, range, query.limit + 1))).rows;
  const tenantId = rows[0]?.tenant_id ?? (await reader.tenantOfKey());
  if (opened !== undefined) checkCursorTenant(opened, tenantId);
  const paged = {
    list: "events",
    filterKey: query.filterKey,
    positionOf: (row: EventRow) => ({ key: Number(row.created_at), id: row.id }),
  };
  return pageJson(pageOf(cursors, tenantId, paged, rows, query.limit), eventJson);
}

/** One of the tenant's events, or 404 when it has none by that id within the retention period. */
export async function eventById(db: Kysely<Schema>, tenantId: number, id: string, reading: EventReading): Promise<string> {
  const kept = keptSince(reading.keepDays, reading.clock());
  const row = isIdOf(MESSAGE_ID_PREFIX, id)
    ? (await db.executeQuery(eventQuery(db, tenantId, id, kept === undefined ? undefined : idTime(MESSAGE_ID_PREFIX, kept)))).rows[0]
    : undefined;
  if (row === undefined)
    throw new ApiError("not_found", `no event ${JSON.stringify(id)}: it does not exist, or is older than the retention period`);
  return eventJson(row);
}
