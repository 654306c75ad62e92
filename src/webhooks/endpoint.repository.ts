/**
 * Webhook endpoints in storage: every query is keyed by tenant first. Disabling an endpoint
 * pauses its pending deliveries and enabling it resumes them, so the delivery loop's index of
 * what is due holds only what may be sent. Writes that reach an endpoint's deliveries take
 * their locks in the one order of locks.repository.ts.
 */
import { randomBytes } from "node:crypto";
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import type { CursorPosition } from "../platform/cursor.js";
import { engineOf } from "../storage/engine.js";
import { QueryTemplates } from "../storage/query-template.js";
import type { Schema, WebhookEndpointTable } from "../storage/schema.js";
import { lockEndpointDeliveries } from "./locks.repository.js";
import { newSecret } from "./signature.js";

export type EndpointRow = Selectable<WebhookEndpointTable>;

export interface NewEndpoint {
  id: string;
  url: string;
  events: string[];
  secret: string;
  createdAt: number;
}

export async function insertEndpoint(
  db: Kysely<Schema>,
  tenantId: number,
  url: string,
  events: readonly string[],
  now: number,
  description: string | null = null,
): Promise<NewEndpoint> {
  const endpoint: NewEndpoint = {
    id: `we_${randomBytes(12).toString("base64url")}`,
    url,
    events: [...events],
    secret: newSecret(),
    createdAt: now,
  };
  await db
    .insertInto("webhook_endpoints")
    .values({
      tenant_id: tenantId,
      id: endpoint.id,
      url,
      description,
      events: events.join(" "),
      secret: endpoint.secret,
      previous_secret: null,
      previous_secret_until: null,
      disabled_at: null,
      disabled_reason: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return endpoint;
}

export async function findEndpoint(db: Kysely<Schema>, tenantId: number, id: string): Promise<EndpointRow | undefined> {
  return db.selectFrom("webhook_endpoints").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id).executeTakeFirst();
}

/** A page of a tenant's endpoints, newest first by (created_at, id), after `after`. */
export async function endpointPage(db: Kysely<Schema>, tenantId: number, after: CursorPosition | undefined, limit: number) {
  let query = db.selectFrom("webhook_endpoints").selectAll().where("tenant_id", "=", tenantId);
  if (after !== undefined) query = query.where((eb) => eb(eb.refTuple("created_at", "id"), "<", eb.tuple(Number(after.key), after.id)));
  return query.orderBy("created_at", "desc").orderBy("id", "desc").limit(sql.lit(limit)).execute();
}

/**
 * Deletes an endpoint with its fan-outs, deliveries and their log; false when there was none.
 * The fan-outs go first: a delivery loop expanding one holds it until it commits, so the
 * deliveries it wrote are deleted next.
 */
export async function deleteEndpoint(db: Kysely<Schema>, tenantId: number, id: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const deleted = await trx.deleteFrom("webhook_endpoints").where("tenant_id", "=", tenantId).where("id", "=", id).executeTakeFirst();
    if (deleted.numDeletedRows === 0n) return false;
    await trx.deleteFrom("webhook_fanouts").where("tenant_id", "=", tenantId).where("endpoint_id", "=", id).execute();
    await trx.deleteFrom("webhook_attempts").where("tenant_id", "=", tenantId).where("endpoint_id", "=", id).execute();
    await lockEndpointDeliveries(trx, tenantId, id);
    await trx.deleteFrom("webhook_deliveries").where("tenant_id", "=", tenantId).where("endpoint_id", "=", id).execute();
    return true;
  });
}

/**
 * Disables an endpoint (with the reason) or enables it (reason null). Its pending deliveries
 * are paused while it is disabled; enabling it makes them due at once.
 */
export async function setEndpointDisabled(
  db: Kysely<Schema>,
  tenantId: number,
  id: string,
  reason: string | null,
  now: number,
): Promise<EndpointRow | undefined> {
  return db.transaction().execute(async (trx) => setEndpointDisabledIn(trx, tenantId, id, reason, now));
}

async function setEndpointDisabledIn(
  trx: Transaction<Schema>,
  tenantId: number,
  id: string,
  reason: string | null,
  now: number,
): Promise<EndpointRow | undefined> {
  const endpoint = await trx
    .updateTable("webhook_endpoints")
    .set({ ...disabledBy(reason, now), updated_at: now })
    .where("tenant_id", "=", tenantId)
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
  if (endpoint !== undefined) await moveDeliveries(trx, tenantId, id, reason === null, now);
  return endpoint;
}

