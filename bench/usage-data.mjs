/**
 * The usage section's data (bench/usage.mjs): per engine, a database of its own with one tenant,
 * `bench-usage`, in Europe/Berlin, holding BENCH_USAGE_ROWS withdrawals (1,000,000) spread evenly
 * over a year of that zone (2025-12-01 to 2026-11-30), 5 % as many returns and 5 % as many
 * exchanges, by 5,000 employees (each of one of 500 cost centers, each cost center of one of 20
 * sectors), of 2,000 products (the low numbers more often), at 50 devices, quantity 1 to 5; and
 * the master records (cost centers with names, sectors, devices, products, employees).
 *
 * It is written as an operator would: `cribline migrate`, `tenants create`, `tenants zone`
 * (before any record, so that the monthly totals are counted in Berlin), then `cribline import`
 * of NDJSON files, the sync path's code, which writes usage_records and usage_months with each
 * batch; then a read key. PostgreSQL's database is vacuumed and analysed, as the main cache is.
 *
 * The built database is cached, as dataset.mjs's caches are: SQLite a file
 * .bench-cache/usage-sqlite-v<N>-<fingerprint>-<rows>.db (and .json), PostgreSQL a database
 * cribline_bench_usage_v<N>_<fingerprint>_<rows> that refuses connections; the fingerprint is of
 * the migrations and of the code that turns a record into rows. Each run reads a copy.
 */
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { once } from "node:events";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import { mulberry32 } from "../dist/demo/demo.data.js";
import { CACHE_DIR, copyPostgresCache, copySqliteCache, postgresUrlFor, withClient, workDatabaseName } from "./dataset.mjs";
import { integerSetting } from "./windows.mjs";

/** Bump when what this file writes changes: every usage cache is rebuilt. */
export const USAGE_DATA_VERSION = 1;
export const USAGE_TENANT = "bench-usage";
export const USAGE_ZONE = "Europe/Berlin";
/** The PostgreSQL caches' prefix; dataset.mjs leaves these to this file. */
export const USAGE_PG_PREFIX = "cribline_bench_usage_";
/** The year of data, [start, end) in instants: 2025-12-01T00:00 to 2026-12-01T00:00 in Berlin. */
export const START = Date.parse("2025-12-01T00:00:00+01:00");
export const END = Date.parse("2026-12-01T00:00:00+01:00");
/** A window's query parameters, both bounds inclusive. */
export const at = (since, until) => `createdSince=${encodeURIComponent(since)}&createdUntil=${encodeURIComponent(until)}`;
/** The whole year, as the reports ask for it. */
export const YEAR = at("2025-12-01T00:00:00+01:00", "2026-11-30T23:59:59.999+01:00");
export const COUNTS = { costCenters: 500, employees: 5000, products: 2000, sectors: 20, devices: 50 };
export const usageDataSettings = { rows: integerSetting("BENCH_USAGE_ROWS", 1_000_000) };

const ROOT = resolve(import.meta.dirname, "..");
const SHARE = 0.05;
const FIRST = ["Ana", "Bruno", "Carla", "Daniel", "Elena", "Felix", "Greta", "Hugo", "Ines", "Jonas", "Karin", "Lukas"];
const LAST = ["Almeida", "Braun", "Costa", "Engel", "Fischer", "Hahn", "Keller", "Meyer", "Richter", "Santos", "Vogel", "Weber"];
const pad = (n, width) => String(n).padStart(width, "0");
export const costCenterId = (c) => `cc-${pad(c + 1, 3)}`;
const sectorId = (s) => `sec-${pad(s + 1, 2)}`;
const deviceId = (d) => `dev-${pad(d + 1, 2)}`;
const productId = (p) => `prd-${pad(p + 1, 4)}`;

/** Employee `e`: cost center e mod 500, whose sector is its number mod 20. */
function employeeOf(e) {
  const c = e % COUNTS.costCenters;
  return {
    id: `emp-${pad(e + 1, 4)}`,
    name: `${FIRST[e % FIRST.length]} ${LAST[Math.floor(e / FIRST.length) % LAST.length]} ${e + 1}`,
    costCenterId: costCenterId(c),
    sectorId: sectorId(c % COUNTS.sectors),
  };
}

/** The master records of each collection. */
export function mastersOf() {
  const range = (n, f) => Array.from({ length: n }, (_, i) => f(i));
  return {
    "cost-centers": range(COUNTS.costCenters, (c) => ({ id: costCenterId(c), code: `CC-${1000 + c}`, name: `Cost center ${c + 1}` })),
    sectors: range(COUNTS.sectors, (s) => ({ id: sectorId(s), name: `Sector ${s + 1}` })),
    devices: range(COUNTS.devices, (d) => ({ id: deviceId(d), name: `Vending ${d + 1}`, location: `Hall ${1 + (d % 5)}` })),
    products: range(COUNTS.products, (p) => ({ id: productId(p), name: `Product ${p + 1}`, sku: `SKU-${p + 1}` })),
    employees: range(COUNTS.employees, (e) => {
      const { id, name, costCenterId: cc, sectorId: sec } = employeeOf(e);
      return { id, name, registration: `R-${e + 1}`, sectorId: sec, costCenterId: cc, active: true };
    }),
  };
}

