/**
 * `npm run bench`: loads cribline with autocannon over loopback and prints one table, a
 * column per configuration: SQLite, PostgreSQL in one process, PostgreSQL with --workers 2.
 *
 *   1. dataset.mjs builds (once) and caches a database per engine with ~1,000,000 withdrawals;
 *   2. each configuration works on a fresh copy of its engine's cache and looks up the
 *      scenarios' parameters in that copy;
 *   3. it starts its server in a child process (so autocannon, here, does not share the
 *      server's event loop): bench/server.mjs, or the real `cribline serve --workers 2`; runs
 *      every scenario with the same connections and duration (the page scenarios in turn,
 *      round after round), then the sync scenarios, the webhook scenarios among them
 *      (webhooks.mjs: endpoints on loopback receivers in another child, bench/receiver.mjs,
 *      made for them and deleted after), in alternating rounds, reads the server's peak RSS,
 *      and stops it.
 * Configurations run one after another, never together.
 *
 * Settings (environment): BENCH_DURATION seconds per page scenario (12), BENCH_ROUNDS (4)
 * that the page scenarios and the sync scenarios are split into, BENCH_WARMUP
 * seconds of unmeasured load before each page scenario's first round (2), BENCH_CONNECTIONS
 * (10), BENCH_SYNC_BATCHES per sync scenario (40), BENCH_WEBHOOK_EVENTS single-record syncs whose webhook delay is
 * measured (200), BENCH_CPU_PROF=<dir> to write V8 CPU profiles of the servers,
 * BENCH_ENGINE (all, sqlite or postgres), BENCH_POSTGRES_URL (the server to use), BENCH_OPERATIONS
 * (on, off, only: metrics on against off and a backup, on SQLite), BENCH_SYNC_BASE=<revision> to
 * add sync against that revision's build on each engine (bench/sync-base.mjs), BENCH_EVENTS (on, off, only:
 * the events list and the pruning of expired events on each engine; bench/events.mjs, which runs it
 * alone), BENCH_USAGE (on, off, only: usage reports' first pages against the withdrawals list's
 * on each engine; bench/usage.mjs, which runs it alone), BENCH_MEMORY (on, off: the server's
 * memory under hostile load on each engine, last; bench/memory.mjs, which runs it alone).
 * Exits 0 even when a target is missed: this is a report; it says which missed. It exits 1
 * only when a configuration could not be measured at all.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { openSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import autocannon from "autocannon";
import { CursorCodec } from "../dist/platform/cursor.js";
import {
  BENCH_TENANT,
  DEFAULT_POSTGRES_URL,
  copyPostgresCache,
  copySqliteCache,
  describeUrl,
  ensurePostgresCache,
  ensureSqliteCache,
  postgresLookups,
  postgresServerInfo,
  settleDisk,
  serverEnv,
  sqliteLookups,
  syncBodies,
} from "./dataset.mjs";
import { WEBHOOK_EVENT, collectArrivals, measureDelay, startReceivers, withEndpoints } from "./webhooks.mjs";
import { runWindowMatrix, windowReport, windowSettings } from "./windows.mjs";
import { syncAgainstBase } from "./sync-base.mjs";
import { runEventsBench } from "./events.mjs";
import { runUsageBench } from "./usage.mjs";
import { runMemoryBench } from "./memory.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..");
const settings = {
  duration: positive("BENCH_DURATION", 12),
  /**
   * Each page scenario is loaded once per round (a share of the duration), the scenarios in
   * turn, and so are sync with and without endpoints: a ratio compares figures taken side by
   * side, not minutes apart on a machine whose speed drifts (the fixed page alone measured
   * 8,154 and 12,390 req/s in two runs five minutes apart).
   */
  rounds: positive("BENCH_ROUNDS", 4),
  warmup: positive("BENCH_WARMUP", 2, true),
  connections: positive("BENCH_CONNECTIONS", 10),
  syncBatches: positive("BENCH_SYNC_BATCHES", 40),
  syncBatchSize: 1000,
  /** Endpoints subscribed during "sync, N webhook endpoints", each its own loopback receiver. */
  webhookEndpoints: 3,
  webhookEvents: positive("BENCH_WEBHOOK_EVENTS", 200),
  /** Single-record syncs per second in the delay scenario: a steady, modest rate. */
  webhookRate: 20,
  /** How long after the last acknowledgement an event may still arrive (a first retry is due 5 s after a failure). */
  webhookWaitMs: 10_000,
  cpuProfDir: process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined,
  engines: engines(process.env.BENCH_ENGINE),
  /** The time-window matrix (bench/windows.mjs) after the configurations: on, off, or only it. */
  windows: choice("BENCH_WINDOWS", ["on", "off", "only"]),
  /** The operations section on SQLite (metrics on against off, a backup of the dataset): on, off, or only it. */
  operations: choice("BENCH_OPERATIONS", ["on", "off", "only"]),
  /** The events section (bench/events.mjs) after the operations: on, off, or only it. */
  events: choice("BENCH_EVENTS", ["on", "off", "only"]),
  /** The usage reports section (bench/usage.mjs) after the events: on, off, or only it. */
  usage: choice("BENCH_USAGE", ["on", "off", "only"]),
  postgresUrl: process.env.BENCH_POSTGRES_URL || DEFAULT_POSTGRES_URL,
  /** A revision whose sync throughput this build's is compared with (bench/sync-base.mjs); unset: none. */
  syncBase: process.env.BENCH_SYNC_BASE || undefined,
  /** The servers' peak memory under a mixed hostile load (bench/memory.mjs), after everything else. */
  memory: choice("BENCH_MEMORY", ["on", "off"]),
};

/**
 * The targets per engine (bench/README.md); PostgreSQL has no memory target. Webhooks: the
 * outbox costs sync at most 25 %, and an event reaches its receiver within a second (median).
 */
const WEBHOOK_TARGETS = { hooksVsSync: 0.75, webhookDelayMs: 1000 };
const TARGETS = {
  sqlite: { firstVsFixed: 0.3, filteredVsFirst: 0.8, syncRecordsPerSecond: 20_000, peakRssBytes: 200e6, ...WEBHOOK_TARGETS },
  postgres: { firstVsFixed: 0.25, filteredVsFirst: 0.8, syncRecordsPerSecond: 10_000, peakRssBytes: undefined, ...WEBHOOK_TARGETS },
};

/** The worker processes of the cluster configuration: one per core of this 2-core machine. */
const PG_WORKERS = 2;

/**
 * The table's columns, run in this order. The cluster has no fixed-page route (it is the
 * real `cribline serve`), so its first page is compared with the fixed page of the same
 * engine's single process (`fixedFrom`): the ceiling of one process.
 */
