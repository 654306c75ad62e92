/**
 * Helpers to run the real `bin/cribline` executable (the compiled build in dist/) as a child
 * process, each test in its own temporary directory with its own SQLite file.
 */
import { execFile, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, beforeEach } from "vitest";
import { createTestDatabase, ENGINE, writerStarted, type TestDatabase } from "./databases.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const BIN = join(ROOT, "bin", "cribline");

export type Env = Record<string, string | undefined>;

export interface CliResult {
  /** Exit code; null when the process was ended by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface ServeProcess {
  /** Base URL, as the process printed it. */
  url: string;
  port: number;
  pid: number;
  stdout(): string;
  stderr(): string;
  /** Sends the signal and waits for the process to exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface Workspace {
  dir: string;
  /** The environment every command gets: its own database, no demo, no logs. */
  env: Env;
  /** Runs `cribline <args>` to completion, with `extra` on top of `env` (undefined removes a setting). */
  run(args: string[], extra?: Env): Promise<CliResult>;
  /** Starts `cribline serve <args>` (one process unless args say --workers) on a free port and waits until it prints that it listens. */
  serve(extra?: Env, args?: string[]): Promise<ServeProcess>;
  /** Starts `cribline serve <args>` on a free port without waiting for anything. */
  launch(extra?: Env, args?: string[]): Promise<LaunchedProcess>;
  /** Whether a process has begun writing to the workspace's database (see writerStarted). */
  writerStarted(): Promise<boolean>;
  /** Writes a file in the workspace; returns its path. */
  file(name: string, content: string | Uint8Array): string;
}

function childEnv(env: Env): NodeJS.ProcessEnv {
  // Only what is given: nothing of the test runner's own settings leaks into the CLI.
  const out: NodeJS.ProcessEnv = { PATH: process.env.PATH };
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/** What every process needs on PostgreSQL: the cursor secret is required configuration there. */
const POSTGRES_ENV: Env = ENGINE === "postgres" ? { CRIBLINE_CURSOR_SECRET: "cli-test-secret-".padEnd(40, "x") } : {};

export function lastLine(text: string): string {
  return text.trimEnd().split("\n").at(-1) ?? "";
}

/** A port that was free a moment ago: the kernel picks it, and the listener is closed again. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

function runCli(cwd: string, args: string[], env: Env): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd, env: childEnv(env), timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null;
        resolve({ code, signal: (error?.signal as NodeJS.Signals | undefined) ?? null, stdout, stderr });
      },
    );
  });
}

export interface LaunchedProcess {
  port: number;
  pid: number;
  stdout(): string;
  stderr(): string;
  /** Calls `listener` after each chunk of standard output arrives. */
  onStdout(listener: () => void): void;
  /** Sends the signal and waits for the process to exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

async function launchServe(cwd: string, env: Env, args: string[], track: (stop: () => Promise<void>) => void): Promise<LaunchedProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, "serve", ...args], {
    cwd,
    env: childEnv({ ...env, PORT: String(port) }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  track(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  });
  return {
    port,
    pid: child.pid!,
    stdout: () => stdout,
    stderr: () => stderr,
    onStdout: (listener) => child.stdout.on("data", listener),
    exited,
    stop: async (signal = "SIGTERM") => {
      child.kill(signal);
      return exited;
    },
  };
}

async function startServe(cwd: string, env: Env, args: string[], track: (stop: () => Promise<void>) => void): Promise<ServeProcess> {
  const launched = await launchServe(cwd, env, args, track);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`serve printed no "listening" line in 60 s\nstdout: ${launched.stdout()}\nstderr: ${launched.stderr()}`)),
      60_000,
    );
    launched.onStdout(() => {
      const match = /listening on (http:\/\/\S+)/.exec(launched.stdout());
      if (match === null) return;
      clearTimeout(timer);
      resolve(match[1]!);
    });
    void launched.exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`serve exited (${code ?? signal}) before listening\nstdout: ${launched.stdout()}\nstderr: ${launched.stderr()}`));
    });
  });
  return { url, port: launched.port, pid: launched.pid, stdout: launched.stdout, stderr: launched.stderr, stop: launched.stop };
}

/**
 * `serve` runs one process unless a test asks for workers (`--workers N`): on PostgreSQL its own
 * default is a worker per core, which tests of anything else would pay for at every start.
 * `serveDefaults` keeps serve's own default (for the tests of several processes).
 */
function serveArgs(args: string[], serveDefaults: boolean): string[] {
  return serveDefaults || args.includes("--workers") ? args : [...args, "--workers", "1"];
}

/**
 * Gives each test of the calling file a fresh temporary directory and SQLite database, and
 * stops any server the test started (by its own process handle) when the test ends.
 */
export function useCliWorkspace(options: { serveDefaults?: boolean } = {}): () => Workspace {
  const defaults = options.serveDefaults === true;
  let current: Workspace | undefined;
  let stops: (() => Promise<void>)[] = [];
  beforeAll(() => {
    if (!existsSync(join(ROOT, "dist", "cli", "main.js"))) throw new Error("no build in dist/: run `npm run build` first");
  });
  let database: TestDatabase | undefined;
  beforeEach(async () => {
    // On PostgreSQL, migrating is the operator's step before any other command: done here.
    database = await createTestDatabase({ migrate: ENGINE === "postgres" });
    const dir = database.dir;
    const env: Env = { DATABASE_URL: database.url, CRIBLINE_DEMO: "false", LOG_LEVEL: "silent", ...POSTGRES_ENV };
    current = {
      dir,
      env,
      run: (args, extra = {}) => runCli(dir, args, { ...env, ...extra }),
      serve: (extra = {}, args = []) => startServe(dir, { ...env, ...extra }, serveArgs(args, defaults), (stop) => stops.push(stop)),
      launch: (extra = {}, args = []) => launchServe(dir, { ...env, ...extra }, serveArgs(args, defaults), (stop) => stops.push(stop)),
      writerStarted: () => writerStarted(database!),
      file: (name, content) => {
        const path = join(dir, name);
        writeFileSync(path, content);
        return path;
      },
    };
  });
  afterEach(async () => {
    for (const stop of stops) await stop();
    stops = [];
    await database?.drop();
    current = undefined;
  });
  return () => {
    if (current === undefined) throw new Error("no workspace: call useCliWorkspace() at the top of the file");
    return current;
  };
}

export interface HttpReply {
  status: number;
  body: any;
}

export async function httpGet(url: string, key?: string): Promise<HttpReply> {
  const response = await fetch(url, { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body };
}

/** Reads a whole list from a running server by following cursors. */
export async function readAllOver(base: string, key: string, path: string, limit = 100): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 10_000; pages += 1) {
    const url: string = `${base}${path}${path.includes("?") ? "&" : "?"}limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
    const reply = await httpGet(url, key);
    if (reply.status !== 200) throw new Error(`GET ${url}: ${reply.status} ${JSON.stringify(reply.body)}`);
    items.push(...reply.body.data);
    cursor = reply.body.cursor;
    if (cursor === null) return items;
  }
  throw new Error("paging did not end");
}
