/**
 * The benchmark's data: a cached SQLite database with a "bench" tenant of about 1,000,000
 * withdrawals (built once with `cribline demo`), a pristine copy of it for each run, the
 * values the scenarios need (looked up in the copy), and the sync batches to send.
 *
 * Engine-specific code is kept to `ensureSqliteCache`, `copySqliteCache` and
 * `sqliteLookups`; a PostgreSQL engine would provide the same three with its own means
 * (a template database and the same SELECTs) and leave the rest of the bench as it is.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
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

/**
 * Bump when what the demo writes changes in a way the schema does not show (how a column
 * is computed, say): the cache is rebuilt under a new name. The name also carries a
 * fingerprint of the schema (the SQL of an empty database migrated by dist/) and of the demo
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

async function fingerprint() {
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
  return hash.digest("hex").slice(0, 12);
}

async function cachePaths() {
  const name = `sqlite-v${BENCH_DATA_VERSION}-${await fingerprint()}-${BENCH_TENANT}-scale${BENCH_SCALE}`;
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
  const key = await runDemo(partial, log, started);
  checkpointAndClose(partial);
  flushToDisk(partial);
  renameSync(partial, cacheDb);
  const seconds = Math.round((Date.now() - started) / 1000);
  const meta = {
    version: BENCH_DATA_VERSION,
    tenant: BENCH_TENANT,
    scale: BENCH_SCALE,
    key,
    builtAt: new Date().toISOString(),
    buildSeconds: seconds,
  };
  writeFileSync(cacheMeta, `${JSON.stringify(meta, null, 2)}\n`);
  log(`dataset: cache built in ${minutesSeconds(seconds * 1000)} (${(fileSize(cacheDb) / 2 ** 20).toFixed(0)} MiB)`);
  return { path: cacheDb, key, meta, built: true };
}

/** Runs `cribline demo` on `path`; resolves to the API key, the last line it prints. */
function runDemo(path, log, started) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["bin/cribline", "demo", "--tenant", BENCH_TENANT, "--scale", String(BENCH_SCALE)], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: `sqlite:${path}`,
        CRIBLINE_DEMO: "false",
        // The generator holds the whole year in memory before writing it: give it room.
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --max-old-space-size=8192`.trim(),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => {
      for (const line of chunk.split("\n").filter(Boolean)) log(`dataset: [${minutesSeconds(Date.now() - started)}] ${line}`);
    });
    const ticker = setInterval(() => {
      log(
        `dataset: [${minutesSeconds(Date.now() - started)}] still building, database ${(fileSize(path) / 2 ** 20).toFixed(0)} MiB + WAL ${(fileSize(`${path}-wal`) / 2 ** 20).toFixed(0)} MiB`,
      );
    }, 20_000);
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearInterval(ticker);
      const lines = stdout.trim().split("\n");
      if (code !== 0) return reject(new Error(`cribline demo failed (exit ${code ?? signal}): ${stdout.trim()}`));
      for (const line of lines.slice(0, -1)) log(`dataset: ${line}`);
      const key = lines[lines.length - 1]?.trim() ?? "";
      if (key === "" || /\s/.test(key)) return reject(new Error(`cribline demo did not end with an API key: ${stdout.trim()}`));
      resolve(key);
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

/**
 * Everything the scenarios need to know about the data, read straight from the database
 * (the same SELECTs would do on PostgreSQL).
 */
export function sqliteLookups(path, { deepOffset = 500_000, windowDaysBack = 90 } = {}) {
  const db = new Database(path, { readonly: true });
  try {
    const tenant = db.prepare("SELECT id FROM tenants WHERE slug = ?").get(BENCH_TENANT);
    if (tenant === undefined) throw new Error(`no tenant "${BENCH_TENANT}" in ${path}`);
    const tenantId = tenant.id;
    const tables = [
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
    const counts = Object.fromEntries(
      tables.map((t) => [t, db.prepare(`SELECT count(*) AS n FROM ${t} WHERE tenant_id = ?`).get(tenantId).n]),
    );

    // The deep page: the position of the row at `deepOffset` in the default order.
    const deep = db
      .prepare("SELECT created_at, id FROM withdrawals WHERE tenant_id = ? ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?")
      .get(tenantId, deepOffset);
    if (deep === undefined) throw new Error(`fewer than ${deepOffset} withdrawals: the deep page needs more data`);

    // The time window: one UTC day about `windowDaysBack` days before the newest event,
    // moved back a day at a time until it is a working day (one with at least half the
    // average day's records).
    const { newest, n } = db.prepare("SELECT max(event_at) AS newest, count(*) AS n FROM withdrawals WHERE tenant_id = ?").get(tenantId);
    const countIn = db.prepare("SELECT count(*) AS n FROM withdrawals WHERE tenant_id = ? AND event_at >= ? AND event_at <= ?");
    let dayStart = Math.floor((newest - windowDaysBack * DAY) / DAY) * DAY;
    let dayCount = 0;
    for (let tries = 0; tries < 14; tries++, dayStart -= DAY) {
      dayCount = countIn.get(tenantId, dayStart, dayStart + DAY - 1).n;
      if (dayCount >= n / 365 / 2) break;
    }

    // The name filter: the most common two-letter prefix of the (lower-cased) names.
    const prefixes = db
      .prepare("SELECT substr(name_key, 1, 2) AS p, count(*) AS n FROM withdrawals WHERE tenant_id = ? GROUP BY p ORDER BY n DESC LIMIT 20")
      .all(tenantId);
    const name = prefixes.find((r) => /^\p{L}{2}$/u.test(r.p)) ?? prefixes[0];

    // The relationship filter: the employee with the most withdrawals.
    const employee = db
      .prepare("SELECT employee_id AS id, count(*) AS n FROM withdrawals WHERE tenant_id = ? GROUP BY employee_id ORDER BY n DESC LIMIT 1")
      .get(tenantId);

    // Templates for the sync batches: real combinations of device, employee and product.
    const templates = db
      .prepare("SELECT body FROM withdrawals WHERE tenant_id = ? ORDER BY created_at DESC, id DESC LIMIT 2000")
      .all(tenantId)
      .map((r) => JSON.parse(r.body));

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
  } finally {
    db.close();
  }
}

/**
 * `count` sync request bodies of `size` new, valid withdrawals each, serialised ahead of
 * time. Ids are unique per run (`stamp`) and per body; contents vary like real traffic.
 */
export function syncBodies(templates, { count, size = 1000, stamp, first = 0 }) {
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
        deliveredAt: new Date(now - Math.floor(random() * 3 * DAY)).toISOString(),
      });
    }
    bodies.push(JSON.stringify({ data }));
  }
  return bodies;
}
