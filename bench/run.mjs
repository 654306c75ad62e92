/**
 * `npm run bench`: loads cribline with autocannon over loopback and prints one table.
 *
 *   1. dataset.mjs builds (once) and caches a database with ~1,000,000 withdrawals;
 *   2. each run copies it, looks up the scenarios' parameters in the copy, and
 *   3. starts bench/server.mjs in a child process (so autocannon, here, does not share the
 *      server's event loop), then runs every scenario with the same connections and
 *      duration, and reads the child's peak RSS at the end.
 *
 * Settings (environment): BENCH_DURATION seconds per scenario (10), BENCH_WARMUP seconds of
 * unmeasured load before each read scenario (2), BENCH_CONNECTIONS (10), BENCH_SYNC_BATCHES
 * per sync scenario (40), BENCH_CPU_PROF=<dir> to write a V8 CPU profile of the server.
 * Exits 0 even when a target is missed: this is a report; it says which missed.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { openSync, readFileSync, statSync } from "node:fs";
import os from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { CursorCodec } from "../dist/platform/cursor.js";
import { BENCH_TENANT, copySqliteCache, ensureSqliteCache, sqliteLookups, syncBodies } from "./dataset.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const settings = {
  duration: positive("BENCH_DURATION", 10),
  warmup: positive("BENCH_WARMUP", 2, true),
  connections: positive("BENCH_CONNECTIONS", 10),
  syncBatches: positive("BENCH_SYNC_BATCHES", 40),
  syncBatchSize: 1000,
  cpuProfDir: process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined,
};
const TARGETS = { firstVsFixed: 0.3, filteredVsFirst: 0.8, syncRecordsPerSecond: 20_000, peakRssBytes: 200e6 };

function positive(name, fallback, zeroOk = false) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !zeroOk)) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

const log = (line) => process.stdout.write(`${line}\n`);

// ---------------------------------------------------------------------------------------
// Engines. Each prepares a database for one run and says how the server reaches it. Only
// SQLite is built; PostgreSQL would restore a template database here and return its URL.

const ENGINES = {
  async sqlite() {
    const cache = await ensureSqliteCache(log);
    const copy = copySqliteCache(cache.path);
    return {
      engine: "sqlite",
      databaseUrl: `sqlite:${copy.path}`,
      key: cache.key,
      cacheBuildSeconds: cache.meta.buildSeconds,
      cacheBuiltNow: cache.built,
      sizeBytes: statSync(copy.path).size,
      lookups: () => sqliteLookups(copy.path),
      cleanup: copy.remove,
    };
  },
};

// ---------------------------------------------------------------------------------------
// The server child.

/** Starts bench/server.mjs; resolves once it listens, with its url, pid and a stop(). */
function startServer({ databaseUrl, cursorSecret }) {
  const devNull = openSync("/dev/null", "w");
  const nodeArgs = settings.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${settings.cpuProfDir}`] : [];
  const child = spawn(process.execPath, [...nodeArgs, join(HERE, "server.mjs")], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      CRIBLINE_CURSOR_SECRET: cursorSecret,
      CRIBLINE_DEMO: "false",
      LOG_LEVEL: "info",
      PORT: "0",
      HOST: "127.0.0.1",
      BENCH_TENANT,
    },
    // stdout (the request log) to /dev/null, stderr shown, fd 3 for the address line.
    stdio: ["ignore", devNull, "inherit", "pipe"],
  });
  const exited = new Promise((done) => child.once("exit", (code, signal) => done({ code, signal })));
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error("the bench server did not start within 60 s")), 60_000);
    let buffered = "";
    child.stdio[3].setEncoding("utf8").on("data", (chunk) => {
      buffered += chunk;
      const newline = buffered.indexOf("\n");
      if (newline === -1) return;
      clearTimeout(timer);
      const { url } = JSON.parse(buffered.slice(0, newline));
      resolvePromise({
        url,
        pid: child.pid,
        async stop() {
          child.kill("SIGTERM");
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

/** Peak resident set size of a process (VmHWM), in bytes. */
function peakRss(pid) {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match === null ? NaN : Number(match[1]) * 1024;
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

/** Loads GET `path` for the configured duration (after a warm-up) with every connection. */
async function loadPage(target, path) {
  const options = {
    url: target.baseUrl + path,
    connections: settings.connections,
    headers: { authorization: `Bearer ${target.key}` },
  };
  if (settings.warmup > 0) await cannon({ ...options, duration: settings.warmup });
  const started = performance.now();
  const result = await cannon({ ...options, duration: settings.duration });
  return summarise(result, (performance.now() - started) / 1000);
}

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
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures,
  };
}

// ---------------------------------------------------------------------------------------
// The run.

async function main() {
  const cpus = os.cpus();
  log(
    `cribline bench: node ${process.version}, ${cpus.length} cores (${cpus[0]?.model ?? "unknown CPU"}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`,
  );
  const engineName = process.env.BENCH_ENGINE ?? "sqlite";
  const prepare = ENGINES[engineName];
  if (prepare === undefined) throw new Error(`BENCH_ENGINE "${engineName}" is not built (have: ${Object.keys(ENGINES).join(", ")})`);

  const runStarted = performance.now();
  const db = await prepare();
  try {
    const data = db.lookups();
    const total = Object.values(data.counts).reduce((a, b) => a + b, 0);
    log(
      `dataset: ${db.engine}, ${(db.sizeBytes / 2 ** 20).toFixed(0)} MiB, tenant "${BENCH_TENANT}": ${data.counts.withdrawals.toLocaleString("en")} withdrawals, ` +
        `${total.toLocaleString("en")} records in all (${Object.entries(data.counts)
          .filter(([t]) => t !== "withdrawals")
          .map(([t, n]) => `${n.toLocaleString("en")} ${t}`)
          .join(", ")})`,
    );
    const stamp = Date.now().toString(36);
    const spare = 2 * 2;
    const bodies = {
      sequential: syncBodies(data.templates, { count: settings.syncBatches + spare, size: settings.syncBatchSize, stamp, first: 0 }),
      concurrent: syncBodies(data.templates, { count: settings.syncBatches + spare, size: settings.syncBatchSize, stamp, first: 5000 }),
    };

    const cursorSecret = randomBytes(32).toString("base64url");
    const server = await startServer({ databaseUrl: db.databaseUrl, cursorSecret });
    const target = { baseUrl: server.url, key: db.key };
    log(`server: ${server.url} (pid ${server.pid}), LOG_LEVEL=info, logs to /dev/null`);
    let rows;
    try {
      const deepCursor = new CursorCodec(cursorSecret).encode(data.tenantId, "withdrawals", "[]", data.deep.position);
      const q = encodeURIComponent;
      const pages = [
        { id: "fixed", name: "fixed page (ceiling)", path: "/bench/fixed-page" },
        { id: "first", name: "first page", path: "/v1/withdrawals?limit=20" },
        {
          id: "deep",
          name: `deep page (offset ${data.deep.offset.toLocaleString("en")})`,
          path: `/v1/withdrawals?limit=20&cursor=${q(deepCursor)}`,
        },
        {
          id: "window",
          name: `time window (1 day, ${data.window.records.toLocaleString("en")} rows)`,
          path: `/v1/withdrawals?limit=20&createdSince=${q(data.window.since)}&createdUntil=${q(data.window.until)}`,
        },
        {
          id: "name",
          name: `name="${data.name.prefix}" (${data.name.records.toLocaleString("en")} rows)`,
          path: `/v1/withdrawals?limit=20&name=${q(data.name.prefix)}`,
        },
        {
          id: "employee",
          name: `employeeId (${data.employee.records.toLocaleString("en")} rows)`,
          path: `/v1/withdrawals?limit=20&employeeId=${q(data.employee.id)}`,
        },
      ];
      log(`deep page: row ${data.deep.offset.toLocaleString("en")} in default order is ${JSON.stringify(data.deep.position)}`);
      log(`time window: ${data.window.since} .. ${data.window.until} (${data.window.daysBeforeNewest} days before the newest event)`);
      log(`name prefix "${data.name.prefix}", employee ${data.employee.id}`);
      for (const page of pages) await checkPage(target, page.path);
      log("every page scenario answers 200 with 20 items, the deep cursor included");
      log(
        `load: autocannon, ${settings.connections} connections, ${settings.warmup} s warm-up + ${settings.duration} s per page scenario; ` +
          `sync: ${settings.syncBatches} batches of ${settings.syncBatchSize} per scenario\n`,
      );

      const results = {};
      for (const page of pages) {
        process.stdout.write(`  ${page.name} ...`);
        results[page.id] = await loadPage(target, page.path);
        process.stdout.write(` ${results[page.id].requestsPerSecond.toFixed(0)} req/s\n`);
      }
      const rssAfterPages = peakRss(server.pid);
      for (const [id, connections] of [
        ["sync1", 1],
        ["sync2", 2],
      ]) {
        process.stdout.write(`  sync, ${connections} sender(s) ...`);
        const pool = id === "sync1" ? bodies.sequential : bodies.concurrent;
        results[id] = await loadSync(target, "withdrawals", pool, connections, settings.syncBatches);
        process.stdout.write(` ${results[id].recordsPerSecond.toFixed(0)} records/s\n`);
      }
      rows = tableRows(pages, results, peakRss(server.pid), rssAfterPages);
    } finally {
      await server.stop();
    }
    log("");
    printTable(rows);
    const seconds = (performance.now() - runStarted) / 1000;
    log("");
    log(
      `Server: child process, LOG_LEVEL=info with its log on /dev/null (a real server logs every request); ` +
        `load: ${settings.connections} connections over loopback on the same ${cpus.length}-core machine.`,
    );
    log(`Ratios are against the same run's fixed page (first page) or first page (filtered pages).`);
    if (db.cacheBuiltNow) log(`The dataset cache was built during this run in ${db.cacheBuildSeconds} s.`);
    else log(`The dataset came from the cache (built once in ${db.cacheBuildSeconds} s).`);
    log(`Run time: ${seconds.toFixed(0)} s${db.cacheBuiltNow ? ", the cache build included" : ""}.`);
    const missed = rows.filter((r) => !r.pass);
    log(missed.length === 0 ? "All targets met." : `MISSED ${missed.length} target(s): ${missed.map((r) => r.scenario).join("; ")}`);
    if (settings.cpuProfDir) log(`CPU profile of the server: ${settings.cpuProfDir}`);
  } finally {
    db.cleanup();
  }
}

