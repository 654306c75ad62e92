/**
 * The window matrix (bench/README.md, "Time windows"): every width of the time window, alone
 * and with `name`, walked page by page at `limit=100` by one client over HTTP, each page against
 * the page of the same tenant's list without the window (the plain list, or the name alone) that
 * starts where it does, in the same run, for four ways that records reach
 * cribline. Each engine gets a database of its own, built here for the run:
 *
 * - `imported`: every record loaded at once with `cribline import` (so every createdAt is the
 *   import's time), into tables that were never analysed, with autovacuum off for them; the
 *   import's rate over its first and its last 100,000 rows is the bench's bulk-load figure.
 * - `minutes`: every record synced 1 s to 10 min after its event.
 * - `late`: as `minutes`, but about 3 % of the records 1 hour to 5 days after (as the demo).
 * - `offline`: as `minutes`, but one device of twenty back after a month offline: its month
 *   of records all stored when it came back.
 *
 * The last three are written with their createdAt as the demo writes history (the same row
 * values as sync, through dist/), each a tenant of its own, the imported one first.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { once } from "node:events";
import { withdrawals } from "../dist/collections/registry.js";
import { lateDelay, mulberry32, quickDelay } from "../dist/demo/demo.data.js";
import { parseListQuery } from "../dist/lists/list.query.js";
import { sortKey } from "../dist/collections/sort-key.js";
import { CursorCodec } from "../dist/platform/cursor.js";
import Database from "better-sqlite3";
import { postgresUrlFor, withClient, workDatabaseName } from "./dataset.mjs";

const DAY = 86_400_000;
const HOUR = 3_600_000;
const PAGE_LIMIT = 100;
/** The fewest pages of a list that its walks' ratio is taken from (bench/README.md). */
const MIN_WALK_PAGES = 100;

export const windowSettings = {
  rows: integerSetting("BENCH_WINDOW_ROWS", 1_000_000),
  pages: integerSetting("BENCH_WINDOW_PAGES", 200),
  reps: integerSetting("BENCH_WINDOW_REPS", 3),
  firstPages: integerSetting("BENCH_WINDOW_FIRST_PAGES", 45),
};