const CONFIGURATIONS = [
  { id: "sqlite", engine: "sqlite", title: "SQLite", server: "bench" },
  { id: "pg1", engine: "postgres", title: "PostgreSQL, 1 process", server: "bench" },
  { id: "pg2", engine: "postgres", title: `PostgreSQL, --workers ${PG_WORKERS}`, server: "cluster", fixedFrom: "pg1" },
];

if (!Number.isInteger(settings.syncBatches / settings.rounds)) {
  throw new Error(`BENCH_SYNC_BATCHES (${settings.syncBatches}) must be a multiple of BENCH_ROUNDS (${settings.rounds})`);
}

function positive(name, fallback, zeroOk = false) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !zeroOk)) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

function choice(name, values) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return values[0];
  if (!values.includes(raw)) throw new Error(`${name} must be one of ${values.join(", ")}, got "${raw}"`);
  return raw;
}

function engines(raw = "all") {
  if (raw === "" || raw === "all") return ["sqlite", "postgres"];
  if (raw === "sqlite" || raw === "postgres") return [raw];
  throw new Error(`BENCH_ENGINE must be all, sqlite or postgres, got "${raw}"`);
}

const log = (line) => process.stdout.write(`${line}\n`);

// ---------------------------------------------------------------------------------------
// Engines. Each readies its cache once and makes a fresh copy of it per configuration; a
// copy says how the server reaches it (`databaseUrl`) and answers the scenarios' lookups.

const ENGINES = {
  async sqlite() {
    const cache = await ensureSqliteCache(log);
    return {
      title: "SQLite",
      key: cache.key,
      cacheNote: cacheNote("SQLite", cache, `.bench-cache/${cache.path.split("/").pop()}`),
      async copy() {
        const copy = copySqliteCache(cache.path);
        return {
          databaseUrl: `sqlite:${copy.path}`,
          sizeBytes: statSync(copy.path).size,
          lookups: () => sqliteLookups(copy.path),
          settle: () => settleDisk(),
          remove: async () => copy.remove(),
        };
      },
    };
  },

  async postgres() {
    const base = settings.postgresUrl;
    let server;
    try {
      server = await postgresServerInfo(base);
    } catch (error) {
      return {
        skipped: `PostgreSQL at ${describeUrl(base)} is unreachable (${error.message || error.code}): the PostgreSQL columns are skipped`,
      };
    }
    const serverNote =
      `PostgreSQL ${server.server_version} at ${describeUrl(base)}: shared_buffers ${server.shared_buffers}, work_mem ${server.work_mem}, ` +
      `effective_cache_size ${server.effective_cache_size}, synchronous_commit ${server.synchronous_commit}, jit ${server.jit}, ` +
      `max_connections ${server.max_connections}; the server's pool is cribline's default (DATABASE_POOL_SIZE, 10 per process)`;
    log(`postgres: ${serverNote}`);
    const cache = await ensurePostgresCache(base, log);
    return {
      title: "PostgreSQL",
      key: cache.key,
      serverNote,
      cacheNote: cacheNote("PostgreSQL", cache, `database ${cache.name}`),
      async copy() {
        const copy = await copyPostgresCache(base, cache.name);
        return {
          databaseUrl: copy.url,
          sizeBytes: copy.sizeBytes,
          lookups: () => postgresLookups(copy.url),
          settle: () => settleDisk(base),
          remove: copy.drop,
        };
      },
    };
  },
};

function cacheNote(title, cache, where) {
  return cache.built
    ? `The ${title} dataset cache (${where}) was built during this run in ${cache.meta.buildSeconds} s.`
    : `The ${title} dataset came from the cache (${where}, built once in ${cache.meta.buildSeconds} s).`;
}

// ---------------------------------------------------------------------------------------
// The server children.

const profArgs = () => (settings.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${settings.cpuProfDir}`] : []);

/** bench/server.mjs: one process, with the fixed-page route. */
async function startBenchServer(databaseUrl, cursorSecret, tenant, extraEnv = {}) {
  const child = await startChild([...profArgs(), join(HERE, "server.mjs")], {
    ...serverEnv(databaseUrl, cursorSecret, tenant),
    ...extraEnv,
  });
  return {
    ...child,
    fixedPage: true,
    describe: `bench/server.mjs (pid ${child.pid})`,
    peakRss: () => ({ bytes: peakRss(child.pid), detail: "", failures: [] }),
  };
}

/**
 * The real `cribline serve --workers N`: a cluster whose primary only forks and watches.
 * bench/cluster-ready.mjs, preloaded, says when every worker listens.
 */
async function startCluster(databaseUrl, cursorSecret, workers) {
  const args = [
    ...profArgs(),
    "--import",
    pathToFileURL(join(HERE, "cluster-ready.mjs")).href,
    "bin/cribline",
    "serve",
    "--workers",
    String(workers),
  ];
  const child = await startChild(args, { ...serverEnv(databaseUrl, cursorSecret), BENCH_WORKERS: String(workers) });
  const started = new Set(child.report.workers);
  return {
    ...child,
    fixedPage: false,
    describe: `cribline serve --workers ${workers} (primary ${child.pid}, workers ${child.report.workers.join(", ")})`,
    /** The workers' VmHWM, summed: what the cluster costs beside its primary, which only forks. */
    peakRss() {
      const pids = childPids(child.pid);
      const each = pids.map((pid) => peakRss(pid));
      const failures = [];
      if (pids.length !== workers || pids.some((pid) => !started.has(pid))) failures.push("a worker was replaced during the run");
      return {
        bytes: each.reduce((a, b) => a + b, 0),
        detail: `sum of ${pids.length} workers: ${each.map(mb).join(" + ")}; primary ${mb(peakRss(child.pid))}`,
        failures,
      };
    },
  };
}

/**
 * Starts `node <args>` in the repository with stdout (the request log) on /dev/null and
 * stderr shown; resolves once the child reports its address on fd 3 as one JSON line, with
 * its url, pid, that report and a stop().
 */
function startChild(args, env) {
  const devNull = openSync("/dev/null", "w");
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ["ignore", devNull, "inherit", "pipe"] });
  const exited = new Promise((done) => child.once("exit", (code, signal) => done({ code, signal })));
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error("the bench server did not start within 60 s"));
    }, 60_000);
    let buffered = "";
    child.stdio[3].setEncoding("utf8").on("data", (chunk) => {
      buffered += chunk;
      const newline = buffered.indexOf("\n");
      if (newline === -1) return;
      clearTimeout(timer);
      const report = JSON.parse(buffered.slice(0, newline));
      resolvePromise({
        url: report.url,
        pid: child.pid,
        report,
        async stop() {
          // Any children (the cluster's workers) are known before the primary goes.
          const children = childPids(child.pid);
          child.kill("SIGTERM");
          const stopped = await Promise.race([exited, sleep(20_000).then(() => undefined)]);
          if (stopped !== undefined) return stopped;
          process.stderr.write(`bench: server ${child.pid} did not stop within 20 s after SIGTERM; killing it\n`);
          for (const pid of [child.pid, ...children]) killQuietly(pid);
          return exited;
        },
      });
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the bench server exited before listening (${code ?? signal})`));
    });
  });
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

