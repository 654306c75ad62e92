/**
 * The SQL of taking due deliveries, endpoint by endpoint: every query reads one endpoint's
 * range of an index, so neither a long backlog nor an endpoint at its limit costs the others a
 * scan. A taken delivery is leased to this process (and, with row locks, passed over by any
 * other process taking at the same time), so no two processes send one attempt at once.
 */
import { sql, type Transaction } from "kysely";
import { engineOf } from "../../storage/engine.js";
import type { Schema } from "../../storage/schema.js";

/** A delivery leased for an attempt, with its attempts counted as they are with this one. */
export interface Taken {
  tenant_id: number;
  id: string;
  endpoint_id: string;
  message_id: string;
  attempts: number;
}

/** An enabled endpoint, with its oldest due delivery and its oldest fan-out (null when none). */
export interface DueEndpoint {
  tenant_id: number;
  id: string;
  oldest: number | null;
  fanout: number | null;
}

/** Every enabled endpoint, each with one probe of its due deliveries and one of its fan-outs. */
export async function dueEndpoints(trx: Transaction<Schema>, now: number): Promise<DueEndpoint[]> {
  return trx
    .selectFrom("webhook_endpoints as e")
    .select(["e.tenant_id", "e.id"])
    .select((eb) =>
      eb
        .selectFrom("webhook_deliveries as d")
        .select("d.next_attempt_at")
        .whereRef("d.tenant_id", "=", "e.tenant_id")
        .whereRef("d.endpoint_id", "=", "e.id")
        // A literal, not a parameter, so that a generic plan too can use the partial index.
        .where("d.status", "=", sql.lit("pending"))
        // A parameter, not only a filter: a statement without one keeps its first plan,
        // and on PostgreSQL that was made when the table was empty (a scan).
        .where("d.next_attempt_at", "<=", now)
        .orderBy("d.next_attempt_at")
        .limit(sql.lit(1))
        .as("oldest"),
    )
    .select((eb) =>
      eb
        .selectFrom("webhook_fanouts as f")
        .select("f.created_at")
        .whereRef("f.tenant_id", "=", "e.tenant_id")
        .whereRef("f.endpoint_id", "=", "e.id")
        .orderBy("f.id")
        .limit(sql.lit(1))
        .as("fanout"),
    )
    .where("e.disabled_at", "is", null)
    .execute();
}

/** Leases up to `room` of an endpoint's due deliveries, oldest first, until `leaseUntil`. */
export async function leaseDue(
  trx: Transaction<Schema>,
  tenantId: number,
  endpointId: string,
  now: number,
  room: number,
  leaseUntil: number,
): Promise<Taken[]> {
  let next = trx
    .selectFrom("webhook_deliveries as d")
    .select(["d.tenant_id", "d.endpoint_id", "d.id"])
    .where("d.tenant_id", "=", tenantId)
    .where("d.endpoint_id", "=", endpointId)
    .where("d.status", "=", sql.lit("pending"))
    .where("d.next_attempt_at", "<=", now)
    .where((eb) => eb.or([eb("d.lease_until", "is", null), eb("d.lease_until", "<=", now)]))
    .orderBy("d.next_attempt_at")
    .limit(room);
  // Another process may be taking the same rows: each takes the ones the other did not lock.
  if (engineOf(trx).rowLocks) next = next.forUpdate().skipLocked();
  return trx
    .updateTable("webhook_deliveries")
    .set((eb) => ({ lease_until: leaseUntil, attempts: eb("attempts", "+", 1), updated_at: now }))
    .where((eb) => eb(eb.refTuple("tenant_id", "endpoint_id", "id"), "in", next as never))
    .returning(["tenant_id", "id", "endpoint_id", "message_id", "attempts"])
    .execute();
}
