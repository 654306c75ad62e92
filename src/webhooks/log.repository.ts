/** The delivery log an admin reads (every attempt, per endpoint) and replays from. */
import { sql, type Kysely } from "kysely";
import type { CursorPosition } from "../platform/cursor.js";
import type { Schema } from "../storage/schema.js";
import { DELIVERY_ID_PREFIX, idTime } from "./outbox.js";

/** A page of an endpoint's attempts, newest first by (attempted_at, id), after `after`. */
export async function attemptPage(
  db: Kysely<Schema>,
  tenantId: number,
  endpointId: string,
  after: CursorPosition | undefined,
  limit: number,
) {
  let query = db.selectFrom("webhook_attempts").selectAll().where("tenant_id", "=", tenantId).where("endpoint_id", "=", endpointId);
  if (after !== undefined) query = query.where((eb) => eb(eb.refTuple("attempted_at", "id"), "<", eb.tuple(Number(after.key), after.id)));
  return query.orderBy("attempted_at", "desc").orderBy("id", "desc").limit(sql.lit(limit)).execute();
}

/**
 * Sends a delivery again from the start of its retry schedule, whatever its status, with the
 * same webhook-id. Returns false when the endpoint has no such delivery.
 */
export async function replayDelivery(db: Kysely<Schema>, tenantId: number, endpointId: string, id: string, now: number): Promise<boolean> {
  const replayed = await db
    .updateTable("webhook_deliveries")
    .set({ status: "pending", attempts: 0, next_attempt_at: now, updated_at: now })
    .where("tenant_id", "=", tenantId)
    .where("endpoint_id", "=", endpointId)
    .where("id", "=", id)
    .executeTakeFirst();
  return replayed.numUpdatedRows > 0n;
}

/**
 * Sends every failed delivery of the endpoint whose message was written from `since` to `until`
 * (inclusive) again, each from the start of its schedule. Returns how many.
 */
export async function replayFailed(
  db: Kysely<Schema>,
  tenantId: number,
  endpointId: string,
  since: number,
  until: number,
  now: number,
): Promise<number> {
  const replayed = await db
    .updateTable("webhook_deliveries")
    .set({ status: "pending", attempts: 0, next_attempt_at: now, updated_at: now })
    .where("tenant_id", "=", tenantId)
    .where("endpoint_id", "=", endpointId)
    // The primary key's range (ids begin with their time), then the exact bounds.
    .where("id", ">=", idTime(DELIVERY_ID_PREFIX, since))
    .where("id", "<", idTime(DELIVERY_ID_PREFIX, until + 1))
    .where("created_at", ">=", since)
    .where("created_at", "<=", until)
    .where("status", "=", "failed")
    .executeTakeFirst();
  return Number(replayed.numUpdatedRows);
}
