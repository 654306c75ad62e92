/**
 * The index of on-time rows by createdAt and the late rows' index by 8-hour bucket no longer
 * keep `name_key` on their entries: no statement of the time window reads a name from them
 * (lists/window/). They keep the event date, which a window's arms check on the entries, and
 * `late_event_at`, the partial index's own condition. The same on both engines. The numbers
 * are literals, as in 0008, so that this migration never changes once it has run.
 */
import { sql, type Kysely } from "kysely";

const TRANSACTION_TABLES = ["withdrawals", "returns", "exchanges", "training_records"];

export function windowIndexesWithoutNamesMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      const bucket = sql.raw("cast((late_event_at + 62135596800000) / 28800000 as integer)");
      for (const table of TRANSACTION_TABLES) {
        const t = sql.table(table);
        const onTime = sql.id(`${table}_on_time`);
        const late = sql.id(`${table}_late_b1`);
        await sql`drop index ${onTime}`.execute(db);
        await sql`create index ${onTime} on ${t} (tenant_id, created_at, id, event_at, late_event_at)
          where late_event_at is null`.execute(db);
        await sql`drop index ${late}`.execute(db);
        await sql`create index ${late} on ${t} (tenant_id, (${bucket}), created_at, id, late_event_at)
          where (${bucket}) is not null`.execute(db);
      }
    },
  };
}
