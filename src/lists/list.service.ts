/**
 * One page of a list: query parsed, cursor checked, rows fetched, rows mapped, next cursor
 * made. The page is returned as JSON text (see toApiJson); its shape is the route's
 * documented schema.
 */
import type { Kysely } from "kysely";
import type { Collection } from "../collections/define.js";
import { toApiJson } from "../collections/record.js";
import type { CursorCodec, CursorPosition } from "../platform/cursor.js";
import { ApiError } from "../platform/errors.js";
import type { Schema } from "../storage/schema.js";
import { parseListQuery } from "./list.query.js";
import { listOrder, pageQuery, positionOf } from "./list.repository.js";

const CURSOR = { param: "cursor" };
const cursorMismatch = () =>
  new ApiError(
    "invalid_cursor",
    "cursor was issued for another list or other filters: repeat the filters of the request that returned it",
    CURSOR,
  );

/** A cursor's tenant and position, or a 400 when it is not one of this list's and filters'. */
function openCursor(cursors: CursorCodec, cursor: string, list: string, filterKey: string): { tenantId: number; position: CursorPosition } {
  const check = cursors.decode(cursor, list, filterKey);
  if (check.ok) return check;
  throw check.reason === "malformed"
    ? new ApiError("invalid_cursor", "cursor is invalid, corrupted or truncated: send the cursor of a previous response unchanged", CURSOR)
    : cursorMismatch();
}

/** The position a cursor carries, or a 400 when it is not one of this tenant's, list's and filters'. */
export function cursorPosition(cursors: CursorCodec, cursor: string, tenantId: number, list: string, filterKey: string): CursorPosition {
  const opened = openCursor(cursors, cursor, list, filterKey);
  if (opened.tenantId !== tenantId) throw cursorMismatch();
  return opened.position;
}

/** Who asks for a page: the hash of a well-formed key, and the full key check. */
export interface PageReader {
  keyHash: string;
  /** The key's tenant, or a 401 or 403: see `authenticate`. */
  tenantOfKey(): Promise<number>;
}

/**
 * The page the query string asks for. The page query finds the tenant from the key itself, so
 * a page costs one round trip to the database. A 401 or 403 still comes before any 400, and
 * when the query returns no row (a bad key, or an empty page) the key is checked on its own.
 */
export async function listPage(
  db: Kysely<Schema>,
  cursors: CursorCodec,
  collection: Collection,
  reader: PageReader,
  queryString: string,
): Promise<string> {
  let query, opened;
  try {
    query = parseListQuery(collection, queryString);
    opened = query.cursor === undefined ? undefined : openCursor(cursors, query.cursor, collection.name, query.filterKey);
  } catch (error) {
    await reader.tenantOfKey();
    throw error;
  }
  // One row more than the page tells whether another page follows, so the last page
  // says `cursor: null` and a client never needs an extra request to learn it is done.
  const { rows } = await db.executeQuery(pageQuery(db, collection, reader.keyHash, query, opened?.position, query.limit + 1));
  const tenantId = rows[0]?.tenant_id ?? (await reader.tenantOfKey());
  if (opened !== undefined && opened.tenantId !== tenantId) throw cursorMismatch();
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  const cursor =
    rows.length > query.limit && last !== undefined
      ? JSON.stringify(cursors.encode(tenantId, collection.name, query.filterKey, positionOf(last, listOrder(query))))
      : "null";
  return `{"data":[${page.map((row) => toApiJson(collection, row)).join(",")}],"cursor":${cursor}}`;
}
