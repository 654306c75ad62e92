/**
 * Sort keys fold the final sigma (ς) to σ (collections/sort-key.ts), so that a name prefix
 * matches in any letter case: the keys stored before are recomputed. Only keys holding a ς
 * change, and a key is the lower-cased name, so the same replace gives what sortKey now gives.
 */
import { sql, type Kysely } from "kysely";

const RECORD_TABLES = [
  "withdrawals",
  "returns",
  "exchanges",
  "training_records",
  "employees",
  "cost_centers",
  "sectors",
  "products",
  "devices",
];

export function sortKeysFoldFinalSigmaMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const table of RECORD_TABLES) {
        for (const column of ["name_key", "code_key"]) {
          await sql`update ${sql.table(table)} set ${sql.ref(column)} = replace(${sql.ref(column)}, 'ς', 'σ')
            where ${sql.ref(column)} like '%ς%'`.execute(db);
        }
      }
    },
  };
}
