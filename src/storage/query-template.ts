/**
 * Kysely builds and compiles a tree of frozen nodes on every call, which costs a list page
 * more than SQLite takes to run it, and a sync batch's insert megabytes of garbage
 * (docs/measurements.md). A template compiles the SQL of one query shape once, with a slot
 * wherever a value goes; each call then only fills the values in. The SQL is still Kysely's,
 * written once for every engine.
 */
import { CompiledQuery, sql as rawSql, type Compilable, type Kysely, type Transaction } from "kysely";
import { BoundedMap } from "../platform/bounded-map.js";
import { engineOf } from "./engine.js";
import type { Schema } from "./schema.js";

/** Stands for a value while a template is compiled; the compiled parameters name it. */
export class Slot {
  constructor(readonly name: string) {}
}

/**
 * What a template's builder gets for each value: a Slot, typed to fit wherever a value of any
 * column's type goes, since it only becomes a parameter of the compiled SQL.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a slot stands for a value of any type (see above)
export type SlotValue = any;
export type Slots = Readonly<Record<string, SlotValue>>;

const MAX_SHAPES = 2000;

/**
 * Begins the SQL of a statement that PostgreSQL must plan on every execution rather than once
 * per connection (storage/postgres.ts): a plan kept from when the table was empty may read
 * a whole tenant where a probe would do, and nothing re-plans it until statistics arrive.
 */
export const PLAN_EACH_TIME = "/* planned each time */ ";

/** The statement, marked PLAN_EACH_TIME: for the write path's look-ups, where planning costs little beside the batch. */
export function plannedEachTime<R>(query: Compilable<R>): Compilable<R> {
  return {
    compile: () => {
      const compiled = query.compile();
      return CompiledQuery.raw(PLAN_EACH_TIME + compiled.sql, [...compiled.parameters]) as CompiledQuery<R>;
    },
  };
}

export class QueryTemplates<R> {
  private readonly compiled = new BoundedMap<string, { sql: string; slots: string[] }>(MAX_SHAPES);

  /**
   * The compiled query of the shape named `shape`, with `values` filled in. `build` receives
   * a slot for every name in `values` (an array's are its indexes) and must use them only as
   * values (no arithmetic, no decisions): everything that changes the SQL text belongs in
   * `shape`, and the number of shapes must stay small (they are kept).
   */
  fill(
    db: Kysely<Schema>,
    shape: string,
    values: Record<string, unknown> | readonly unknown[],
    build: (slots: Slots) => Compilable<R>,
  ): CompiledQuery<R> {
    const engine = engineOf(db);
    const key = `${engine.name}|${shape}`;
    let template = this.compiled.get(key);
    if (template === undefined) {
      // `+?` hides a value from a planner that would otherwise plan the statement anew for it (Engine.replansOnBind).
      const slotOf = engine.replansOnBind ? (name: string) => rawSql`+${new Slot(name)}` : (name: string) => new Slot(name);
      const slots = Object.fromEntries(Object.keys(values).map((name) => [name, slotOf(name)]));
      const { sql, parameters } = build(slots).compile();
      template = { sql, slots: parameters.map((p) => slotName(p, shape)) };
      this.compiled.set(key, template);
    }
    const named = values as Record<string, unknown>;
    return CompiledQuery.raw(
      template.sql,
      template.slots.map((name) => named[name]),
    ) as CompiledQuery<R>;
  }
}

/**
 * Splits items into runs of a few fixed sizes (500, 100, 20, 5, 1), so that a statement over
 * many rows has one of five shapes whatever the number of rows (one shape per batch size
 * would let a client fill the caches with huge statements), and a full sync batch of 1,000
 * is two statements: smaller runs made the batch's insert slower (docs/measurements.md).
 */
export function fixedChunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  let at = 0;
  for (const size of [500, 100, 20, 5, 1]) {
    while (items.length - at >= size) {
      out.push(items.slice(at, at + size));
      at += size;
    }
  }
  return out;
}

const inserts = new QueryTemplates<never>();

/**
 * Inserts rows given as their values in `columns` order, as few statements of fixed shapes
 * (see fixedChunks), inside the caller's transaction, which must end in a rollback if this
 * throws.
 *
 * On SQLite each statement is `INSERT OR FAIL`: a statement that writes many rows and may
 * abort halfway otherwise keeps a statement journal, a copy of every page it changes so that
 * it alone can be undone, and that copying was a fifth of a sync batch's write
 * (docs/measurements.md). With FAIL a constraint error still ends the statement with an
 * error, but leaves the rows it wrote before; the caller's transaction, rolled back on that
 * error, takes them away with the rest. (PostgreSQL undoes a failed statement without such a
 * copy; it has no OR clause.)
 */
export async function insertMany(
  trx: Transaction<Schema>,
  table: keyof Schema,
  columns: readonly string[],
  rows: readonly unknown[][],
  /** A row whose `keys` are stored already adds its `add` columns to the stored row's instead. */
  upsert?: { keys: readonly string[]; add: readonly string[] },
): Promise<void> {
  const width = columns.length;
  const orFail = engineOf(trx).insertsOrFail;
  for (const part of fixedChunks(rows)) {
    const query = inserts.fill(trx, `${table}:${upsert === undefined ? "insert" : "upsert"}:${part.length}`, flatten(part, width), (s) => {
      const insert = trx.insertInto(table);
      const values = (orFail ? insert.orFail() : insert).values(
        part.map((_, r) => Object.fromEntries(columns.map((column, c) => [column, s[r * width + c]]))),
      );
      if (upsert === undefined) return values;
      const sums = Object.fromEntries(upsert.add.map((c) => [c, rawSql`${rawSql.ref(`${table}.${c}`)} + ${rawSql.ref(`excluded.${c}`)}`]));
      return values.onConflict((oc) => oc.columns(upsert.keys as never).doUpdateSet(sums as never));
    });
    await trx.executeQuery(query);
  }
}

/** The rows' values in one array, row after row: `Array.prototype.flat` took a millisecond for 500 rows of 13. */
export function flatten(rows: readonly (readonly unknown[])[], width: number): unknown[] {
  const out = new Array<unknown>(rows.length * width);
  let at = 0;
  for (const row of rows) {
    if (row.length !== width) throw new Error(`a row of ${row.length} values for ${width} columns`);
    for (let c = 0; c < width; c += 1) out[at++] = row[c];
  }
  return out;
}

function slotName(parameter: unknown, shape: string): string {
  if (!(parameter instanceof Slot)) throw new Error(`template ${shape} has a value that is not a slot: ${String(parameter)}`);
  return parameter.name;
}
