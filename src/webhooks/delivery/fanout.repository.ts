/**
 * Fan-outs become deliveries. Sync writes one fan-out per endpoint per batch (outbox.repository.ts);
 * the delivery loop turns an endpoint's oldest fan-outs into a pending delivery per message only
 * when few of its deliveries are due, so the deliveries' tables stay small however far sync
 * runs ahead, and the work stays off sync's transaction.
 */
import { sql, type Transaction } from "kysely";
import { engineOf } from "../../storage/engine.js";
import { insertMany } from "../../storage/query-template.js";
import type { Schema } from "../../storage/schema.js";
import { DELIVERY_ID_PREFIX, newId } from "../ids.js";

const DELIVERY_COLUMNS = [
  "tenant_id",
  "id",
  "endpoint_id",
  "message_id",
  "status",
  "attempts",
  "next_attempt_at",
  "lease_until",
  "created_at",
  "updated_at",
];

/** How many of an endpoint's deliveries are due now, counting up to `want` at most. */
async function countDue(trx: Transaction<Schema>, tenantId: number, endpointId: string, now: number, want: number): Promise<number> {
  const counted = await trx
    .selectFrom((eb) =>
      eb
        .selectFrom("webhook_deliveries")
        .select("id")
        .where("tenant_id", "=", tenantId)
        .where("endpoint_id", "=", endpointId)
        .where("status", "=", sql.lit("pending"))
        .where("next_attempt_at", "<=", now)
        .limit(sql.lit(want))
        .as("due"),
    )
    .select((eb) => eb.fn.countAll<number | string>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(counted.n);
}

/**
 * Makes an endpoint's oldest fan-outs deliveries until at least `want` of its deliveries are
 * due or none is left, in the caller's transaction: a fan-out is either still there or wholly
 * expanded. Each becomes a pending delivery per message, due since its batch was written and
 * with an id of that time (so a replay of a time range finds it). With row locks, a fan-out
 * that another process is expanding is left to it.
 */
export async function expandFanouts(trx: Transaction<Schema>, tenantId: number, endpointId: string, now: number, want: number) {
  let due = await countDue(trx, tenantId, endpointId, now, want);
  while (due < want) {
    let oldest = trx
      .selectFrom("webhook_fanouts")
      .select(["id", "created_at", "message_ids"])
      .where("tenant_id", "=", tenantId)
      .where("endpoint_id", "=", endpointId)
      .orderBy("id")
      .limit(sql.lit(1));
    if (engineOf(trx).rowLocks) oldest = oldest.forUpdate().skipLocked();
    const fanout = await oldest.executeTakeFirst();
    if (fanout === undefined) return;
    const at = fanout.created_at;
    const rows = fanout.message_ids
      .split(" ")
      .map((messageId) => [tenantId, newId(DELIVERY_ID_PREFIX, at), endpointId, messageId, "pending", 0, at, null, at, now]);
    await insertMany(trx, "webhook_deliveries", DELIVERY_COLUMNS, rows);
    await trx
      .deleteFrom("webhook_fanouts")
      .where("tenant_id", "=", tenantId)
      .where("endpoint_id", "=", endpointId)
      .where("id", "=", fanout.id)
      .execute();
    due += rows.length;
  }
}
