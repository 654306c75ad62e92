/**
 * An index of every row of each transaction table by the week of its event date, then in name
 * order, keeping the event date: a bounded window in name order is read from it as one arm a
 * week, merged (lists/window.ts, weekValues), at about a page of entries, however small a share
 * of the tenant's rows the window holds. The weeks are counted from 0001-01-01, a Monday, as
 * the late rows' buckets are (0008). The numbers are literals, so that this migration never
 * changes once it has run.
 */
import { sql, type Kysely } from "kysely";

const TRANSACTION_TABLES = ["withdrawals", "returns", "exchanges", "training_records"];

export function windowWeeksByNameMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      const week = sql.raw("(event_at + 62135596800000) / 604800000");
      for (const table of TRANSACTION_TABLES) {
        await sql`create index ${sql.id(`${table}_event_week_name`)} on ${sql.table(table)} (tenant_id, (${week}), name_key, id, event_at)`.execute(
          db,
        );
      }
    },
  };
}