function tableRows(pages, results, rss, rssAfterPages) {
  const rows = [];
  const ratioRow = (page, reference, referenceName, min) => {
    const r = results[page.id];
    const ratio = r.requestsPerSecond / results[reference].requestsPerSecond;
    const failed = r.failures.length > 0;
    rows.push({
      scenario: page.name,
      rps: r.requestsPerSecond.toFixed(0),
      p50: ms(r.p50),
      p99: ms(r.p99),
      ratio: reference === page.id ? "1.00" : `${ratio.toFixed(2)} × ${referenceName}`,
      target: min === undefined ? "(reference)" : `≥ ${min.toFixed(2)} × ${referenceName}`,
      pass: !failed && (min === undefined || ratio >= min),
      result: failed
        ? `FAIL: ${r.failures.join(", ")}`
        : min === undefined
          ? "ok"
          : ratio >= min
            ? "pass"
            : `MISS (${pct(ratio / min - 1)})`,
    });
  };
  ratioRow(pages[0], "fixed");
  ratioRow(pages[1], "fixed", "fixed", TARGETS.firstVsFixed);
  for (const page of pages.slice(2)) ratioRow(page, "first", "first", TARGETS.filteredVsFirst);
  for (const [id, name] of [
    ["sync1", `sync, 1 sender (${settings.syncBatchSize}/batch)`],
    ["sync2", `sync, 2 senders (${settings.syncBatchSize}/batch)`],
  ]) {
    const r = results[id];
    const failed = r.failures.length > 0;
    const ok = r.recordsPerSecond >= TARGETS.syncRecordsPerSecond;
    rows.push({
      scenario: name,
      rps: r.requestsPerSecond.toFixed(1),
      p50: ms(r.p50),
      p99: ms(r.p99),
      ratio: `${Math.round(r.recordsPerSecond).toLocaleString("en")} records/s`,
      target: `≥ ${TARGETS.syncRecordsPerSecond.toLocaleString("en")} records/s`,
      pass: !failed && ok,
      result: failed
        ? `FAIL: ${r.failures.join(", ")}`
        : ok
          ? "pass"
          : `MISS (${pct(r.recordsPerSecond / TARGETS.syncRecordsPerSecond - 1)})`,
    });
  }
  const rssOk = rss < TARGETS.peakRssBytes;
  rows.push({
    scenario: "server peak RSS (VmHWM)",
    rps: "",
    p50: "",
    p99: "",
    ratio: `${(rss / 1e6).toFixed(0)} MB (${(rssAfterPages / 1e6).toFixed(0)} MB before sync)`,
    target: `< ${(TARGETS.peakRssBytes / 1e6).toFixed(0)} MB`,
    pass: rssOk,
    result: rssOk ? "pass" : `MISS (${pct(rss / TARGETS.peakRssBytes - 1)})`,
  });
  return rows;
}

// autocannon's latency histogram has a resolution of 1 ms.
const ms = (value) => (value === undefined ? "" : value < 1 ? "<1 ms" : `${Math.round(value)} ms`);
const pct = (fraction) => `${fraction >= 0 ? "+" : ""}${(fraction * 100).toFixed(0)} %`;

function printTable(rows) {
  const columns = [
    ["scenario", "scenario"],
    ["rps", "req/s"],
    ["p50", "p50"],
    ["p99", "p99"],
    ["ratio", "measured"],
    ["target", "target"],
    ["result", "result"],
  ];
  const widths = columns.map(([key, title]) => Math.max(title.length, ...rows.map((r) => String(r[key]).length)));
  const right = new Set(["rps", "p50", "p99"]);
  const line = (cells) =>
    `| ${cells.map((c, i) => (right.has(columns[i][0]) ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join(" | ")} |`;
  log(line(columns.map(([, title]) => title)));
  log(`|${widths.map((w, i) => (right.has(columns[i][0]) ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2))).join("|")}|`);
  for (const row of rows) log(line(columns.map(([key]) => String(row[key]))));
}

await main();
