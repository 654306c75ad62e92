/**
 * `cribline serve --workers N`: N processes behind one port with node's cluster module. The
 * primary readies the database (schema check, demo seed) once, then forks the workers and
 * replaces any that dies; each worker is an ordinary server (see server.ts). Nothing a
 * request relies on lives in one process: keys, cursors' secret and records are all in the
 * database or the configuration.
 */
import cluster, { type Worker } from "node:cluster";
import { availableParallelism } from "node:os";
import { RateLimiterClusterMaster } from "rate-limiter-flexible";
import { clusterGatherer, listenMetrics } from "./metrics/metrics.server.js";
import { ConfigError, type Config } from "./platform/config.js";
import { prepareDatabase } from "./runtime.js";
import { announceDemo, listeningOn, serveForever } from "./server.js";
import { ENGINES } from "./storage/engine.js";
import { holdServeLock } from "./storage/serve-lock.js";
import type { Siblings } from "./webhooks/delivery/ingestion.js";

/** One process per core on PostgreSQL; the embedded database is served by one process. */
export function workerCount(config: Config, requested: number | undefined): number {
  if (!ENGINES[config.database.engine].sharedByProcesses) {
    if (requested !== undefined && requested > 1) {
      throw new ConfigError("--workers above 1 needs PostgreSQL: the embedded SQLite database is served by one process");
    }
    return 1;
  }
  return requested ?? availableParallelism();
}

const RESTART_DELAY_MS = 1000;

/**
 * A worker's word to the others, relayed by the primary: its share of recent time spent
 * serving syncs (webhooks/delivery/ingestion.ts).
 */
const INGESTING = "cribline:ingesting";

interface IngestingMessage {
  type: typeof INGESTING;
  from: number;
  share: number;
}

const isIngesting = (message: unknown): message is IngestingMessage =>
  typeof message === "object" && message !== null && (message as IngestingMessage).type === INGESTING;

function workerSiblings(): Siblings {
  return {
    tell: (share) => {
      if (process.connected) process.send?.({ type: INGESTING, from: process.pid, share } satisfies IngestingMessage);
    },
    hear: (listener) =>
      process.on("message", (message) => {
        if (isIngesting(message)) listener(message.from, message.share);
      }),
  };
}

export async function serve(config: Config, requested: number | undefined): Promise<void> {
  if (cluster.isWorker) {
    try {
      return await serveForever(config, { seedDemo: false, print: () => undefined, siblings: workerSiblings() });
    } catch (error) {
      // A worker's channel to the primary keeps it alive: exit, so the primary sees it fail.
      process.stderr.write(`cribline: worker ${process.pid}: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    }
  }
  const workers = workerCount(config, requested);
  if (config.database.engine === "sqlite") holdServeLock(config.database.path);
  if (workers === 1) return serveForever(config);
  // Without a shared store, the workers count requests against rate limits here, together.
  if (config.rateLimits.redisUrl === undefined) new RateLimiterClusterMaster();
  // One scrape here gathers every worker's metrics, until the workers have stopped.
  const metrics = config.metrics === undefined ? undefined : await listenMetrics(config.metrics, clusterGatherer());
  if (metrics !== undefined) console.log(`cribline metrics of all workers on ${metrics.url}`);
  try {
    // The primary readies the database once; the workers then start on it as it is.
    const demo = await prepareDatabase(config);
    if (demo !== undefined) announceDemo(demo, `http://localhost:${config.port}`, console.log);
    await runPrimary(workers, config);
  } finally {
    await metrics?.close();
  }
}

function runPrimary(count: number, config: Config): Promise<void> {
  return new Promise((resolve, reject) => {
    let stopping = false;
    let announced = false;
    const listening = new Set<number>();
    // Our own count: cluster.workers drops a worker only once both its exit and its
    // disconnect have been seen, in either order, so it may still list the last one here.
    const alive = new Set<number>();
    const fork = () => {
      if (!stopping) alive.add(cluster.fork().id);
    };
    cluster.on("listening", (worker: Worker, address) => {
      listening.add(worker.id);
      if (announced || listening.size < count) return;
      announced = true;
      // A URL to reach them by: every interface's address is not one.
      const host = address.address ?? config.host;
      const reach = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "[::1]" : host.includes(":") ? `[${host}]` : host;
      const url = `http://${reach}:${address.port}`;
      console.log(`cribline listening on ${listeningOn(url, config.host)} with ${count} workers (API reference: ${url}/docs)`);
    });
    cluster.on("exit", (worker: Worker, code, signal) => {
      listening.delete(worker.id);
      alive.delete(worker.id);
      if (stopping) {
        if (alive.size === 0) resolve();
        return;
      }
      if (!announced) {
        // A worker that cannot start (the database went away after the check) is not retried
        // for ever before the service ever served: stop, and say so.
        stopping = true;
        for (const other of Object.values(cluster.workers ?? {})) other?.process.kill("SIGTERM");
        reject(new Error(`worker ${worker.process.pid} exited (${signal ?? code}) before the service started`));
        return;
      }
      process.stderr.write(`cribline: worker ${worker.process.pid} exited (${signal ?? code}); starting another\n`);
      setTimeout(fork, RESTART_DELAY_MS).unref();
    });
    const stop = () => {
      if (stopping) return;
      stopping = true;
      if (alive.size === 0) resolve();
      // Each worker finishes its requests in flight and closes its pool, as a single server does.
      for (const worker of Object.values(cluster.workers ?? {})) if (!worker?.isDead()) worker?.process.kill("SIGTERM");
    };
    cluster.on("message", (from: Worker, message: unknown) => {
      if (!isIngesting(message)) return;
      for (const worker of Object.values(cluster.workers ?? {}))
        if (worker !== undefined && worker !== from && worker.isConnected()) worker.send(message);
    });
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    for (let i = 0; i < count; i += 1) fork();
  });
}
