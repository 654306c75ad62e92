/** The server entry: the only place that listens. Shuts down cleanly on SIGINT and SIGTERM. */
import type { FastifyInstance } from "fastify";
import { buildApp } from "./app.js";
import type { Config } from "./platform/config.js";
import { cursorCodecFor } from "./platform/cursor-secret.js";
import { tuneRuntime } from "./platform/runtime.js";
import { openStorage, type Storage } from "./storage/database.js";
import { ensureSchema } from "./storage/migrate.js";
import { seedDemoOnFirstStart, type DemoResult } from "./demo/demo.service.js";
import { DeliveryLoop } from "./webhooks/delivery.js";
import { Ingestion, type Siblings } from "./webhooks/ingestion.js";
import { RetentionSweeper, type RetentionOptions } from "./webhooks/retention.js";

export interface RunningServer {
  app: FastifyInstance;
  storage: Storage;
  url: string;
  close(): Promise<void>;
}

/** Tells a newcomer the demo key and a request to try, once, when the demo tenant is made. */
export function announceDemo(demo: DemoResult, base: string, print: (line: string) => void): void {
  print(`\nNew database: created the "demo" tenant (${demo.summary}).`);
  print(`Demo API key (read, sync, admin): ${demo.key}`);
  print(`Try:\n  curl -s -H "Authorization: Bearer ${demo.key}" "${base}/v1/withdrawals?limit=3"\n`);
}

export interface StartOptions {
  print?: (line: string) => void;
  /** Seed the demo tenant on an empty database (when the config allows it). */
  seedDemo?: boolean;
  /** Sibling processes on this machine (workers.ts), whose syncs this process's webhooks give way to too. */
  siblings?: Siblings;
  /** When and against which clock the webhook log is pruned (tests); how long it is kept comes from config. */
  retention?: Partial<Omit<RetentionOptions, "keepDays">>;
}

export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const print = options.print ?? console.log;
  tuneRuntime(config.database.engine);
  // Until the app's logger exists, a lost idle connection is reported on stderr.
  let onBackgroundError = (err: Error): void => void process.stderr.write(`cribline: database connection lost: ${err.message}\n`);
  const storage = await openStorage(config.database, { onBackgroundError: (err) => onBackgroundError(err) });
  try {
    await ensureSchema(storage);
  } catch (error) {
    await storage.close();
    throw error;
  }
  const demo = config.demoOnFirstStart && options.seedDemo !== false ? await seedDemoOnFirstStart(storage) : undefined;
  // Every process sends webhooks; leases keep two from sending one attempt (webhooks/delivery.ts).
  let onDeliveryError = (err: unknown): void => void process.stderr.write(`cribline: webhook delivery failed: ${String(err)}\n`);
  // Syncs come first: the loop gives way while they are served (webhooks/ingestion.ts).
  const ingestion = new Ingestion(Date.now, options.siblings);
  const deliveries = new DeliveryLoop(storage.db, { allowPrivate: config.webhooksAllowPrivate, ingesting: () => ingestion.busy() }, (err) =>
    onDeliveryError(err),
  );
  const app = await buildApp({
    config,
    storage,
    cursors: await cursorCodecFor(config, storage),
    deliveriesQueued: () => deliveries.wake(),
    ingestion,
  });
  onBackgroundError = (err) => app.log.warn({ err }, "database connection lost; it is reopened on the next query");
  onDeliveryError = (err) => app.log.error({ err }, "webhook delivery failed");
  const retention =
    config.webhookRetentionDays === 0
      ? undefined
      : new RetentionSweeper(
          storage.db,
          { ...options.retention, keepDays: config.webhookRetentionDays },
          (pruned) => {
            if (Object.values(pruned).some((n) => n > 0))
              app.log.info({ pruned, keepDays: config.webhookRetentionDays }, "webhook log pruned");
          },
          (err) => app.log.error({ err }, "pruning the webhook log failed"),
        );
  const url = await app.listen({ port: config.port, host: config.host });
  if (demo !== undefined) announceDemo(demo, url.replace("127.0.0.1", "localhost"), print);
  print(`cribline listening on ${url} (API reference: ${url}/docs)`);
  deliveries.start();
  retention?.start();
  let closing: Promise<void> | undefined;
  // Requests in flight and attempts in flight finish first; then the database closes.
  const close = () => (closing ??= Promise.all([app.close(), deliveries.stop(), retention?.stop()]).then(() => storage.close()));
  return { app, storage, url, close };
}

/**
 * Runs until SIGINT or SIGTERM, then finishes the requests in flight and closes the database.
 * The handlers are installed before anything starts: a signal during start-up (migrations,
 * demo seeding) lets the start finish its transaction, then closes cleanly.
 */
export async function serveForever(config: Config, options: StartOptions = {}): Promise<void> {
  const state: { server?: RunningServer; stopping?: string } = {};
  const stop = async () => {
    try {
      await state.server?.close();
      process.exit(0);
    } catch (err) {
      state.server?.app.log.error({ err }, "shutdown failed");
      process.exit(1);
    }
  };
  const onSignal = (signal: string) => {
    if (state.stopping !== undefined) return;
    state.stopping = signal;
    if (state.server !== undefined) {
      state.server.app.log.info({ signal }, "shutting down");
      void stop();
    }
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  state.server = await startServer(config, options);
  if (state.stopping !== undefined) await stop();
}
