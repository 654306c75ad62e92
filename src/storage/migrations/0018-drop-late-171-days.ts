/**
 * The late rows' index by bucket of about 171 days (0008) is dropped, as 0012 dropped the level
 * above it. A window wider than that takes more buckets of 21 days instead (a year about 32 arms
 * against 24, docs/measurements.md), but such a window's first page reads only the arms that can
 * hold its rows once its tiling's tops are found, and its later pages its late rows as one arm
 * (lists/window.ts, Tops and Bracket), so the arms cost it little; and each late row has one index
 * entry fewer to write and store: a tenant whose every row is late stored 1.18 times what it did
 * before the window's indexes, and now 1.13 times.
 */
import { sql, type Kysely } from "kysely";

const TRANSACTION_TABLES = ["withdrawals", "returns", "exchanges", "training_records"];

export function dropLate171DaysMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const table of TRANSACTION_TABLES) await sql`drop index ${sql.id(`${table}_late_b4`)}`.execute(db);
    },
  };
}