/** A positive whole number from the environment, or `fallback` when the variable is unset or empty. */
export function integerSetting(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

const SHAPES = ["imported", "minutes", "late", "offline"];

/** The windows, as [name, since, until] of the data's newest event `end`; a width ends 60 days before it. */
function windowsOf(end) {
  const anchor = end - 60 * DAY;
  const iso = (ms) => new Date(ms).toISOString();
  const width = (name, ms) => [name, iso(anchor - ms), iso(anchor)];
  return [
    width("1 hour", HOUR),
    width("1 day", DAY),
    width("7 days", 7 * DAY),
    width("10 days", 10 * DAY),
    width("31 days", 31 * DAY),
    width("300 days", 300 * DAY),
    ["a year", iso(end - 365 * DAY), iso(end)],
    ["since 7 days, no end", iso(end - 7 * DAY), undefined],
    ["since, no end", iso(end - 180 * DAY), undefined],
    ["all history", iso(end - 400 * DAY), iso(end + DAY)],
  ];
}

// ---------------------------------------------------------------------------------------
// The records: the same withdrawals for every shape (ids per tenant), events spread over a
// year before `end`, in event order.

const FIRST = [
  "Ana",
  "Bruno",
  "Carla",
  "Daniel",
  "Elena",
  "Felipe",
  "Gabriela",
  "Hugo",
  "Ines",
  "Jorge",
  "Karin",
  "Luis",
  "Marta",
  "Mario",
  "Nadia",
  "Oscar",
  "Paula",
  "Rafael",
  "Sofia",
  "Tomas",
  "Maria",
  "Marco",
  "Lena",
  "Pedro",
];
const LAST = [
  "Almeida",
  "Braun",
  "Costa",
  "Dias",
  "Engel",
  "Fischer",
  "Gomes",
  "Hahn",
  "Keller",
  "Lopes",
  "Meyer",
  "Nunes",
  "Ortiz",
  "Pereira",
  "Richter",
  "Santos",
  "Silva",
  "Vogel",
  "Weber",
  "Zimmer",
];

/** The records of `rows` withdrawals, each with its event time (ms) and device index. */
export function* withdrawalsOf(rows, end) {
  const r = mulberry32(7);
  const employees = Array.from({ length: 480 }, (_, i) => ({
    id: `emp-${String(i + 1).padStart(4, "0")}`,
    name: `${FIRST[i % FIRST.length]} ${LAST[Math.floor(i / FIRST.length) % LAST.length]}`,
    costCenterId: `cc-${1010 + (i % 12) * 10}`,
    sectorId: `sec-0${1 + (i % 8)}`,
  }));
  const start = end - 365 * DAY;
  const step = (365 * DAY) / rows;
  for (let i = 0; i < rows; i += 1) {
    const e = employees[Math.floor(r() * employees.length)];
    const device = Math.floor(r() * 20);
    const product = Math.floor(r() * 60);
    const at = Math.floor(start + i * step + r() * step);
    yield {
      at,
      device,
      record: {
        id: `w-${String(i + 1).padStart(8, "0")}`,
        deviceId: `dev-${String(device + 1).padStart(2, "0")}`,
        employeeId: e.id,
        employeeName: e.name,
        productId: `prd-${String(product + 1).padStart(4, "0")}`,
        productName: `Product ${product + 1}`,
        quantity: 1 + Math.floor(r() * 3),
        costCenterId: e.costCenterId,
        sectorId: e.sectorId,
        deliveredAt: new Date(at).toISOString(),
      },
    };
  }
}

/** When a shape's record was stored; every shape keeps createdAt at or before `end`. */
function createdAtOf(shape, end, r) {
  const backAt = end - 30 * DAY;
  return ({ at, device }) => {
    if (shape === "offline" && device === 0 && at >= backAt - 31 * DAY && at < backAt) return backAt;
    const late = shape === "late" && r() < 0.03;
    return Math.min(end, at + (late ? lateDelay(r) : quickDelay(r)));
  };
}

// ---------------------------------------------------------------------------------------
// The database.

async function writeNdjson(path, rows, end) {
  const out = createWriteStream(path);
  let chunk = "";
  for (const { record } of withdrawalsOf(rows, end)) {
    chunk += `${JSON.stringify(record)}\n`;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await once(out, "drain");
      chunk = "";
    }
  }
  out.end(chunk);
  await once(out, "finish");
}

/**
 * `cribline import` of the file as the tenant, timed by its progress lines (one per 10,000
 * records): the rate over the first and the last 100,000 rows, records/s.
 */
function importTimed(databaseUrl, tenant, file, env, log) {
  return new Promise((resolvePromise, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ["bin/cribline", "import", "withdrawals", file, "--tenant", tenant], {
      cwd: join(import.meta.dirname, ".."),
      env: { ...process.env, ...env, DATABASE_URL: databaseUrl, CRIBLINE_DEMO: "false" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const marks = [];
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (text) => (output += text));
    child.stderr.setEncoding("utf8").on("data", (text) => {
      for (const line of text.split("\n")) {
        const match = /: (\d+) records imported$/.exec(line);
        if (match !== null) marks.push({ rows: Number(match[1]), at: performance.now() });
        else if (line.trim() !== "") output += `${line}\n`;
      }
    });
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`cribline import failed (${code}): ${output.trim()}`));
      const seconds = (performance.now() - started) / 1000;
      const rateBetween = (from, to) => {
        const a = marks.find((m) => m.rows === from);
        const b = marks.find((m) => m.rows === to);
        return a === undefined || b === undefined ? undefined : (to - from) / ((b.at - a.at) / 1000);
      };
      const last = marks[marks.length - 1]?.rows ?? 0;
      const span = Math.min(100_000, last - 10_000);
      const first = rateBetween(10_000, 10_000 + span);
      const lastRate = rateBetween(last - span, last);
      // Every stretch of the span from the first on: a trend shows in it, where two stretches alone may differ by the machine's noise.
      const stretches = [];
      for (let from = 10_000; span > 0 && from + span <= last; from += span) stretches.push(rateBetween(from, from + span));
      log(`  import: ${last.toLocaleString("en")} records in ${seconds.toFixed(1)} s`);
      resolvePromise({ rows: last, seconds, first, last: lastRate, span, stretches });
    });
  });
}

