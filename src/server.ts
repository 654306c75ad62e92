/** The server entry: the only place that listens. Shuts down cleanly on SIGINT and SIGTERM. */
import type { FastifyInstance } from "fastify";
import type { DemoResult } from "./demo/demo.service.js";
import type { Config } from "./platform/config.js";
import { createRuntime, type RuntimeOptions } from "./runtime.js";
import type { Storage } from "./storage/storage.js";

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

/**
 * Where the start-up line says the API listens: a URL to reach it by, and, where HOST names
 * every interface (`0.0.0.0`, `::`), that it listens on each of them, not only on that URL's.
 */
export function listeningOn(url: string, host: string): string {
  return host === "0.0.0.0" || host === "::" ? `${url} and every other interface (HOST=${host})` : url;
}

export interface StartOptions extends RuntimeOptions {
  print?: (line: string) => void;
}

export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const print = options.print ?? console.log;
  const runtime = await createRuntime(config, options);
  // Listening may fail after the API listens (the metrics listener's address): close what started.
  const url = await runtime.listen().catch(async (error: unknown) => {
    await runtime.close();
    throw error;
  });
  if (runtime.demo !== undefined) announceDemo(runtime.demo, url.replace("127.0.0.1", "localhost"), print);
  print(`cribline listening on ${listeningOn(url, config.host)} (API reference: ${url}/docs)`);
  return { app: runtime.app, storage: runtime.storage, url, close: () => runtime.close() };
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
