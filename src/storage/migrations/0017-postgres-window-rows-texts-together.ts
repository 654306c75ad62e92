/**
 * On PostgreSQL, the index of on-time rows by createdAt and the late rows' 8-hour index keep
 * `name_key` before the event date on their entries, not after it: PostgreSQL aligns an 8-byte
 * column to 8 bytes, so the date between the two texts (`id`, `name_key`) padded each entry, and
 * the texts side by side pad it once (docs/measurements.md: about 7 bytes an entry). The date
 * and the name are the entries' last columns, after `created_at, id`, which no two rows share:
 * the entries' order and what each holds are unchanged. SQLite stores an entry unaligned and is
 * left as it is. The numbers are literals, as in 0016, so that this migration never changes once
 * it has run.
 */
import { sql, type Kysely } from "kysely";
import type { Engine } from "../engine.js";

const TRANSACTION_TABLES = ["withdrawals", "returns", "exchanges", "training_records"];

export function postgresWindowRowsTextsTogetherMigration(engine: Engine) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (engine.name !== "postgres") return;
      const bucket = sql.raw("cast((late_event_at + 62135596800000) / 28800000 as integer)");
      for (const table of TRANSACTION_TABLES) {
        const t = sql.table(table);
        const onTime = sql.id(`${table}_on_time`);
        const late = sql.id(`${table}_late_b1`);
        await sql`drop index ${onTime}`.execute(db);
        await sql`create index ${onTime} on ${t} (tenant_id, created_at, id, name_key, event_at)
          where late_event_at is null`.execute(db);
        await sql`drop index ${late}`.execute(db);
        await sql`create index ${late} on ${t} (tenant_id, (${bucket}), created_at, id, name_key, late_event_at)
          where (${bucket}) is not null`.execute(db);
      }
    },
  };
}
