/**
 * Every change a tenant's records go through is now a row of `webhook_messages`, the events
 * list's table (src/events/). The list filters on one event type, newest first: an index by
 * (tenant, type, id) reads those events alone, where the primary key would pass over every
 * other type's.
 */
import type { Kysely } from "kysely";

export function eventsByTypeMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.createIndex("webhook_messages_type").on("webhook_messages").columns(["tenant_id", "type", "id"]).execute();
    },
  };
}
