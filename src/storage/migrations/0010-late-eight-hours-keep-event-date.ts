/**
 * The late rows' index by 8-hour bucket of the event date (0008) keeps the event date on its
 * entries, as the hour's did: a window at least that long then starts and ends with a bucket of
 * eight hours that checks the event date on its index entries, instead of up to seven whole
 * hours and a part of one, which saves up to fourteen arms a window (lists/window.ts). The
 * numbers are literals, as in 0008, so that this migration never changes once it has run.
 */
import { sql, type Kysely } from "kysely";

const TRANSACTION_TABLES = ["withdrawals", "returns", "exchanges", "training_records"];

export function lateEightHoursKeepEventDateMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const table of TRANSACTION_TABLES) {
        const name = sql.id(`${table}_late_b1`);
        const bucket = sql.raw("(late_event_at + 62135596800000) / 28800000");
        await sql`drop index ${name}`.execute(db);
        await sql`create index ${name} on ${sql.table(table)} (tenant_id, (${bucket}), created_at, id, late_event_at)
          where (${bucket}) is not null`.execute(db);
      }
    },
  };
}