const disabledBy = (reason: string | null, now: number) => ({ disabled_at: reason === null ? null : now, disabled_reason: reason });

/** Pauses an endpoint's pending deliveries, or (enabled) makes its paused ones due at once. */
async function moveDeliveries(trx: Transaction<Schema>, tenantId: number, id: string, enabled: boolean, now: number): Promise<void> {
  const from = enabled ? "paused" : "pending";
  await lockEndpointDeliveries(trx, tenantId, id, from);
  await trx
    .updateTable("webhook_deliveries")
    .set(enabled ? { status: "pending", next_attempt_at: now, updated_at: now } : { status: "paused", updated_at: now })
    .where("tenant_id", "=", tenantId)
    .where("endpoint_id", "=", id)
    .where("status", "=", from)
    .execute();
}

/** Whether `events` are the event types `stored` (space-separated) holds, order and repeats aside. */
function sameEvents(events: readonly string[], stored: string): boolean {
  const given = new Set(events);
  const held = new Set(stored.split(" "));
  return given.size === held.size && [...given].every((event) => held.has(event));
}

/** What an admin changes of an endpoint; a field left out stays as it is. */
export interface EndpointChange {
  url?: string;
  events?: readonly string[];
  /** Null removes it. */
  description?: string | null;
  /** False disables it with `reason`; true enables it. */
  enabled?: boolean;
}

/**
 * Changes an endpoint: only what differs from it, and its `updated_at` only then. Switching it
 * on or off moves its deliveries as setEndpointDisabled does; its row is locked first, in the
 * one lock order (locks.repository.ts). Undefined when there is no such endpoint.
 */
export async function changeEndpoint(
  db: Kysely<Schema>,
  tenantId: number,
  id: string,
  change: EndpointChange,
  reason: string,
  now: number,
): Promise<EndpointRow | undefined> {
  return db.transaction().execute(async (trx) => {
    let read = trx.selectFrom("webhook_endpoints").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id);
    if (engineOf(trx).rowLocks) read = read.forUpdate();
    const current = await read.executeTakeFirst();
    if (current === undefined) return undefined;
    // The same events in another order are no change: the order they were stored in stays.
    const events = change.events === undefined || sameEvents(change.events, current.events) ? undefined : change.events.join(" ");
    const switched = change.enabled !== undefined && change.enabled !== (current.disabled_at === null);
    const set = {
      ...(change.url !== undefined && change.url !== current.url ? { url: change.url } : {}),
      ...(events !== undefined ? { events } : {}),
      ...(change.description !== undefined && change.description !== current.description ? { description: change.description } : {}),
      ...(switched ? disabledBy(change.enabled === true ? null : reason, now) : {}),
    };
    if (Object.keys(set).length === 0) return current;
    const changed = await trx
      .updateTable("webhook_endpoints")
      .set({ ...set, updated_at: now })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (switched) await moveDeliveries(trx, tenantId, id, change.enabled === true, now);
    return changed;
  });
}

/** A new secret signs from now on; the old one signs too until `now + graceMs`. */
export async function rotateSecret(
  db: Kysely<Schema>,
  tenantId: number,
  id: string,
  graceMs: number,
  now: number,
): Promise<EndpointRow | undefined> {
  return db
    .updateTable("webhook_endpoints")
    .set((eb) => ({
      previous_secret: graceMs === 0 ? null : eb.ref("secret"),
      previous_secret_until: graceMs === 0 ? null : now + graceMs,
      secret: newSecret(),
      updated_at: now,
    }))
    .where("tenant_id", "=", tenantId)
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
}

const subscribedQueries = new QueryTemplates<{ id: string; events: string }>();

/** A tenant's enabled endpoints and the event types each takes (one index range). */
export async function enabledEndpoints(db: Kysely<Schema>, tenantId: number): Promise<{ id: string; events: Set<string> }[]> {
  const query = subscribedQueries.fill(db, "webhook_endpoints:enabled", { tenantId }, (s) =>
    db.selectFrom("webhook_endpoints").select(["id", "events"]).where("tenant_id", "=", s.tenantId).where("disabled_at", "is", null),
  );
  return (await db.executeQuery(query)).rows.map((row) => ({ id: row.id, events: new Set(row.events.split(" ")) }));
}
