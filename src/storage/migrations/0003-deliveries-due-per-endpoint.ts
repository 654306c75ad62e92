/**
 * The delivery loop takes what is due endpoint by endpoint (webhooks/delivery/): an index of
 * pending deliveries per endpoint replaces the one across every endpoint, whose scan walked
 * every due delivery of the endpoints that could take no more before finding one that could.
 */
import { sql, type Kysely } from "kysely";

export function deliveriesDuePerEndpointMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createIndex("webhook_deliveries_endpoint_due")
        .on("webhook_deliveries")
        .columns(["tenant_id", "endpoint_id", "next_attempt_at"])
        .where(sql.ref("status"), "=", "pending")
        .execute();
      await db.schema.dropIndex("webhook_deliveries_due").execute();
    },
  };
}
