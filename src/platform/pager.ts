/**
 * The one pager of every list-like endpoint. A cursor is opened only when its MAC, list and
 * filters check out, and counts only for the tenant it was issued to; a page reads one row
 * more than it shows, so that the last page says `cursor: null` and a client never needs an
 * extra request to learn that it is done.
 */
import { Type } from "@sinclair/typebox";
import type { CursorCodec, CursorPosition } from "./cursor.js";
import { ApiError } from "./errors.js";
import type { PageRequest } from "./query-string.js";

const CURSOR = { param: "cursor" };

const cursorMismatch = () =>
  new ApiError(
    "invalid_cursor",
    "cursor was issued for another list or other filters: repeat the filters of the request that returned it",
    CURSOR,
  );

/** A cursor's tenant and position, or a 400 when it is not one of this list's and filters'. */
export function openCursor(
  cursors: CursorCodec,
  cursor: string,
  list: string,
  filterKey: string,
): { tenantId: number; position: CursorPosition; plan?: string } {
  const check = cursors.decode(cursor, list, filterKey);
  if (check.ok) return check;
  throw check.reason === "malformed"
    ? new ApiError("invalid_cursor", "cursor is invalid, corrupted or truncated: send the cursor of a previous response unchanged", CURSOR)
    : cursorMismatch();
}

/** Refuses a cursor opened for one tenant on another tenant's request. */
export function checkCursorTenant(opened: { tenantId: number }, tenantId: number): void {
  if (opened.tenantId !== tenantId) throw cursorMismatch();
}

/** What a list is read with: its name and filters (a cursor is bound to both) and how rows become items. */
export interface PagedList<R> {
  /** The name a cursor is bound to, such as `withdrawals` or `webhook-endpoints/we_1/attempts`. */
  list: string;
  /** The canonical form of the filters, which a cursor is bound to too. */
  filterKey: string;
  /** A row's place in the list's order, which the next page starts after. */
  positionOf(row: R): CursorPosition;
  /** The plan this page was read by, for the next page to read by too (see CursorCodec). */
  plan?: string;
}

export interface Page<R> {
  rows: R[];
  cursor: string | null;
}

/**
 * The page of `rows`, which were read with one row more than `limit`: the first `limit`
 * of them, and a cursor after the last one shown when more follow.
 */
export function pageOf<R>(cursors: CursorCodec, tenantId: number, paged: PagedList<R>, rows: R[], limit: number): Page<R> {
  const shown = rows.slice(0, limit);
  const last = shown[shown.length - 1];
  const more = rows.length > limit && last !== undefined;
  return { rows: shown, cursor: more ? cursors.encode(tenantId, paged.list, paged.filterKey, paged.positionOf(last), paged.plan) : null };
}

/** The schema of a page of `item`s (a schema added by its `$id`), as every list answers. */
export function pageSchemaOf(item: string) {
  return Type.Object(
    {
      data: Type.Array(Type.Ref(item), { description: "At most `limit` items." }),
      cursor: Type.Union([Type.String(), Type.Null()], { description: "Send it back to get the next page; null on the last page." }),
    },
    { additionalProperties: false },
  );
}

/** A page as the JSON text of `{data, cursor}`, each row written by `itemJson`. */
export function pageJson<R>(page: Page<R>, itemJson: (row: R) => string): string {
  const cursor = page.cursor === null ? "null" : JSON.stringify(page.cursor);
  return `{"data":[${page.rows.map(itemJson).join(",")}],"cursor":${cursor}}`;
}

/**
 * A page of a tenant's list: the cursor opened and checked, `read` asked for one row more
 * than the page (after the cursor's position, when one came), the next cursor made.
 */
export async function readPage<R>(
  cursors: CursorCodec,
  tenantId: number,
  paged: PagedList<R>,
  request: PageRequest,
  read: (after: CursorPosition | undefined, take: number) => Promise<R[]>,
): Promise<Page<R>> {
  let after: CursorPosition | undefined;
  if (request.cursor !== undefined) {
    const opened = openCursor(cursors, request.cursor, paged.list, paged.filterKey);
    checkCursorTenant(opened, tenantId);
    after = opened.position;
  }
  return pageOf(cursors, tenantId, paged, await read(after, request.limit + 1), request.limit);
}
