/**
 * The transactional outbox: sync calls it inside the transaction that writes the records, so a
 * message exists for every record change that was acknowledged, and for nothing that was not.
 * A message is written only when some enabled endpoint of the tenant takes its type. Each such
 * endpoint gets one fan-out row per batch naming its messages, which the delivery loop expands
 * into a pending delivery per message (webhooks/delivery.ts) and then sends.
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

const MESSAGE_COLUMNS = ["tenant_id", "id", "type", "created_at", "record_id", "payload"];
const FANOUT_COLUMNS = ["tenant_id", "id", "endpoint_id", "created_at", "message_ids"];

/** Ids begin with one of these, then their time (see newId): a time range is a key range. */
export const MESSAGE_ID_PREFIX = "msg_";
export const FANOUT_ID_PREFIX = "fan_";
export const DELIVERY_ID_PREFIX = "dlv_";
export const ATTEMPT_ID_PREFIX = "att_";

/** Random per process: ids made by two processes in the same millisecond still differ. */
const PROCESS_TAG = randomBytes(6).toString("base64url");
let counter = 0;

/**
 * A unique id that sorts by the time it was made: the time, then a counter, in base 36 with
 * fixed widths (so they sort as text), then the process's tag. New rows go to the end of each
 * index on their id instead of to random pages all over it, and no id costs a call for
 * random bytes (a sixth of a sync batch's time with three endpoints).
 */
export function newId(prefix: string, now: number): string {
  counter = (counter + 1) % 36 ** 6;
  return `${idTime(prefix, now)}${counter.toString(36).padStart(6, "0")}${PROCESS_TAG}`;
}

/** The start of every id made at `ms` (clamped to what nine base-36 digits hold): ids sort after it. */
export function idTime(prefix: string, ms: number): string {
  return `${prefix}${Math.min(Math.max(ms, 0), 36 ** 9 - 1)
    .toString(36)
    .padStart(9, "0")}`;
}

/** The body of a webhook: `data` is the record exactly as its list returns it (`toApiJson`). */
export function messagePayload(type: string, at: number, data: string): string {
  return `{"type":${JSON.stringify(type)},"timestamp":"${formatTime(at)}","data":${data}}`;
}

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
      if (endpoint.events.has(type)) messageIds[i]!.push(messageId);
    });
  }
  const fanouts = endpoints
    .map((endpoint, i) => [tenantId, newId(FANOUT_ID_PREFIX, now), endpoint.id, now, messageIds[i]!.join(" ")])
    .filter((_, i) => messageIds[i]!.length > 0);
  await insertMany(trx, "webhook_messages", MESSAGE_COLUMNS, messages);
  await insertMany(trx, "webhook_fanouts", FANOUT_COLUMNS, fanouts);
  return messageIds.reduce((sum, ids) => sum + ids.length, 0);
}
