/**
 * The time window's late rows (lists/window.ts) are indexed by the UTC day of their event date
 * first, then by createdAt, so that a short window reads each day's late rows in page order
 * and stops when the page is full, instead of reading and sorting all of them on every page.
 * The event date stays in the index, last, so a window's bounds are checked on the entry. The
 * day is written exactly as the queries write it (window.ts: LATE_DAY), a planner matching
 * an expression index by its text.
 */
import { sql, type Kysely } from "kysely";

const TRANSACTION_TABLES = ["withdrawals", "returns", "exchanges", "training_records"];

export function lateRowsByEventDayMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const table of TRANSACTION_TABLES) {
        await sql`create index ${sql.id(`${table}_late_day`)} on ${sql.table(table)}
          (tenant_id, (late_event_at / 86400000), created_at, id, late_event_at)
          where late_event_at is not null`.execute(db);
        await db.schema.dropIndex(`${table}_late`).execute();
      }
    },
  };
}
