/**
 * Tenants manage their own keys over the API (tenants/key.routes.ts): a key gains a name, an
 * optional expiry and when it was last used (kept coarsely, see tenants/key-usage.ts), and a
 * tenant's keys are listed newest first by an index of their own. A tenant may carry its own
 * rate limits (null: the deployment's defaults).
 */
import { sql, type Kysely } from "kysely";
import type { Engine } from "../engine.js";

export function keysManagedByTenantsMigration(engine: Engine) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable("api_keys")
        .addColumn("name", "text", (c) => c.notNull().defaultTo(""))
        .execute();
      await db.schema.alterTable("api_keys").addColumn("expires_at", engine.millisType).execute();
      await db.schema.alterTable("api_keys").addColumn("last_used_at", engine.millisType).execute();
      await sql`create index api_keys_tenant_created on api_keys (tenant_id, created_at, key_id)`.execute(db);
      await db.schema.alterTable("tenants").addColumn("read_limit", "integer").execute();
      await db.schema.alterTable("tenants").addColumn("sync_limit", "integer").execute();
    },
  };
}