function killQuietly(pid) {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** Peak resident set size of a process (VmHWM), in bytes. */
function peakRss(pid) {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match === null ? NaN : Number(match[1]) * 1024;
}

/** The pids of a process's children, from /proc: the cluster's workers are the primary's. */
function childPids(parent) {
  const children = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ")".
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (ppid === parent) children.push(Number(entry));
  }
  return children.sort((a, b) => a - b);
}

// ---------------------------------------------------------------------------------------
// Scenarios. A runner needs only a base URL and a key, whatever the engine behind them.

/** One plain request, to check a scenario before loading it: 200 and a full page. */
async function checkPage(target, path) {
  const response = await fetch(target.baseUrl + path, { headers: { authorization: `Bearer ${target.key}` } });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${text.slice(0, 300)}`);
  const page = JSON.parse(text);
  if (!Array.isArray(page.data) || page.data.length !== 20) throw new Error(`GET ${path}: ${page.data?.length} items, expected 20`);
  return page;
}

function cannon(options, onResponse) {
  return new Promise((resolvePromise, reject) => {
    const instance = autocannon(options, (error, result) => (error ? reject(error) : resolvePromise(result)));
    if (onResponse !== undefined) instance.on("response", onResponse);
  });
}

/** Loads GET `path` for `seconds` (after `warmup` seconds unmeasured) with every connection. */
async function loadPage(target, path, { seconds, warmup }) {
  const options = {
    url: target.baseUrl + path,
    connections: settings.connections,
    headers: { authorization: `Bearer ${target.key}` },
  };
  if (warmup > 0) await cannon({ ...options, duration: warmup });
  const started = performance.now();
  const result = await cannon({ ...options, duration: seconds });
  return summarise(result, (performance.now() - started) / 1000);
}

/**
 * One scenario's rounds as one figure: the requests (and records) of every round over their
 * time together; latency, the median of the rounds' p50 and the worst p99.
 */
function combineRounds(rounds) {
  const sum = (key) => rounds.reduce((total, r) => total + (r[key] ?? 0), 0);
  const seconds = sum("seconds");
  const p50s = rounds.map((r) => r.p50).sort((a, b) => a - b);
  const combined = {
    requests: sum("requests"),
    requestsPerSecond: sum("requests") / seconds,
    seconds,
    p50: p50s[Math.floor((p50s.length - 1) / 2)],
    p99: Math.max(...rounds.map((r) => r.p99)),
    failures: rounds.flatMap((r, i) => r.failures.map((f) => `round ${i + 1}: ${f}`)),
    rounds: rounds.map((r) => r.recordsPerSecond ?? r.requestsPerSecond),
  };
  if (rounds.every((r) => r.recordsPerSecond !== undefined))
    combined.recordsPerSecond = (sum("requests") * settings.syncBatchSize) / seconds;
  return combined;
}

const perRound = (figures) => figures.map((f) => Math.round(f).toLocaleString("en")).join(" / ");

/** Sends `amount` sync batches over `connections` connections; records/s. */
async function loadSync(target, collection, bodies, connections, amount) {
  // autocannon prepares each connection's next request ahead, so it may take a body it never sends.
  if (bodies.length < amount + 2 * connections) throw new Error("not enough sync bodies");
  let next = 0;
  // With `amount`, autocannon ends only at its next 1-second sample tick: time the batches by
  // their last response instead, or a 4.1 s run would count as 5 s.
  let lastResponse = 0;
  const started = performance.now();
  const result = await cannon(
    {
      url: `${target.baseUrl}/v1/sync/${collection}`,
      method: "POST",
      connections,
      amount,
      timeout: 60,
      headers: { authorization: `Bearer ${target.key}`, "content-type": "application/json" },
      requests: [{ setupRequest: (request) => ({ ...request, body: bodies[next++] }) }],
    },
    () => (lastResponse = performance.now()),
  );
  const seconds = ((lastResponse || performance.now()) - started) / 1000;
  const summary = summarise(result, seconds);
  summary.recordsPerSecond = (result["2xx"] * settings.syncBatchSize) / seconds;
  if (result["2xx"] !== amount) summary.failures.push(`${result["2xx"]} of ${amount} batches accepted`);
  return summary;
}

function summarise(result, seconds) {
  const failures = [];
  if (result.non2xx > 0) failures.push(`${result.non2xx} non-2xx (${JSON.stringify(result.statusCodeStats)})`);
  if (result.errors > 0) failures.push(`${result.errors} errors`);
  if (result.timeouts > 0) failures.push(`${result.timeouts} timeouts`);
  if (result["2xx"] === 0) failures.push("no 2xx response");
  return {
    requests: result["2xx"],
    requestsPerSecond: result["2xx"] / seconds,
    seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures,
  };
}

/** The rows of the table, in order; `kind` says how a cell is judged. */
const ROWS = [
  { id: "fixed", name: "fixed page (ceiling)", kind: "reference" },
  { id: "first", name: "first page", kind: "ratio", reference: "fixed", min: "firstVsFixed" },
  { id: "deep", name: "deep page (offset 500,000)", kind: "ratio", reference: "first", min: "filteredVsFirst" },
  { id: "window", name: "time window (1 day)", kind: "ratio", reference: "first", min: "filteredVsFirst" },
  { id: "name", name: "name prefix", kind: "ratio", reference: "first", min: "filteredVsFirst" },
  { id: "employee", name: "employeeId", kind: "ratio", reference: "first", min: "filteredVsFirst" },
  { id: "sync1", name: "sync, 1 sender (1,000/batch)", kind: "sync", connections: 1 },
  { id: "sync2", name: "sync, 2 senders (1,000/batch)", kind: "sync", connections: 2 },
  // The worst case of sync1: every record synced late enters the late-record indexes too.
  { id: "syncLate", name: "sync, 1 sender, every record late", kind: "sync", connections: 1, noTarget: true },
  { id: "delay", name: "webhook delay (sync 200 → receiver)", kind: "delay" },
  {
    id: "syncHooks",
    name: `sync, ${settings.webhookEndpoints} webhook endpoints (1,000/batch)`,
    kind: "syncRatio",
    connections: 1,
    reference: "sync1",
    referenceName: "sync, 1 sender",
    min: "hooksVsSync",
  },
  { id: "rss", name: "server peak RSS (VmHWM)", kind: "rss" },
];

/** The page scenarios' requests, from the parameters looked up in the configuration's copy. */
function pageRequests(data, deepCursor) {
  const q = encodeURIComponent;
  return {
    fixed: "/bench/fixed-page",
    first: "/v1/withdrawals?limit=20",
    deep: `/v1/withdrawals?limit=20&cursor=${q(deepCursor)}`,
    window: `/v1/withdrawals?limit=20&createdSince=${q(data.window.since)}&createdUntil=${q(data.window.until)}`,
    name: `/v1/withdrawals?limit=20&name=${q(data.name.prefix)}`,
    employee: `/v1/withdrawals?limit=20&employeeId=${q(data.employee.id)}`,
  };
}

/**
 * One configuration, start to end: a fresh copy of the engine's cache, its lookups, the sync
 * bodies, the server, every scenario, the peak RSS; the server stopped and the copy removed
 * whatever happens.
 */
async function runConfiguration(config, engine) {
  const started = performance.now();
  log(`\n[${config.title}]`);
  const copy = await engine.copy();
  try {
    const data = await copy.lookups();
    const total = Object.values(data.counts).reduce((a, b) => a + b, 0);
    log(
      `dataset: ${(copy.sizeBytes / 2 ** 20).toFixed(0)} MiB (a fresh copy of the cache), tenant "${BENCH_TENANT}": ` +
        `${data.counts.withdrawals.toLocaleString("en")} withdrawals, ${total.toLocaleString("en")} records in all`,
    );
    log(`deep page: row ${data.deep.offset.toLocaleString("en")} in default order is ${JSON.stringify(data.deep.position)}`);
    log(
      `time window: ${data.window.since} .. ${data.window.until} (${data.window.daysBeforeNewest} days before the newest event, ` +
        `${data.window.records.toLocaleString("en")} rows); name prefix "${data.name.prefix}" (${data.name.records.toLocaleString("en")} rows); ` +
        `employee ${data.employee.id} (${data.employee.records.toLocaleString("en")} rows)`,
    );
    // Ids unique to the run and the configuration: every batch writes new records.
    const stamp = `${Date.now().toString(36)}${config.id}`;
    const spare = 2 * 2;
    const batches = { count: settings.syncBatches + spare, size: settings.syncBatchSize, stamp };
    // The sync scenarios go in rounds, each round its own bodies (ids unique by `first`), after
    // a round of warm-up (index 0) like the page scenarios'.
    const inRounds = (first, late) => {
      const count = settings.syncBatches / settings.rounds + spare;
      return Array.from({ length: settings.rounds + 1 }, (_, round) =>
        syncBodies(data.templates, { ...batches, count, first: first + round * count, late }),
      );
    };
    const bodies = {
      sync1: inRounds(0),
      sync2: inRounds(100_000),
      syncHooks: inRounds(200_000),
      syncLate: inRounds(400_000, 1),
      delay: syncBodies(data.templates, { count: settings.webhookEvents, size: 1, stamp, first: 300_000 }),
    };

    log(`disk: the copy's writes flushed before any load (${(await copy.settle()).toFixed(1)} s)`);

    const cursorSecret = randomBytes(32).toString("base64url");
    const server =
      config.server === "cluster"
        ? await startCluster(copy.databaseUrl, cursorSecret, PG_WORKERS)
        : await startBenchServer(copy.databaseUrl, cursorSecret);
    const target = { baseUrl: server.url, key: engine.key };
    log(`server: ${server.describe} at ${server.url}, LOG_LEVEL=info, logs to /dev/null`);
    try {
      // The deep cursor, made as the server makes its cursors: the same codec and secret.
      const deepCursor = new CursorCodec(cursorSecret).encode(data.tenantId, "withdrawals", "[]", data.deep.position);
      const paths = pageRequests(data, deepCursor);
      const pages = ROWS.filter((row) => row.id in paths && (row.id !== "fixed" || server.fixedPage));
      for (const page of pages) await checkPage(target, paths[page.id]);
      log("every page scenario answers 200 with 20 items, the deep cursor included");

      const results = {};
      const rounds = Object.fromEntries(pages.map((page) => [page.id, []]));
      for (let round = 0; round < settings.rounds; round += 1) {
        process.stdout.write(`  page scenarios, round ${round + 1} of ${settings.rounds} ...`);
        for (const page of pages) {
          const warmup = round === 0 ? settings.warmup : 0;
          rounds[page.id].push(await loadPage(target, paths[page.id], { seconds: settings.duration / settings.rounds, warmup }));
        }
        process.stdout.write(" done\n");
      }
      for (const page of pages) {
        results[page.id] = combineRounds(rounds[page.id]);
        log(`  ${page.name}: ${results[page.id].requestsPerSecond.toFixed(0)} req/s (rounds: ${perRound(results[page.id].rounds)})`);
      }
      const rssAfterPages = server.peakRss();
      await runSyncScenarios(target, bodies, results);
      const rss = server.peakRss();
      log(`peak RSS: ${mb(rss.bytes)}${rss.detail === "" ? "" : ` (${rss.detail})`}, ${mb(rssAfterPages.bytes)} before sync`);
      return { data, results, rss: { ...rss, beforeSync: rssAfterPages.bytes }, seconds: (performance.now() - started) / 1000 };
    } finally {
      await server.stop();
    }
  } finally {
    await copy.remove();
  }
}

