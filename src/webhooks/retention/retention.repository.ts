/**
 * What the webhook log and the events list no longer need, deleted a tenant at a time in short
 * transactions. Attempts go once they are older than the webhook log's cut-off; a delivery once
 * it has ended (succeeded or failed) and was last changed before it; an event (a message) once
 * it is older than the events' cut-off and no delivery or fan-out still names it. A delivery,
 * and so its event, stays while it may be sent (pending, paused: an endpoint enabled again still
 * gets what it missed) or replayed (within the webhook log's period); the events list no longer
 * shows such an event. Fan-outs left by an endpoint deleted while a sync wrote them go too.
 *
 * Every statement reads one tenant's range of a primary key: attempt, delivery and message ids
 * begin with their time (../ids.ts), so "older than" is a key range, not a scan.
 */
import { sql, type Kysely, type Transaction } from "kysely";
import { engineOf } from "../../storage/engine.js";
import { deleteByKeys } from "../../storage/row-values.js";
import type { Schema } from "../../storage/schema.js";
import { ATTEMPT_ID_PREFIX, DELIVERY_ID_PREFIX, FANOUT_ID_PREFIX, idTime, MESSAGE_ID_PREFIX, timeOfId } from "../ids.js";

export interface Pruned {
  attempts: number;
  deliveries: number;
  messages: number;
  fanouts: number;
}

export interface PruneOptions {
  /** Attempts made and deliveries last changed before this go; 0 keeps them. */
  before: number;
  /** Events written before this go; 0 keeps them. */
  eventsBefore: number;
  /** Rows per statement and transaction, so that writers wait for no long delete. */
  chunk: number;
  /** Awaited between transactions, the place to let requests in; false ends the sweep there. */
  pause: () => Promise<boolean>;
}

const ENDED = ["succeeded", "failed"] as const;

/** Returns what it deleted, also when told to end early (the rest goes at the next sweep). */
export async function pruneWebhookLog(db: Kysely<Schema>, options: PruneOptions): Promise<Pruned> {
  const pruned: Pruned = { attempts: 0, deliveries: 0, messages: 0, fanouts: 0 };
  let going = true;
  // Once a pause says to end, every later step ends at once.
  const sweep: PruneOptions = { ...options, pause: async () => (going &&= await options.pause()) };
  const tenants = await db.selectFrom("tenants").select("id").orderBy("id").execute();
  for (const { id: tenantId } of tenants) {
    if (!(await sweep.pause())) break;
    pruned.fanouts += await pruneOrphanFanouts(db, tenantId);
    pruned.attempts += await inChunks(sweep, (limit) => pruneAttempts(db, tenantId, options.before, limit));
    const endpoints = await db.selectFrom("webhook_endpoints").select("id").where("tenant_id", "=", tenantId).execute();
    for (const { id: endpointId } of endpoints) {
      if (!going) break;
      pruned.deliveries += await inChunks(sweep, (limit) => pruneDeliveries(db, tenantId, endpointId, options.before, limit));
    }
    if (!going) break;
    pruned.messages += await pruneMessages(
      db,
      tenantId,
      endpoints.map((e) => e.id),
      sweep,
    );
  }
  return pruned;
}

/** Runs `step` until it deletes fewer than a chunk or a pause ends it; returns how many it deleted. */
async function inChunks(options: PruneOptions, step: (limit: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await step(options.chunk);
    total += deleted;
    if (deleted < options.chunk || !(await options.pause())) return total;
  }
}

/** Lost with the machine, a delete is only done again at the next sweep. */
async function deleteWhere(db: Kysely<Schema>, query: (trx: Transaction<Schema>) => Promise<{ numDeletedRows: bigint }>): Promise<number> {
  return engineOf(db).relaxedTransaction(db, async (trx) => Number((await query(trx)).numDeletedRows));
}

function pruneAttempts(db: Kysely<Schema>, tenantId: number, before: number, limit: number): Promise<number> {
  // An attempt's id begins with the time it ended.
  return deleteWhere(db, (trx) =>
    trx
      .deleteFrom("webhook_attempts")
      .where("tenant_id", "=", tenantId)
      .where("id", "in", (eb) =>
        eb
          .selectFrom("webhook_attempts")
          .select("id")
          .where("tenant_id", "=", tenantId)
          .where("id", "<", idTime(ATTEMPT_ID_PREFIX, before))
          .orderBy("id")
          .limit(sql.lit(limit)),
      )
      .executeTakeFirst(),
  );
}

