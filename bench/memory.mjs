/**
 * The server's memory under a sustained mixed load: `node bench/memory.mjs` runs it alone, and
 * `npm run bench` runs it last (BENCH_MEMORY=off leaves it out).
 *
 * Per engine of BENCH_ENGINE, a real `cribline serve --workers 1` on a new, empty database
 * (the demo tenant is made on its first start, as for anyone trying cribline) gets
 * BENCH_MEMORY_SECONDS (90) of bench/hostile.mjs's requests, BENCH_MEMORY_CONCURRENCY (8) at a
 * time, over loopback. The figure is the server's VmHWM (peak RSS) at the end; its VmRSS is
 * read from /proc every second, its V8 heap from its own metrics listener every 5 s, and on a
 * PostgreSQL of this machine the private memory (RssAnon) of the server's connections'
 * backends, which hold its prepared statements, every 10 s. BENCH_MEMORY_HEAPSNAPSHOTS=<dir>
 * has the server write a V8 heap snapshot there at every quarter of the run (writing one
 * takes the server's memory up by itself: compare the snapshots, not that run's RSS).
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_POSTGRES_URL, postgresUrlFor, withClient, workDatabaseName } from "./dataset.mjs";
import { hookReceiver, hostileLoad } from "./hostile.mjs";
import { integerSetting } from "./windows.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const memorySettings = {
  seconds: integerSetting("BENCH_MEMORY_SECONDS", 90),
  concurrency: integerSetting("BENCH_MEMORY_CONCURRENCY", 8),
  snapshots: process.env.BENCH_MEMORY_HEAPSNAPSHOTS ? resolve(process.env.BENCH_MEMORY_HEAPSNAPSHOTS) : undefined,
};
const TITLES = { sqlite: "SQLite", postgres: "PostgreSQL" };
const mb = (bytes) => `${(bytes / 1e6).toFixed(0)} MB`;
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** Runs the load on each engine in turn; resolves with the report's lines and the measured figures. */
export async function runMemoryBench(engines, { postgresUrl = DEFAULT_POSTGRES_URL, log = console.log } = {}) {
  const s = memorySettings;
  const lines = [
    `Memory under hostile load (bench/memory.mjs): cribline serve --workers 1 on a new database with the demo tenant, ` +
      `${s.seconds} s of bench/hostile.mjs requests, ${s.concurrency} at a time, over loopback; peak RSS is the server's VmHWM:`,
  ];
  const results = {};
  const missed = [];
  for (const engine of engines) {
    try {
      const result = await measure(engine, postgresUrl, log);
      results[engine] = result;
      const backends = Number.isNaN(result.backendsPeak)
        ? ""
        : `; its PostgreSQL backends' private memory at most ${mb(result.backendsPeak)}`;
      lines.push(
        `  ${TITLES[engine]}: peak RSS ${mb(result.peakRss)} (RSS ${mb(result.startRss)} once started, ${mb(result.endRss)} at the end; ` +
          `heap used at most ${mb(result.peakHeap)}${backends}), ${result.requests} requests (${result.perSecond.toFixed(0)}/s; ${result.statuses})`,
      );
      // Hostile input is a 4xx, and a 503 says the database is busy; anything else 5xx is a fault.
      const faults = [...result.counts].filter(([code]) => code >= 500 && code !== 503).reduce((sum, [, n]) => sum + n, 0);
      if (faults > 0) missed.push(`memory, ${TITLES[engine]}: ${faults} answers 5xx other than 503 under hostile load`);
    } catch (error) {
      log(`memory, ${engine}: ${error.stack ?? error}`);
      lines.push(`  ${TITLES[engine]}: not measured: ${error.message}`);
      results[engine] = { error: error.message };
    }
  }
  return { lines, results, missed };
}

async function measure(engine, postgresUrl, log) {
  const db = await freshDatabase(engine, postgresUrl);
  const hooks = await hookReceiver();
  try {
    const server = await startServer(db.url);
    try {
      return await drive(engine, server, { hookUrl: hooks.url, backends: db.backends, log });
    } finally {
      await server.stop();
    }
  } finally {
    hooks.close();
    await db.drop();
  }
}

