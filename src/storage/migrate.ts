/** Migrations for both engines from one place, run by `cribline migrate` and at `serve`. */
import { DEFAULT_MIGRATION_TABLE, Migrator, sql, type Migration, type MigrationProvider } from "kysely";
import type { Storage } from "./database.js";
import { initialMigration } from "./migrations/0001-initial.js";
import { webhooksMigration } from "./migrations/0002-webhooks.js";
import { deliveriesDuePerEndpointMigration } from "./migrations/0003-deliveries-due-per-endpoint.js";
import { webhookFanoutsMigration } from "./migrations/0004-webhook-fanouts.js";
import { messagesByReferenceMigration } from "./migrations/0005-messages-by-reference.js";
import { sortKeysFoldFinalSigmaMigration } from "./migrations/0006-sort-keys-fold-final-sigma.js";
import { lateRowsByEventDayMigration } from "./migrations/0007-late-rows-by-event-day.js";
import { windowBucketsMigration } from "./migrations/0008-window-buckets.js";
import { keysManagedByTenantsMigration } from "./migrations/0009-keys-managed-by-tenants.js";
import { lateEightHoursKeepEventDateMigration } from "./migrations/0010-late-eight-hours-keep-event-date.js";
import { dropLateHoursMigration } from "./migrations/0011-drop-late-hours.js";
import { dropLateTopLevelMigration } from "./migrations/0012-drop-late-top-level.js";
import { windowRowsCoverNameMigration } from "./migrations/0013-window-rows-cover-name.js";
import { postgresWindowRowsKeepNameMigration } from "./migrations/0014-postgres-window-rows-keep-name.js";
import { windowWeeksByNameMigration } from "./migrations/0015-window-weeks-by-name.js";
import { windowBucketsAsIntegersMigration } from "./migrations/0016-window-buckets-as-integers.js";
import { postgresWindowRowsTextsTogetherMigration } from "./migrations/0017-postgres-window-rows-texts-together.js";
import { dropLate171DaysMigration } from "./migrations/0018-drop-late-171-days.js";
import { webhookEndpointDescriptionsMigration } from "./migrations/0019-webhook-endpoint-descriptions.js";
import { windowIndexesWithoutNamesMigration } from "./migrations/0020-window-indexes-without-names.js";
import { eventsByTypeMigration } from "./migrations/0021-events-by-type.js";
import { usageMigration } from "./migrations/0022-usage.js";

/** Every migration this build knows, by name; exported so that a test can build a schema a release behind. */
export function migrationProvider(storage: Storage): MigrationProvider {
  return {
    async getMigrations(): Promise<Record<string, Migration>> {
      return {
        "0001-initial": initialMigration(storage.engine),
        "0002-webhooks": webhooksMigration(storage.engine),
        "0003-deliveries-due-per-endpoint": deliveriesDuePerEndpointMigration(),
        "0004-webhook-fanouts": webhookFanoutsMigration(storage.engine),
        "0005-messages-by-reference": messagesByReferenceMigration(storage.engine),
        "0006-sort-keys-fold-final-sigma": sortKeysFoldFinalSigmaMigration(),
        "0007-late-rows-by-event-day": lateRowsByEventDayMigration(),
        "0008-window-buckets": windowBucketsMigration(),
        "0009-keys-managed-by-tenants": keysManagedByTenantsMigration(storage.engine),
        "0010-late-eight-hours-keep-event-date": lateEightHoursKeepEventDateMigration(),
        "0011-drop-late-hours": dropLateHoursMigration(),
        "0012-drop-late-top-level": dropLateTopLevelMigration(),
        "0013-window-rows-cover-name": windowRowsCoverNameMigration(storage.engine),
        "0014-postgres-window-rows-keep-name": postgresWindowRowsKeepNameMigration(storage.engine),
        "0015-window-weeks-by-name": windowWeeksByNameMigration(),
        "0016-window-buckets-as-integers": windowBucketsAsIntegersMigration(),
        "0017-postgres-window-rows-texts-together": postgresWindowRowsTextsTogetherMigration(storage.engine),
        "0018-drop-late-171-days": dropLate171DaysMigration(),
        "0019-webhook-endpoint-descriptions": webhookEndpointDescriptionsMigration(),
        "0020-window-indexes-without-names": windowIndexesWithoutNamesMigration(),
        "0021-events-by-type": eventsByTypeMigration(),
        "0022-usage": usageMigration(storage.engine),
      };
    },
  };
}

export class MigrationError extends Error {
  override name = "MigrationError";
}

/**
 * Refuses a database that a newer cribline has migrated: this version would run on a schema
 * it does not know.
 */
async function refuseNewerSchema(storage: Storage): Promise<void> {
  const known = new Set(Object.keys(await migrationProvider(storage).getMigrations()));
  let applied: string[];
  try {
    const rows = await sql<{ name: string }>`select name from ${sql.table(DEFAULT_MIGRATION_TABLE)}`.execute(storage.db);
    applied = rows.rows.map((r) => r.name);
  } catch {
    return; // no migration table yet: a new database
  }
  const unknown = applied.filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new MigrationError(
      `the database schema is newer than this cribline (it has ${unknown.join(", ")}, which this version does not know): run a cribline at least as new as the one that migrated it`,
    );
  }
}

/** Brings the schema up to date; returns the names of the migrations it applied. */
export async function migrateToLatest(storage: Storage): Promise<string[]> {
  await refuseNewerSchema(storage);
  const migrator = new Migrator({ db: storage.db, provider: migrationProvider(storage) });
  const { error, results = [] } = await migrator.migrateToLatest();
  if (error !== undefined) {
    throw new MigrationError(`migration failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return results.filter((r) => r.status === "Success").map((r) => r.migrationName);
}

/**
 * Readies the schema before a command uses it. The embedded database migrates itself. A
 * PostgreSQL database is shared by many processes: a new one, where no migration has run, is
 * given the schema at once (nothing can be serving it yet, and processes starting together
 * take turns on the migrator's lock); one that has a schema is migrated only by the operator
 * (`cribline migrate`, once per release, so that the processes of the release before are
 * never served a schema they do not know), and every other command fails unless every
 * migration this build knows has run, and no other one has.
 */
export async function ensureSchema(storage: Storage): Promise<void> {
  if (!storage.engine.sharedByProcesses) {
    await migrateToLatest(storage);
    return;
  }
  await refuseNewerSchema(storage);
  const migrations = await new Migrator({ db: storage.db, provider: migrationProvider(storage) }).getMigrations();
  const missing = migrations.filter((m) => m.executedAt === undefined).map((m) => m.name);
  if (missing.length === migrations.length) await migrateToLatest(storage);
  else if (missing.length > 0) {
    throw new MigrationError(`the database schema is not up to date (missing ${missing.join(", ")}): run \`cribline migrate\` first`);
  }
}
