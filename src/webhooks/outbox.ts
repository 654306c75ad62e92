/**
 * The transactional outbox: sync calls it inside the transaction that writes the records, so a
 * message exists for every record change that was acknowledged, and for nothing that was not.
 * A message is written only when some enabled endpoint of the tenant takes its type, with one
 * pending delivery per such endpoint; the delivery loop sends them.
 */
import { randomBytes } from "node:crypto";
import type { Transaction } from "kysely";
import type { Collection } from "../collections/define.js";
import { toApiJson, type StoredContent } from "../collections/record.js";
import { formatTime } from "../platform/time.js";
import { insertMany } from "../storage/query-template.js";
import type { Schema } from "../storage/schema.js";
import { enabledEndpoints } from "./endpoint.repository.js";
import { eventType, type Change } from "./events.js";

export interface RecordChange {
  change: Change;
  content: StoredContent;
  /** When the record was first stored (its createdAt). */
  createdAt: number;
}

const MESSAGE_COLUMNS = ["tenant_id", "id", "type", "created_at", "payload"];
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

function newId(prefix: string): string {
  return `${prefix}${randomBytes(16).toString("base64url")}`;
}

/**
 * Writes a message (and its deliveries) for each change some endpoint takes; `now` stamps them.
 * Returns how many deliveries it queued.
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
  const deliveries: unknown[][] = [];
  const timestamp = formatTime(now);
  for (const { change, content, createdAt } of changes) {
    const type = eventType(collection, change);
    const takers = endpoints.filter((endpoint) => endpoint.events.has(type));
    if (takers.length === 0) continue;
    // `data` is the record exactly as its list returns it.
    const data = toApiJson(collection, { id: content.id, body: content.body, created_at: createdAt, updated_at: now });
    const messageId = newId("msg_");
    messages.push([tenantId, messageId, type, now, `{"type":${JSON.stringify(type)},"timestamp":"${timestamp}","data":${data}}`]);
    for (const endpoint of takers) deliveries.push([tenantId, newId("dlv_"), endpoint.id, messageId, "pending", 0, now, null, now, now]);
  }
  await insertMany(trx, "webhook_messages", MESSAGE_COLUMNS, messages);
  await insertMany(trx, "webhook_deliveries", DELIVERY_COLUMNS, deliveries);
  return deliveries.length;
}