/** Writes a shape's tenant directly, with the createdAt its shape gives each record, in createdAt order. */
async function writeShape(db, dist, shape, rows, end) {
  const { createTenant } = dist;
  const tenantId = await createTenant(db, shape);
  const r = mulberry32(11);
  const when = createdAtOf(shape, end, r);
  const items = [];
  for (const item of withdrawalsOf(rows, end)) items.push({ record: item.record, createdAt: when(item) });
  items.sort((a, b) => a.createdAt - b.createdAt);
  for (let i = 0; i < items.length; i += 20_000) {
    await db.transaction().execute(async (trx) => {
      for (let j = i; j < Math.min(i + 20_000, items.length); j += 500) {
        const values = items
          .slice(j, j + 500)
          .map(({ record, createdAt }) => dist.newRowValues(dist.toStoredContent(dist.withdrawals, record), tenantId, createdAt));
        await dist.insertRows(trx, dist.withdrawals, values);
      }
    });
  }
  return items.filter(({ record, createdAt }) => Math.abs(createdAt - Date.parse(record.deliveredAt)) > HOUR).length;
}

async function loadDist() {
  const [database, migrate, config, record, registry, sync, tenants] = await Promise.all([
    import("../dist/storage/database.js"),
    import("../dist/storage/migrate.js"),
    import("../dist/platform/config.js"),
    import("../dist/collections/record.js"),
    import("../dist/collections/registry.js"),
    import("../dist/sync/sync.repository.js"),
    import("../dist/tenants/tenant.service.js"),
  ]);
  return {
    openStorage: database.openStorage,
    migrateToLatest: migrate.migrateToLatest,
    parseDatabaseUrl: config.parseDatabaseUrl,
    newRowValues: record.newRowValues,
    toStoredContent: record.toStoredContent,
    withdrawals: registry.withdrawals,
    insertRows: sync.insertRows,
    createTenant: tenants.createTenant,
    issueKey: tenants.issueKey,
  };
}

/**
 * The engine's database for the matrix, made for this run: migrated, the `imported` tenant
 * loaded by `cribline import` first (never analysed before), then the other shapes, then the
 * statistics and visibility a database in service has. Resolves to its URL, the keys, the
 * import's figures and a remove().
 */
