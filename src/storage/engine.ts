/**
 * What differs between the storage engines, stated once: each engine is a set of named
 * capabilities and the few operations that are written differently on each. Code that
 * depends on a difference asks the engine for the capability (`engineOf(trx).rowLocks`),
 * never for its name, and `engineOf` is the one way to tell which engine a query runs on.
 */
import { PostgresAdapter, sql, type ColumnDataType, type Kysely, type RawBuilder, type Transaction } from "kysely";
import type { Schema } from "./schema.js";

export type EngineName = "sqlite" | "postgres";

export interface Engine {
  readonly name: EngineName;
  /** Column type of an auto-numbered integer primary key. */
  readonly serialType: ColumnDataType;
  /** Column type of milliseconds since the epoch. */
  readonly millisType: ColumnDataType;
  /** Column type of text compared in code-point order (sort keys, and ids, which break ties). */
  readonly sortKeyType: RawBuilder<unknown>;
  /**
   * Rows can be locked (`FOR UPDATE`) and passed over while another transaction holds them
   * (`SKIP LOCKED`). Without it, one transaction writes at a time, so none needs row locks.
   */
  readonly rowLocks: boolean;
  /**
   * An ordered `UNION ALL ... ORDER BY ... LIMIT` is merged arm by arm, each arm read only as
   * far as the page needs. Without it (PostgreSQL sorts every arm whole), each ordered arm
   * needs an `ORDER BY ... LIMIT` of its own.
   */
  readonly mergesOrderedUnion: boolean;
  /**
   * A multi-row `INSERT` that may fail halfway keeps a statement journal (a copy of every page
   * it changes) unless it says `OR FAIL`; the caller's transaction undoes it whole all the same.
   */
  readonly insertsOrFail: boolean;
  /**
   * An index range takes every bound stated on its column (a prefix's start and a cursor's
   * row value together). Without it one lower bound starts the range and the others are
   * filters, so a page after a cursor must state the cursor alone, or read from the prefix's
   * start on every page.
   */
  readonly combinesRangeBounds: boolean;
  /**
   * Keys can be passed as arrays (`unnest`) and probed one by one (`LATERAL`): a look-up by many
   * keys is then one statement whose every plan uses the key, whatever the statistics say.
   */
  readonly keyArrays: boolean;
  /** A table can be stored in its primary key's order (`WITHOUT ROWID`): one B-tree a row, not two. */
  readonly clusteredTables: boolean;
  /**
   * A table in a FROM can name the index it must be read by (SQLite's `INDEXED BY`). Without
   * statistics (a new database, until `PRAGMA optimize` gathers them) SQLite reckons an equality
   * on an expression index no narrower than a range of another index, and reads a window's week
   * by the name index instead (lists/window/statement.ts).
   */
  readonly namesIndexes: boolean;
  /**
   * A prepared statement is planned again whenever a value the planner looked at is bound anew
   * (SQLite's STAT4 samples), which for a window page's many arms cost more than running it. A
   * value written `+?` is one the planner cannot look at, so query templates write theirs so
   * (storage/query-template.ts) and each statement keeps one plan, as on PostgreSQL.
   */
  readonly replansOnBind: boolean;
  /** A column's NOT NULL can be dropped in place; without it the table is rebuilt. */
  readonly altersColumns: boolean;
  /**
   * Many processes may serve one database (`serve --workers`), so its schema is migrated by
   * the operator, once, not by whichever process starts first.
   */
  readonly sharedByProcesses: boolean;
  /** One process with a memory budget: V8 is told to favour size over speed. */
  readonly favoursMemory: boolean;
  /**
   * Makes the writers of one thing (a tenant's list, the demo seed, a tenant's events) take
   * turns until the calling transaction ends; call it before the transaction reads what the
   * turn guards (a list's batch calls it first). On SQLite every writer already takes turns.
   */
  serializeWriters(trx: Kysely<Schema>, name: string, id: number): Promise<void>;
  /**
   * Has the rest of the calling transaction planned for its values and the tables as they are
   * now, for tables that start empty and fill fast (the webhook outbox).
   */
  planForNow(trx: Kysely<Schema>): Promise<void>;
  /**
   * Lifts the statement time limit for the rest of the calling transaction: for one-time work
   * that may wait on another process doing the same (the demo seed of a first start).
   */
  untimed(trx: Kysely<Schema>): Promise<void>;
  /**
   * Runs `work` in a transaction whose commit does not wait for the disk: it survives a crash
   * of the process but may be lost with the machine. Only for writes whose loss repeats work
   * and breaks no promise (the delivery loop's leases and attempt log: at least once).
   */
  relaxedTransaction<T>(db: Kysely<Schema>, work: (trx: Transaction<Schema>) => Promise<T>): Promise<T>;
}

