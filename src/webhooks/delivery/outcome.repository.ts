/**
 * The SQL of recording attempts: each attempt in the log, and what it means for its delivery,
 * for a group of attempts at once (recorder.ts), a statement per run of rows.
 */
import { sql, type Transaction } from "kysely";
import { fixedChunks, insertMany } from "../../storage/query-template.js";
import { overRows } from "../../storage/row-values.js";
import type { Schema } from "../../storage/schema.js";
import { lockDeliveries } from "../locks.repository.js";
import type { Taken } from "./lease.repository.js";
import type { Verdict } from "./retry-policy.js";

/** What an attempt, ended at `at`, means for the delivery it took. */
export interface Settled extends Verdict {
  taken: Taken;
  at: number;
}

/**
 * Sets each delivery's status, next attempt and update time, after locking them in the one
 * order of locks.repository.ts.
 *
 * Only a delivery still as its attempt took it (its count of attempts unchanged) takes the
 * outcome. One replayed meanwhile (count 0) keeps its fresh schedule and only loses its lease,
 * so that it goes at once; one taken again after this lease ran out is left alone. One paused
 * meanwhile (its endpoint disabled) stays paused with its retry's time, so that enabling the
 * endpoint sends it at once with the others that waited.
 */
export async function settle(trx: Transaction<Schema>, settled: readonly Settled[]): Promise<void> {
  await lockDeliveries(
    trx,
    settled.map(({ taken: t }) => [t.tenant_id, t.endpoint_id, t.id]),
  );
  for (const part of fixedChunks(settled)) {
    const outcomes = part.map(({ taken: t, status, next, at }) => [t.tenant_id, t.endpoint_id, t.id, status, next, at, t.attempts]);
    await overRows(trx, "settle", outcomes, (slots) => {
      // Typed values: PostgreSQL would read untyped ones as text.
      const rows = slots.map(
        ([tenant, endpoint, id, status, next, at, attempts]) =>
          sql`(cast(${tenant} as integer), cast(${endpoint} as text), cast(${id} as text), cast(${status} as text), cast(${next} as bigint), cast(${at} as bigint), cast(${attempts} as integer))`,
      );
      return sql`with outcome (tenant_id, endpoint_id, id, status, next_attempt_at, updated_at, attempts) as (values ${sql.join(rows)})
        update webhook_deliveries
        set status = case when webhook_deliveries.attempts = outcome.attempts
            then (case when webhook_deliveries.status = 'paused' and outcome.status = 'pending' then 'paused' else outcome.status end)
            else webhook_deliveries.status end,
          next_attempt_at = case when webhook_deliveries.attempts = outcome.attempts then outcome.next_attempt_at else webhook_deliveries.next_attempt_at end,
          updated_at = case when webhook_deliveries.attempts = outcome.attempts then outcome.updated_at else webhook_deliveries.updated_at end,
          lease_until = null
        from outcome
        where webhook_deliveries.tenant_id = outcome.tenant_id and webhook_deliveries.endpoint_id = outcome.endpoint_id
          and webhook_deliveries.id = outcome.id
          and (webhook_deliveries.attempts = outcome.attempts or webhook_deliveries.attempts = 0)`;
    });
  }
}

const ATTEMPT_COLUMNS = [
  "tenant_id",
  "id",
  "delivery_id",
  "endpoint_id",
  "message_id",
  "event_type",
  "attempted_at",
  "status_code",
  "duration_ms",
  "error",
  "next_attempt_at",
];

/** Attempts for the log, each given as its values in ATTEMPT_COLUMNS order. */
export async function insertAttempts(trx: Transaction<Schema>, rows: unknown[][]): Promise<void> {
  await insertMany(trx, "webhook_attempts", ATTEMPT_COLUMNS, rows);
}