async function buildDatabase(engine, postgresUrl, log) {
  const dist = await loadDist();
  const dir = mkdtempSync(join(tmpdir(), "cribline-windows-"));
  const pgName = engine === "postgres" ? workDatabaseName("windows") : undefined;
  const databaseUrl = engine === "sqlite" ? `sqlite:${join(dir, "windows.db")}` : postgresUrlFor(postgresUrl, pgName);
  const admin = async (work) => withClient(postgresUrl, work);
  if (pgName !== undefined) {
    await admin(async (client) => {
      await client.query(`DROP DATABASE IF EXISTS "${pgName}" WITH (FORCE)`);
      await client.query(`CREATE DATABASE "${pgName}"`);
    });
  }
  const remove = async () => {
    rmSync(dir, { recursive: true, force: true });
    if (pgName !== undefined) await admin((client) => client.query(`DROP DATABASE IF EXISTS "${pgName}" WITH (FORCE)`));
  };
  try {
    const end = Date.now() - 5 * 60_000;
    const rows = windowSettings.rows;
    const cursorSecret = randomBytes(32).toString("base64url");
    const storage = await dist.openStorage(dist.parseDatabaseUrl(databaseUrl));
    const keys = {};
    let imported;
    try {
      await dist.migrateToLatest(storage);
      if (engine === "postgres") {
        // The tables stay as a new database's are: never analysed, and no autovacuum to do it meanwhile.
        for (const table of ["withdrawals", "returns", "exchanges", "training_records"]) {
          await withClient(databaseUrl, (client) => client.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`));
        }
      }
      for (const shape of SHAPES) {
        if (shape === "imported") await dist.createTenant(storage.db, shape);
        else {
          const started = performance.now();
          const late = await writeShape(storage.db, dist, shape, rows, end);
          log(
            `  ${shape}: ${rows.toLocaleString("en")} withdrawals written in ${((performance.now() - started) / 1000).toFixed(1)} s, ${late.toLocaleString("en")} stored over an hour from their event`,
          );
        }
        keys[shape] = (await dist.issueKey(storage.db, shape, ["read"])).key;
        if (shape === "imported") {
          const file = join(dir, "imported.ndjson");
          await writeNdjson(file, rows, end);
          imported = await importTimed(databaseUrl, shape, file, { CRIBLINE_CURSOR_SECRET: cursorSecret }, log);
          rmSync(file);
        }
      }
    } finally {
      await storage.close();
    }
    if (engine === "postgres") await withClient(databaseUrl, (client) => client.query("VACUUM (ANALYZE)"));
    const sizes = await windowStorage(engine, databaseUrl);
    return { databaseUrl, cursorSecret, keys, imported, end, remove, storage: sizes };
  } catch (error) {
    await remove();
    throw error;
  }
}

/** The indexes that only the time window reads (src/lists/window/): the late rows' by bucket, and every row's by event week. */
const WINDOW_INDEXES = ["withdrawals_late_b1", "withdrawals_late_b2", "withdrawals_late_b3", "withdrawals_event_week_name"];

/**
 * The withdrawals table's bytes, with its indexes, and the window's indexes' bytes: on PostgreSQL
 * after VACUUM, the relations' sizes; on SQLite, the pages `dbstat` counts for each B-tree.
 */
async function windowStorage(engine, databaseUrl) {
  if (engine === "postgres") {
    return withClient(databaseUrl, async (client) => {
      const { rows } = await client.query(
        `select coalesce(sum(pg_relation_size(indexrelid)) filter (where indexrelid::regclass::text = any($1)), 0)::float8 as window,
                (pg_table_size('withdrawals') + sum(pg_relation_size(indexrelid)))::float8 as total
           from pg_index where indrelid = 'withdrawals'::regclass`,
        [WINDOW_INDEXES],
      );
      return { window: rows[0].window, total: rows[0].total };
    });
  }
  const db = new Database(databaseUrl.slice("sqlite:".length), { readonly: true });
  try {
    const sizes = db
      .prepare(
        "select name, sum(pgsize) as bytes from dbstat where name = 'withdrawals' or name in (select name from sqlite_master where tbl_name = 'withdrawals') group by name",
      )
      .all();
    return {
      window: sizes.filter((r) => WINDOW_INDEXES.includes(r.name)).reduce((n, r) => n + r.bytes, 0),
      total: sizes.reduce((n, r) => n + r.bytes, 0),
    };
  } finally {
    db.close();
  }
}

// ---------------------------------------------------------------------------------------
// The walks.

/** A walk of `path`, one page at a time: the ms of each page, the rows, and whether it has ended. */
function pager(baseUrl, key, path, cursor = null) {
  const headers = { authorization: `Bearer ${key}` };
  const state = { times: [], rows: 0, ended: false, cursor };
  const seen = new Set();
  state.next = async () => {
    const url = `${baseUrl}${path}${state.cursor === null ? "" : `&cursor=${encodeURIComponent(state.cursor)}`}`;
    const started = performance.now();
    const response = await fetch(url, { headers });
    const text = await response.text();
    state.times.push(performance.now() - started);
    if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${text.slice(0, 300)}`);
    const body = JSON.parse(text);
    for (const item of body.data) {
      if (seen.has(item.id)) throw new Error(`GET ${path}: ${item.id} came twice`);
      seen.add(item.id);
    }
    state.rows += body.data.length;
    state.cursor = body.cursor;
    state.ended = body.cursor === null;
  };
  return state;
}

const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/**
 * A pair whose page, either one, took more than this many times the walk's median page is left
 * out of its ratio: a GC pause or a moment of the machine's (10 to 45 ms against about 2) lands
 * on either list at random, and one more on a side moved a walk of 58 pages by up to 0.2.
 */
const HICCUP = 4;

/**
 * Walks `path` up to `pages` pages, each page paired with a page of `reference`, so that both
 * see the same moments of a noisy machine, the two taking turns to go first: the second of two
 * requests to different lists measured 2 to 4 % slower than it did first (bench/README.md).
 * The reference's page is the next of a walk of its own, or, given `placed` (the walk's cursor
 * to the reference's), the one that starts where the walk's next page does. The ms per page
 * of each over the pairs kept (HICCUP), the pairs left out, the slowest page, pages, rows.
 */
async function pairedWalk(baseUrl, key, path, reference, pages, placed) {
  const walk = pager(baseUrl, key, path);
  let other = pager(baseUrl, key, reference);
  const referenceTimes = [];
  while (walk.times.length < pages && !walk.ended) {
    if (placed !== undefined) other = pager(baseUrl, key, reference, placed(walk.cursor));
    else if (other.ended) other = pager(baseUrl, key, reference);
    const walkFirst = walk.times.length % 2 === 1;
    if (walkFirst) await walk.next();
    await other.next();
    referenceTimes.push(other.times[other.times.length - 1]);
    if (!walkFirst) await walk.next();
  }
  const bound = HICCUP * median([...walk.times, ...referenceTimes]);
  const kept = walk.times.flatMap((ms, i) => (ms <= bound && referenceTimes[i] <= bound ? [i] : []));
  return {
    perPage: mean(kept.map((i) => walk.times[i])),
    reference: mean(kept.map((i) => referenceTimes[i])),
    leftOut: walk.times.length - kept.length,
    slowest: Math.max(...walk.times),
    pages: walk.times.length,
    rows: walk.rows,
  };
}

/**
 * The cursor of the page of `reference` that starts where a walk of `path` will go on from a
 * cursor of its own: its position, in a cursor of the reference's list made with the server's
 * codec and secret. Both pages then read the same part of the table, which neither finds in the
 * cache more often than the other: a walk of the reference's own reads the newest rows, which
 * every cell's reference keeps in the cache, or in name order trails the window's walk through
 * the rows it brought in (bench/README.md).
 */
function placedBy(cursorSecret, path, reference) {
  const codec = new CursorCodec(cursorSecret);
  const filtersOf = (list) => parseListQuery(withdrawals, list.slice(list.indexOf("?") + 1)).filterKey;
  const [from, to] = [filtersOf(path), filtersOf(reference)];
  return (cursor) => {
    if (cursor === null) return null;
    const opened = codec.decode(cursor, withdrawals.name, from);
    if (!opened.ok) throw new Error(`a cursor of ${path} did not open: ${opened.reason}`);
    return codec.encode(opened.tenantId, withdrawals.name, to, opened.position);
  };
}

/**
 * The cursor of the page of `reference` that starts where the first page of `path` does, at its
 * first row: just above its createdAt in createdAt order (as a page reads no row above a
 * position), at its name's sort key in name order; null when the first page holds no row.
 */
async function placedFirst(baseUrl, key, cursorSecret, path, reference) {
  const response = await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const body = await response.json();
  const first = body.data?.[0];
  if (response.status !== 200 || first === undefined || body.cursor === null) return null;
  const codec = new CursorCodec(cursorSecret);
  const filtersOf = (list) => parseListQuery(withdrawals, list.slice(list.indexOf("?") + 1));
  const opened = codec.decode(body.cursor, withdrawals.name, filtersOf(path).filterKey);
  if (!opened.ok) throw new Error(`a cursor of ${path} did not open: ${opened.reason}`);
  const to = filtersOf(reference);
  const position = to.name === undefined ? { key: Date.parse(first.createdAt) + 1, id: "" } : { key: sortKey(first.employeeName), id: "" };
  return codec.encode(opened.tenantId, withdrawals.name, to.filterKey, position);
}

/** ms of one request for the first page of `path`, or for its page after `cursor`. */
async function firstPage(baseUrl, key, path, cursor = null) {
  const walk = pager(baseUrl, key, path, cursor);
  await walk.next();
  return walk.times[0];
}

/** The most common two-letter prefix of the employees' names in the records. */
function namePrefix(end) {
  const counts = new Map();
  for (const { record } of withdrawalsOf(Math.min(windowSettings.rows, 50_000), end)) {
    const prefix = record.employeeName.slice(0, 2).toLowerCase();
    counts.set(prefix, (counts.get(prefix) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1])[0][0];
}

/**
 * The matrix on one engine. `startServer(databaseUrl, cursorSecret, tenant)` starts
 * bench/server.mjs. Resolves to the rows of its table and the import's figures.
 */
export async function runWindowMatrix(engine, { postgresUrl, startServer, log }) {
  log(
    `\n[time windows, ${engine}] ${windowSettings.rows.toLocaleString("en")} withdrawals per shape, walks of up to ${windowSettings.pages} pages at limit=${PAGE_LIMIT}, ${windowSettings.reps} of each`,
  );
  const started = performance.now();
  const database = await buildDatabase(engine, postgresUrl, log);
  try {
    log(`  database built in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    const server = await startServer(database.databaseUrl, database.cursorSecret, "late");
    try {
      const prefix = namePrefix(database.end);
      const q = encodeURIComponent;
      const plainPath = `/v1/withdrawals?limit=${PAGE_LIMIT}`;
      const namePath = `/v1/withdrawals?limit=${PAGE_LIMIT}&name=${q(prefix)}`;
      // A window with `name` is judged against the name alone: what the window adds to a list
      // in name order, whose own rows cost more to fetch than the plain list's.
      const cells = [];
      for (const [name, since, until] of windowsOf(database.end)) {
        const window = `&createdSince=${q(since)}${until === undefined ? "" : `&createdUntil=${q(until)}`}`;
        cells.push({ what: name, path: `${plainPath}${window}`, against: "plain" });
        cells.push({ what: `${name} + name`, path: `${namePath}${window}`, against: "name" });
      }
      cells.push({ what: `name "${prefix}" alone`, path: namePath, against: "plain" });
      const referencePath = (cell) => (cell.against === "name" ? namePath : plainPath);
      // The name alone is in another order than its reference's: it pairs with a walk of its own.
      const placers = cells.map((cell) =>
        cell.path === namePath ? undefined : placedBy(database.cursorSecret, cell.path, referencePath(cell)),
      );
      const rows = [];
      for (const shape of SHAPES) {
        const key = database.keys[shape];
        // Unmeasured: each query shape's first use compiles its template (and on PostgreSQL
        // prepares its statement), and the tenant's pages come into the cache.
        await pairedWalk(server.url, key, plainPath, plainPath, windowSettings.pages);
        for (const cell of cells) await pairedWalk(server.url, key, cell.path, referencePath(cell), 3);
        const results = cells.map(() => []);
        const walk = (i) => pairedWalk(server.url, key, cells[i].path, referencePath(cells[i]), windowSettings.pages, placers[i]);
        for (let rep = 0; rep < windowSettings.reps; rep += 1) {
          for (let i = 0; i < cells.length; i += 1) results[i].push(await walk(i));
        }
        // A walk of a page or two is a ratio of a request or two, which one hiccup doubles: a short
        // walk runs again until its list has MIN_WALK_PAGES pages measured.
        for (let i = 0; i < cells.length; i += 1) {
          while (results[i].reduce((pages, w) => pages + w.pages, 0) < MIN_WALK_PAGES) results[i].push(await walk(i));
        }
        const plain = results.flatMap((walks, i) => (cells[i].against === "plain" ? walks : []));
        // A first page is one request, which a collection or a scheduler's hiccup can double:
        // each list's is the median of many, each paired with one of its reference's, the three
        // taking turns to go first (pairedWalk). Its reference's page is placed as a walk's pages
        // are: the one that starts where the window's first page does (placedFirst). The
        // reference's own first page is timed beside them, and shown.
        const placedCursors = [];
        for (const [i, cell] of cells.entries())
          placedCursors.push(
            placers[i] === undefined ? null : await placedFirst(server.url, key, database.cursorSecret, cell.path, referencePath(cell)),
          );
        const plainFirst = [];
        const firsts = cells.map(() => []);
        const referenceFirsts = cells.map(() => []);
        const ownFirsts = cells.map(() => []);
        for (let rep = 0; rep < windowSettings.firstPages; rep += 1) {
          for (let i = 0; i < cells.length; i += 1) {
            const requests = [
              async () => firsts[i].push(await firstPage(server.url, key, cells[i].path)),
              async () => referenceFirsts[i].push(await firstPage(server.url, key, referencePath(cells[i]), placedCursors[i])),
              async () => {
                const own = await firstPage(server.url, key, referencePath(cells[i]));
                ownFirsts[i].push(own);
                if (cells[i].against === "plain") plainFirst.push(own);
              },
            ];
            for (let k = 0; k < requests.length; k += 1) await requests[(rep + k) % requests.length]();
          }
        }
        const reference = median(plain.map((w) => w.reference));
        const referenceFirst = median(plainFirst);
        log(`  ${shape}: the plain list ${reference.toFixed(2)} ms a page (first page ${referenceFirst.toFixed(2)} ms)`);
        rows.push({
          shape,
          what: "the plain list",
          against: "-",
          perPage: reference,
          ratio: 1,
          first: referenceFirst,
          firstRatio: 1,
          ownFirstRatio: 1,
          slowest: undefined,
          pages: undefined,
          rows: undefined,
        });
        cells.forEach((cell, i) => {
          const perPage = median(results[i].map((w) => w.perPage));
          const first = median(firsts[i]);
          const slowest = median(results[i].map((w) => w.slowest));
          rows.push({
            shape,
            what: cell.what,
            against: cell.against,
            perPage,
            ratio: median(results[i].map((w) => w.perPage / w.reference)),
            first,
            // Each request against the reference's paired with it, as the walks' pages are: a
            // moment of the machine's that slows both cancels out, where medians taken apart kept it.
            firstRatio: median(firsts[i].map((ms, k) => ms / referenceFirsts[i][k])),
            ownFirstRatio: median(firsts[i].map((ms, k) => ms / ownFirsts[i][k])),
            slowest,
            leftOut: `${results[i].reduce((n, w) => n + w.leftOut, 0)} of ${results[i].reduce((n, w) => n + w.pages, 0)}`,
            pages: results[i][0].pages,
            rows: results[i][0].rows,
          });
        });
      }
      return { rows, imported: database.imported, storage: database.storage };
    } finally {
      await server.stop();
    }
  } finally {
    await database.remove();
  }
}

/**
 * The targets (bench/README.md): a window's walk at least 0.75 of its reference's pages a second
 * (at most 1 / 0.75 of its time a page), its first page at most 2 x its reference's, and a window
 * in name order at most 2 x the name alone; the window's indexes at most 1.2 x the table and its
 * other indexes.
 */
const TARGETS = { walk: 1 / 0.75, first: 2, byName: 2, storage: 1.2 };

/** The matrix as lines of a table, the storage's line, and the cells over their targets. */
export function windowReport(engine, { rows, imported, storage }) {
  const missed = [];
  const lines = rows.map((r) => {
    const byName = r.against === "name";
    if (r.what !== "the plain list" && !r.what.startsWith("name ")) {
      if (r.ratio > (byName ? TARGETS.byName : TARGETS.walk)) missed.push(`${engine} ${r.shape}: ${r.what} walk ${r.ratio.toFixed(2)}x`);
      if (r.firstRatio > (byName ? TARGETS.byName : TARGETS.first))
        missed.push(`${engine} ${r.shape}: ${r.what} first page ${r.firstRatio.toFixed(2)}x`);
    }
    return [
      r.shape,
      r.what,
      r.rows?.toLocaleString("en") ?? "-",
      r.pages === undefined ? "-" : String(r.pages),
      r.perPage.toFixed(2),
      r.against,
      `${r.ratio.toFixed(2)}x`,
      `${r.firstRatio.toFixed(2)}x`,
      `${r.ownFirstRatio.toFixed(2)}x`,
      r.slowest?.toFixed(1) ?? "-",
      r.leftOut ?? "-",
    ];
  });
  const importLine =
    imported === undefined
      ? undefined
      : imported.first === undefined || imported.last === undefined
        ? `import (${engine}): ${imported.rows.toLocaleString("en")} records in ${imported.seconds.toFixed(1)} s (too few to time its first and last rows)`
        : `import (${engine}): ${imported.rows.toLocaleString("en")} records in ${imported.seconds.toFixed(1)} s; ` +
          `${Math.round(imported.first).toLocaleString("en")} records/s over the first ${imported.span.toLocaleString("en")} rows, ` +
          `${Math.round(imported.last).toLocaleString("en")} over the last: a ratio of ${(imported.last / imported.first).toFixed(2)}` +
          (engine === "postgres" ? " (target > 0.8)" : " (no target: SQLite's B-trees outgrow its page cache)") +
          (imported.stretches.length > 2
            ? `; records/s over each ${imported.span.toLocaleString("en")} from the first: ${imported.stretches.map((rate) => Math.round(rate).toLocaleString("en")).join(", ")}`
            : "");
  const others = storage.total - storage.window;
  const storageLine =
    `storage (${engine}): withdrawals and its other indexes ${(others / 1e6).toFixed(1)} MB, the window's indexes ${(storage.window / 1e6).toFixed(1)} MB: ` +
    `${(storage.total / others).toFixed(3)} x (target at most ${TARGETS.storage})`;
  if (storage.total / others > TARGETS.storage) missed.push(`${engine} storage: ${(storage.total / others).toFixed(3)}x`);
  // The target is that a load stays linear whatever PostgreSQL's statistics say; SQLite has none
  // to wait for, and slows as its indexes outgrow the page cache (docs/measurements.md).
  if (engine === "postgres" && imported?.first !== undefined && imported.last !== undefined && imported.last / imported.first <= 0.8)
    missed.push(`${engine} import: last/first ${(imported.last / imported.first).toFixed(2)}`);
  return {
    header: [
      "shape",
      "walk",
      "rows",
      "pages",
      "ms/page",
      "against",
      "walk ratio",
      "first page ratio",
      "against its own first page",
      "slowest ms",
      "pairs left out",
    ],
    lines,
    importLine,
    storageLine,
    missed,
  };
}
