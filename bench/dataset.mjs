/**
 * The benchmark's data: a cached database with a "bench" tenant of about 1,000,000
 * withdrawals (built once with `cribline demo`), a pristine copy of it for each run, the
 * values the scenarios need (looked up in the copy), and the sync batches to send.
 *
 * Each engine provides the same three things with its own means:
 *   - SQLite: `ensureSqliteCache` (a file in .bench-cache/), `copySqliteCache` (a file copy
 *     in a temporary directory) and `sqliteLookups`;
 *   - PostgreSQL: `ensurePostgresCache` (a database `cribline_bench_v<N>_<fingerprint>` on
 *     the server), `copyPostgresCache` (`CREATE DATABASE ... TEMPLATE`) and `postgresLookups`.
 * Both lookups run the same SELECTs (`lookupsWith`); the rest of the bench is shared.
 */
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { sql } from "kysely";
import pg from "pg";
import { lateDelay, quickDelay } from "../dist/demo/demo.data.js";
import { withoutPassword } from "../dist/storage/database.js";

/**
 * Bump when what the demo writes changes in a way the schema does not show (how a column
 * is computed, say): each engine's cache is rebuilt under a new name. The name also carries
 * a fingerprint of that engine's schema (as dist/ migrates an empty database) and of the demo
 * generator (dist/demo) and of how a record becomes a row, so a schema change, even an
 * in-place edit of a migration, builds a fresh cache by itself, while changes to the list or
 * sync code reuse the cache.
 */
export const BENCH_DATA_VERSION = 1;
export const BENCH_TENANT = "bench";
/** The demo makes about 30,000 withdrawals per unit of scale: 33.34 gives about 1,000,000. */
export const BENCH_SCALE = 33.34;

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const CACHE_DIR = join(ROOT, ".bench-cache");
const DAY = 86_400_000;

/** The SQLite cache's fingerprint: the SQL of an empty database migrated by dist/, and the code that decides the rows. */
async function sqliteFingerprint() {
  const hash = createHash("sha256");
  const { openStorage } = await import("../dist/storage/database.js");
  const { migrateToLatest } = await import("../dist/storage/migrate.js");
  const storage = await openStorage({ engine: "sqlite", path: ":memory:" });
  try {
    await migrateToLatest(storage);
    const { rows } = await sql`SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'kysely_%' ORDER BY type, name`.execute(
      storage.db,
    );
    hash.update(JSON.stringify(rows));
  } finally {
    await storage.close();
  }
  hashDataCode(hash);
  return hash.digest("hex").slice(0, 12);
}

/** Adds what decides the rows besides the schema: the demo generator and how a record becomes a row. */
function hashDataCode(hash) {
  const demo = join(ROOT, "dist/demo");
  for (const name of readdirSync(demo)
    .filter((f) => f.endsWith(".js"))
    .sort())
    hash.update(name).update(readFileSync(join(demo, name)));
  // How a record becomes a row: its canonical body, sort keys and late_event_at (which
  // depends on the window's slack). A change there must not reuse rows written the old way.
  for (const file of ["dist/collections/record.js", "dist/collections/sort-key.js", "dist/collections/late-event.js"]) {
    hash.update(file).update(readFileSync(join(ROOT, file)));
  }
}

async function cachePaths() {
  const name = `sqlite-v${BENCH_DATA_VERSION}-${await sqliteFingerprint()}-${BENCH_TENANT}-scale${BENCH_SCALE}`;
  return { name, db: join(CACHE_DIR, `${name}.db`), meta: join(CACHE_DIR, `${name}.json`) };
}

const sidecars = (path) => [`${path}-wal`, `${path}-shm`, `${path}-journal`];
const fileSize = (path) => (existsSync(path) ? statSync(path).size : 0);

function minutesSeconds(ms) {
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
}

/**
 * Returns { path, key, meta } of the cached database, building it first when missing.
 * The build writes to a ".partial" file and renames it when complete, so an interrupted
 * build is never mistaken for a cache.
 */
