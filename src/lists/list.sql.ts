/**
 * The pieces every list statement is made of: the reader's tenant found from its key in the
 * statement itself, the filters as index ranges or equalities, the keyset condition as a row
 * value, and arms merged in the list's order. The plain list (list.repository.ts) and the time
 * window (window/statement.ts) build their statements from them.
 */
import { CompiledQuery, sql, type Compilable, type Kysely, type RawBuilder } from "kysely";
import { RELATION_COLUMNS, RELATIONS, type Collection } from "../collections/define.js";
import { engineOf } from "../storage/engine.js";
import type { Slots } from "../storage/query-template.js";
import type { Schema } from "../storage/schema.js";
import { ORDERS, type FilteredQuery, type ListOrder, type ListRow, type RowsQuery } from "./list.shape.js";

/** The tenant of the API key whose hash is `s.keyHash`, when the key is not revoked, has not expired by `s.now`, and may read. */
function tenantOfKey(db: Kysely<Schema>, s: Slots) {
  return db
    .selectFrom("api_keys")
    .select("api_keys.tenant_id")
    .where("api_keys.hash", "=", s.keyHash)
    .where("api_keys.revoked_at", "is", null)
    .where((eb) => eb.or([eb("api_keys.expires_at", "is", null), eb("api_keys.expires_at", ">", s.now)]))
    .where(sql<string>`',' || api_keys.scopes || ','`, "like", sql.lit("%,read,%"));
}

/** How a statement's arms name the reader's tenant, and what the statement must begin with for it. */
export interface ArmsTenant {
  ref: ReturnType<typeof tenantOfKey> | RawBuilder<number>;
  with: RawBuilder<unknown>;
}

/**
 * The tenant for a statement of `arms` arms: one arm looks the key up where it needs it; many
 * look it up once, in a `with`, rather than a plan node and a key look-up each.
 */
export function tenantFor(db: Kysely<Schema>, s: Slots, arms: number): ArmsTenant {
  if (arms <= 1) return { ref: tenantOfKey(db, s), with: sql`` };
  return { ref: sql<number>`(select tenant_id from reader)`, with: sql`with reader as materialized ${tenantOfKey(db, s)} ` };
}

/** Every filter but the time window, and (when asked) the keyset condition. */
export function filtered(
  db: Kysely<Schema>,
  collection: Collection,
  order: ListOrder,
  s: Slots,
  withCursor: boolean,
  tenant: ArmsTenant["ref"],
): FilteredQuery {
  let q = db.selectFrom(collection.table as "withdrawals").where("tenant_id", "=", tenant);
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

/** An arm in the list's order. */
function inOrder(q: RowsQuery, order: ListOrder): RowsQuery {
  const { column, direction } = ORDERS[order];
  return q.orderBy(column, direction).orderBy("id", direction);
}

/**
 * The arms merged in the list's order, the first `take` rows: each arm is read from an index
 * in that order only as far as the page needs. SQLite merges an ordered `UNION ALL` so
 * (Engine.mergesOrderedUnion); PostgreSQL merges arms that each carry their own order and limit.
 */
export function merged(db: Kysely<Schema>, arms: RowsQuery[], take: number, tenant: ArmsTenant, order: ListOrder): Compilable<ListRow> {
  const [first, ...rest] = arms;
  if (first === undefined) throw new Error("a page needs an arm");
  const limit = sql.lit(take);
  if (rest.length === 0) return withTenant(db, tenant, inOrder(first, order).limit(limit));
  if (engineOf(db).mergesOrderedUnion) {
    const union = inOrder(
      rest.reduce((u, arm) => u.unionAll(arm), first),
      order,
    ).limit(limit);
    return withTenant(db, tenant, union);
  }
  const union = sql.join(
    arms.map((arm) => sql`${inOrder(arm, order).limit(limit)}`),
    sql` union all `,
  );
  const { column, direction } = ORDERS[order];
  const orderBy = sql.raw(`${column} ${direction}, id ${direction}`);
  const query = sql<ListRow>`${tenant.with}select * from (${union}) as arms order by ${orderBy} limit ${limit}`;
  return { compile: () => query.compile(db) as CompiledQuery<ListRow> };
}

/** The statement after its tenant's `with`, written out rather than embedded, which would put it in parentheses. */
function withTenant<R>(db: Kysely<Schema>, tenant: ArmsTenant, query: Compilable<R>): Compilable<R> {
  return {
    compile: () => {
      const [head, body] = [tenant.with.compile(db), query.compile()];
      return CompiledQuery.raw(`${head.sql}${body.sql}`, [...head.parameters, ...body.parameters]) as CompiledQuery<R>;
    },
  };
}

/**
 * The statement with each unaliased read of `table` by the index `index`, where an engine names
 * it (Engine.namesIndexes): without statistics SQLite may reckon another index cheaper.
 */
export function readBy<R>(db: Kysely<Schema>, query: Compilable<R>, table: string, index: string): Compilable<R> {
  if (!engineOf(db).namesIndexes) return query;
  return {
    compile: () => {
      const compiled = query.compile();
      const from = `from "${table}" where`;
      if (!compiled.sql.includes(from)) throw new Error(`no read of ${table} to name ${index} for`);
      return CompiledQuery.raw(compiled.sql.replaceAll(from, `from "${table}" indexed by "${index}" where`), [
        ...compiled.parameters,
      ]) as CompiledQuery<R>;
    },
  };
}

/**
 * A statement's LIMIT: a literal, which PostgreSQL plans for, rather than a parameter it cannot
 * see; rounded up to one of a few, so that limits add few statement shapes. A page keeps the
 * first `take` rows.
 */
const TAKES = [2, 3, 6, 11, 21, 26, 51, 101];
export function takeOf(take: number): number {
  return TAKES.find((t) => t >= take) ?? take;
}
