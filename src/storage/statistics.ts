/**
 * The planner's statistics of a table, gathered after a bulk load (`cribline import`): a
 * freshly filled table would otherwise wait for them until the engine's own maintenance came
 * round (PostgreSQL's autovacuum may be off or behind). cribline's queries do not depend on
 * them (docs/architecture.md), but an operator's own queries may.
 */
import { sql, type Kysely } from "kysely";
import type { Schema } from "./schema.js";

export async function analyzeTable(db: Kysely<Schema>, table: keyof Schema): Promise<void> {
  await sql`analyze ${sql.table(table)}`.execute(db);
}
