/** Migrations for both engines from one place, run by `cribline migrate` and at `serve`. */
import { Migrator, type Migration, type MigrationProvider } from "kysely";
import type { Storage } from "./database.js";
import { initialMigration } from "./migrations/0001-initial.js";

function provider(storage: Storage): MigrationProvider {
  return {
    async getMigrations(): Promise<Record<string, Migration>> {
      return { "0001-initial": initialMigration(storage.engine) };
    },
  };
}

export class MigrationError extends Error {
  override name = "MigrationError";
}

/** Brings the schema up to date; returns the names of the migrations it applied. */
export async function migrateToLatest(storage: Storage): Promise<string[]> {
  const migrator = new Migrator({ db: storage.db, provider: provider(storage) });
  const { error, results = [] } = await migrator.migrateToLatest();
  if (error !== undefined) {
    throw new MigrationError(`migration failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return results.filter((r) => r.status === "Success").map((r) => r.migrationName);
}
