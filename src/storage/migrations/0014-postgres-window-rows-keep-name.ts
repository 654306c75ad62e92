/**
 * On PostgreSQL, the two indexes that a window's rows are read from in no particular order (a
 * window in name order: lists/window.ts) keep `name_key` on their entries, as on SQLite since
 * 0013: the index of on-time rows by createdAt, and the late rows' index by 8-hour bucket. A
 * window-first page then checks the page's name range on each entry and reads from the table
 * only the rows it keeps, which it sets apart by their address; before, it read every row of
 * the window from the table to check its name. The order of the entries and what each index
 * holds are unchanged. The numbers are literals, as in 0008, so that this migration never
 * changes once it has run.
 */
import { sql, type Kysely } from "kysely";
import type { Engine } from "../engine.js";

const TRANSACTION_TABLES = ["withdrawals", "returns", "exchanges", "training_records"];

export function postgresWindowRowsKeepNameMigration(engine: Engine) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (engine.name !== "postgres") return;
      const bucket = sql.raw("(late_event_at + 62135596800000) / 28800000");
      for (const table of TRANSACTION_TABLES) {
        const t = sql.table(table);
        const onTime = sql.id(`${table}_on_time`);
        const late = sql.id(`${table}_late_b1`);
        await sql`drop index ${onTime}`.execute(db);
        await sql`create index ${onTime} on ${t} (tenant_id, created_at, id, event_at, name_key)
          where late_event_at is null`.execute(db);
        await sql`drop index ${late}`.execute(db);
        await sql`create index ${late} on ${t} (tenant_id, (${bucket}), created_at, id, late_event_at, name_key)
          where (${bucket}) is not null`.execute(db);
      }
    },
  };
}
