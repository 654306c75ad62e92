/**
 * The late rows' bucket indexes (0008, 0010, 0013, 0014) and the index of rows by event week
 * (0015) hold their bucket or week as a 4-byte integer: `cast(... as integer)`, which every such
 * number fits (event dates lie in the years 1 to 9999: an 8-hour bucket is under 11 million, a
 * week under 530,000). On PostgreSQL the expression was a bigint, 8 bytes and padding: each
 * entry of these five indexes is 8 bytes smaller there (docs/measurements.md). SQLite stores
 * integers by their size either way; its indexes are rebuilt only because a planner matches an
 * expression index by its expression, which the queries now write with the cast
 * (lists/window.ts). The entries' columns and order are unchanged. The numbers are literals, so
 * that this migration never changes once it has run.
 */
import { sql, type Kysely } from "kysely";

const TRANSACTION_TABLES = ["withdrawals", "returns", "exchanges", "training_records"];

/** Each index: its name's suffix, the date and divisor of its number, and the columns after it. */
const INDEXES = [
  { suffix: "late_b1", date: "late_event_at", divisor: 28_800_000, rest: "created_at, id, late_event_at, name_key" },
  { suffix: "late_b2", date: "late_event_at", divisor: 230_400_000, rest: "created_at, id" },
  { suffix: "late_b3", date: "late_event_at", divisor: 1_843_200_000, rest: "created_at, id" },
  { suffix: "late_b4", date: "late_event_at", divisor: 14_745_600_000, rest: "created_at, id" },
  { suffix: "event_week_name", date: "event_at", divisor: 604_800_000, rest: "name_key, id, event_at" },
];

export function windowBucketsAsIntegersMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const table of TRANSACTION_TABLES) {
        for (const { suffix, date, divisor, rest } of INDEXES) {
          const name = sql.id(`${table}_${suffix}`);
          const number = sql.raw(`cast((${date} + 62135596800000) / ${divisor} as integer)`);
          // The late rows' indexes are partial, on their own number, as the queries state it.
          const where = date === "late_event_at" ? sql` where (${number}) is not null` : sql``;
          await sql`drop index ${name}`.execute(db);
          await sql`create index ${name} on ${sql.table(table)} (tenant_id, (${number}), ${sql.raw(rest)})${where}`.execute(db);
        }
      }
    },
  };
}
