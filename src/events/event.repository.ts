/**
 * The events in storage: the rows of `webhook_messages` (webhooks/outbox.repository.ts), newest
 * first by id (an id begins with its event's time, so a time range is a key range). A
 * transaction's event keeps no copy of its record: the statement joins it from its table.
 */
import { CompiledQuery, sql, type Compilable, type Kysely } from "kysely";
import { readBy, takeOf, tenantFor } from "../lists/list.sql.js";
import { QueryTemplates, type Slots } from "../storage/query-template.js";
import type { Schema, WebhookMessageTable } from "../storage/schema.js";
import { TRANSACTION_EVENTS } from "../webhooks/events.js";

/** An event as stored (a message: webhooks/outbox.repository.ts), with a transaction's record as stored. */
export type EventRow = WebhookMessageTable & { body: string | null; record_created_at: number | null };

/** Which events a statement reads: ids at or above `low` and below `high`, of one `type`. */
export interface EventRange {
  type?: string;
  low?: string;
  high?: string;
}

const TRANSACTIONS = [...TRANSACTION_EVENTS].map(([type, collection], i) => ({ type, table: collection.table, alias: `r${i}` }));

function eventsOf(db: Kysely<Schema>, tenant: unknown, s: Slots, limit: number) {
  let q = db
    .selectFrom("webhook_messages")
    .select(["tenant_id", "id", "type", "created_at", "record_id", "payload"])
    .where("tenant_id", "=", tenant as number);
  if (s.type !== undefined) q = q.where("type", "=", s.type);
  if (s.id !== undefined) q = q.where("id", "=", s.id);
  if (s.low !== undefined) q = q.where("id", ">=", s.low);
  if (s.high !== undefined) q = q.where("id", "<", s.high);
  return q.orderBy("id", "desc").limit(sql.lit(limit));
}

/**
 * The events that `events` selects, newest first, each with its transaction's record where it
 * has one. Events of one type are read by the index of their type, named where the engine
 * names indexes (readBy): without statistics SQLite would walk every type's by the primary key.
 */
function withRecords(db: Kysely<Schema>, events: ReturnType<typeof eventsOf>, s: Slots): Compilable<EventRow> {
  const read = s.type === undefined ? events : readBy(db, events, "webhook_messages", "webhook_messages_type");
  // The type is in the key probed, not a filter beside it: an event of another type probes for
  // no id (null), where a filter would leave each event probing every transaction table.
  const joins = TRANSACTIONS.map(
    ({ type, table, alias }) =>
      sql`left join ${sql.table(table)} as ${sql.id(alias)} on ${sql.ref(`${alias}.tenant_id`)} = e.tenant_id and ${sql.ref(`${alias}.id`)} = case when e.type = ${sql.lit(type)} then e.record_id end`,
  );
  const of = (column: string) => sql.join(TRANSACTIONS.map(({ alias }) => sql.ref(`${alias}.${column}`)));
  const head = sql`select e.*, coalesce(${of("body")}) as body, coalesce(${of("created_at")}) as record_created_at from (`;
  const tail = sql`) as e ${sql.join(joins, sql` `)} order by e.id desc`;
  return {
    compile: () => {
      const [inner, before, after] = [read.compile(), head.compile(db), tail.compile(db)];
      // The parameters are the inner statement's alone: around it only literals and names.
      if (before.parameters.length + after.parameters.length > 0) throw new Error("an event page's joins take no parameter");
      return CompiledQuery.raw(`${before.sql}${inner.sql}${after.sql}`, [...inner.parameters]) as CompiledQuery<EventRow>;
    },
  };
}

const pages = new QueryTemplates<EventRow>();

/**
 * Up to `take` events (or a few more: see takeOf) of `range` of the tenant whose API key has the hash `keyHash`, found in
 * the statement itself as a list page does (lists/list.sql.ts); none when the key is unknown,
 * revoked or lacks the `read` scope.
 */
export function eventsQuery(db: Kysely<Schema>, keyHash: string, range: EventRange, take: number): CompiledQuery<EventRow> {
  const values = { keyHash, now: Date.now(), ...range };
  const limit = takeOf(take);
  const shape = ["events", limit, ...Object.keys(values)].join(":");
  return pages.fill(db, shape, values, (s) => withRecords(db, eventsOf(db, tenantFor(db, s, 1).ref, s, limit), s));
}

/** The tenant's event `id`, when it is at or above `low`. */
export function eventQuery(db: Kysely<Schema>, tenantId: number, id: string, low: string | undefined): CompiledQuery<EventRow> {
  const values = { tenantId, id, ...(low === undefined ? {} : { low }) };
  return pages.fill(db, ["event", ...Object.keys(values)].join(":"), values, (s) => withRecords(db, eventsOf(db, s.tenantId, s, 1), s));
}
