/**
 * Webhooks: endpoints a tenant's admin registers, the messages sync writes in the same
 * transaction as the records they announce (a transactional outbox), and one delivery of each
 * message to each endpoint subscribed to it. Keyed by tenant first, like every table.
 */
import { sql, type Kysely, type RawBuilder } from "kysely";
import type { Engine } from "../engine.js";

export function webhooksMigration(t: Engine) {
  // On SQLite the outbox's tables are stored in their primary key's order (no rowid): one
  // B-tree per row written instead of two, which sync pays for every record it announces.
  const clustered = <B extends { modifyEnd(modifier: RawBuilder<unknown>): B }>(table: B): B =>
    t.clusteredTables ? table.modifyEnd(sql`without rowid`) : table;
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("webhook_endpoints")
        .addColumn("tenant_id", "integer", (c) => c.notNull())
        .addColumn("id", t.sortKeyType, (c) => c.notNull())
        .addColumn("url", "text", (c) => c.notNull())
        // Event types, space-separated.
        .addColumn("events", "text", (c) => c.notNull())
        .addColumn("secret", "text", (c) => c.notNull())
        // After a rotation the old secret signs too, until it expires.
        .addColumn("previous_secret", "text")
        .addColumn("previous_secret_until", t.millisType)
        .addColumn("disabled_at", t.millisType)
        .addColumn("disabled_reason", "text")
        .addColumn("created_at", t.millisType, (c) => c.notNull())
        .addColumn("updated_at", t.millisType, (c) => c.notNull())
        .addPrimaryKeyConstraint("webhook_endpoints_pkey", ["tenant_id", "id"])
        .execute();
      await db.schema
        .createIndex("webhook_endpoints_created_at_id")
        .on("webhook_endpoints")
        .columns(["tenant_id", "created_at", "id"])
        .execute();

      await db.schema
        .createTable("webhook_messages")
        .addColumn("tenant_id", "integer", (c) => c.notNull())
        // The webhook-id header: the same on every attempt and every replay.
        .addColumn("id", t.sortKeyType, (c) => c.notNull())
        .addColumn("type", "text", (c) => c.notNull())
        .addColumn("created_at", t.millisType, (c) => c.notNull())
        // The exact JSON body sent: {"type", "timestamp", "data"}.
        .addColumn("payload", "text", (c) => c.notNull())
        .addPrimaryKeyConstraint("webhook_messages_pkey", ["tenant_id", "id"])
        .$call(clustered)
        .execute();

      await db.schema
        .createTable("webhook_deliveries")
        .addColumn("tenant_id", "integer", (c) => c.notNull())
        .addColumn("id", t.sortKeyType, (c) => c.notNull())
        .addColumn("endpoint_id", t.sortKeyType, (c) => c.notNull())
        .addColumn("message_id", t.sortKeyType, (c) => c.notNull())
        // pending, succeeded, failed, or paused (its endpoint is disabled)
        .addColumn("status", "text", (c) => c.notNull())
        .addColumn("attempts", "integer", (c) => c.notNull())
        .addColumn("next_attempt_at", t.millisType)
        // A process sending it holds it until then; another may take it over afterwards.
        .addColumn("lease_until", t.millisType)
        .addColumn("created_at", t.millisType, (c) => c.notNull())
        .addColumn("updated_at", t.millisType, (c) => c.notNull())
        // By endpoint, then id: ids begin with the time they were made (outbox.ts), so this
        // one index also finds an endpoint's deliveries of a time range (replay).
        .addPrimaryKeyConstraint("webhook_deliveries_pkey", ["tenant_id", "endpoint_id", "id"])
        .$call(clustered)
        .execute();
      // Every attempt, for the admin's delivery log.
      await db.schema
        .createTable("webhook_attempts")
        .addColumn("tenant_id", "integer", (c) => c.notNull())
        .addColumn("id", t.sortKeyType, (c) => c.notNull())
        .addColumn("delivery_id", t.sortKeyType, (c) => c.notNull())
        .addColumn("endpoint_id", t.sortKeyType, (c) => c.notNull())
        // The message's id (the webhook-id header) and event type, for the log.
        .addColumn("message_id", t.sortKeyType, (c) => c.notNull())
        .addColumn("event_type", "text", (c) => c.notNull())
        .addColumn("attempted_at", t.millisType, (c) => c.notNull())
        // The receiver's HTTP status; null when none came (timeout, refused, network error).
        .addColumn("status_code", "integer")
        .addColumn("duration_ms", "integer", (c) => c.notNull())
        .addColumn("error", "text")
        // When the next attempt is due; null when this one ended the delivery.
        .addColumn("next_attempt_at", t.millisType)
        .addPrimaryKeyConstraint("webhook_attempts_pkey", ["tenant_id", "id"])
        .execute();
      await db.schema
        .createIndex("webhook_attempts_endpoint_attempted_at_id")
        .on("webhook_attempts")
        .columns(["tenant_id", "endpoint_id", "attempted_at", "id"])
        .execute();
      // What is due, across tenants: the delivery loop's one query that is not per tenant.
      await db.schema
        .createIndex("webhook_deliveries_due")
        .on("webhook_deliveries")
        .columns(["next_attempt_at"])
        .where(sql.ref("status"), "=", "pending")
        .execute();
    },
  };
}