/**
 * The sync scenarios, after the page scenarios. The webhook scenarios are among them, each
 * with endpoints made for it and deleted after (their undelivered deliveries with them), so
 * no other scenario runs with an endpoint: first the delay from a single-record sync's
 * acknowledgement to its event at one endpoint, then, in alternating rounds after a round of
 * warm-up, sync1, sync with two senders, sync with every record late and sync with
 * `webhookEndpoints` endpoints (judged against sync1; its backlog would otherwise be in the
 * delay's way, and each round's endpoints are deleted before the next round).
 * A scenario that cannot run is that cell's FAIL, not the configuration's error.
 */
async function runSyncScenarios(target, bodies, results) {
  const receivers = await startReceivers(settings.webhookEndpoints);
  log(`webhook receivers: bench/receiver.mjs (pid ${receivers.pid}), one per endpoint, subscribed to ${WEBHOOK_EVENT}`);
  try {
    const [delayRow, hooksRow] = ["delay", "syncHooks"].map((id) => ROWS.find((row) => row.id === id));
    process.stdout.write(`  ${delayRow.name}, ${settings.webhookEvents} single-record syncs at ${settings.webhookRate}/s ...`);
    const delay = await orFailure(() =>
      withEndpoints(target, receivers.urls.slice(0, 1), () =>
        measureDelay(target, receivers, bodies.delay, { rate: settings.webhookRate, waitMs: settings.webhookWaitMs }),
      ),
    );
    results.delay = delay;
    process.stdout.write(
      delay.error !== undefined || delay.received === 0
        ? ` failed: ${delay.error ?? delay.failures.join(", ")}\n`
        : ` median ${ms(delay.p50)}, p99 ${ms(delay.p99)}, max ${ms(delay.max)}; ${delay.received} of ${delay.acknowledged} ` +
            `acknowledged events received, ${delay.duplicates} duplicate(s); sent in ${delay.sendSeconds.toFixed(1)} s\n`,
    );

    // Sync with no endpoint (sync1, also the reference of the absolute target), with two
    // senders, with every record late and with endpoints, in alternating rounds: compared side by
    // side, and none of them measured on a server that has not synced yet (SQLite's WAL file
    // grows during the first batches, and writes that extend a file cost more than overwrites).
    // In this order: the all-late scenario last, after the two judged by an absolute target,
    // since it writes more pages, which a checkpoint (SQLite) or vacuum (PostgreSQL) then has
    // to write back.
    const plainRows = ["sync1", "sync2", "syncLate"].map((id) => ROWS.find((row) => row.id === id));
    const plain = Object.fromEntries(plainRows.map((row) => [row.id, []]));
    const hooked = [];
    const perBatches = settings.syncBatches / settings.rounds;
    // Round 0 warms up and is not counted, as the page scenarios' warm-up: in three runs the
    // first round with endpoints ran at 0.6 to 0.8 of the later rounds' rate on PostgreSQL.
    for (let round = settings.warmup > 0 ? 0 : 1; round <= settings.rounds; round += 1) {
      const title = round === 0 ? "warm-up round, not counted" : `round ${round} of ${settings.rounds}`;
      process.stdout.write(`  ${[...plainRows, hooksRow].map((row) => row.name).join(" / ")}, ${title} ...`);
      const measured = [];
      for (const row of plainRows) measured.push(await loadSync(target, "withdrawals", bodies[row.id][round], row.connections, perBatches));
      // Once it has failed, the other scenarios' rounds go on without it.
      const hooks =
        results.syncHooks === undefined
          ? await orFailure(() => syncWithEndpoints(target, receivers, bodies.syncHooks[round], hooksRow.connections, perBatches))
          : results.syncHooks;
      if (hooks.error !== undefined) results.syncHooks = hooks;
      if (round > 0) {
        plainRows.forEach((row, i) => plain[row.id].push(measured[i]));
        if (hooks.error === undefined) hooked.push(hooks);
      }
      const figures = [...measured, hooks].map((r) => (r.error === undefined ? r.recordsPerSecond.toFixed(0) : "FAIL"));
      const failure = hooks.error === undefined ? "" : ` (${hooksRow.name}: ${hooks.error})`;
      process.stdout.write(` ${figures.join(" / ")} records/s${failure}\n`);
    }
    for (const row of plainRows) {
      results[row.id] = combineRounds(plain[row.id]);
      log(`  ${row.name}: ${results[row.id].recordsPerSecond.toFixed(0)} records/s (rounds: ${perRound(results[row.id].rounds)})`);
    }
    if (results.syncHooks === undefined) {
      const hooks = combineRounds(hooked);
      hooks.received = hooked.reduce((total, h) => total + h.received, 0);
      hooks.endpointSeconds = hooked.reduce((total, h) => total + h.endpointSeconds, 0);
      results.syncHooks = hooks;
      const queued = settings.webhookEndpoints * settings.syncBatches * settings.syncBatchSize;
      log(
        `  ${hooksRow.name}: ${hooks.recordsPerSecond.toFixed(0)} records/s (rounds: ${perRound(hooks.rounds)}; ` +
          `${hooks.received.toLocaleString("en")} of ${queued.toLocaleString("en")} events received in the ` +
          `${hooks.endpointSeconds.toFixed(0)} s its endpoints existed; the rest were deleted with them)`,
      );
    }
  } finally {
    await receivers.stop();
  }
}