async function freshDatabase(engine, postgresUrl) {
  if (engine === "sqlite") {
    const dir = mkdtempSync(join(os.tmpdir(), "cribline-memory-"));
    return { url: `sqlite:${join(dir, "cribline.db")}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = workDatabaseName("memory");
  const drop = () => withClient(postgresUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  await drop();
  await withClient(postgresUrl, (c) => c.query(`CREATE DATABASE "${name}"`));
  return { url: postgresUrlFor(postgresUrl, name), drop, backends: () => backendMemory(postgresUrl, name) };
}

/** RssAnon summed over the server's connections' backends; NaN when they are not processes of this machine. */
async function backendMemory(postgresUrl, database) {
  const { rows } = await withClient(postgresUrl, (c) =>
    c.query("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'cribline'", [database]),
  );
  let sum = 0;
  for (const { pid } of rows) {
    try {
      sum += Number(/^RssAnon:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN) * 1024;
    } catch (error) {
      if (error.code === "ENOENT") continue; // that backend ended meanwhile (a connection closed)
      return NaN;
    }
  }
  return sum;
}

async function freePort() {
  const probe = net.createServer();
  await new Promise((done) => probe.listen(0, "127.0.0.1", done));
  const { port } = probe.address();
  await new Promise((done) => probe.close(done));
  return port;
}

/** `cribline serve --workers 1` (one process), its request log read and dropped; resolves once it listens. */
async function startServer(databaseUrl) {
  const metricsPort = await freePort();
  const args = memorySettings.snapshots ? ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${memorySettings.snapshots}`] : [];
  const child = spawn(process.execPath, [...args, "bin/cribline", "serve", "--workers", "1"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      CRIBLINE_CURSOR_SECRET: randomBytes(32).toString("hex"),
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      CRIBLINE_METRICS_PORT: String(metricsPort),
      CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true",
      // As run.mjs: the load should do the work it asks for, not be turned away after a few seconds.
      CRIBLINE_RATE_LIMIT_READ: "1000000000",
      CRIBLINE_RATE_LIMIT_SYNC: "1000000000",
      CRIBLINE_RATE_LIMIT_ANONYMOUS: "1000000000",
    },
  });
  const exited = new Promise((done) => child.once("exit", (code, signal) => done(code ?? signal)));
  const started = await new Promise((done, fail) => {
    let text = "";
    let key;
    const timer = setTimeout(() => fail(new Error("the server did not listen within 120 s")), 120_000);
    const onData = (chunk) => {
      text += chunk;
      key ??= /Demo API key \([^)]*\): (crib_\w+)/.exec(text)?.[1];
      const url = /cribline listening on (http:\/\/[\d.:]+)/.exec(text)?.[1];
      if (url === undefined) return;
      clearTimeout(timer);
      child.stdout.off("data", onData).resume();
      if (key === undefined) fail(new Error("the server printed no demo key: was the database not new?"));
      else done({ url, key });
    };
    child.stdout.setEncoding("utf8").on("data", onData);
    void exited.then((how) => fail(new Error(`the server exited before listening (${how})`)));
  });
  return {
    ...started,
    pid: child.pid,
    metrics: `http://127.0.0.1:${metricsPort}/metrics`,
    async stop() {
      child.kill("SIGTERM");
      if ((await Promise.race([exited, sleep(20_000).then(() => "timeout")])) === "timeout") child.kill("SIGKILL");
    },
  };
}

function status(pid) {
  const text = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, "m").exec(text)?.[1] ?? NaN) * 1024;
  return { rss: field("VmRSS"), hwm: field("VmHWM") };
}

/** The server's V8 heap (in use, and taken from the system) and the memory held outside it by buffers. */
async function heapOf(metricsUrl) {
  const text = await (await fetch(metricsUrl)).text();
  const metric = (name) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? NaN);
  return {
    used: metric("nodejs_heap_size_used_bytes"),
    total: metric("nodejs_heap_size_total_bytes"),
    external: metric("nodejs_external_memory_bytes"),
  };
}