function pruneDeliveries(db: Kysely<Schema>, tenantId: number, endpointId: string, before: number, limit: number): Promise<number> {
  // A delivery's id begins with the time its message was written: only those written before
  // the cut-off can have been last changed before it. The status is checked again on the rows
  // deleted: with row locks, a replay that commits meanwhile makes the row pending, and the
  // delete then passes it by instead of losing the replay. The rows are locked in key order,
  // the one order of ../locks.repository.ts.
  return deleteWhere(db, (trx) =>
    trx
      .deleteFrom("webhook_deliveries")
      .where("tenant_id", "=", tenantId)
      .where("endpoint_id", "=", endpointId)
      .where("status", "in", ENDED)
      .where("updated_at", "<", before)
      .where("id", "in", (eb) => {
        const oldest = eb
          .selectFrom("webhook_deliveries")
          .select("id")
          .where("tenant_id", "=", tenantId)
          .where("endpoint_id", "=", endpointId)
          .where("id", "<", idTime(DELIVERY_ID_PREFIX, before))
          .where("status", "in", ENDED)
          .where("updated_at", "<", before)
          .orderBy("id")
          .limit(sql.lit(limit));
        return engineOf(trx).rowLocks ? oldest.forUpdate() : oldest;
      })
      .executeTakeFirst(),
  );
}

/**
 * Events written before their cut-off that no delivery or fan-out names: a delivery kept in the
 * webhook log keeps its event, unlisted, for replays. A delivery's id and a fan-out's carry the
 * time their events were written (outbox.repository.ts, delivery/fanout.repository.ts), so the
 * deliveries that may name a chunk of events are a key range per endpoint, read with the chunk.
 */
async function pruneMessages(db: Kysely<Schema>, tenantId: number, endpointIds: readonly string[], options: PruneOptions): Promise<number> {
  // Fan-outs first, then deliveries: the delivery loop turns a fan-out into deliveries in one
  // commit (expandFanouts), and a commit between the two reads must not hide its names from
  // both. Read in this order, a fan-out gone by the second read left its deliveries for it.
  const named = new Set<string>();
  const fanouts = await db
    .selectFrom("webhook_fanouts")
    .select("message_ids")
    .where("tenant_id", "=", tenantId)
    .where("id", "<", idTime(FANOUT_ID_PREFIX, options.eventsBefore))
    .execute();
  for (const { message_ids } of fanouts) for (const id of message_ids.split(" ")) named.add(id);

  let total = 0;
  let after = "";
  for (;;) {
    const candidates = await db
      .selectFrom("webhook_messages")
      .select("id")
      .where("tenant_id", "=", tenantId)
      .where("id", ">", after)
      .where("id", "<", idTime(MESSAGE_ID_PREFIX, options.eventsBefore))
      .orderBy("id")
      .limit(sql.lit(options.chunk))
      .execute();
    const first = candidates[0];
    const last = candidates[candidates.length - 1];
    if (first === undefined || last === undefined) return total;
    for (const endpointId of endpointIds) {
      const deliveries = await db
        .selectFrom("webhook_deliveries")
        .select("message_id")
        .where("tenant_id", "=", tenantId)
        .where("endpoint_id", "=", endpointId)
        .where("id", ">=", idTime(DELIVERY_ID_PREFIX, timeOfId(first.id)))
        .where("id", "<", idTime(DELIVERY_ID_PREFIX, timeOfId(last.id) + 1))
        .execute();
      for (const { message_id } of deliveries) named.add(message_id);
    }
    const unnamed = candidates.map((m) => m.id).filter((id) => !named.has(id));
    if (unnamed.length > 0) total += await deleteMessages(db, tenantId, unnamed);
    if (candidates.length < options.chunk || !(await options.pause())) return total;
    after = last.id;
  }
}

function deleteMessages(db: Kysely<Schema>, tenantId: number, ids: readonly string[]): Promise<number> {
  return engineOf(db).relaxedTransaction(db, (trx) =>
    deleteByKeys(
      trx,
      "webhook_messages",
      ["tenant_id", "id"],
      ids.map((id) => [tenantId, id]),
    ),
  );
}

/** Fan-outs of endpoints that no longer exist (a sync that read one just before it was deleted). */
function pruneOrphanFanouts(db: Kysely<Schema>, tenantId: number): Promise<number> {
  return deleteWhere(db, (trx) =>
    trx
      .deleteFrom("webhook_fanouts")
      .where("tenant_id", "=", tenantId)
      .where("endpoint_id", "not in", (eb) => eb.selectFrom("webhook_endpoints").select("id").where("tenant_id", "=", tenantId))
      .executeTakeFirst(),
  );
}
