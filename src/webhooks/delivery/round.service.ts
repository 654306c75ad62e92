/**
 * What one round of the delivery loop takes: up to `batchSize` due deliveries of enabled
 * endpoints, endpoint by endpoint, the one whose oldest due delivery (or fan-out) is oldest
 * first, each as many as it may still start (`maxPerEndpoint` less those under way here), its
 * fan-outs made deliveries first when fewer than that are due.
 */
import type { Kysely } from "kysely";
import { engineOf } from "../../storage/engine.js";
import type { Schema } from "../../storage/schema.js";
import type { DeliveryOptions } from "./delivery.options.js";
import { expandFanouts } from "./fanout.repository.js";
import { dueEndpoints, leaseDue, type Taken } from "./lease.repository.js";

export interface Round {
  taken: Taken[];
  /**
   * Since when the oldest delivery (or fan-out) due at an endpoint with room has waited: null
   * when nothing is due, undefined when every endpoint with something due is at its limit.
   */
  oldestDue: number | null | undefined;
}

type Limits = Pick<DeliveryOptions, "batchSize" | "maxPerEndpoint" | "leaseMs">;

export async function takeRound(
  db: Kysely<Schema>,
  now: number,
  limits: Limits,
  underWay: (tenantId: number, endpointId: string) => number,
): Promise<Round> {
  const engine = engineOf(db);
  // Lost with the machine, a lease only lets the delivery be taken again (at least once).
  return engine.relaxedTransaction(db, async (trx) => {
    await engine.planForNow(trx);
    const due = (await dueEndpoints(trx, now))
      .map((endpoint) => ({ endpoint, since: endpoint.oldest ?? endpoint.fanout }))
      .filter((e): e is { endpoint: typeof e.endpoint; since: number } => e.since !== null)
      .sort((a, b) => a.since - b.since);
    const taken: Taken[] = [];
    let oldestDue: number | undefined;
    for (const { endpoint, since } of due) {
      const free = limits.maxPerEndpoint - underWay(endpoint.tenant_id, endpoint.id);
      if (free > 0) oldestDue ??= since;
      const room = Math.min(free, limits.batchSize - taken.length);
      if (room <= 0) continue;
      if (endpoint.fanout !== null) await expandFanouts(trx, endpoint.tenant_id, endpoint.id, now, limits.maxPerEndpoint);
      taken.push(...(await leaseDue(trx, endpoint.tenant_id, endpoint.id, now, room, now + limits.leaseMs)));
      if (taken.length === limits.batchSize) break;
    }
    return { taken, oldestDue: due.length === 0 ? null : oldestDue };
  });
}
