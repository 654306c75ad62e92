/**
 * One cribline process, assembled: the database opened and its schema readied, the cursor
 * secret, the HTTP app, the webhook delivery loop and the webhook log's retention sweeper.
 * `cribline serve` (server.ts), each worker of `serve --workers` (workers.ts) and the bench
 * (bench/server.mjs) all start here, so what the bench measures is what ships.
 */
import { randomBytes } from "node:crypto";
import cluster from "node:cluster";
import v8 from "node:v8";
import type { FastifyInstance } from "fastify";
import { buildApp } from "./app.js";
import { listenMetrics, type MetricsListener } from "./metrics/metrics.server.js";
import { seedDemoOnFirstStart, type DemoResult } from "./demo/demo.service.js";
import { listenError, type Config } from "./platform/config.js";
import { CursorCodec } from "./platform/cursor.js";
import { openStorage } from "./storage/database.js";
import { ENGINES } from "./storage/engine.js";
import { ensureSchema } from "./storage/migrate.js";
import { putSettingOnce } from "./storage/settings.repository.js";
import type { Storage } from "./storage/storage.js";
import { DeliveryLoop } from "./webhooks/delivery/delivery.loop.js";
import { Ingestion, type Siblings } from "./webhooks/delivery/ingestion.js";
import { RetentionSweeper, type RetentionOptions } from "./webhooks/retention/retention.sweeper.js";

export interface RuntimeOptions {
  /** Seed the demo tenant on a new, empty database, when the configuration allows it (default: yes). */
  seedDemo?: boolean;
  /** Sibling processes on this machine (workers.ts), whose syncs this process's webhooks give way to too. */
  siblings?: Siblings;
  /** When and against which clock the webhook log is pruned (tests); how long it is kept comes from config. */
  retention?: Partial<Omit<RetentionOptions, "keepDays" | "eventKeepDays">>;
}

export interface Runtime {
  readonly config: Config;
  readonly storage: Storage;
  /** Built and not yet listening: routes may still be added (the bench adds one). */
  readonly app: FastifyInstance;
  /** The demo tenant this start made, if it made one. */
  readonly demo: DemoResult | undefined;
  /** Listens on the configured address, then starts the background work; resolves with the URL. */
  listen(): Promise<string>;
  /** Lets requests and webhook attempts in flight finish, then closes the database; once. */
  close(): Promise<void>;
}

/**
 * The engine's memory policy, set before anything is allocated. The embedded database is
 * served by one process with a memory budget, and V8 otherwise sizes its heap for the machine
 * (docs/architecture.md, Memory).
 */
function applyMemoryPolicy(config: Config): void {
  if (ENGINES[config.database.engine].favoursMemory) v8.setFlagsFromString("--optimize-for-size");
}

/** The configured cursor secret or, when there is none (SQLite only), one kept in the database itself. */
async function cursorCodecFor(config: Config, storage: Storage): Promise<CursorCodec> {
  if (config.cursorSecret !== undefined) return new CursorCodec(config.cursorSecret);
  // Kept with the embedded database, so cursors stay valid across restarts and restores.
  return new CursorCodec(await putSettingOnce(storage.db, "cursor_secret", randomBytes(32).toString("base64url")));
}

/** Opens the database and readies its schema (storage/migrate.ts), closing it again if that fails. */
async function openReady(config: Config, onBackgroundError?: (err: Error) => void): Promise<Storage> {
  const storage = await openStorage(config.database, { onBackgroundError });
  try {
    await ensureSchema(storage);
  } catch (error) {
    await storage.close();
    throw error;
  }
  return storage;
}

/** Readies the database once for processes that will start on it (the primary of `serve --workers`). */
export async function prepareDatabase(config: Config): Promise<DemoResult | undefined> {
  const storage = await openReady(config);
  try {
    return config.demoOnFirstStart ? await seedDemoOnFirstStart(storage) : undefined;
  } finally {
    await storage.close();
  }
}

export async function createRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  applyMemoryPolicy(config);
  // Until the app's logger exists, background failures are reported on stderr.
  const report = {
    lost: (err: Error): void => {
      process.stderr.write(`cribline: database connection lost: ${err.message}\n`);
    },
  };
  const storage = await openReady(config, (err) => report.lost(err));
  const demo = config.demoOnFirstStart && options.seedDemo !== false ? await seedDemoOnFirstStart(storage) : undefined;
  // Every process sends webhooks; leases keep two from sending one attempt. Syncs come first:
  // the loop gives way while they keep the process (or its siblings) busy.
  const ingestion = new Ingestion(Date.now, options.siblings);
  const failed = {
    delivery: (err: unknown): void => {
      process.stderr.write(`cribline: webhook delivery failed: ${String(err)}\n`);
    },
  };
  const deliveries = new DeliveryLoop(storage.db, { allowPrivate: config.webhooksAllowPrivate, ingesting: () => ingestion.busy() }, (err) =>
    failed.delivery(err),
  );
  const app = await buildApp({
    config,
    storage,
    cursors: await cursorCodecFor(config, storage),
    deliveriesQueued: () => deliveries.wake(),
    ingestion,
  });
  report.lost = (err) => app.log.warn({ err }, "database connection lost; it is reopened on the next query");
  failed.delivery = (err) => app.log.error({ err }, "webhook delivery failed");
  // A setting that turns off the guard against server-side request forgery must not go unnoticed:
  // every process that sends webhooks says so once.
  if (config.webhooksAllowPrivate) {
    app.log.warn(
      "CRIBLINE_WEBHOOKS_ALLOW_PRIVATE is on: webhooks may be sent to loopback and private addresses (for local development only)",
    );
  }
  const kept = { keepDays: config.webhookRetentionDays, eventKeepDays: config.eventRetentionDays };
  const retention =
    kept.keepDays === 0 && kept.eventKeepDays === 0
      ? undefined
      : new RetentionSweeper(
          storage.db,
          { ...options.retention, ...kept },
          (pruned) => {
            if (Object.values(pruned).some((n) => n > 0)) app.log.info({ pruned, ...kept }, "webhook log and events pruned");
          },
          (err) => app.log.error({ err }, "pruning the webhook log and events failed"),
        );
  let closing: Promise<void> | undefined;
  let metrics: MetricsListener | undefined;
  return {
    config,
    storage,
    app,
    demo,
    async listen() {
      const { host, port } = config;
      const url = await app
        .listen({ port, host })
        .catch((error: unknown) => Promise.reject(listenError(error, { host, port, hostSetting: "HOST", portSetting: "PORT" })));
      // The primary of `serve --workers` serves the metrics of all its workers (workers.ts).
      if (config.metrics !== undefined && !cluster.isWorker) {
        const listener = await listenMetrics(config.metrics);
        metrics = listener;
        app.log.info({ url: listener.url }, "metrics listening");
      }
      deliveries.start();
      retention?.start();
      return url;
    },
    // Requests in flight and attempts in flight finish first; then the database closes.
    close: () =>
      (closing ??= Promise.all([app.close(), deliveries.stop(), retention?.stop(), metrics?.close()]).then(() => storage.close())),
  };
}