/**
 * The sync1 scenario again with endpoints subscribed: the outbox writes a message and a
 * delivery per endpoint in each batch's transaction, while the delivery loop sends what it can.
 * Checked by every receiver having had at least one event.
 */
function syncWithEndpoints(target, receivers, bodies, connections, batches) {
  const started = performance.now();
  return withEndpoints(target, receivers.urls, async () => {
    const summary = await loadSync(target, "withdrawals", bodies, connections, batches);
    const arrivals = [];
    const everyReceiver = (all) => receivers.urls.every((_, i) => all.some((a) => a.receiver === i));
    if (!(await collectArrivals(receivers, arrivals, everyReceiver, 5000))) {
      summary.failures.push("some endpoint received no event within 5 s of the last batch");
    }
    return { ...summary, received: arrivals.length, endpointSeconds: (performance.now() - started) / 1000 };
  });
}

async function orFailure(scenario) {
  try {
    return await scenario();
  } catch (error) {
    return { error: error.message };
  }
}

// ---------------------------------------------------------------------------------------
// The run.

async function main() {
  const cpus = os.cpus();
  log(
    `cribline bench: node ${process.version}, ${cpus.length} cores (${cpus[0]?.model ?? "unknown CPU"}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`,
  );
  log(
    `load: autocannon, ${settings.connections} connections, ${settings.warmup} s warm-up + ${settings.duration} s per page scenario ` +
      `in ${settings.rounds} rounds; sync: ${settings.syncBatches} batches of ${settings.syncBatchSize} per scenario ` +
      `(every sync scenario in ${settings.rounds} alternating rounds${settings.warmup > 0 ? ", after a warm-up round" : ""}); webhook delay: ${settings.webhookEvents} ` +
      `single-record syncs at ${settings.webhookRate}/s; the same for every configuration`,
  );
  const runStarted = performance.now();
  const columns = [];
  const outcomes = {};
  const notes = [];
  const onlyOne = settings.windows === "only" || settings.operations === "only" || settings.events === "only" || settings.usage === "only";
  for (const engineName of onlyOne ? [] : settings.engines) {
    const configs = CONFIGURATIONS.filter((c) => c.engine === engineName);
    let engine;
    try {
      engine = await ENGINES[engineName]();
    } catch (error) {
      // The engine could not be readied (the cache build failed, say): its columns say so.
      log(`${engineName}: ${error.stack ?? error}`);
      for (const config of configs) {
        columns.push(config);
        outcomes[config.id] = { error: `${engineName} could not be prepared: ${error.message}` };
      }
      continue;
    }
    if (engine.skipped !== undefined) {
      log(`\n${engine.skipped}.`);
      notes.push(`${engine.skipped}.`);
      continue;
    }
    if (engine.serverNote !== undefined) notes.push(`${engine.serverNote}.`);
    notes.push(engine.cacheNote);
    for (const config of configs) {
      columns.push(config);
      try {
        outcomes[config.id] = await runConfiguration(config, engine);
      } catch (error) {
        log(`${config.title}: ${error.stack ?? error}`);
        outcomes[config.id] = { error: error.message };
      }
    }
  }
  const matrices = settings.windows === "off" || (onlyOne && settings.windows !== "only") ? [] : await windowMatrices();
  const operations =
    settings.operations === "off" || (onlyOne && settings.operations !== "only") || !settings.engines.includes("sqlite")
      ? undefined
      : await operationsBench();
  const events =
    settings.events === "off" || (onlyOne && settings.events !== "only")
      ? undefined
      : await runEventsBench(settings.engines, { postgresUrl: settings.postgresUrl, log });
  const usage =
    settings.usage === "off" || (onlyOne && settings.usage !== "only")
      ? undefined
      : await runUsageBench(settings.engines, { postgresUrl: settings.postgresUrl, log });
  const syncBase =
    settings.syncBase === undefined
      ? undefined
      : await syncAgainstBase(settings.syncBase, settings.engines, { postgresUrl: settings.postgresUrl, log });
  const memory =
    settings.memory === "off" || onlyOne ? undefined : await runMemoryBench(settings.engines, { postgresUrl: settings.postgresUrl, log });
  if (
    columns.length === 0 &&
    matrices.length === 0 &&
    [operations, events, usage, syncBase, memory].every((section) => section === undefined)
  )
    throw new Error("no configuration was run");
  const table = columns.length === 0 ? { rows: [], latency: [], problems: [], missed: [] } : tableOf(columns, outcomes);
  if (columns.length > 0) printMainTables({ columns, outcomes, table, notes, cores: cpus.length });
  for (const { engine, report } of matrices) {
    log("");
    log(
      `Time windows, ${engine === "sqlite" ? "SQLite" : "PostgreSQL"}: ms per page of each walk (the median of ${windowSettings.reps}), against the same list without the window at the same place in the same run (the plain list, or the name alone), pairs with a page over 4 times the median left out; first page: the median ratio of ${windowSettings.firstPages} requests, each to one of that list's paired with it, the two taking turns to go first:`,
    );
    printTable(report.header, report.lines, 2);
    if (report.importLine !== undefined) log(report.importLine);
    log(report.storageLine);
    table.missed.push(...report.missed);
  }
  if (operations !== undefined) {
    log("");
    for (const line of operations.lines) log(line);
    table.missed.push(...operations.missed);
  }
  if (events !== undefined) {
    log("");
    for (const line of events.lines) log(line);
    table.missed.push(...events.missed);
  }
  if (usage !== undefined) {
    log("");
    for (const line of usage.lines) log(line);
    table.missed.push(...usage.missed);
  }
  if (syncBase !== undefined) {
    log("");
    for (const line of syncBase.lines) log(line);
    table.missed.push(...syncBase.missed);
  }
  if (memory !== undefined) {
    log("");
    for (const line of memory.lines) log(line);
    table.missed.push(...memory.missed);
  }
  log("");
  const seconds = (performance.now() - runStarted) / 1000;
  log(`Run time: ${seconds.toFixed(0)} s.`);
  log(table.missed.length === 0 ? "All targets met." : `MISSED ${table.missed.length} target(s): ${table.missed.join("; ")}`);
  if (columns.some((c) => outcomes[c.id].error !== undefined) || matrices.some((m) => m.error !== undefined)) process.exitCode = 1;
}

