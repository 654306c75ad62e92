/**
 * One page of a list: cursor checked, rows fetched, rows mapped, next cursor made. The page
 * is returned as JSON text (see toApiJson); its shape is the route's documented schema.
 */
import type { Kysely } from "kysely";
import type { Collection } from "../collections/define.js";
import { toApiJson } from "../collections/record.js";
import type { CursorCodec, CursorPosition } from "../platform/cursor.js";
import { ApiError } from "../platform/errors.js";
import type { Schema } from "../storage/schema.js";
import type { ListQuery } from "./list.query.js";
import { listOrder, pageQuery, positionOf } from "./list.repository.js";

/** The position a cursor carries, or a 400 when it is not one of this list's and filters'. */
export function cursorPosition(cursors: CursorCodec, cursor: string, tenantId: number, list: string, filterKey: string): CursorPosition {
  const check = cursors.decode(cursor, tenantId, list, filterKey);
  if (check.ok) return check.position;
  throw check.reason === "malformed"
    ? new ApiError("invalid_cursor", "cursor is invalid, corrupted or truncated: send the cursor of a previous response unchanged", {
        param: "cursor",
      })
    : new ApiError(
        "invalid_cursor",
        "cursor was issued for another list or other filters: repeat the filters of the request that returned it",
        {
          param: "cursor",
        },
      );
}

export async function listPage(
  db: Kysely<Schema>,
  cursors: CursorCodec,
  collection: Collection,
  tenantId: number,
  query: ListQuery,
): Promise<string> {
  const after = query.cursor === undefined ? undefined : cursorPosition(cursors, query.cursor, tenantId, collection.name, query.filterKey);
  // One row more than the page tells whether another page follows, so the last page
  // says `cursor: null` and a client never needs an extra request to learn it is done.
  const { rows } = await db.executeQuery(pageQuery(db, collection, tenantId, query, after, query.limit + 1));
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  const cursor =
    rows.length > query.limit && last !== undefined
      ? JSON.stringify(cursors.encode(tenantId, collection.name, query.filterKey, positionOf(last, listOrder(query))))
      : "null";
  return `{"data":[${page.map((row) => toApiJson(collection, row)).join(",")}],"cursor":${cursor}}`;
}
