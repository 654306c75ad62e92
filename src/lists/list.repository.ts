/**
 * The one list query, for every collection: tenant first (found from the reader's API key in
 * the same query, see list.service.ts), then the filters as index ranges or equalities, then a
 * keyset condition written as a row value so that it stays an index range on both engines,
 * ordered by the sort key and id. Compiled once per shape (see storage/query-template.ts);
 * each page fills in its values.
 */
import { sql, type CompiledQuery, type Kysely } from "kysely";
import { RELATION_COLUMNS, RELATIONS, type Collection } from "../collections/define.js";
import { prefixEnd, sortKey } from "../collections/sort-key.js";
import type { CursorPosition } from "../platform/cursor.js";
import { engineOf } from "../storage/engine.js";
import { QueryTemplates, type Slots } from "../storage/query-template.js";
import type { Schema } from "../storage/schema.js";
import type { ListQuery } from "./list.query.js";
import { LIST_COLUMNS, listOrder, ORDERS, type FilteredQuery, type ListOrder, type ListRow, type RowsQuery } from "./list.shape.js";
import { armAUpperBound, lateDayArm, lateDays, lateRangeArm, onTimeArm, windowValues, type ArmAUpperBound } from "./window.js";

const templates = new QueryTemplates<ListRow>();

/**
 * Up to `take` rows after `after` of the collection of the tenant whose key has the hash
 * `keyHash`, as a compiled query; no rows when the key is unknown, revoked or lacks the
 * `read` scope.
 */
export function pageQuery(
  db: Kysely<Schema>,
  collection: Collection,
  keyHash: string,
  query: ListQuery,
  after: CursorPosition | undefined,
  take: number,
): CompiledQuery<ListRow> {
  const order = listOrder(query);
  const values = pageValues(keyHash, query, after);
  const upper = armAUpperBound(query, after);
  const shape = [collection.name, order, take, upper, ...Object.keys(values)].join(":");
  return templates.fill(db, shape, values, (slots) => buildPage(db, collection, order, slots, take, upper));
}

/** Every value a page query needs, named; which names are present is part of its shape. */
function pageValues(keyHash: string, query: ListQuery, after: CursorPosition | undefined): Record<string, unknown> {
  const values: Record<string, unknown> = { keyHash };
  for (const [name, prefix] of [
    ["name", query.name],
    ["code", query.code],
  ] as const) {
    if (prefix === undefined) continue;
    const low = sortKey(prefix);
    values[`${name}Low`] = low;
    const high = prefixEnd(low);
    if (high !== undefined) values[`${name}High`] = high;
  }
  for (const relation of RELATIONS) {
    if (query.relations[relation] !== undefined) values[relation] = query.relations[relation];
  }
  Object.assign(values, windowValues(query));
  if (after !== undefined) Object.assign(values, { afterKey: after.key, afterId: after.id });
  return values;
}

function buildPage(db: Kysely<Schema>, collection: Collection, order: ListOrder, s: Slots, take: number, upper: ArmAUpperBound) {
  const o = ORDERS[order];
  const page = (q: RowsQuery) => q.orderBy(o.column, o.direction).orderBy("id", o.direction).limit(sql.lit(take));
  const base = (withCursor: boolean) => filtered(db, collection, order, s, withCursor);
  if (s.since === undefined && s.until === undefined) return page(base(true).select(LIST_COLUMNS));
  if (order !== "created") {
    let q = base(true).select(LIST_COLUMNS);
    if (s.since !== undefined) q = q.where("event_at", ">=", s.since);
    if (s.until !== undefined) q = q.where("event_at", "<=", s.until);
    return page(q);
  }
  // One compound query: arm A's page by an index range in order, arm B's rows (in order too
  // when read day by day), and the first `take` of all. SQLite merges the arms and stops
  // reading each when the page is full; PostgreSQL plans a UNION ALL as a sort of every arm
  // whole, so there each ordered arm is a subquery with its own order and limit.
  const days = lateDays(s);
  const ordered = (arm: RowsQuery, i: number) =>
    engineOf(db).mergesOrderedUnion ? arm : (db.selectFrom(page(arm).as(`arm_${i}`)).selectAll() as unknown as RowsQuery);
  let union = ordered(onTimeArm(base(upper === "cursor").select(LIST_COLUMNS), s, upper), 0);
  days.forEach((day, i) => (union = union.unionAll(ordered(lateDayArm(base(true).select(LIST_COLUMNS), s, day), i + 1))));
  if (days.length === 0) union = union.unionAll(lateRangeArm(base(false), s));
  return union.orderBy("created_at", "desc").orderBy("id", "desc").limit(sql.lit(take));
}

/** Every filter but the time window, and (when asked) the keyset condition. */
function filtered(db: Kysely<Schema>, collection: Collection, order: ListOrder, s: Slots, withCursor: boolean): FilteredQuery {
  let q = db.selectFrom(collection.table as "withdrawals").where("tenant_id", "=", (eb) =>
    eb
      .selectFrom("api_keys")
      .select("api_keys.tenant_id")
      .where("api_keys.hash", "=", s.keyHash)
      .where("api_keys.revoked_at", "is", null)
      .where(sql<string>`',' || api_keys.scopes || ','`, "like", sql.lit("%,read,%")),
  );
  if (s.nameLow !== undefined) q = q.where("name_key", ">=", s.nameLow);
  if (s.nameHigh !== undefined) q = q.where("name_key", "<", s.nameHigh);
  if (s.codeLow !== undefined) q = q.where("code_key", ">=", s.codeLow);
  if (s.codeHigh !== undefined) q = q.where("code_key", "<", s.codeHigh);
  for (const relation of RELATIONS) {
    if (s[relation] !== undefined) q = q.where(RELATION_COLUMNS[relation], "=", s[relation]);
  }
  if (withCursor && s.afterKey !== undefined) {
    const { column, after } = ORDERS[order];
    q = q.where((eb) => eb(eb.refTuple(column, "id"), after, eb.tuple(s.afterKey, s.afterId)));
  }
  return q;
}
