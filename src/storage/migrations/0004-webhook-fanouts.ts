/**
 * Fan-outs: sync writes one row per endpoint per batch, naming the batch's messages that the
 * endpoint takes, instead of a delivery per message per endpoint; the delivery loop expands
 * each into its deliveries (webhooks/delivery/). A batch of 1,000 records announced to three
 * endpoints then writes 3 rows besides its messages, not 3,000: those had halved the rate of
 * sync. Keyed by tenant first, like every table.
 */
import { type Kysely } from "kysely";
import type { Engine } from "../engine.js";

export function webhookFanoutsMigration(t: Engine) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("webhook_fanouts")
        .addColumn("tenant_id", "integer", (c) => c.notNull())
        .addColumn("id", t.sortKeyType, (c) => c.notNull())
        .addColumn("endpoint_id", t.sortKeyType, (c) => c.notNull())
        .addColumn("created_at", t.millisType, (c) => c.notNull())
        // The ids of the messages, separated by spaces, in the order they were written. Last:
        // SQLite would follow a long value's overflow pages to reach a column after it.
        .addColumn("message_ids", "text", (c) => c.notNull())
        .addPrimaryKeyConstraint("webhook_fanouts_pkey", ["tenant_id", "endpoint_id", "id"])
        .execute();
    },
  };
}
