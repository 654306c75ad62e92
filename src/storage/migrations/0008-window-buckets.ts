/**
 * The time window reads each of its rows from an index already in createdAt order, at any
 * width (lists/window.ts):
 * - The index by createdAt is split in two partial ones, of rows stored on time and of late
 *   rows, the same entries as before: the plain list merges the two, and the window's on-time
 *   arm reads only on-time rows, so late rows stored in its createdAt range (an import, a device
 *   back after weeks) no longer make it skip them one by one.
 * - Late rows are indexed by the bucket of their event date at six levels, an hour to about 3.7
 *   years, each bucket in createdAt order; a window reads the few buckets that tile it and merges
 *   them. These replace the late rows' index by event date (0001) and by day (0007), whose ranges
 *   had to be sorted on every page.
 * The bucket arithmetic is written exactly as the queries write it (collections/late-event.ts),
 * as a planner matches an expression index by its text: the numbers are literals here, so that
 * this migration never changes once it has run.
 */
import { sql, type Kysely } from "kysely";

const TRANSACTION_TABLES = ["withdrawals", "returns", "exchanges", "training_records"];
const ORIGIN = 62_135_596_800_000;
const LEVELS = [3_600_000, 28_800_000, 230_400_000, 1_843_200_000, 14_745_600_000, 117_964_800_000];

export function windowBucketsMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const table of TRANSACTION_TABLES) {
        const t = sql.table(table);
        await sql`create index ${sql.id(`${table}_on_time`)} on ${t} (tenant_id, created_at, id, event_at)
          where late_event_at is null`.execute(db);
        await sql`create index ${sql.id(`${table}_late_created`)} on ${t} (tenant_id, created_at, id)
          where late_event_at is not null`.execute(db);
        for (const [level, length] of LEVELS.entries()) {
          const bucket = sql.raw(`(late_event_at + ${ORIGIN}) / ${length}`);
          // The finest level keeps the event date too: a window's first and last hours are
          // read from it with the date checked on the index entry.
          const rest = level === 0 ? sql`created_at, id, late_event_at` : sql`created_at, id`;
          await sql`create index ${sql.id(`${table}_late_b${level}`)} on ${t} (tenant_id, (${bucket}), ${rest})
            where (${bucket}) is not null`.execute(db);
        }
        await sql`drop index ${sql.id(`${table}_created_at_id_event_at`)}`.execute(db);
        await sql`drop index ${sql.id(`${table}_late`)}`.execute(db);
        await sql`drop index ${sql.id(`${table}_late_day`)}`.execute(db);
      }
    },
  };
}
