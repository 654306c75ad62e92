/**
 * The one list query, for every collection: tenant first (found from the reader's API key in
 * the same query, see list.service.ts), then the filters as index ranges or equalities, then a
 * keyset condition written as a row value so that it stays an index range on both engines,
 * ordered by the sort key and id. Compiled once per shape (see storage/query-template.ts);
 * each page fills in its values.
 */
import { sql, type Compilable, type CompiledQuery, type ExpressionBuilder, type Kysely } from "kysely";
import { BUCKET_LEVELS_MS, BUCKET_ORIGIN_MS } from "../collections/late-event.js";
import { RELATION_COLUMNS, RELATIONS, type Collection } from "../collections/define.js";
import { prefixEnd, sortKey } from "../collections/sort-key.js";
import type { CursorPosition } from "../platform/cursor.js";
import { engineOf } from "../storage/engine.js";
import { QueryTemplates, type Slots } from "../storage/query-template.js";
import type { Schema } from "../storage/schema.js";
import type { ListQuery } from "./list.query.js";
import { LIST_COLUMNS, listOrder, ORDERS, type FilteredQuery, type ListOrder, type ListRow, type RowsQuery } from "./list.shape.js";
import { armAUpperBound, bucketOf, lateArm, lateTiles, onTimeArm, windowValues, type ArmAUpperBound, type LateRange } from "./window.js";

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
  /** Where the tenant's late rows lie, for a window that needs it (see needsLateRange). */
  late?: LateRange | null,
): CompiledQuery<ListRow> {
  const order = listOrder(query);
  const values = pageValues(keyHash, query, after, readsBuckets(collection, query), late);
  const upper = armAUpperBound(query, after);
  const shape = [collection.name, order, take, upper, ...Object.keys(values)].join(":");
  return templates.fill(db, shape, values, (slots) => buildPage(db, collection, order, slots, take, upper));
}

/** Every value a page query needs, named; which names are present is part of its shape. */
/** Whether a page reads the late rows of its window by bucket: a transaction list's, in createdAt order. */
export function readsBuckets(collection: Collection, query: ListQuery): boolean {
  return collection.kind === "transaction" && listOrder(query) === "created";
}

function pageValues(
  keyHash: string,
  query: ListQuery,
  after: CursorPosition | undefined,
  tiled: boolean,
  late?: LateRange | null,
): Record<string, unknown> {
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
  Object.assign(values, windowValues(query, tiled, late));
  if (after !== undefined) Object.assign(values, { afterKey: after.key, afterId: after.id });
  return values;
}

function buildPage(
  db: Kysely<Schema>,
  collection: Collection,
  order: ListOrder,
  s: Slots,
  take: number,
  upper: ArmAUpperBound,
): Compilable<ListRow> {
  const o = ORDERS[order];
  const page = (q: RowsQuery) => q.orderBy(o.column, o.direction).orderBy("id", o.direction).limit(sql.lit(take));
  const base = (withCursor: boolean) => filtered(db, collection, order, s, withCursor).select(LIST_COLUMNS);
  const windowed = s.since !== undefined || s.until !== undefined;
  if (order !== "created") {
    let q = base(true);
    if (s.since !== undefined) q = q.where("event_at", ">=", s.since);
    if (s.until !== undefined) q = q.where("event_at", "<=", s.until);
    return page(q);
  }
  // Master data and relationship filters have an index of all their rows by createdAt;
  // a transaction list's rows are indexed by createdAt as two parts, on time and late.
  if (collection.kind !== "transaction" || RELATIONS.some((r) => s[r] !== undefined)) return page(base(true));
  const arms = windowed
    ? [onTimeArm(base(upper === "cursor"), s, upper), ...lateTiles(s).map((tile) => lateArm(base(true), s, tile))]
    : [base(true).where("late_event_at", "is", null), base(true).where("late_event_at", "is not", null)];
  return merged(db, arms, take);
}

/**
 * The first `take` rows of arms that are each in createdAt order, merged so that each is read
 * only as far as the page needs. SQLite merges a bare `UNION ALL ... ORDER BY ... LIMIT` so;
 * PostgreSQL does (a Merge Append) when each arm is ordered and the union is a subquery, and
 * otherwise sorts every arm whole.
 */