export async function ensureSqliteCache(log = console.log) {
  const { name: cacheName, db: cacheDb, meta: cacheMeta } = await cachePaths();
  if (existsSync(cacheDb) && existsSync(cacheMeta)) {
    const meta = JSON.parse(readFileSync(cacheMeta, "utf8"));
    return { path: cacheDb, key: meta.key, meta, built: false };
  }
  mkdirSync(CACHE_DIR, { recursive: true });
  // One cache at a time: older ones (another schema or version) are about 1 GiB each.
  for (const old of readdirSync(CACHE_DIR).filter((f) => f.startsWith("sqlite-") && !f.startsWith(`${cacheName}.`))) {
    log(`dataset: removing the outdated cache file ${old}`);
    rmSync(join(CACHE_DIR, old), { force: true });
  }
  const partial = `${cacheDb}.partial`;
  for (const f of [partial, ...sidecars(partial)]) rmSync(f, { force: true });
  log(`dataset: building the cache ${cacheDb}`);
  log(`dataset: cribline demo --tenant ${BENCH_TENANT} --scale ${BENCH_SCALE} (about 1,000,000 withdrawals; takes minutes, once)`);
  const started = Date.now();
  const key = await runDemo(`sqlite:${partial}`, {
    log,
    started,
    progress: () =>
      `database ${(fileSize(partial) / 2 ** 20).toFixed(0)} MiB + WAL ${(fileSize(`${partial}-wal`) / 2 ** 20).toFixed(0)} MiB`,
  });
  checkpointAndClose(partial);
  flushToDisk(partial);
  renameSync(partial, cacheDb);
  const seconds = Math.round((Date.now() - started) / 1000);
  const meta = cacheMetadata(key, seconds);
  writeFileSync(cacheMeta, `${JSON.stringify(meta, null, 2)}\n`);
  log(`dataset: cache built in ${minutesSeconds(seconds * 1000)} (${(fileSize(cacheDb) / 2 ** 20).toFixed(0)} MiB)`);
  return { path: cacheDb, key, meta, built: true };
}

/**
 * Runs `cribline demo` on `databaseUrl`; resolves to the API key, the last line it prints.
 * `progress()` describes the database's growth for a line every 20 s.
 */
