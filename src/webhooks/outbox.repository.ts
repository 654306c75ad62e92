/**
 * The transactional outbox: sync calls it inside the transaction that writes the records
 * (sync/sync.service.ts), so every record change that was acknowledged has its event, and
 * nothing that was not. An event is a row of `webhook_messages`, written for every change
 * whether or not an endpoint takes it: the events list (src/events/) reads them, and the
 * webhooks send them. Each enabled endpoint that takes any of a batch's events gets one
 * fan-out row naming them, which the delivery loop expands into a delivery per event.
 */
import { sql, type Transaction } from "kysely";
import type { Collection } from "../collections/define.js";
import { toApiJson, type RecordChange } from "../collections/record.js";
import { engineOf } from "../storage/engine.js";
import { insertMany, plannedEachTime, QueryTemplates } from "../storage/query-template.js";
import type { Schema } from "../storage/schema.js";
import { enabledEndpoints } from "./endpoint.repository.js";
import { eventType, messagePayload } from "./events.js";
import { FANOUT_ID_PREFIX, MESSAGE_ID_PREFIX, newId, timeOfId } from "./ids.js";

const MESSAGE_COLUMNS = ["tenant_id", "id", "type", "created_at", "record_id", "payload"];
const FANOUT_COLUMNS = ["tenant_id", "id", "endpoint_id", "created_at", "message_ids"];

const latestQueries = new QueryTemplates<{ id: string }>();

/**
 * The time of a batch's events: `at`, or just after the tenant's latest event if that is later.
 * Batches of one tenant take turns from here to their commit, in every process, so event ids
 * (which begin with their time) rise in the order they become visible: a poller reading newest
 * first that stops at the last event it saw misses none, whichever lists the batches wrote.
 */
async function eventTime(trx: Transaction<Schema>, tenantId: number, at: number): Promise<number> {
  await engineOf(trx).serializeWriters(trx, "webhook_messages", tenantId);
  const latest = latestQueries.fill(trx, "webhook_messages:latest", { tenantId }, (s) =>
    plannedEachTime(
      trx.selectFrom("webhook_messages").select("id").where("tenant_id", "=", s.tenantId).orderBy("id", "desc").limit(sql.lit(1)),
    ),
  );
  const row = (await trx.executeQuery(latest)).rows[0];
  return row === undefined ? at : Math.max(at, timeOfId(row.id) + 1);
}

/**
 * Writes an event for each change, and a fan-out per enabled endpoint that takes any of them.
 * `at` is the batch's createdAt (or updatedAt). Returns how many deliveries the fan-outs stand for.
 */
export async function recordEvents(
  trx: Transaction<Schema>,
  collection: Collection,
  tenantId: number,
  changes: readonly RecordChange[],
  at: number,
): Promise<number> {
  if (changes.length === 0) return 0;
  const time = await eventTime(trx, tenantId, at);
  const endpoints = await enabledEndpoints(trx, tenantId);
  const messages: unknown[][] = [];
  const messageIds = endpoints.map((): string[] => []);
  for (const { change, content, createdAt } of changes) {
    const type = eventType(collection, change);
    // A transaction never changes: its data is read from the record, not copied here. Master
    // data may change again, so its data is kept as of now.
    const payload =
      collection.kind === "transaction"
        ? null
        : messagePayload(type, time, toApiJson(collection, { id: content.id, body: content.body, created_at: createdAt, updated_at: at }));
    const messageId = newId(MESSAGE_ID_PREFIX, time);
    messages.push([tenantId, messageId, type, time, content.id, payload]);
    endpoints.forEach((endpoint, i) => {
      if (endpoint.events.has(type)) messageIds[i]?.push(messageId);
    });
  }
  const fanouts = endpoints.flatMap((endpoint, i) => {
    const ids = messageIds[i] ?? [];
    return ids.length === 0 ? [] : [[tenantId, newId(FANOUT_ID_PREFIX, time), endpoint.id, time, ids.join(" ")]];
  });
  await insertMany(trx, "webhook_messages", MESSAGE_COLUMNS, messages);
  await insertMany(trx, "webhook_fanouts", FANOUT_COLUMNS, fanouts);
  return messageIds.reduce((sum, ids) => sum + ids.length, 0);
}