/** How many records of each kind `rows` withdrawals come with. */
export const kindCounts = (rows) => ({ withdrawals: rows, returns: Math.round(rows * SHARE), exchanges: Math.round(rows * SHARE) });

/** The records of a kind, in event order, spread evenly over [START, END), each with `at` (ms). */
export function* transactionsOf(kind, count) {
  const r = mulberry32({ withdrawals: 101, returns: 202, exchanges: 303 }[kind]);
  const step = (END - START) / count;
  const prefix = { withdrawals: "w", returns: "r", exchanges: "x" }[kind];
  for (let i = 0; i < count; i += 1) {
    const employee = employeeOf(Math.floor(r() * COUNTS.employees));
    const product = Math.floor(COUNTS.products * r() * r());
    const record = {
      id: `${prefix}-${pad(i + 1, 8)}`,
      deviceId: deviceId(Math.floor(r() * COUNTS.devices)),
      employeeId: employee.id,
      employeeName: employee.name,
      productId: productId(product),
      productName: `Product ${product + 1}`,
      quantity: 1 + Math.floor(r() * 5),
      costCenterId: employee.costCenterId,
      sectorId: employee.sectorId,
    };
    const at = Math.floor(START + (i + r()) * step);
    record.deliveredAt = new Date(at).toISOString();
    if (kind === "returns") record.condition = ["reusable", "damaged", "discarded"][Math.floor(r() * 3)];
    if (kind === "exchanges") Object.assign(record, { returnedProductId: record.productId, returnedProductName: record.productName });
    yield { at, record };
  }
}

async function writeNdjson(path, records) {
  const out = createWriteStream(path);
  let chunk = "";
  for (const record of records) {
    chunk += `${JSON.stringify(record)}\n`;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await once(out, "drain");
      chunk = "";
    }
  }
  out.end(chunk);
  await once(out, "finish");
}

