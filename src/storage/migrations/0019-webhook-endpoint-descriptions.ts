/**
 * Webhook endpoints gain an optional description, for the people who manage them. Nullable and
 * without a default, so the endpoints already stored read as having none and no row is rewritten.
 */
import type { Kysely } from "kysely";

export function webhookEndpointDescriptionsMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable("webhook_endpoints").addColumn("description", "text").execute();
    },
  };
}