/** The configurations' tables: the figures, the latencies, and what each column ran. */
function printMainTables({ columns, outcomes, table, notes, cores }) {
  log("");
  printTable(["scenario", "target", ...columns.map((c) => c.title)], table.rows, 2);
  log("");
  log(
    "Latency, p50 / p99 (autocannon's histogram, 1 ms resolution; sync: per batch of 1,000; webhook delay: " +
      "from the sync's 200 at the client to the event at the receiver, both stamped with the system clock):",
  );
  printTable(["scenario", ...columns.map((c) => c.title)], table.latency);
  log("");
  for (const line of table.problems) log(line);
  for (const line of serverNotes(columns)) log(line);
  log(
    `Load: ${settings.connections} connections over loopback on the same ${cores}-core machine, one configuration at a time, ` +
      `each on a fresh copy of its engine's cache. Ratios are against the same configuration's first page (filtered pages) ` +
      `or its engine's fixed page (first page).`,
  );
  for (const note of notes) log(note);
  const perConfig = columns
    .filter((c) => outcomes[c.id].seconds !== undefined)
    .map((c) => `${c.title} ${outcomes[c.id].seconds.toFixed(0)} s`)
    .join(", ");
  log(`Per configuration, its copy and lookups included: ${perConfig}.`);
  if (settings.cpuProfDir) log(`CPU profiles of the servers: ${settings.cpuProfDir}`);
}

/**
 * Operations, on a copy of the SQLite dataset: the first page with metrics on (a metrics
 * listener, every request counted) against off, in alternating rounds of one run; then
 * `cribline backup` of the whole dataset, timed, with the copy's size.
 */