async function runDemo(databaseUrl, { log, started, progress, env = {} }) {
  const lines = await runCribline(["demo", "--tenant", BENCH_TENANT, "--scale", String(BENCH_SCALE)], {
    databaseUrl,
    log,
    started,
    progress,
    // The generator holds the whole year in memory before writing it: give it room.
    env: { ...env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --max-old-space-size=8192`.trim() },
  });
  for (const line of lines.slice(0, -1)) log(`dataset: ${line}`);
  const key = lines[lines.length - 1]?.trim() ?? "";
  if (key === "" || /\s/.test(key)) throw new Error(`cribline demo did not end with an API key: ${lines.join("\n")}`);
  return key;
}

/**
 * Runs `bin/cribline <args>` with DATABASE_URL=`databaseUrl`; resolves to its stdout's lines.
 * Its stderr (the demo's progress) is logged as it comes, with the time since `started`.
 */
function runCribline(args, { databaseUrl, log, started, progress, env = {} }) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["bin/cribline", ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl, CRIBLINE_DEMO: "false", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => {
      for (const line of chunk.split("\n").filter(Boolean)) log(`dataset: [${minutesSeconds(Date.now() - started)}] ${line}`);
    });
    const ticker =
      progress === undefined
        ? undefined
        : setInterval(async () => {
            const state = await Promise.resolve()
              .then(progress)
              .catch((error) => `(size unknown: ${error.message})`);
            log(`dataset: [${minutesSeconds(Date.now() - started)}] still building, ${state}`);
          }, 20_000);
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearInterval(ticker);
      if (code !== 0) return reject(new Error(`cribline ${args[0]} failed (exit ${code ?? signal}): ${stdout.trim()}`));
      resolve(stdout.trim().split("\n"));
    });
  });
}

/** Folds any WAL into the main file so the database is one self-contained file. */
function checkpointAndClose(path) {
  const db = new Database(path);
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
  for (const f of sidecars(path)) if (fileSize(f) > 0) throw new Error(`${f} is not empty after a checkpoint`);
  for (const f of sidecars(path)) rmSync(f, { force: true });
}

/** fsync: the file's dirty pages go to disk now rather than during the measurements. */
function flushToDisk(path) {
  const fd = openSync(path, "r+");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Copies the cache to a fresh temporary directory (sync writes into the copy; the cache
 * stays pristine). The cache is closed and checkpointed, so its main file is all of it.
 */
export function copySqliteCache(cachePath) {
  // Only the WAL can hold data; an empty one, or a -shm, is left by a reader and is harmless.
  if (fileSize(`${cachePath}-wal`) > 0) {
    throw new Error(`${cachePath}-wal is not empty: the cache was not closed cleanly; delete ${CACHE_DIR} to rebuild it`);
  }
  const dir = mkdtempSync(join(tmpdir(), "cribline-bench-"));
  const path = join(dir, "bench.db");
  copyFileSync(cachePath, path);
  // Written back now, not by the first fsync of a sync batch: that one would otherwise
  // flush the whole fresh copy and be timed as part of the sync scenario.
  flushToDisk(path);
  return { path, dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

// ---------------------------------------------------------------------------------------
// PostgreSQL: the cache is a database on the server, each run works on a template copy.

export const DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres";
/** Every database the bench makes starts with this; the bench never drops any other. */
const PG_PREFIX = "cribline_bench_";
/**
 * Working databases (the schema scratch, a build in progress, a run's copy) carry the pid of
 * the bench that made them: one left by an interrupted run is dropped by the next run, while
 * a bench still running keeps its own.
 */
const pgWorkName = (purpose) => `${PG_PREFIX}tmp_${process.pid}_${purpose}`;
export const workDatabaseName = pgWorkName;
const PG_WORK = /^cribline_bench_tmp_(\d+)_/;

// int8 (count(*), the bigint milliseconds) arrives as numbers, as in cribline's own pool.
const INT8_OID = 20;
const pgTypes = { getTypeParser: (oid, format) => (oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format)) };
const ident = (name) => pg.escapeIdentifier(name);

/** A URL naming another database on the same server as `base`. */
export function postgresUrlFor(base, name) {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/** What a cache records of itself: its data version, the bench key, and how long it took. */
function cacheMetadata(key, buildSeconds) {
  return { version: BENCH_DATA_VERSION, tenant: BENCH_TENANT, scale: BENCH_SCALE, key, builtAt: new Date().toISOString(), buildSeconds };
}

/** A URL fit for a log line: its password, if any, masked. */
export const describeUrl = withoutPassword;

export async function withClient(url, work) {
  const client = new pg.Client({
    connectionString: url,
    types: pgTypes,
    connectionTimeoutMillis: 5000,
    application_name: "cribline-bench",
  });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The server's version and the settings that shape the figures; rejects when the server cannot be reached. */
export async function postgresServerInfo(baseUrl) {
  const settings = ["server_version", "shared_buffers", "work_mem", "effective_cache_size", "synchronous_commit", "jit", "max_connections"];
  return withClient(baseUrl, async (client) => {
    const { rows } = await client.query("SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)", [settings]);
    return Object.fromEntries(
      settings.map((name) => {
        const row = rows.find((r) => r.name === name);
        return [name, row === undefined ? "?" : showSetting(row)];
      }),
    );
  });
}

/** pg_settings gives sizes in units of 8 kB or kB: shown in MB, as SHOW would. */
function showSetting({ setting, unit }) {
  const kB = unit === "8kB" ? Number(setting) * 8 : unit === "kB" ? Number(setting) : undefined;
  return kB === undefined ? setting : `${kB % 1024 === 0 ? kB / 1024 : (kB / 1024).toFixed(1)} MB`;
}

/**
 * The PostgreSQL schema (columns, indexes and constraints of an empty scratch database
 * migrated by dist/), the data version, tenant and scale, and the code that decides the rows.
 */
async function postgresFingerprint(baseUrl) {
  const scratch = pgWorkName("schema");
  const url = postgresUrlFor(baseUrl, scratch);
  await withClient(baseUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${ident(scratch)} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${ident(scratch)}`);
  });
  const hash = createHash("sha256").update(JSON.stringify({ engine: "postgres", BENCH_DATA_VERSION, BENCH_TENANT, BENCH_SCALE }));
  try {
    const { openStorage } = await import("../dist/storage/database.js");
    const { migrateToLatest } = await import("../dist/storage/migrate.js");
    const { parseDatabaseUrl } = await import("../dist/platform/config.js");
    const storage = await openStorage(parseDatabaseUrl(url));
    try {
      await migrateToLatest(storage);
    } finally {
      await storage.close();
    }
    await withClient(url, async (client) => {
      for (const query of [
        `SELECT table_name, column_name, ordinal_position, data_type, is_nullable, column_default, collation_name
           FROM information_schema.columns WHERE table_schema = 'public' AND table_name NOT LIKE 'kysely%'
          ORDER BY table_name, ordinal_position`,
        `SELECT tablename, indexname, indexdef FROM pg_indexes
          WHERE schemaname = 'public' AND tablename NOT LIKE 'kysely%' ORDER BY tablename, indexname`,
        `SELECT conrelid::regclass::text AS table_name, conname, pg_get_constraintdef(oid) AS definition FROM pg_constraint
          WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text NOT LIKE 'kysely%' ORDER BY 1, 2`,
      ])
        hash.update(JSON.stringify((await client.query(query)).rows));
    });
  } finally {
    await withClient(baseUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${ident(scratch)} WITH (FORCE)`));
  }
  hashDataCode(hash);
  return hash.digest("hex").slice(0, 12);
}

/**
 * Returns { name, key, meta, built } of the cached database `cribline_bench_v<N>_<fingerprint>`,
 * building it first when missing: `cribline migrate` and `cribline demo` into a working
 * database, then VACUUM (ANALYZE), then its metadata (the key, the build time) as the
 * database's comment, then a rename to the cache's name, so an interrupted build is never
 * mistaken for a cache. The cache refuses connections (ALLOW_CONNECTIONS false): nothing can
 * hold it open when a run copies it, and autovacuum leaves it as it was built.
 */
export async function ensurePostgresCache(baseUrl, log = console.log) {
  const name = `${PG_PREFIX}v${BENCH_DATA_VERSION}_${await postgresFingerprint(baseUrl)}`;
  const found = await withClient(baseUrl, async (client) => {
    await dropStalePostgres(client, name, log);
    const { rows } = await client.query("SELECT shobj_description(oid, 'pg_database') AS meta FROM pg_database WHERE datname = $1", [name]);
    return rows[0];
  });
  if (found !== undefined) {
    const meta = parseMeta(found.meta);
    if (meta !== undefined) return { name, key: meta.key, meta, built: false };
    log(`dataset: the database ${name} has no bench metadata: dropping it and building it again`);
    await withClient(baseUrl, (client) => client.query(`DROP DATABASE ${ident(name)} WITH (FORCE)`));
  }

  const building = pgWorkName("build");
  const url = postgresUrlFor(baseUrl, building);
  await withClient(baseUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${ident(building)} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${ident(building)}`);
  });
  try {
    log(`dataset: building the PostgreSQL cache ${name} (in ${building} until complete)`);
    log(`dataset: cribline migrate, then cribline demo --tenant ${BENCH_TENANT} --scale ${BENCH_SCALE} (takes minutes, once)`);
    const started = Date.now();
    // PostgreSQL needs a cursor secret in the configuration; neither command signs a cursor.
    const env = { CRIBLINE_CURSOR_SECRET: randomBytes(32).toString("base64url") };
    for (const line of await runCribline(["migrate"], { databaseUrl: url, log, started, env })) log(`dataset: ${line}`);
    const key = await runDemo(url, {
      log,
      started,
      env,
      progress: async () => `database ${(Number(await databaseSize(baseUrl, building)) / 2 ** 20).toFixed(0)} MiB`,
    });
    // Statistics, as a database in service has them; and the visibility map and hint bits set
    // now, or the first scans of every copy would write them while they are being measured.
    log(`dataset: [${minutesSeconds(Date.now() - started)}] VACUUM (ANALYZE)`);
    await withClient(url, (client) => client.query("VACUUM (ANALYZE)"));
    const seconds = Math.round((Date.now() - started) / 1000);
    const meta = cacheMetadata(key, seconds);
    await withClient(baseUrl, async (client) => {
      await client.query(`COMMENT ON DATABASE ${ident(building)} IS ${client.escapeLiteral(JSON.stringify(meta))}`);
      await client.query(`ALTER DATABASE ${ident(building)} WITH ALLOW_CONNECTIONS false`);
      await client.query(`ALTER DATABASE ${ident(building)} RENAME TO ${ident(name)}`);
    });
    log(
      `dataset: cache built in ${minutesSeconds(seconds * 1000)} (${(Number(await databaseSize(baseUrl, name)) / 2 ** 20).toFixed(0)} MiB)`,
    );
    return { name, key, meta, built: true };
  } catch (error) {
    await withClient(baseUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${ident(building)} WITH (FORCE)`)).catch(() => undefined);
    throw error;
  }
}

function parseMeta(comment) {
  try {
    const meta = JSON.parse(comment ?? "");
    return typeof meta?.key === "string" ? meta : undefined;
  } catch {
    return undefined;
  }
}

async function databaseSize(baseUrl, name) {
  return withClient(baseUrl, async (client) => (await client.query("SELECT pg_database_size($1) AS size", [name])).rows[0].size);
}

/**
 * Drops the bench's databases that are no longer needed: caches of another fingerprint or
 * version (about 1.5 GiB each; they refuse connections, so a plain DROP does), and working
 * databases whose bench process is gone (WITH (FORCE): a server it left may still hold them).
 * The usage section's caches (`cribline_bench_usage_*`) are left to bench/usage-data.mjs.
 */
async function dropStalePostgres(client, keep, log) {
  const { rows } = await client.query("SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname", [PG_PREFIX]);
  for (const { datname } of rows) {
    // The usage section's caches are its own to keep or drop (bench/usage-data.mjs).
    if (datname === keep || datname.startsWith(`${PG_PREFIX}usage_`)) continue;
    const work = PG_WORK.exec(datname);
    if (work !== null && (Number(work[1]) === process.pid || processAlive(Number(work[1])))) continue;
    log(`dataset: dropping the ${work === null ? "outdated PostgreSQL cache" : "left-over working database"} ${datname}`);
    try {
      await client.query(`DROP DATABASE ${ident(datname)}${work === null ? "" : " WITH (FORCE)"}`);
    } catch (error) {
      log(`dataset: could not drop ${datname} (${error.message}); left as it is`);
    }
  }
}

function processAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}

/**
 * A fresh database for one run (or one configuration of it): `CREATE DATABASE ... TEMPLATE`
 * of the cache, a file-level copy (STRATEGY FILE_COPY: a checkpoint and a copy of the files,
 * much faster than the default WAL_LOG for a database this size). Sync writes into the copy;
 * the cache stays pristine. `drop()` removes it.
 */
export async function copyPostgresCache(baseUrl, cacheName) {
  const name = pgWorkName("run");
  await withClient(baseUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${ident(name)} TEMPLATE ${ident(cacheName)} STRATEGY FILE_COPY`);
  });
  return {
    name,
    url: postgresUrlFor(baseUrl, name),
    sizeBytes: Number(await databaseSize(baseUrl, name)),
    drop: () => withClient(baseUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`)),
  };
}

/**
 * Has the machine write out what building or copying a cache left in memory, before any load:
 * PostgreSQL's dirty buffers (a checkpoint, when `postgresUrl` is given), then every dirty page
 * of the file system (sync(1)), so that no write-back of a cache built or copied just before
 * runs under the load. Returns the seconds it took.
 */
export async function settleDisk(postgresUrl) {
  const started = performance.now();
  if (postgresUrl !== undefined) await withClient(postgresUrl, (client) => client.query("CHECKPOINT"));
  await new Promise((resolvePromise, reject) => {
    spawn("sync", { stdio: "ignore" })
      .on("error", reject)
      .on("exit", (code) => (code === 0 ? resolvePromise() : reject(new Error(`sync exited with ${code}`))));
  });
  return (performance.now() - started) / 1000;
}

/** Everything the scenarios need to know about the data, read from a copy of the SQLite cache. */
export async function sqliteLookups(path, options) {
  const db = new Database(path, { readonly: true });
  try {
    return await lookupsWith(async (text, params) => db.prepare(text).all(...params), path, options);
  } finally {
    db.close();
  }
}

/**
 * Everything the scenarios need to know about the data, read from a PostgreSQL copy with the
 * same SELECTs as on SQLite (int8 parsed to numbers, as cribline's own pool does).
 */
export async function postgresLookups(url, options) {
  return withClient(url, (client) =>
    lookupsWith(
      async (text, params) => {
        let n = 0;
        return (
          await client.query(
            text.replace(/\?/g, () => `$${++n}`),
            params,
          )
        ).rows;
      },
      describeUrl(url),
      options,
    ),
  );
}

/**
 * The lookups themselves, over `all(sql, params)` (rows as objects, `?` placeholders), so that
 * both engines answer exactly the same questions.
 */
async function lookupsWith(all, where, { deepOffset = 500_000, windowDaysBack = 90 } = {}) {
  const get = async (text, ...params) => (await all(text, params))[0];
  const tenant = await get("SELECT id FROM tenants WHERE slug = ?", BENCH_TENANT);
  if (tenant === undefined) throw new Error(`no tenant "${BENCH_TENANT}" in ${where}`);
  const tenantId = tenant.id;
  const tables = ["withdrawals", "returns", "exchanges", "training_records", "employees", "cost_centers", "sectors", "products", "devices"];
  const counts = {};
  for (const t of tables) counts[t] = (await get(`SELECT count(*) AS n FROM ${t} WHERE tenant_id = ?`, tenantId)).n;

  // The deep page: the position of the row at `deepOffset` in the default order.
  const deep = await get(
    "SELECT created_at, id FROM withdrawals WHERE tenant_id = ? ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?",
    tenantId,
    deepOffset,
  );
  if (deep === undefined) throw new Error(`fewer than ${deepOffset} withdrawals: the deep page needs more data`);

  // The time window: one UTC day about `windowDaysBack` days before the newest event,
  // moved back a day at a time until it is a working day (one with at least half the
  // average day's records).
  const { newest, n } = await get("SELECT max(event_at) AS newest, count(*) AS n FROM withdrawals WHERE tenant_id = ?", tenantId);
  let dayStart = Math.floor((newest - windowDaysBack * DAY) / DAY) * DAY;
  let dayCount = 0;
  for (let tries = 0; tries < 14; tries++, dayStart -= DAY) {
    dayCount = (
      await get(
        "SELECT count(*) AS n FROM withdrawals WHERE tenant_id = ? AND event_at >= ? AND event_at <= ?",
        tenantId,
        dayStart,
        dayStart + DAY - 1,
      )
    ).n;
    if (dayCount >= n / 365 / 2) break;
  }

  // The name filter: the most common two-letter prefix of the (lower-cased) names.
  const prefixes = await all(
    "SELECT substr(name_key, 1, 2) AS p, count(*) AS n FROM withdrawals WHERE tenant_id = ? GROUP BY p ORDER BY n DESC LIMIT 20",
    [tenantId],
  );
  const name = prefixes.find((r) => /^\p{L}{2}$/u.test(r.p)) ?? prefixes[0];

  // The relationship filter: the employee with the most withdrawals.
  const employee = await get(
    "SELECT employee_id AS id, count(*) AS n FROM withdrawals WHERE tenant_id = ? GROUP BY employee_id ORDER BY n DESC LIMIT 1",
    tenantId,
  );

  // Templates for the sync batches: real combinations of device, employee and product.
  const templates = (
    await all("SELECT body FROM withdrawals WHERE tenant_id = ? ORDER BY created_at DESC, id DESC LIMIT 2000", [tenantId])
  ).map((r) => JSON.parse(r.body));

  return {
    tenantId,
    counts,
    deep: { offset: deepOffset, position: { key: deep.created_at, id: deep.id } },
    window: {
      since: new Date(dayStart).toISOString(),
      until: new Date(dayStart + DAY - 1).toISOString(),
      records: dayCount,
      daysBeforeNewest: Math.round((newest - dayStart) / DAY),
    },
    name: { prefix: name.p, records: name.n },
    employee: { id: employee.id, records: employee.n },
    templates,
  };
}

/**
 * The share of synced records that arrive late, as in the data set (`cribline demo`: about
 * 3 % of records come from a device that was offline). Their delays are the data set's own
 * (demo.data.ts): a late record's event date is 1 hour to 5 days before its sync, skewed to
 * the short end; every other record's is 1 s to 10 min before (70 % within 30 s).
 */
const LATE_SHARE = 0.03;

/**
 * `count` sync request bodies of `size` new, valid withdrawals each, serialised ahead of
 * time. Ids are unique per run (`stamp`) and per body; contents vary like real traffic, and
 * a share `late` of the records (LATE_SHARE unless given) has an event date long past.
 */
export function syncBodies(templates, { count, size = 1000, stamp, first = 0, late = LATE_SHARE }) {
  let seed = 0x9e3779b9 ^ first;
  const random = () => {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const now = Date.now();
  const bodies = [];
  for (let b = first; b < first + count; b++) {
    const data = [];
    for (let i = 0; i < size; i++) {
      const t = templates[Math.floor(random() * templates.length)];
      data.push({
        ...t,
        id: `bench-${stamp}-${String(b).padStart(4, "0")}-${String(i).padStart(4, "0")}`,
        quantity: 1 + Math.floor(random() * 3),
        deliveredAt: new Date(now - (random() < late ? lateDelay(random) : quickDelay(random))).toISOString(),
      });
    }
    bodies.push(JSON.stringify({ data }));
  }
  return bodies;
}

/** The environment both kinds of server read, as `cribline serve` would. */
export function serverEnv(databaseUrl, cursorSecret, tenant = BENCH_TENANT) {
  return {
    ...process.env,
    DATABASE_URL: databaseUrl,
    CRIBLINE_CURSOR_SECRET: cursorSecret,
    CRIBLINE_DEMO: "false",
    LOG_LEVEL: "info",
    PORT: "0",
    HOST: "127.0.0.1",
    // The webhook receivers are on loopback, which cribline refuses by default.
    CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true",
    // Rate limits on, as they ship, but high enough that the load never meets them: the bench
    // measures their cost, not their effect (a 429 would count as an error).
    CRIBLINE_RATE_LIMIT_READ: "1000000000",
    CRIBLINE_RATE_LIMIT_SYNC: "1000000000",
    CRIBLINE_RATE_LIMIT_ANONYMOUS: "1000000000",
    BENCH_TENANT: tenant,
  };
}
