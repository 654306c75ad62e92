/**
 * On SQLite, the two indexes that a window's rows are read from in no particular order (a window
 * in name order, and its count: lists/window.ts) keep `late_event_at` and `name_key` on their
 * entries: the index of on-time rows by createdAt, and the late rows' index by 8-hour bucket.
 * SQLite then reads the window's rows, their names, and their row ids from the index alone:
 * without `late_event_at` it looked up every row to check the partial index's own condition.
 * The order of the entries and what each index holds are unchanged. PostgreSQL is left as it
 * is: its window-first page sets rows apart by their address, which an index-only scan does not
 * give (docs/measurements.md). The numbers are literals, as in 0008, so that this migration
 * never changes once it has run.
 */
import { sql, type Kysely } from "kysely";
import type { Engine } from "../engine.js";

const TRANSACTION_TABLES = ["withdrawals", "returns", "exchanges", "training_records"];

export function windowRowsCoverNameMigration(engine: Engine) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (engine.name !== "sqlite") return;
      const bucket = sql.raw("(late_event_at + 62135596800000) / 28800000");
      for (const table of TRANSACTION_TABLES) {
        const t = sql.table(table);
        const onTime = sql.id(`${table}_on_time`);
        const late = sql.id(`${table}_late_b1`);
        await sql`drop index ${onTime}`.execute(db);
        await sql`create index ${onTime} on ${t} (tenant_id, created_at, id, event_at, late_event_at, name_key)
          where late_event_at is null`.execute(db);
        await sql`drop index ${late}`.execute(db);
        await sql`create index ${late} on ${t} (tenant_id, (${bucket}), created_at, id, late_event_at, name_key)
          where (${bucket}) is not null`.execute(db);
      }
    },
  };
}
