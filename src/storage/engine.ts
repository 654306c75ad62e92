/** What differs between the storage engines, stated once as data. */
import { PostgresAdapter, sql, type ColumnDataType, type Kysely, type RawBuilder, type Transaction } from "kysely";

export type Engine = "sqlite" | "postgres";

export interface EngineTraits {
  /** Column type of an auto-numbered integer primary key. */
  serialType: ColumnDataType;
  /** Column type of milliseconds since the epoch. */
  millisType: ColumnDataType;
  /** Column type of text compared in code-point order (sort keys, and ids, which break ties). */
  sortKeyType: RawBuilder<unknown>;
}

export const ENGINE_TRAITS: Record<Engine, EngineTraits> = {
  // SQLite's default BINARY collation compares UTF-8 bytes: code-point order.
  sqlite: { serialType: "integer", millisType: "integer", sortKeyType: sql`text` },
  // PostgreSQL's "C" collation compares bytes too, whatever the database's default collation
  // (often a linguistic one), and keeps text indexes usable for ranges.
  postgres: { serialType: "serial", millisType: "bigint", sortKeyType: sql`text collate "C"` },
};

/** The engine a Kysely instance (or one of its transactions) talks to. */
export function engineOf(db: Kysely<any>): Engine {
  return db.getExecutor().adapter instanceof PostgresAdapter ? "postgres" : "sqlite";
}

/**
 * Makes the writers of one thing (a tenant's list, the demo seed) take turns until the
 * calling transaction ends; call it first in the transaction. PostgreSQL takes a
 * transaction-scoped advisory lock, which holds across every process on the database.
 * SQLite has one writer at a time, but a transaction that reads first and writes later
 * fails (SQLITE_BUSY_SNAPSHOT, no waiting) when another connection, such as an `import`
 * beside `serve`, wrote in between: a write that changes nothing takes the write lock up
 * front, waiting for it as long as busy_timeout allows.
 */
export async function serializeWriters(trx: Kysely<any>, name: string, id: number): Promise<void> {
  if (engineOf(trx) === "postgres") await sql`select pg_advisory_xact_lock(hashtext(${name}), ${id}::int4)`.execute(trx);
  else await sql`update settings set name = name where 0`.execute(trx);
}

/**
 * Has PostgreSQL plan the rest of the calling transaction's statements for their values and
 * the tables as they are now, instead of reusing the session's generic plans (see
 * postgres.ts). For tables that start empty and fill fast, such as the webhook outbox: a
 * generic plan made while one was empty scanned and sorted it whole long after it had grown
 * (a full scan of 120,000 deliveries per poll, until an autoanalyze). SQLite: nothing to do.
 */
export async function planForNow(trx: Kysely<any>): Promise<void> {
  if (engineOf(trx) === "postgres") await sql`set local plan_cache_mode = force_custom_plan`.execute(trx);
}

/**
 * Runs `work` in a transaction whose commit does not wait for the disk: it survives a crash
 * of the process but may be lost with the machine (or, on PostgreSQL, the database server).
 * Only for writes whose loss repeats work and breaks no promise, such as the delivery loop's
 * leases and attempt log (a lost one means a webhook is sent again, at least once). Every
 * later durable commit makes it durable too. PostgreSQL: `synchronous_commit = off` for the
 * transaction. SQLite: `synchronous = NORMAL` on the one connection for its commit, then back.
 */
export async function relaxedTransaction<T>(db: Kysely<any>, work: (trx: Transaction<any>) => Promise<T>): Promise<T> {
  if (engineOf(db) === "postgres") {
    return db.transaction().execute(async (trx) => {
      await sql`set local synchronous_commit = off`.execute(trx);
      return work(trx);
    });
  }
  // Held for the whole of it: no other transaction can commit on this connection meanwhile.
  return db.connection().execute(async (conn) => {
    const { rows } = await sql<{ synchronous: number }>`pragma synchronous`.execute(conn);
    await sql`pragma synchronous = normal`.execute(conn);
    try {
      return await conn.transaction().execute(work);
    } finally {
      await sql.raw(`pragma synchronous = ${Number(rows[0]?.synchronous ?? 2)}`).execute(conn);
    }
  });
}
