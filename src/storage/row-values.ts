/**
 * Statements over many rows of values (`(a, b) in ((..), (..))`, `values (..), (..)`), built
 * from a template of their shape and row count (see query-template.ts): building a few hundred
 * rows of `sql` fragments on every call would cost more than the statement.
 */
import { sql, type CompiledQuery, type Kysely, type RawBuilder, type SqlBool } from "kysely";
import { engineOf } from "./engine.js";
import { fixedChunks, flatten, plannedEachTime, QueryTemplates, type Slots, type SlotValue } from "./query-template.js";
import type { Schema } from "./schema.js";

/** `(a, b, …) in ((…, …, …), …)`: the columns' values are one of the given rows. */
export function keysIn(columns: readonly string[], rows: readonly (readonly unknown[])[]): RawBuilder<SqlBool> {
  const values = sql.join(rows.map((row) => sql`(${sql.join(row)})`));
  return sql<SqlBool>`(${sql.join(columns.map((c) => sql.ref(c)))}) in (${values})`;
}

const rowQueries = new QueryTemplates<unknown>();

/**
 * Runs the statement `build` makes over `rows` (each of the same width, at least one): `build`
 * gets a slot for each value, row by row, and is called once per shape and row count.
 */
export async function overRows<R>(
  db: Kysely<Schema>,
  shape: string,
  rows: readonly (readonly unknown[])[],
  build: (slots: SlotValue[][]) => RawBuilder<R>,
): Promise<R[]> {
  return (await db.executeQuery(compiledOverRows(db, shape, rows, build))).rows as R[];
}

function compiledOverRows<R>(
  db: Kysely<Schema>,
  shape: string,
  rows: readonly (readonly unknown[])[],
  build: (slots: SlotValue[][]) => RawBuilder<R>,
): CompiledQuery {
  const width = rows[0]?.length ?? 0;
  return rowQueries.fill(db, `${shape}:${rows.length}`, flatten(rows, width), (s) => {
    const built = build(rows.map((_, r) => Array.from({ length: width }, (_, c) => s[r * width + c])));
    return { compile: () => built.compile(db) };
  });
}

/** A look-up of rows by their keys: whole primary keys, so that each key finds one row at most. */
export interface ByKeys<R> {
  table: keyof Schema;
  columns: readonly (keyof R & string)[];
  /** The key's columns, in the order of each key's values. */
  keyColumns: readonly string[];
  /** Lock the rows found until the transaction ends, in the order of the keys given. */
  forUpdate?: boolean;
}

/** The PostgreSQL type of an array of a key column's values: ids are text, tenants integers. */
const arrayType = (column: string) => sql.raw(column === "tenant_id" ? "int4[]" : "text[]");

const keyedQueries = new QueryTemplates<unknown>();

/**
 * `select r.* from unnest(<an array per key column>) as k cross join lateral (<the row of the
 * key>) as r`: a LATERAL subquery runs once per key, so its plan is a probe of one index. It
 * is planned each time (PLAN_EACH_TIME): planned on an empty table, any index that begins with
 * the tenant looked as good as the key's, and a plan kept from then read the tenant's rows for
 * every key. `slots` are the key columns' arrays.
 */
function probeEachKey(table: keyof Schema, keyColumns: readonly string[], slots: Slots, selected: RawBuilder<unknown>, lock: boolean) {
  const probe = sql.join(
    keyColumns.map((c) => sql`t.${sql.ref(c)} = k.${sql.ref(c)}`),
    sql` and `,
  );
  const unnested = sql.join(keyColumns.map((c, i) => sql`cast(${slots[i]} as ${arrayType(c)})`));
  return sql`select r.* from unnest(${unnested}) as k(${sql.join(keyColumns.map((c) => sql.ref(c)))})
    cross join lateral (select ${selected} from ${sql.table(table)} as t where ${probe} limit 1${lock ? sql` for update` : sql``}) as r`;
}

