/**
 * The late rows' index by bucket of about 3.7 years (0008) is dropped. Such a bucket lies whole
 * in a window only when the window spans it: a history of a few years, read at once. Windows
 * within the tenant's late rows reach past them with larger buckets (lists/window.ts), so a
 * window over a year of history takes two or three buckets of 171 days instead of one or two;
 * and each late row has one index entry fewer to write and store.
 */
import { sql, type Kysely } from "kysely";

const TRANSACTION_TABLES = ["withdrawals", "returns", "exchanges", "training_records"];

export function dropLateTopLevelMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const table of TRANSACTION_TABLES) await sql`drop index ${sql.id(`${table}_late_b5`)}`.execute(db);
    },
  };
}
