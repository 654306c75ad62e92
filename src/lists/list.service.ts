/**
 * One page of a record list: query parsed, cursor opened, the time window's plan made, rows
 * fetched, next cursor made by the shared pager (platform/pager.ts). The page is returned as
 * JSON text (see toApiJson); its shape is the route's documented schema.
 */
import type { Kysely } from "kysely";
import type { Collection } from "../collections/define.js";
import { toApiJson } from "../collections/record.js";
import type { CursorCodec, CursorPosition } from "../platform/cursor.js";
import { checkCursorTenant, openCursor, pageJson, pageOf, type PagedList } from "../platform/pager.js";
import type { Schema } from "../storage/schema.js";
import { parseListQuery, type ListQuery } from "./list.query.js";
import { bracketQuery, isWindow, pageQuery, spanQuery } from "./list.repository.js";
import { listOrder, positionOf, type ListOrder, type ListRow } from "./list.shape.js";
import { ownPlan, planOf, spanOfCursor, spanToCursor, wantsBracket, withinBracket, type Span, type WindowPlan } from "./window/plan.js";
import { bracketOf, spanOf } from "./window/probes.js";

/** Who asks for a page: the hash of a well-formed key, and the full key check. */
export interface PageReader {
  keyHash: string;
  /** The key's tenant, or a 401 or 403: see `authenticate`. */
  tenantOfKey(): Promise<number>;
}

/**
 * The page the query string asks for. The page's statement finds the tenant from the key
 * itself, so a page costs one round trip to the database; a window's page may add one to find
 * its walk's span, one (once a walk) to find its bracket, and one to read past the bracket
 * (windowOf). A 401 or 403 still comes before any 400, and when the statement returns no row (a
 * bad key, or an empty page) the key is checked on its own.
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
  const order = listOrder(query);
  const window = isWindow(collection, query) ? await windowOf(db, collection, reader.keyHash, query, order, opened) : undefined;
  const after = window?.after ?? opened?.position;
  const read = async (at: CursorPosition | undefined, take: number, plan = window?.plan) =>
    (await db.executeQuery(pageQuery(db, collection, reader.keyHash, query, at, take, plan))).rows;
  let rows = await read(after, query.limit + 1);
  // A page by its walk's bracket reads no row at or below the bracket's `above`: one that ends
  // short there reads the rest by the tiling.
  if (window?.belowBracket !== undefined && rows.length <= query.limit) {
    const { above, plan } = window.belowBracket;
    rows = [...rows, ...(await read({ key: above + 1, id: "" }, query.limit + 1 - rows.length, plan))];
  }
  const tenantId = rows[0]?.tenant_id ?? (await reader.tenantOfKey());
  if (opened !== undefined) checkCursorTenant(opened, tenantId);
  const paged: PagedList<ListRow> = {
    list: collection.name,
    filterKey: query.filterKey,
    positionOf: (row) => positionOf(row, order),
    plan: window?.span === undefined ? undefined : spanToCursor(window.span),
  };
  return pageJson(pageOf(cursors, tenantId, paged, rows, query.limit), (row) => toApiJson(collection, row));
}

/**
 * A window page's plan, by its walk's span: the one its cursor carries, or found now where the
 * plan needs one. A first page in createdAt order then shows no row stored after the span was
 * found (`after`): such a row may lie outside the span, where the page would not look for it,
 * and a later row shown would put the walk's cursor past it for good.
 */
async function windowOf(
  db: Kysely<Schema>,
  collection: Collection,
  keyHash: string,
  query: ListQuery,
  order: ListOrder,
  opened: { position: CursorPosition; plan?: string } | undefined,
): Promise<{ plan: WindowPlan; span: Span | undefined; after?: CursorPosition; belowBracket?: { above: number; plan: WindowPlan } }> {
  let span = spanOfCursor(opened?.plan);
  if (span === undefined) {
    const own = ownPlan(query, order, opened === undefined);
    if (own !== undefined) return { plan: own, span };
    const found = spanOf((await db.executeQuery(spanQuery(db, collection, keyHash))).rows[0]);
    if (opened === undefined) {
      const after = order === "created" ? { key: found.newest === null ? Number.MIN_SAFE_INTEGER : found.newest + 1, id: "" } : undefined;
      return { plan: planOf(query, order, found.span), span: found.span, after };
    }
    span = found.span;
  }
  const plan = planOf(query, order, span);
  if (opened === undefined || span?.late === null || span?.late === undefined || !wantsBracket(plan)) return { plan, span };
  // A wide window's later pages: its bracket, found once, on the walk's second page.
  if (span.bracket === undefined) {
    const statement = bracketQuery(db, collection, keyHash, query, span.late, opened.position);
    const bracket =
      statement === null
        ? { above: null, below: null }
        : statement === undefined
          ? null
          : bracketOf((await db.executeQuery(statement)).rows[0]);
    span = { ...span, bracket };
  }
  const within = withinBracket(plan, span.bracket, Number(opened.position.key));
  const belowBracket = within.kind === "late-by-created" && within.above !== null ? { above: within.above, plan } : undefined;
  return { plan: within, span, belowBracket };
}