async function drive(engine, server, { hookUrl, backends, log }) {
  const { seconds, concurrency, snapshots } = memorySettings;
  const load = hostileLoad({ key: server.key, seed: 49, hookUrl });
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const base = new URL(server.url);
  const statuses = new Map([200, 201, 204, 400, 401, 403, 404, 405, 409, 413, 415, 431].map((code) => [code, 0]));
  const startRss = status(server.pid).rss;
  let heap = await heapOf(server.metrics);
  let peakHeap = heap.used;
  let backendsPeak = NaN;
  let requests = 0;
  const began = performance.now();
  const until = began + seconds * 1000;
  const send = (request) => (request.raw === undefined ? exchange(agent, base, request) : rawExchange(base, request.raw));
  const worker = async () => {
    while (performance.now() < until) {
      const request = load.next();
      const { code, body } = await send(request).catch((error) => ({ code: error.code ?? "error", body: null }));
      requests += 1;
      statuses.set(code, (statuses.get(code) ?? 0) + 1);
      load.seen(request, code, body);
    }
  };
  const sampler = (async () => {
    let tick = 0;
    let snapped = 0;
    while (performance.now() < until) {
      await sleep(1000);
      tick += 1;
      if (tick % 5 === 0) {
        heap = await heapOf(server.metrics).catch(() => heap);
        peakHeap = Math.max(peakHeap, heap.used);
      }
      if (tick % 10 === 0 && backends !== undefined) {
        const held = await backends().catch(() => NaN);
        if (!Number.isNaN(held) && !(held <= backendsPeak)) backendsPeak = held;
      }
      if (tick % 10 === 0) {
        const now = `RSS ${mb(status(server.pid).rss)}, heap ${mb(heap.used)} used of ${mb(heap.total)}, external ${mb(heap.external)}`;
        log(`memory, ${engine}: ${tick} s, ${requests} requests, ${now}`);
      }
      if (snapshots !== undefined && snapped < 3 && tick >= ((snapped + 1) * seconds) / 4) {
        snapped += 1;
        process.kill(server.pid, "SIGUSR2");
      }
    }
  })();
  await Promise.all([...Array.from({ length: concurrency }, worker), sampler]);
  const elapsed = (performance.now() - began) / 1000;
  peakHeap = Math.max(peakHeap, (await heapOf(server.metrics)).used);
  const end = status(server.pid);
  if (snapshots !== undefined) {
    process.kill(server.pid, "SIGUSR2");
    await sleep(20_000); // writing a snapshot of a few hundred MB takes seconds; the server does it in-line
  }
  agent.destroy();
  return {
    startRss,
    endRss: end.rss,
    peakRss: end.hwm,
    peakHeap,
    backendsPeak,
    requests,
    counts: statuses,
    perSecond: requests / elapsed,
    statuses: [...statuses].map(([code, n]) => `${code}: ${n}`).join(", "),
  };
}

function exchange(agent, base, { method, path, headers, body }) {
  return new Promise((done, fail) => {
    const request = http.request({ agent, host: base.hostname, port: base.port, method, path, headers }, (response) => {
      const chunks = [];
      response.on("data", (chunk) => chunks.push(chunk)).on("error", fail);
      response.on("end", () => {
        // A 2xx JSON answer is what the load learns from (cursors, ids); the rest is only counted.
        const json = response.statusCode < 300 && /json/.test(response.headers["content-type"] ?? "");
        try {
          done({ code: response.statusCode, body: json ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : null });
        } catch (error) {
          fail(error);
        }
      });
    });
    request.on("error", fail).end(body);
  });
}

/** Bytes that are not a valid request, on a socket of their own; resolves once the server closes it. */
function rawExchange(base, raw) {
  return new Promise((done) => {
    const socket = net.connect(Number(base.port), base.hostname, () => socket.end(raw));
    let head = "";
    socket.setEncoding("latin1").on("data", (chunk) => (head += chunk));
    socket.setTimeout(5000, () => socket.destroy());
    socket.on("close", () => done({ code: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]) || "closed", body: null }));
    socket.on("error", () => undefined);
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const raw = process.env.BENCH_ENGINE || "all";
  const engines = raw === "all" ? ["sqlite", "postgres"] : [raw];
  if (!engines.every((e) => e in TITLES)) throw new Error(`BENCH_ENGINE must be all, sqlite or postgres, got "${raw}"`);
  const { lines, results, missed } = await runMemoryBench(engines, { postgresUrl: process.env.BENCH_POSTGRES_URL || DEFAULT_POSTGRES_URL });
  for (const line of lines) console.log(line);
  if (missed.length > 0) console.log(`MISSED: ${missed.join("; ")}`);
  if (Object.values(results).some((r) => r.error !== undefined)) process.exitCode = 1;
}