function merged(db: Kysely<Schema>, arms: RowsQuery[], take: number): Compilable<ListRow> {
  const newest = (q: RowsQuery) => q.orderBy("created_at", "desc").orderBy("id", "desc");
  const [first, ...rest] = arms;
  if (first === undefined) throw new Error("a page needs an arm");
  if (rest.length === 0) return newest(first).limit(sql.lit(take));
  if (engineOf(db).mergesOrderedUnion) return newest(rest.reduce((union, arm) => union.unionAll(arm), first)).limit(sql.lit(take));
  const union = sql.join(
    arms.map((arm) => sql`${newest(arm).limit(sql.lit(take))}`),
    sql` union all `,
  );
  const query = sql<ListRow>`select * from (${union}) as arms order by created_at desc, id desc limit ${sql.lit(take)}`;
  return { compile: () => query.compile(db) as CompiledQuery<ListRow> };
}

const lateRanges = new QueryTemplates<{ low: number | string | null; high: number | string | null }>();

/**
 * Where the late rows of the key's tenant's list lie, by their largest bucket: null when it has
 * none. Two probes of that bucket's index, for windows whose tiling must be narrowed to them.
 */
export function lateRangeQuery(db: Kysely<Schema>, collection: Collection, keyHash: string) {
  return lateRanges.fill(db, `${collection.name}:late-range`, { keyHash }, (s) => {
    const bucket = bucketOf(BUCKET_LEVELS_MS.length - 1);
    const probe = (direction: "asc" | "desc") =>
      db
        .selectFrom(collection.table as "withdrawals")
        .select(bucket.as("bucket"))
        .where("tenant_id", "=", tenantOfKey(s.keyHash))
        .where(bucket, "is not", null)
        .orderBy(bucket, direction)
        .limit(sql.lit(1));
    return db.selectNoFrom([probe("asc").as("low"), probe("desc").as("high")]);
  });
}

/** The event dates a late-range probe's buckets span, inclusive; null when there were none. */
export function lateRangeOf(row: { low: number | string | null; high: number | string | null } | undefined): LateRange | null {
  if (row === undefined || row.low === null || row.high === null) return null;
  const length = BUCKET_LEVELS_MS[BUCKET_LEVELS_MS.length - 1] ?? 0;
  return { low: Number(row.low) * length - BUCKET_ORIGIN_MS, high: (Number(row.high) + 1) * length - 1 - BUCKET_ORIGIN_MS };
}

/** The tenant of the API key whose hash is `keyHash`, when the key is not revoked and may read. */
function tenantOfKey(keyHash: Slots[string]) {
  return (eb: ExpressionBuilder<Schema, "withdrawals">) =>
    eb
      .selectFrom("api_keys")
      .select("api_keys.tenant_id")
      .where("api_keys.hash", "=", keyHash)
      .where("api_keys.revoked_at", "is", null)
      .where(sql<string>`',' || api_keys.scopes || ','`, "like", sql.lit("%,read,%"));
}

/** Every filter but the time window, and (when asked) the keyset condition. */
function filtered(db: Kysely<Schema>, collection: Collection, order: ListOrder, s: Slots, withCursor: boolean): FilteredQuery {
  let q = db.selectFrom(collection.table as "withdrawals").where("tenant_id", "=", tenantOfKey(s.keyHash));
  // A cursor in name (or code) order lies within the prefix's range, so it can be the range's
  // start; an engine that takes one lower bound per column must be given it alone.
  const cursorStarts = withCursor && s.afterKey !== undefined && !engineOf(db).combinesRangeBounds;
  if (s.nameLow !== undefined && !(cursorStarts && order === "name")) q = q.where("name_key", ">=", s.nameLow);
  if (s.nameHigh !== undefined) q = q.where("name_key", "<", s.nameHigh);
  if (s.codeLow !== undefined && !(cursorStarts && order === "code")) q = q.where("code_key", ">=", s.codeLow);
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
