/**
 * The first schema. Every table is keyed by tenant first, so each list is one index range
 * inside one tenant and the schema can be sharded by tenant. The record tables and their
 * indexes are listed here literally (not derived from the collection registry) so that this
 * migration never changes once it has run; a test checks that every filter rides an index.
 */
import { sql, type Kysely } from "kysely";
import type { Engine } from "../engine.js";

const RELATION_INDEXES = ["employee_id", "product_id", "cost_center_id", "sector_id"];

const MASTER_ORDER = [
  ["created_at", "id"],
  ["name_key", "id"],
];

// Transactions carry event_at in their order indexes so that a time window is checked on
// the index entry, and index late rows by event date: see src/lists/window.ts.
const TRANSACTION_INDEXES = [
  ["created_at", "id", "event_at"],
  ["name_key", "id", "event_at"],
  ...RELATION_INDEXES.map((c) => [c, "created_at", "id"]),
];

// Partial, so that it holds only the few late rows and a planner knows how few they are.
const LATE_INDEX = ["late_event_at", "created_at", "id"];

const RECORD_TABLES: { table: string; indexes: string[][] }[] = [
  ...["withdrawals", "returns", "exchanges", "training_records"].map((table) => ({ table, indexes: TRANSACTION_INDEXES })),
  { table: "employees", indexes: [...MASTER_ORDER, ["sector_id", "created_at", "id"], ["cost_center_id", "created_at", "id"]] },
  { table: "cost_centers", indexes: [...MASTER_ORDER, ["code_key", "id"]] },
  { table: "sectors", indexes: MASTER_ORDER },
  { table: "products", indexes: MASTER_ORDER },
  { table: "devices", indexes: MASTER_ORDER },
];

export function initialMigration(t: Engine) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("tenants")
        .addColumn("id", t.serialType, (c) => c.primaryKey())
        .addColumn("slug", "text", (c) => c.notNull().unique())
        .addColumn("created_at", t.millisType, (c) => c.notNull())
        .execute();
      await db.schema
        .createTable("api_keys")
        .addColumn("key_id", "text", (c) => c.primaryKey())
        .addColumn("tenant_id", "integer", (c) => c.notNull().references("tenants.id"))
        .addColumn("hash", "text", (c) => c.notNull().unique())
        .addColumn("scopes", "text", (c) => c.notNull())
        .addColumn("created_at", t.millisType, (c) => c.notNull())
        .addColumn("revoked_at", t.millisType)
        .execute();
      await db.schema
        .createTable("settings")
        .addColumn("name", "text", (c) => c.primaryKey())
        .addColumn("value", "text", (c) => c.notNull())
        .execute();
      for (const { table, indexes } of RECORD_TABLES) {
        await db.schema
          .createTable(table)
          .addColumn("tenant_id", "integer", (c) => c.notNull())
          // Ids break ties in every order, so they compare in code-point order like the keys.
          .addColumn("id", t.sortKeyType, (c) => c.notNull())
          .addColumn("created_at", t.millisType, (c) => c.notNull())
          .addColumn("updated_at", t.millisType, (c) => c.notNull())
          .addColumn("event_at", t.millisType)
          .addColumn("late_event_at", t.millisType)
          .addColumn("name_key", t.sortKeyType, (c) => c.notNull())
          .addColumn("code_key", t.sortKeyType)
          .addColumn("employee_id", "text")
          .addColumn("product_id", "text")
          .addColumn("cost_center_id", "text")
          .addColumn("sector_id", "text")
          .addColumn("body", "text", (c) => c.notNull())
          .addPrimaryKeyConstraint(`${table}_pkey`, ["tenant_id", "id"])
          .execute();
        for (const columns of indexes) {
          await db.schema
            .createIndex(`${table}_${columns.join("_")}`)
            .on(table)
            .columns(["tenant_id", ...columns])
            .execute();
        }
        if (indexes === TRANSACTION_INDEXES) {
          await db.schema
            .createIndex(`${table}_late`)
            .on(table)
            .columns(["tenant_id", ...LATE_INDEX])
            .where(sql.ref("late_event_at"), "is not", null)
            .execute();
        }
      }
    },
  };
}