async function operationsBench() {
  const lines = ["Operations, SQLite:"];
  const missed = [];
  try {
    const engine = await ENGINES.sqlite();
    const copy = await engine.copy();
    try {
      const secret = randomBytes(32).toString("base64url");
      const seconds = settings.duration / settings.rounds;
      const runs = { on: [], off: [] };
      for (let round = 0; round < settings.rounds; round += 1) {
        for (const mode of round % 2 === 0 ? ["off", "on"] : ["on", "off"]) {
          const metricsPort = 20_000 + Math.floor(Math.random() * 20_000);
          const server = await startBenchServer(
            copy.databaseUrl,
            secret,
            undefined,
            mode === "on" ? { CRIBLINE_METRICS_PORT: String(metricsPort) } : {},
          );
          try {
            runs[mode].push(
              await loadPage({ baseUrl: server.url, key: engine.key }, "/v1/withdrawals?limit=20", { seconds, warmup: settings.warmup }),
            );
            if (mode === "on") {
              const scraped = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
              if (!scraped.includes('cribline_http_requests_total{route="/v1/withdrawals",method="GET",status="200"}')) {
                throw new Error("the metrics listener did not count the first pages");
              }
            }
          } finally {
            await server.stop();
          }
        }
      }
      const on = combineRounds(runs.on);
      const off = combineRounds(runs.off);
      const ratio = on.requestsPerSecond / off.requestsPerSecond;
      const met = ratio >= 0.97;
      if (!met) missed.push(`sqlite metrics cost: first page ${ratio.toFixed(3)}x with metrics on (target >= 0.97)`);
      lines.push(
        `  first page, metrics on: ${Math.round(on.requestsPerSecond).toLocaleString("en")} req/s (rounds ${perRound(on.rounds)}); ` +
          `off: ${Math.round(off.requestsPerSecond).toLocaleString("en")} req/s (rounds ${perRound(off.rounds)}); ` +
          `on/off ${ratio.toFixed(3)} (target >= 0.97: ${met ? "met" : "MISSED"})`,
      );
      lines.push(...(await exportAgainstWalk(engine, copy, secret, missed)));
      const target = join(os.tmpdir(), `cribline-bench-backup-${process.pid}.db`);
      const started = performance.now();
      const backup = await new Promise((resolvePromise) => {
        const child = spawn(process.execPath, [join(ROOT, "bin", "cribline"), "backup", target], {
          cwd: ROOT,
          env: { ...process.env, DATABASE_URL: copy.databaseUrl },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let output = "";
        child.stdout.setEncoding("utf8").on("data", (text) => (output += text));
        child.stderr.setEncoding("utf8").on("data", (text) => (output += text));
        child.once("exit", (code) => resolvePromise({ code, output }));
      });
      const took = (performance.now() - started) / 1000;
      if (backup.code !== 0) throw new Error(`cribline backup failed: ${backup.output.trim()}`);
      const size = statSync(target).size;
      rmSync(target, { force: true });
      lines.push(
        `  backup of the ${(copy.sizeBytes / 2 ** 20).toFixed(0)} MiB dataset: ${took.toFixed(1)} s, a ${(size / 2 ** 20).toFixed(0)} MiB copy; it said: ` +
          backup.output.trim().split("\n").join(" / "),
      );
    } finally {
      await copy.remove();
    }
  } catch (error) {
    log(`operations: ${error.stack ?? error}`);
    lines.push(`  error: ${error.message}`);
    missed.push(`sqlite operations: ${error.message}`);
  }
  return { lines, missed };
}

/**
 * The client's export command (client/dist/cli.js, NDJSON) of every withdrawal of the dataset,
 * against a raw walk of the same list (fetch, parse, count; limit=100) in the same run, on one
 * server: rows a second of each, and the command's peak RSS (VmHWM, read while it runs).
 * Targets: the command keeps 0.9 of the walk's rate, under 100 MB.
 */
async function exportAgainstWalk(engine, copy, secret, missed) {
  const server = await startBenchServer(copy.databaseUrl, secret);
  const out = join(os.tmpdir(), `cribline-bench-export-${process.pid}.ndjson`);
  try {
    let rows = 0;
    let cursor = null;
    const walkStarted = performance.now();
    do {
      const url = `${server.url}/v1/withdrawals?limit=100${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
      const page = await (await fetch(url, { headers: { authorization: `Bearer ${engine.key}` } })).json();
      rows += page.data.length;
      cursor = page.cursor;
    } while (cursor !== null);
    const walkRate = rows / ((performance.now() - walkStarted) / 1000);
    rmSync(out, { force: true });
    rmSync(`${out}.export-state.json`, { force: true });
    const exportStarted = performance.now();
    const child = spawn(process.execPath, [join(ROOT, "client", "dist", "cli.js"), "export", "withdrawals", "-o", out], {
      env: { PATH: process.env.PATH, CRIBLINE_API_KEY: engine.key, CRIBLINE_BASE_URL: server.url },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let said = "";
    child.stderr.setEncoding("utf8").on("data", (text) => (said += text));
    let peak = 0;
    const watch = setInterval(() => {
      try {
        peak = Math.max(peak, peakRss(child.pid));
      } catch {
        // gone
      }
    }, 50);
    const code = await new Promise((done) => child.once("exit", done));
    clearInterval(watch);
    if (code !== 0) throw new Error(`the export failed (${code}): ${said.trim()}`);
    const exported = Number(/: (\d+) records/.exec(said)?.[1] ?? NaN);
    const exportRate = exported / ((performance.now() - exportStarted) / 1000);
    const ratio = exportRate / walkRate;
    const ok = ratio >= 0.9 && peak < 100 * 2 ** 20 && exported === rows;
    if (!ok) missed.push(`sqlite export: ${ratio.toFixed(2)}x the walk, ${(peak / 2 ** 20).toFixed(0)} MB, ${exported} of ${rows} rows`);
    return [
      `  export of ${exported.toLocaleString("en")} withdrawals (NDJSON, ${(statSync(out).size / 2 ** 20).toFixed(0)} MiB): ${Math.round(exportRate).toLocaleString("en")} rows/s, ` +
        `peak RSS ${(peak / 2 ** 20).toFixed(0)} MB; the raw walk: ${Math.round(walkRate).toLocaleString("en")} rows/s; ` +
        `${ratio.toFixed(2)}x (targets >= 0.9x and < 100 MB: ${ok ? "met" : "MISSED"})`,
    ];
  } finally {
    rmSync(out, { force: true });
    rmSync(`${out}.export-state.json`, { force: true });
    await server.stop();
  }
}

/** The time-window matrix on each engine (bench/windows.mjs); an engine that cannot be measured says why. */
async function windowMatrices() {
  const done = [];
  for (const engine of settings.engines) {
    if (engine === "postgres") {
      try {
        await postgresServerInfo(settings.postgresUrl);
      } catch (error) {
        log(`\n[time windows, postgres] skipped: PostgreSQL at ${describeUrl(settings.postgresUrl)} is unreachable (${error.message})`);
        continue;
      }
    }
    try {
      const result = await runWindowMatrix(engine, {
        postgresUrl: settings.postgresUrl,
        startServer: (databaseUrl, cursorSecret, tenant) => startBenchServer(databaseUrl, cursorSecret, tenant),
        log,
      });
      done.push({ engine, report: windowReport(engine, result) });
    } catch (error) {
      log(`time windows, ${engine}: ${error.stack ?? error}`);
      done.push({
        engine,
        error,
        report: { header: ["error"], lines: [[error.message]], missed: [`${engine} time windows: ${error.message}`] },
      });
    }
  }
  return done;
}

/** What each column's server is, for the configurations shown. */
function serverNotes(columns) {
  const notes = [];
  const single = columns.filter((c) => c.server === "bench").map((c) => c.title);
  if (single.length > 0) {
    notes.push(
      `${single.join(" and ")}: bench/server.mjs, one process that builds its app as \`cribline serve\` does, plus the fixed-page route.`,
    );
  }
  for (const config of columns.filter((c) => c.server === "cluster")) {
    const reference = CONFIGURATIONS.find((c) => c.id === config.fixedFrom).title;
    notes.push(
      `${config.title}: the real \`cribline serve --workers ${PG_WORKERS}\`, a cluster without the fixed-page route: its first page is compared ` +
        `with the fixed page of ${reference} (the ceiling of one process); its peak RSS is the sum of its workers' VmHWM ` +
        `(the primary, which only forks, is not counted).`,
    );
  }
  notes.push("Every server logs at LOG_LEVEL=info to /dev/null (a real server logs every request).");
  return notes;
}

/**
 * The cells of both tables. A cell shows the figure, the ratio it is judged by and pass,
 * MISS or FAIL (any non-2xx, socket error or timeout); `missed` names every target missed.
 */
function tableOf(columns, outcomes) {
  const rows = [];
  const latency = [];
  const missed = [];
  const problems = [];
  for (const config of columns) {
    const outcome = outcomes[config.id];
    if (outcome.error !== undefined) {
      problems.push(`ERROR ${config.title}: ${outcome.error}`);
      missed.push(`${config.title}: not measured`);
    }
  }
  for (const row of ROWS) {
    const cells = [];
    const latencyCells = [];
    for (const config of columns) {
      const outcome = outcomes[config.id];
      if (outcome.error !== undefined) {
        cells.push("error");
        latencyCells.push("");
        continue;
      }
      const cell = judge(row, config, outcome, outcomes);
      cells.push(cell.text);
      const r = outcome.results[row.id];
      latencyCells.push(r === undefined || r.error !== undefined ? "" : `${ms(r.p50)} / ${ms(r.p99)}`);
      if (cell.verdict === "MISS" || cell.verdict === "FAIL")
        missed.push(`${config.title}: ${row.name}${cell.verdict === "FAIL" ? " (FAIL)" : ""}`);
      if (cell.failures?.length > 0) problems.push(`FAIL ${config.title}, ${row.name}: ${cell.failures.join(", ")}`);
    }
    rows.push([row.name, targetText(row, columns), ...cells]);
    if (row.kind !== "rss") latency.push([row.name, ...latencyCells]);
  }
  return { rows, latency, missed, problems };
}

/** One cell of the main table: { text, verdict, failures }. */
function judge(row, config, outcome, outcomes) {
  const targets = TARGETS[config.engine];
  if (row.kind === "rss") {
    const { bytes, beforeSync, failures } = outcome.rss;
    const text = `${mb(bytes)} (${mb(beforeSync)} before sync)${config.server === "cluster" ? `, sum of ${PG_WORKERS} workers` : ""}`;
    if (failures.length > 0) return { text: `${text} FAIL`, verdict: "FAIL", failures };
    if (targets.peakRssBytes === undefined) return { text };
    const verdict = bytes < targets.peakRssBytes ? "pass" : "MISS";
    return { text: `${text} ${verdict}`, verdict };
  }
  const r = outcome.results[row.id];
  if (r === undefined) return { text: row.id === "fixed" && config.fixedFrom !== undefined ? "(no route: 1-process ref.)" : "" };
  if (r.error !== undefined) return { text: "FAIL", verdict: "FAIL", failures: [r.error] };
  const figure = figureOf(row, r);
  if (r.failures.length > 0) return { text: `${figure} FAIL`, verdict: "FAIL", failures: r.failures };
  if (row.kind === "reference") return { text: figure };
  if (row.kind === "sync") {
    if (row.noTarget) return { text: figure };
    const verdict = r.recordsPerSecond >= targets.syncRecordsPerSecond ? "pass" : "MISS";
    return { text: `${figure} ${verdict}`, verdict };
  }
  if (row.kind === "delay") {
    const verdict = r.p50 < targets.webhookDelayMs ? "pass" : "MISS";
    return { text: `${figure} ${verdict}`, verdict };
  }
  if (row.kind === "syncRatio") {
    const reference = outcome.results[row.reference];
    if (reference === undefined || reference.error !== undefined || reference.failures.length > 0)
      return { text: `${figure}, no ${row.referenceName} to compare`, verdict: "FAIL", failures: [`no ${row.referenceName}`] };
    const ratio = r.recordsPerSecond / reference.recordsPerSecond;
    const verdict = ratio >= targets[row.min] ? "pass" : "MISS";
    return { text: `${figure}, ${ratio.toFixed(2)} ${verdict}`, verdict };
  }
  const source = row.reference === "fixed" && config.fixedFrom !== undefined ? outcomes[config.fixedFrom] : outcome;
  const reference = source?.results?.[row.reference];
  if (reference === undefined)
    return { text: `${figure}, no ${row.reference} page to compare`, verdict: "FAIL", failures: [`no ${row.reference} page`] };
  const ratio = r.requestsPerSecond / reference.requestsPerSecond;
  const verdict = ratio >= targets[row.min] ? "pass" : "MISS";
  return { text: `${figure}, ${ratio.toFixed(2)} ${verdict}`, verdict };
}

function figureOf(row, r) {
  switch (row.kind) {
    case "sync":
    case "syncRatio":
      return `${thousands(r.recordsPerSecond)} records/s`;
    case "delay":
      return r.received === 0 ? `0/${r.events} received` : `median ${ms(r.p50)}, p99 ${ms(r.p99)}, ${r.received}/${r.events} received`;
    default:
      return `${thousands(r.requestsPerSecond)} req/s`;
  }
}

/** The target column: one text when the engines shown agree, each engine's otherwise. */
function targetText(row, columns) {
  const shown = [...new Set(columns.map((c) => c.engine))];
  const per = (format) => {
    const texts = shown.map((engine) => format(TARGETS[engine]));
    if (new Set(texts).size === 1) return texts[0];
    return shown.map((engine, i) => `${texts[i]} (${engine === "sqlite" ? "SQLite" : "PG"})`).join(", ");
  };
  switch (row.kind) {
    case "reference":
      return "reference";
    case "ratio":
      return `${per((t) => `≥ ${t[row.min].toFixed(2)}`)} × ${row.reference}`;
    case "sync":
      return row.noTarget ? "shown, no target" : `${per((t) => `≥ ${thousands(t.syncRecordsPerSecond)}`)} records/s`;
    case "syncRatio":
      return `${per((t) => `≥ ${t[row.min].toFixed(2)}`)} × ${row.referenceName}`;
    case "delay":
      return `median < ${per((t) => `${thousands(t.webhookDelayMs)} ms`)}`;
    case "rss":
      return per((t) => (t.peakRssBytes === undefined ? "none" : `< ${mb(t.peakRssBytes)}`));
  }
  throw new Error(`unknown row kind ${row.kind}`);
}

// autocannon's latency histogram has a resolution of 1 ms.
const ms = (value) => (value === undefined ? "" : value < 1 ? "<1 ms" : `${Math.round(value)} ms`);
const mb = (bytes) => `${(bytes / 1e6).toFixed(0)} MB`;
const thousands = (value) => Math.round(value).toLocaleString("en");

/** A Markdown table: the first `left` columns (names) left-aligned, the others (figures) right-aligned. */
function printTable(titles, rows, left = 1) {
  const widths = titles.map((title, i) => Math.max(title.length, ...rows.map((r) => String(r[i]).length)));
  const cell = (text, i) => (i < left ? String(text).padEnd(widths[i]) : String(text).padStart(widths[i]));
  log(`| ${titles.map(cell).join(" | ")} |`);
  log(`|${widths.map((w, i) => (i < left ? "-".repeat(w + 2) : `${"-".repeat(w + 1)}:`)).join("|")}|`);
  for (const row of rows) log(`| ${row.map(cell).join(" | ")} |`);
}

await main();
