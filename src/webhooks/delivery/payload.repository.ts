/**
 * What a round needs to send its deliveries: their messages, with the body of each, and their
 * endpoints' addresses and secrets, in a few queries per round rather than two per delivery.
 */
import type { Kysely } from "kysely";
import { toApiJson } from "../../collections/record.js";
import { engineOf } from "../../storage/engine.js";
import { rowsByKeys } from "../../storage/row-values.js";
import type { RecordRow, Schema, WebhookEndpointTable, WebhookMessageTable } from "../../storage/schema.js";
import { messagePayload, TRANSACTION_EVENTS } from "../events.js";
import type { Taken } from "./lease.repository.js";

/** A message as stored: its payload null for a transaction's until built from its record (see withPayloads). */
export type MessageRow = WebhookMessageTable;

export type EndpointSecrets = Pick<
  WebhookEndpointTable,
  "tenant_id" | "id" | "url" | "secret" | "previous_secret" | "previous_secret_until"
>;

/** A key of (tenant_id, id) as one string, for maps. */
export const keyOf = (tenantId: number, id: string) => `${tenantId} ${id}`;

/** The rows of `table` with the given (tenant_id, id) keys, by keyOf. */
async function rowsByKey<R extends { tenant_id: number; id: string }>(
  db: Kysely<Schema>,
  table: keyof Schema,
  columns: readonly (keyof R & string)[],
  keys: readonly [number, string][],
): Promise<Map<string, R>> {
  const distinct = [...new Map(keys.map((key) => [keyOf(...key), key])).values()];
  const rows = await rowsByKeys<R>(db, { table, columns, keyColumns: ["tenant_id", "id"] }, distinct);
  return new Map(rows.map((row) => [keyOf(row.tenant_id, row.id), row]));
}

/**
 * Builds the payload of each transaction's message from its record as stored, which is what
 * its list returns: a transaction never changes, so it is what the payload was when the
 * record was synced. A few queries per round, one per collection and run of records.
 */
export async function withPayloads(db: Kysely<Schema>, messages: readonly MessageRow[]): Promise<void> {
  const byType = new Map<string, MessageRow[]>();
  for (const message of messages) {
    if (message.payload !== null) continue;
    const waiting = byType.get(message.type);
    if (waiting === undefined) byType.set(message.type, [message]);
    else waiting.push(message);
  }
  for (const [type, waiting] of byType) {
    const collection = TRANSACTION_EVENTS.get(type);
    if (collection === undefined) throw new Error(`message ${waiting[0]?.id} of type ${type} has no payload`);
    const records = await rowsByKey<Pick<RecordRow, "tenant_id" | "id" | "body" | "created_at" | "updated_at">>(
      db,
      collection.table as "withdrawals",
      ["tenant_id", "id", "body", "created_at", "updated_at"],
      waiting.map((m) => [m.tenant_id, m.record_id ?? ""]),
    );
    for (const message of waiting) {
      const record = records.get(keyOf(message.tenant_id, message.record_id ?? ""));
      if (record === undefined)
        throw new Error(`message ${message.id} announces ${collection.name} ${message.record_id}, which is not stored`);
      message.payload = messagePayload(type, message.created_at, toApiJson(collection, record));
    }
  }
}

/** A round's messages and endpoints, by keyOf. */
export interface Loaded {
  messages: Map<string, MessageRow>;
  endpoints: Map<string, EndpointSecrets>;
}

/** The messages (with their payloads) and endpoints of the deliveries taken. */
export async function loadRound(db: Kysely<Schema>, taken: readonly Taken[]): Promise<Loaded> {
  return db.transaction().execute(async (trx) => {
    await engineOf(trx).planForNow(trx);
    const messages = await rowsByKey<MessageRow>(
      trx,
      "webhook_messages",
      ["tenant_id", "id", "type", "created_at", "record_id", "payload"],
      taken.map((t) => [t.tenant_id, t.message_id]),
    );
    await withPayloads(trx, [...messages.values()]);
    const endpoints = await rowsByKey<EndpointSecrets>(
      trx,
      "webhook_endpoints",
      ["tenant_id", "id", "url", "secret", "previous_secret", "previous_secret_until"],
      taken.map((t) => [t.tenant_id, t.endpoint_id]),
    );
    return { messages, endpoints };
  });
}