export const SQLITE: Engine = {
  name: "sqlite",
  // SQLite's default BINARY collation compares UTF-8 bytes: code-point order.
  serialType: "integer",
  millisType: "integer",
  sortKeyType: sql`text`,
  rowLocks: false,
  mergesOrderedUnion: true,
  insertsOrFail: true,
  combinesRangeBounds: false,
  keyArrays: false,
  clusteredTables: true,
  namesIndexes: true,
  replansOnBind: true,
  altersColumns: false,
  sharedByProcesses: false,
  favoursMemory: true,
  // A transaction that reads first and writes later fails (SQLITE_BUSY_SNAPSHOT, no waiting)
  // when another connection, such as an `import` beside `serve`, wrote in between: a write
  // that changes nothing takes the write lock up front, waiting for it up to busy_timeout.
  async serializeWriters(trx) {
    await sql`update settings set name = name where 0`.execute(trx);
  },
  async planForNow() {},
  async untimed() {},
  // `synchronous = NORMAL` on the one connection for the commit, then back; the connection is
  // held for the whole of it, so no other transaction commits on it meanwhile.
  relaxedTransaction(db, work) {
    return db.connection().execute(async (conn) => {
      const { rows } = await sql<{ synchronous: number }>`pragma synchronous`.execute(conn);
      await sql`pragma synchronous = normal`.execute(conn);
      try {
        return await conn.transaction().execute(work);
      } finally {
        await sql.raw(`pragma synchronous = ${Number(rows[0]?.synchronous ?? 2)}`).execute(conn);
      }
    });
  },
};

export const POSTGRES: Engine = {
  name: "postgres",
  serialType: "serial",
  millisType: "bigint",
  // The "C" collation compares bytes whatever the database's default (often a linguistic
  // one), and keeps text indexes usable for ranges.
  sortKeyType: sql`text collate "C"`,
  rowLocks: true,
  mergesOrderedUnion: false,
  insertsOrFail: false,
  combinesRangeBounds: true,
  keyArrays: true,
  clusteredTables: false,
  namesIndexes: false,
  replansOnBind: false,
  altersColumns: true,
  sharedByProcesses: true,
  favoursMemory: false,
  // A transaction-scoped advisory lock holds across every process on the database.
  async serializeWriters(trx, name, id) {
    await sql`select pg_advisory_xact_lock(hashtext(${name}), ${id}::int4)`.execute(trx);
  },
  // Sessions reuse generic plans (see postgres.ts); one made while a table was empty scans it.
  async planForNow(trx) {
    await sql`set local plan_cache_mode = force_custom_plan`.execute(trx);
  },
  async untimed(trx) {
    await sql`set local statement_timeout = 0`.execute(trx);
  },
  relaxedTransaction(db, work) {
    return db.transaction().execute(async (trx) => {
      await sql`set local synchronous_commit = off`.execute(trx);
      return work(trx);
    });
  },
};

export const ENGINES: Readonly<Record<EngineName, Engine>> = { sqlite: SQLITE, postgres: POSTGRES };

/** The engine a Kysely instance (or one of its transactions) talks to. */
export function engineOf(db: { getExecutor(): { readonly adapter: unknown } }): Engine {
  return db.getExecutor().adapter instanceof PostgresAdapter ? POSTGRES : SQLITE;
}
