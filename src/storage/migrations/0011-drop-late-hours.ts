/**
 * The late rows' index by hour of the event date (0008) is dropped. Every window now starts and
 * ends with a bucket of eight hours, however short it is, which checks the event date on its
 * index entries (0010), and the tenant's late rows are probed at that level too
 * (lists/window.ts): a window shorter than eight hours reads, at most, the other late rows of
 * those eight hours as index entries, and each late row has one index entry fewer to write and
 * store.
 */
import { sql, type Kysely } from "kysely";

const TRANSACTION_TABLES = ["withdrawals", "returns", "exchanges", "training_records"];

export function dropLateHoursMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const table of TRANSACTION_TABLES) await sql`drop index ${sql.id(`${table}_late_b0`)}`.execute(db);
    },
  };
}
