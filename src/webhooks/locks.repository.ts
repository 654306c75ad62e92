/**
 * The one lock order of the webhook tables, where the engine has row locks: an endpoint's row
 * before its deliveries, and deliveries in primary-key order, taken in one ordered pass before
 * a transaction changes them. An UPDATE or DELETE of many rows locks them in whatever order its
 * plan reads them (an index on another column, or the heap), so two such writers could each
 * hold a row that the other waits for. Taken in one order, they only ever wait for each other
 * one way: the delivery loop recording outcomes (deliveries by key), and an admin disabling,
 * enabling or deleting an endpoint (the endpoint, then its deliveries by key).
 */
import type { Transaction } from "kysely";
import { engineOf } from "../storage/engine.js";
import { rowsByKeys } from "../storage/row-values.js";
import type { DeliveryStatus, Schema } from "../storage/schema.js";

/** A delivery's primary key. */
export type DeliveryKey = readonly [tenantId: number, endpointId: string, id: string];

/** Primary-key order: ids and endpoint ids are ASCII, compared byte-wise (`collate "C"`). */
function byKey(a: DeliveryKey, b: DeliveryKey): number {
  return a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0) || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0);
}

/**
 * Locks the given deliveries, in primary-key order, until the transaction ends: sorted first,
 * and locked in that order by one look-up (storage/row-values.ts).
 */
export async function lockDeliveries(trx: Transaction<Schema>, keys: readonly DeliveryKey[]): Promise<void> {
  if (!engineOf(trx).rowLocks) return;
  const lookup = { table: "webhook_deliveries", columns: ["id"], keyColumns: ["tenant_id", "endpoint_id", "id"], forUpdate: true } as const;
  await rowsByKeys<{ id: string }>(trx, lookup, [...keys].sort(byKey));
}

/** Locks an endpoint's deliveries (those of one status, when given), in primary-key order. */
export async function lockEndpointDeliveries(
  trx: Transaction<Schema>,
  tenantId: number,
  endpointId: string,
  status?: DeliveryStatus,
): Promise<void> {
  if (!engineOf(trx).rowLocks) return;
  let query = trx.selectFrom("webhook_deliveries").select("id").where("tenant_id", "=", tenantId).where("endpoint_id", "=", endpointId);
  if (status !== undefined) query = query.where("status", "=", status);
  await query.orderBy("tenant_id").orderBy("endpoint_id").orderBy("id").forUpdate().execute();
}
