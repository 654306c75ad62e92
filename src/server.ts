/** The server entry: the only place that listens. Shuts down cleanly on SIGINT and SIGTERM. */
import type { FastifyInstance } from "fastify";
import { buildApp } from "./app.js";
import type { Config } from "./platform/config.js";
import { cursorCodecFor } from "./platform/cursor-secret.js";
import { tuneRuntime } from "./platform/runtime.js";
import { openStorage, type Storage } from "./storage/database.js";
import { migrateToLatest } from "./storage/migrate.js";
import { seedDemoOnFirstStart } from "./demo/demo.service.js";

export interface RunningServer {
  app: FastifyInstance;
  storage: Storage;
  url: string;
  close(): Promise<void>;
}

export async function startServer(config: Config, print: (line: string) => void = console.log): Promise<RunningServer> {
  tuneRuntime();
  const storage = await openStorage(config.database);
  await migrateToLatest(storage);
  const demo = config.demoOnFirstStart ? await seedDemoOnFirstStart(storage) : undefined;
  const app = await buildApp({ config, storage, cursors: await cursorCodecFor(config, storage) });
  const url = await app.listen({ port: config.port, host: config.host });
  if (demo !== undefined) {
    const base = url.replace("127.0.0.1", "localhost");
    print(`\nNew database: created the "demo" tenant (${demo.summary}).`);
    print(`Demo API key (read, sync, admin): ${demo.key}`);
    print(`Try:\n  curl -s -H "Authorization: Bearer ${demo.key}" "${base}/v1/withdrawals?limit=3"\n`);
  }
  print(`cribline listening on ${url} (API reference: ${url}/docs)`);
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= app.close().then(() => storage.close()));
  return { app, storage, url, close };
}

/**
 * Runs until SIGINT or SIGTERM, then finishes the requests in flight and closes the database.
 * The handlers are installed before anything starts: a signal during start-up (migrations,
 * demo seeding) lets the start finish its transaction, then closes cleanly.
 */
export async function serveForever(config: Config): Promise<void> {
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
  state.server = await startServer(config);
  if (state.stopping !== undefined) await stop();
}