/**
 * The statements that read the rows of `lookup.table` with the given keys: every plan of each
 * probes the key's index once per key, whatever the table's statistics say (a list of a
 * thousand ids had a never-analysed table read the tenant whole for each batch). Where the
 * engine takes key arrays, one statement: each key probed by a LATERAL subquery, one shape for
 * any number of keys; otherwise row values, a statement per run of keys.
 */
export function rowsByKeysQueries<R>(db: Kysely<Schema>, lookup: ByKeys<R>, keys: readonly (readonly unknown[])[]): CompiledQuery[] {
  if (keys.length === 0) return [];
  const { table, columns, keyColumns, forUpdate = false } = lookup;
  const selected = sql.join(columns.map((c) => sql.ref(c)));
  if (engineOf(db).keyArrays) {
    const arrays = keyColumns.map((_, i) => keys.map((key) => key[i]));
    const shape = `by-keys:${table}(${columns.join(",")}):${keyColumns.join(",")}:${forUpdate}`;
    return [
      keyedQueries.fill(db, shape, arrays, (s) => {
        const query = probeEachKey(table, keyColumns, s, selected, forUpdate);
        return plannedEachTime({ compile: () => query.compile(db) });
      }),
    ];
  }
  // Without row locks there is nothing to lock: one writer at a time.
  return fixedChunks(keys).map((part) =>
    compiledOverRows(
      db,
      `by-keys:${table}(${columns.join(",")}):${keyColumns.join(",")}`,
      part,
      (slots) => sql`select ${selected} from ${sql.table(table)} where ${keysIn(keyColumns, slots)}`,
    ),
  );
}

/** The rows with the given keys (see rowsByKeysQueries), in no particular order. */
export async function rowsByKeys<R>(db: Kysely<Schema>, lookup: ByKeys<R>, keys: readonly (readonly unknown[])[]): Promise<R[]> {
  const found: R[] = [];
  for (const query of rowsByKeysQueries(db, lookup, keys)) found.push(...((await db.executeQuery(query)).rows as R[]));
  return found;
}

/**
 * The statements that delete the rows of `table` with the given keys, bounded by the keys as
 * rowsByKeysQueries is: where the engine takes key arrays, each key is probed for its row's
 * address (`ctid`) and those rows are deleted by address, in one statement.
 */
export function deleteByKeysQueries(
  db: Kysely<Schema>,
  table: keyof Schema,
  keyColumns: readonly string[],
  keys: readonly (readonly unknown[])[],
): CompiledQuery[] {
  if (keys.length === 0) return [];
  if (engineOf(db).keyArrays) {
    const arrays = keyColumns.map((_, i) => keys.map((key) => key[i]));
    return [
      keyedQueries.fill(db, `delete-by-keys:${table}:${keyColumns.join(",")}`, arrays, (s) => {
        const found = probeEachKey(table, keyColumns, s, sql`t.ctid`, false);
        const query = sql`delete from ${sql.table(table)} where ctid = any(array(${found}))`;
        return plannedEachTime({ compile: () => query.compile(db) });
      }),
    ];
  }
  return fixedChunks(keys).map((part) =>
    compiledOverRows(
      db,
      `delete-by-keys:${table}:${keyColumns.join(",")}`,
      part,
      (slots) => sql`delete from ${sql.table(table)} where ${keysIn(keyColumns, slots)}`,
    ),
  );
}

/** Deletes the rows with the given keys (see deleteByKeysQueries); returns how many went. */
export async function deleteByKeys(
  db: Kysely<Schema>,
  table: keyof Schema,
  keyColumns: readonly string[],
  keys: readonly (readonly unknown[])[],
): Promise<number> {
  let deleted = 0;
  for (const query of deleteByKeysQueries(db, table, keyColumns, keys))
    deleted += Number((await db.executeQuery(query)).numAffectedRows ?? 0);
  return deleted;
}
