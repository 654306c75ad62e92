/**
 * The time window's late rows (lists/window.ts) get a second partial index, by the UTC day of
 * their event date first, then by createdAt, so that a window of 12 hours to a week reads each
 * day's late rows in page order and stops when the page is full, instead of reading and
 * sorting all of them on every page. The index by event date (0001) stays, for shorter and
 * open-ended windows: a day's index would make a window of minutes read its whole day. The
 * new index must never serve those: it leaves the event date out, and its condition is on the
 * day, which only the queries by day state (PostgreSQL's generic plans walked a tenant's whole
 * index by day for an open-ended window, when it held the event date or shared the condition
 * `late_event_at is not null` that any window on the event date implies). The day is written
 * exactly as the queries write it (window.ts: LATE_DAY_MS), as a planner matches an expression
 * index by its text.
 */
import { sql, type Kysely } from "kysely";

const TRANSACTION_TABLES = ["withdrawals", "returns", "exchanges", "training_records"];

export function lateRowsByEventDayMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const table of TRANSACTION_TABLES) {
        await sql`create index ${sql.id(`${table}_late_day`)} on ${sql.table(table)}
          (tenant_id, (late_event_at / 86400000), created_at, id)
          where (late_event_at / 86400000) is not null`.execute(db);
      }
    },
  };
}
