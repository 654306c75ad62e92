/**
 * The transactional outbox: sync calls it inside the transaction that writes the records
 * (sync/sync.service.ts), so a message exists for every record change that was acknowledged,
 * and for nothing that was not. A message is written only when some enabled endpoint of the
 * tenant takes its type. Each such endpoint gets one fan-out row per batch naming its
 * messages, which the delivery loop expands into a pending delivery per message and sends.
 */
import type { Transaction } from "kysely";
import type { Collection } from "../collections/define.js";
import { toApiJson, type RecordChange } from "../collections/record.js";
import { insertMany } from "../storage/query-template.js";
import type { Schema } from "../storage/schema.js";
import { enabledEndpoints } from "./endpoint.repository.js";
import { eventType, messagePayload } from "./events.js";
import { FANOUT_ID_PREFIX, MESSAGE_ID_PREFIX, newId } from "./ids.js";

const MESSAGE_COLUMNS = ["tenant_id", "id", "type", "created_at", "record_id", "payload"];
const FANOUT_COLUMNS = ["tenant_id", "id", "endpoint_id", "created_at", "message_ids"];

/**
 * Writes a message for each change some endpoint takes, and a fan-out per endpoint that takes
 * any; `now` stamps them. Returns how many deliveries the fan-outs stand for.
 */
export async function recordMessages(
  trx: Transaction<Schema>,
  collection: Collection,
  tenantId: number,
  changes: readonly RecordChange[],
  now: number,
): Promise<number> {
  if (changes.length === 0) return 0;
  const endpoints = await enabledEndpoints(trx, tenantId);
  if (endpoints.length === 0) return 0;
  const messages: unknown[][] = [];
  const messageIds = endpoints.map((): string[] => []);
  for (const { change, content, createdAt } of changes) {
    const type = eventType(collection, change);
    if (!endpoints.some((endpoint) => endpoint.events.has(type))) continue;
    // A transaction never changes: its payload is built from the record when sent, not
    // copied here. Master data may change again first, so its payload is kept as of now.
    const payload =
      collection.kind === "transaction"
        ? null
        : messagePayload(type, now, toApiJson(collection, { id: content.id, body: content.body, created_at: createdAt, updated_at: now }));
    const messageId = newId(MESSAGE_ID_PREFIX, now);
    messages.push([tenantId, messageId, type, now, content.id, payload]);
    endpoints.forEach((endpoint, i) => {
      if (endpoint.events.has(type)) messageIds[i]?.push(messageId);
    });
  }
  const fanouts = endpoints.flatMap((endpoint, i) => {
    const ids = messageIds[i] ?? [];
    return ids.length === 0 ? [] : [[tenantId, newId(FANOUT_ID_PREFIX, now), endpoint.id, now, ids.join(" ")]];
  });
  await insertMany(trx, "webhook_messages", MESSAGE_COLUMNS, messages);
  await insertMany(trx, "webhook_fanouts", FANOUT_COLUMNS, fanouts);
  return messageIds.reduce((sum, ids) => sum + ids.length, 0);
}
