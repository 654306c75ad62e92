/**
 * The one list query, for every collection: tenant first, then the filters as index ranges
 * or equalities, then a keyset condition written as a row value so that it stays an index
 * range on both engines, ordered by the sort key and id.
 */
import { sql, type Kysely, type SelectQueryBuilder } from "kysely";
import { RELATION_COLUMNS, RELATIONS, type Collection } from "../collections/define.js";
import type { CursorPosition } from "../platform/cursor.js";
import type { RecordRow, Schema } from "../storage/schema.js";
import type { ListQuery } from "./list.query.js";
import { prefixEnd, sortKey } from "../collections/sort-key.js";
import { lateArm, onTimeArm, type Window } from "./window.js";

export type ListOrder = "created" | "name" | "code";

const ORDERS = {
  created: { column: "created_at", direction: "desc", after: "<" },
  name: { column: "name_key", direction: "asc", after: ">" },
  code: { column: "code_key", direction: "asc", after: ">" },
} as const;

export function listOrder(query: ListQuery): ListOrder {
  if (query.name !== undefined) return "name";
  if (query.code !== undefined) return "code";
  return "created";
}

export type ListRow = Pick<RecordRow, "id" | "created_at" | "updated_at" | "name_key" | "code_key" | "body">;

/** Position of a row in the given order, as a cursor carries it. */
export function positionOf(row: ListRow, order: ListOrder): CursorPosition {
  const key = order === "created" ? row.created_at : order === "name" ? row.name_key : row.code_key;
  return { key: key ?? "", id: row.id };
}

type PageQuery = SelectQueryBuilder<Schema, "withdrawals", ListRow>;

/**
 * Up to `take` rows of one tenant's collection after `after`, as a query (so its SQL and
 * plan can be inspected). All record tables share one shape, so the table is typed as one.
 */
export function pageQuery(
  db: Kysely<Schema>,
  collection: Collection,
  tenantId: number,
  query: ListQuery,
  after: CursorPosition | undefined,
  take: number,
) {
  const order = ORDERS[listOrder(query)];
  const window = { since: query.since, until: query.until };
  const page = (q: PageQuery) => q.orderBy(order.column, order.direction).orderBy("id", order.direction).limit(sql.lit(take));
  const base = (from = after) => filtered(db, collection, tenantId, query, order, from);
  if (window.since === undefined && window.until === undefined) return page(base());
  if (order.column !== "created_at") return page(inWindow(base(), window));
  const arms = db
    .selectFrom(page(onTimeArm(base, window, after)).as("on_time"))
    .selectAll()
    .unionAll(db.selectFrom(lateArm(base(undefined), window, after, take).as("late")).selectAll());
  return db.selectFrom(arms.as("w")).selectAll().orderBy("created_at", "desc").orderBy("id", "desc").limit(sql.lit(take));
}

function inWindow(q: PageQuery, { since, until }: Window): PageQuery {
  let out = q;
  if (since !== undefined) out = out.where("event_at", ">=", since);
  if (until !== undefined) out = out.where("event_at", "<=", until);
  return out;
}

/** Every filter but the time window, and the keyset condition. */
function filtered(
  db: Kysely<Schema>,
  collection: Collection,
  tenantId: number,
  query: ListQuery,
  order: (typeof ORDERS)[ListOrder],
  after: CursorPosition | undefined,
): PageQuery {
  let q = db
    .selectFrom(collection.table as "withdrawals")
    .select(["id", "created_at", "updated_at", "name_key", "code_key", "body"])
    .where("tenant_id", "=", tenantId);
  for (const [column, prefix] of [
    ["name_key", query.name],
    ["code_key", query.code],
  ] as const) {
    if (prefix === undefined) continue;
    const low = sortKey(prefix);
    const high = prefixEnd(low);
    q = q.where(column, ">=", low);
    if (high !== undefined) q = q.where(column, "<", high);
  }
  for (const relation of RELATIONS) {
    const value = query.relations[relation];
    if (value !== undefined) q = q.where(RELATION_COLUMNS[relation], "=", value);
  }
  if (after !== undefined) {
    q = q.where((eb) => eb(eb.refTuple(order.column, "id"), order.after, eb.tuple(after.key as never, after.id)));
  }
  return q;
}
