/**
 * Replays: a delivery set back to pending, due now, with its attempt count at zero, so it goes
 * again with the same message (and webhook-id) from the start of its retry schedule.
 */
import type { ExpressionBuilder, Kysely } from "kysely";
import { engineOf } from "../../storage/engine.js";
import type { Schema } from "../../storage/schema.js";
import { DELIVERY_ID_PREFIX, idTime } from "../ids.js";
import { lockDeliveries, type DeliveryKey } from "../locks.repository.js";

const REPLAYED = (now: number) => ({ status: "pending" as const, attempts: 0, next_attempt_at: now, updated_at: now });

/** Replays one delivery, whatever its status; false when the endpoint has no such delivery. */
export async function replayDelivery(db: Kysely<Schema>, tenantId: number, endpointId: string, id: string, now: number): Promise<boolean> {
  const replayed = await db
    .updateTable("webhook_deliveries")
    .set(REPLAYED(now))
    .where("tenant_id", "=", tenantId)
    .where("endpoint_id", "=", endpointId)
    .where("id", "=", id)
    .executeTakeFirst();
  return replayed.numUpdatedRows > 0n;
}

/**
 * Replays every failed delivery of the endpoint whose message was written from `since` to
 * `until` (inclusive). Returns how many. With row locks they are locked in key order first
 * (../locks.repository.ts).
 */
export async function replayFailed(
  db: Kysely<Schema>,
  tenantId: number,
  endpointId: string,
  since: number,
  until: number,
  now: number,
): Promise<number> {
  // The primary key's range (ids begin with their time), then the exact bounds.
  const failedInRange = (eb: ExpressionBuilder<Schema, "webhook_deliveries">) =>
    eb.and([
      eb("tenant_id", "=", tenantId),
      eb("endpoint_id", "=", endpointId),
      eb("id", ">=", idTime(DELIVERY_ID_PREFIX, since)),
      eb("id", "<", idTime(DELIVERY_ID_PREFIX, until + 1)),
      eb("created_at", ">=", since),
      eb("created_at", "<=", until),
      eb("status", "=", "failed"),
    ]);
  return db.transaction().execute(async (trx) => {
    if (engineOf(trx).rowLocks) {
      const failed = await trx.selectFrom("webhook_deliveries").select("id").where(failedInRange).execute();
      await lockDeliveries(
        trx,
        failed.map(({ id }): DeliveryKey => [tenantId, endpointId, id]),
      );
    }
    const replayed = await trx.updateTable("webhook_deliveries").set(REPLAYED(now)).where(failedInRange).executeTakeFirst();
    return Number(replayed.numUpdatedRows);
  });
}