/** `node bin/cribline <args>` on `databaseUrl`; resolves to its stdout's lines. Import progress goes to `log` every 100,000. */
function cribline(args, databaseUrl, log) {
  return new Promise((done, fail) => {
    const env = {
      ...process.env,
      DATABASE_URL: databaseUrl,
      CRIBLINE_DEMO: "false",
      CRIBLINE_CURSOR_SECRET: randomBytes(32).toString("hex"),
    };
    const child = spawn(process.execPath, ["bin/cribline", ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (text) => (out += text));
    child.stderr.setEncoding("utf8").on("data", (text) => {
      for (const line of text.split("\n").filter(Boolean)) {
        if (/\d00000 records imported$/.test(line)) log(`    ${line}`);
        else if (!/records imported$/.test(line)) err += `${line}\n`;
      }
    });
    child.on("error", fail);
    child.on("exit", (code) =>
      code === 0
        ? done(out.trim().split("\n"))
        : fail(new Error(`cribline ${args.join(" ")} failed (${code}): ${(err || out).trim().slice(-1000)}`)),
    );
  });
}

/** Loads the tenant into the migrated-to-be database at `databaseUrl`; resolves to its key and the import's figures. */
async function load(databaseUrl, rows, log) {
  const dir = mkdtempSync(join(tmpdir(), "cribline-usage-data-"));
  try {
    await cribline(["migrate"], databaseUrl, log);
    await cribline(["tenants", "create", USAGE_TENANT], databaseUrl, log);
    await cribline(["tenants", "zone", USAGE_TENANT, USAGE_ZONE], databaseUrl, log);
    const imports = {};
    const files = Object.entries(mastersOf()).map(([name, records]) => [name, records]);
    for (const [kind, count] of Object.entries(kindCounts(rows)))
      files.push([
        kind,
        (function* () {
          for (const { record } of transactionsOf(kind, count)) yield record;
        })(),
      ]);
    for (const [name, records] of files) {
      const file = join(dir, `${name}.ndjson`);
      await writeNdjson(file, records);
      const started = performance.now();
      const [line] = await cribline(["import", name, file, "--tenant", USAGE_TENANT], databaseUrl, log);
      imports[name] = { seconds: (performance.now() - started) / 1000, line };
      log(`  ${line} in ${imports[name].seconds.toFixed(1)} s`);
      rmSync(file);
    }
    const key = (await cribline(["keys", "create", "--tenant", USAGE_TENANT, "--scopes", "read"], databaseUrl, log)).pop();
    return { key, imports };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The migrations and the code that turns a record into its rows and its usage. */
function fingerprint() {
  const hash = createHash("sha256").update(JSON.stringify({ USAGE_DATA_VERSION, COUNTS, START, END }));
  const migrations = join(ROOT, "dist/storage/migrations");
  const files = readdirSync(migrations)
    .filter((f) => f.endsWith(".js"))
    .sort()
    .map((f) => join("dist/storage/migrations", f));
  files.push("dist/storage/engine.js", "dist/usage/usage.repository.js", "dist/platform/zone.js");
  files.push("dist/collections/record.js", "dist/collections/sort-key.js", "dist/collections/late-event.js");
  for (const file of files) hash.update(file).update(readFileSync(join(ROOT, file)));
  return hash.digest("hex").slice(0, 12);
}

/** The SQLite cache, built when missing; a copy of it for the run (`databaseUrl`, `key`, `meta`, `drop()`). */
async function sqliteDatabase(rows, log) {
  const name = `usage-sqlite-v${USAGE_DATA_VERSION}-${fingerprint()}-${rows}`;
  const path = join(CACHE_DIR, `${name}.db`);
  const metaPath = join(CACHE_DIR, `${name}.json`);
  if (!existsSync(path) || !existsSync(metaPath)) {
    mkdirSync(CACHE_DIR, { recursive: true });
    for (const old of readdirSync(CACHE_DIR).filter((f) => f.startsWith("usage-sqlite-"))) {
      log(`  removing ${old}`);
      rmSync(join(CACHE_DIR, old), { force: true });
    }
    const partial = `${path}.partial`;
    log(`  building ${path} (${rows.toLocaleString("en")} withdrawals; minutes, once)`);
    const started = performance.now();
    const loaded = await load(`sqlite:${partial}`, rows, log);
    const db = new Database(partial);
    db.pragma("wal_checkpoint(TRUNCATE)");
    db.close();
    for (const f of ["-wal", "-shm"]) rmSync(`${partial}${f}`, { force: true });
    renameSync(partial, path);
    const meta = { rows, ...loaded, buildSeconds: (performance.now() - started) / 1000, builtAt: new Date().toISOString() };
    writeFileSync(metaPath, `${JSON.stringify(meta, null, 2)}\n`);
  }
  const meta = JSON.parse(readFileSync(metaPath, "utf8"));
  const copy = copySqliteCache(path);
  return { databaseUrl: `sqlite:${copy.path}`, key: meta.key, meta, cache: path, drop: async () => copy.remove() };
}

/** The PostgreSQL cache, built when missing (in a working database renamed once complete); a template copy for the run. */
async function postgresDatabase(rows, postgresUrl, log) {
  const name = `${USAGE_PG_PREFIX}v${USAGE_DATA_VERSION}_${fingerprint()}_${rows}`;
  const admin = (work) => withClient(postgresUrl, work);
  const comment = await admin(async (client) => {
    const { rows: found } = await client.query("SELECT datname FROM pg_database WHERE starts_with(datname, $1)", [USAGE_PG_PREFIX]);
    for (const { datname } of found.filter((d) => d.datname !== name)) {
      log(`  dropping the outdated usage cache ${datname}`);
      await client.query(`DROP DATABASE "${datname}" WITH (FORCE)`);
    }
    const { rows: own } = await client.query("SELECT shobj_description(oid, 'pg_database') AS c FROM pg_database WHERE datname = $1", [
      name,
    ]);
    return own[0]?.c;
  });
  if (comment === undefined || comment === null) {
    if (comment === null) await admin((client) => client.query(`DROP DATABASE "${name}" WITH (FORCE)`));
    const building = workDatabaseName("usage_build");
    await admin(async (client) => {
      await client.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`);
      await client.query(`CREATE DATABASE "${building}"`);
    });
    try {
      log(`  building the PostgreSQL cache ${name} in ${building} (${rows.toLocaleString("en")} withdrawals; minutes, once)`);
      const started = performance.now();
      const url = postgresUrlFor(postgresUrl, building);
      const loaded = await load(url, rows, log);
      await withClient(url, (client) => client.query("VACUUM (ANALYZE)"));
      const meta = { rows, ...loaded, buildSeconds: (performance.now() - started) / 1000, builtAt: new Date().toISOString() };
      await admin(async (client) => {
        await client.query(`COMMENT ON DATABASE "${building}" IS ${client.escapeLiteral(JSON.stringify(meta))}`);
        await client.query(`ALTER DATABASE "${building}" WITH ALLOW_CONNECTIONS false`);
        await client.query(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
      });
    } catch (error) {
      await admin((client) => client.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`)).catch(() => undefined);
      throw error;
    }
  }
  const meta = JSON.parse(
    await admin(
      async (client) =>
        (await client.query("SELECT shobj_description(oid, 'pg_database') AS c FROM pg_database WHERE datname = $1", [name])).rows[0].c,
    ),
  );
  const copy = await copyPostgresCache(postgresUrl, name);
  return { databaseUrl: copy.url, key: meta.key, meta, cache: name, drop: copy.drop };
}

/** The engine's usage database for this run: a copy of its cache, built first when missing. */
export async function usageDatabase(engine, { postgresUrl, log }) {
  const { rows } = usageDataSettings;
  return engine === "sqlite" ? sqliteDatabase(rows, log) : postgresDatabase(rows, postgresUrl, log);
}
