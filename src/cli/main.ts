/**
 * The `cribline` command line. Every command reads its settings from the environment once. The
 * server, the sync path and the demo data are loaded by the commands that run them, so that the
 * others (keys, tenants, migrate) start without loading them.
 */
import cluster from "node:cluster";
import { readFileSync } from "node:fs";
import { Command, InvalidArgumentError } from "commander";
import { findCollection, COLLECTIONS } from "../collections/registry.js";
import { loadConfig, type Config } from "../platform/config.js";
import { unknownSettingWarnings } from "../platform/setting-names.js";
import { hashKey, isKeyId, isWellFormedKey, parseScopes, KEY_PREFIX } from "../platform/keys.js";
import { maskSecrets } from "../platform/secrets.js";
import { formatTime, parseRfc3339 } from "../platform/time.js";
import { backupSqlite } from "../storage/backup.js";
import { openStorage } from "../storage/database.js";
import { migrateToLatest } from "../storage/migrate.js";
import { findKeyByHash, findKeyById, findTenantBySlug, listKeys, revokeKey } from "../tenants/tenant.repository.js";
import { issueKey } from "../tenants/tenant.service.js";
import { err, out, withStorage } from "./io.js";
import { addTenantCommands } from "./tenant.commands.js";

/** The version in package.json, two folders up from this file in src/ and in dist/ alike. */
function version(): string {
  return (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
}

function wholeNumber(raw: string): number {
  if (!/^[1-9]\d{0,3}$/.test(raw)) throw new InvalidArgumentError("must be a whole number from 1 to 9999");
  return Number(raw);
}

function keyName(raw: string): string {
  if (raw.length < 1 || raw.length > 100) throw new InvalidArgumentError("must be 1 to 100 characters");
  return raw;
}

/** `--expires`: an RFC 3339 date-time, or a number of days from now (`90d`), as milliseconds since the epoch. */
function expiry(raw: string): number {
  const days = /^([1-9]\d{0,4})d$/.exec(raw);
  if (days !== null) return Date.now() + Number(days[1]) * 86_400_000;
  const time = parseRfc3339(raw);
  if (time === undefined)
    throw new InvalidArgumentError(
      "must be an RFC 3339 date-time with time and zone, such as 2027-01-01T00:00:00Z, or a number of days, such as 90d",
    );
  return time.ms;
}

function positiveNumber(raw: string): number {
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new InvalidArgumentError("must be a positive number");
  return value;
}

export function buildCli(config: () => Config): Command {
  const program = new Command("cribline")
    .description("cribline: records API for dispensing devices")
    .version(version(), "-V, --version", "print the version")
    .showHelpAfterError();

  program
    .command("serve")
    .description("start the HTTP API")
    .option("--workers <n>", "processes serving one port (PostgreSQL only; default: one per core there, 1 on SQLite)", wholeNumber)
    .action(async (options: { workers?: number }) => (await import("../workers.js")).serve(config(), options.workers));

  program
    .command("migrate")
    .description("bring the database schema up to date (on PostgreSQL, run it once per release before serve)")
    .action(async () => {
      const { database } = config();
      // A schema change may build an index over millions of rows: no statement time limit.
      const storage = await openStorage(database.engine === "postgres" ? { ...database, statementTimeoutMs: 0 } : database);
      try {
        const applied = await migrateToLatest(storage);
        out(applied.length === 0 ? "database schema is up to date" : `applied ${applied.join(", ")}; database schema is up to date`);
      } finally {
        await storage.close();
      }
    });

  addTenantCommands(program, config);

  const keys = program.command("keys").description("manage API keys");
  keys
    .command("create")
    .description("issue an API key; the key is printed once, alone on the last line")
    .requiredOption("--tenant <slug>", "tenant the key belongs to")
    .requiredOption("--scopes <list>", "comma-separated scopes: read, sync, admin")
    .option("--name <text>", "what the key is for (1 to 100 characters), shown in lists", keyName)
    .option(
      "--expires <when>",
      "when the key stops working: an RFC 3339 date-time (2027-01-01T00:00:00Z) or a number of days (90d)",
      expiry,
    )
    .action(async (options: { tenant: string; scopes: string; name?: string; expires?: number }) => {
      const scopes = parseScopes(options.scopes);
      if (scopes === undefined) throw new InvalidArgumentError(`--scopes takes read, sync and admin, got "${options.scopes}"`);
      await withStorage(config(), async ({ db }) => {
        const issued = await issueKey(db, options.tenant, scopes, { name: options.name, expiresAt: options.expires });
        out(`key ${issued.keyId} for tenant "${options.tenant}" with scopes ${scopes.join(",")}; it is shown only now:`);
        out(issued.key);
      });
    });
  keys
    .command("list")
    .description("list API keys (their ids, never the secrets)")
    .option("--tenant <slug>", "only this tenant's keys")
    .action(async (options: { tenant?: string }) =>
      withStorage(config(), async ({ db }) => {
        if (options.tenant !== undefined && (await findTenantBySlug(db, options.tenant)) === undefined) {
          throw new InvalidArgumentError(`no tenant "${options.tenant}"`);
        }
        for (const k of await listKeys(db, options.tenant)) {
          const state =
            k.revokedAt !== null
              ? `revoked ${formatTime(k.revokedAt)}`
              : k.expiresAt !== null && k.expiresAt <= Date.now()
                ? `expired ${formatTime(k.expiresAt)}`
                : "active";
          const expires = k.expiresAt === null ? "no expiry" : `expires ${formatTime(k.expiresAt)}`;
          const used = k.lastUsedAt === null ? "never used" : `last used ${formatTime(k.lastUsedAt)}`;
          out(
            [k.keyId, k.tenantSlug, k.scopes.join(","), formatTime(k.createdAt), state, JSON.stringify(k.name), expires, used].join("\t"),
          );
        }
      }),
    );
  keys
    .command("revoke <keyId>")
    .description(`revoke a key by its id (${KEY_PREFIX}xxxxxxxx) or the whole key; effective on the next request`)
    .action(async (given: string) =>
      withStorage(config(), async ({ db }) => {
        const byId = isKeyId(given);
        if (!byId && !isWellFormedKey(given)) {
          throw new InvalidArgumentError(
            `"${maskSecrets(given)}" is neither a key id (${KEY_PREFIX} and 8 letters or digits) nor a whole key`,
          );
        }
        // A whole key counts only when it is the stored one: its first characters could be another key's id.
        const keyId = byId ? given : (await findKeyByHash(db, hashKey(given)))?.keyId;
        if (keyId === undefined) throw new InvalidArgumentError("no key matches the key given");
        if (await revokeKey(db, keyId, Date.now())) return out(`revoked ${keyId}`);
        // Revoking a revoked key changes nothing, as over the API; say since when.
        const revokedAt = (await findKeyById(db, keyId))?.revokedAt ?? null;
        if (revokedAt === null) throw new InvalidArgumentError(`no key ${keyId}`);
        out(`${keyId} was already revoked at ${formatTime(revokedAt)}`);
      }),
    );

  program
    .command("backup <file>")
    .description("copy the embedded SQLite database to a new file while the server runs, check the copy and say what it holds")
    .action(async (file: string) => {
      const { database } = config();
      if (database.engine !== "sqlite") {
        throw new InvalidArgumentError(
          "backup copies the embedded SQLite database; on PostgreSQL use pg_dump or a base backup (README: Backups)",
        );
      }
      // Every collection's table, found in the registry so that a new one is counted too.
      const counted = ["tenants", "api_keys", ...COLLECTIONS.map((c) => c.table), "webhook_endpoints", "webhook_deliveries"];
      const summary = backupSqlite(database.path, file, counted);
      const held = Object.entries(summary.counts)
        .map(([table, n]) => `${table} ${n.toLocaleString("en")}`)
        .join(", ");
      out(
        `backup of ${database.path} written to ${summary.path}: ${(summary.bytes / 2 ** 20).toFixed(1)} MiB in ${(summary.ms / 1000).toFixed(1)} s, integrity check ok`,
      );
      out(`it holds: ${held}`);
    });

  program
    .command("import <collection> <file>")
    .description(`load an NDJSON file through the sync code path (collections: ${COLLECTIONS.map((c) => c.name).join(", ")})`)
    .requiredOption("--tenant <slug>", "tenant to import into")
    .action(async (name: string, file: string, options: { tenant: string }) => {
      const collection = findCollection(name);
      if (collection === undefined) throw new InvalidArgumentError(`no collection "${name}"`);
      const { importNdjson } = await import("./import.js");
      await withStorage(config(), async ({ db }) => {
        const tenant = await findTenantBySlug(db, options.tenant);
        if (tenant === undefined) throw new InvalidArgumentError(`no tenant "${options.tenant}"`);
        const result = await importNdjson(db, collection, tenant.id, file, err, config().syncBodyLimit);
        out(`imported ${name}: ${result.created} created, ${result.updated} updated, ${result.unchanged} unchanged`);
      });
    });

  program
    .command("demo")
    .description("create a tenant with a realistic year of demo data and print a key for it")
    .option("--tenant <slug>", "tenant to create", "demo")
    .option("--scale <factor>", "multiplies the number of transactions (1 is about 40,000)", positiveNumber, 1)
    .action(async (options: { tenant: string; scale: number }) => {
      const { seedDemo } = await import("../demo/demo.service.js");
      await withStorage(config(), async ({ db }) => {
        const demo = await seedDemo(db, { slug: options.tenant, scale: options.scale, progress: err });
        out(`created tenant "${options.tenant}": ${demo.summary}`);
        out(demo.key);
      });
    });

  program
    .command("openapi")
    .description("print the OpenAPI document")
    .action(async () => {
      const [{ buildApp }, { CursorCodec }] = await Promise.all([import("../app.js"), import("../platform/cursor.js")]);
      const storage = await openStorage({ engine: "sqlite", path: ":memory:" });
      const app = await buildApp({ config: { ...config(), logLevel: "silent" }, storage, cursors: new CursorCodec("x".repeat(32)) });
      await app.ready();
      // A reader that stops early (`cribline openapi | head`) closes the pipe: the rest is not wanted.
      process.stdout.on("error", (error: NodeJS.ErrnoException) => {
        if (error.code !== "EPIPE") throw error;
      });
      out(JSON.stringify(app.swagger(), null, 2));
      await app.close();
      await storage.close();
    });
  return program;
}

/**
 * The settings, read once. A CRIBLINE_* variable that is no setting (a misspelling) is warned
 * about first, once: not again by each worker of `serve --workers`.
 */
function readConfig(): Config {
  if (cluster.isPrimary) for (const warning of unknownSettingWarnings(process.env)) err(`cribline: warning: ${warning}`);
  return loadConfig(process.env);
}

export async function main(argv: string[]): Promise<void> {
  let config: Config | undefined;
  const cli = buildCli(() => (config ??= readConfig()));
  try {
    await cli.parseAsync(argv);
  } catch (error) {
    err(`cribline: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
}
