/**
 * Test harness: a real cribline server on loopback over a real database. Each test file
 * gets its own database; each test makes its own tenant and data with the factories.
 * SQLite by default; TEST_DATABASE_URL=postgres://... runs the same on PostgreSQL.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll } from "vitest";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../../src/app.js";
import { loadConfig, type Config } from "../../src/platform/config.js";
import { CursorCodec } from "../../src/platform/cursor.js";
import type { Scope } from "../../src/platform/keys.js";
import { openStorage, type Storage } from "../../src/storage/database.js";
import { migrateToLatest } from "../../src/storage/migrate.js";
import { createTenant, issueKey } from "../../src/tenants/tenant.service.js";
import type { Resolver } from "../../src/webhooks/admin/endpoint-url.js";
import { Ingestion } from "../../src/webhooks/delivery/ingestion.js";
import { createTestDatabase } from "./databases.js";

export interface TestServer {
  app: FastifyInstance;
  url: string;
  storage: Storage;
  config: Config;
  /** The clock the server stamps createdAt/updatedAt with; tests may pin it. */
  clock: { now: number | undefined };
  /** The sync requests the server counts as under way (a delivery loop would give way to them). */
  ingestion: Ingestion;
}

export interface TestTenant {
  slug: string;
  id: number;
  /** Keys by scope; `all` holds every scope. */
  keys: Record<Scope | "all", string>;
}

/** Starts one server for the calling test file and stops it after the file; `env` adds settings. */
export function useServer(
  env: Record<string, string> = {},
  options: { keyUsageFlushMs?: number; resolveHost?: Resolver } = {},
): () => TestServer {
  let server: TestServer | undefined;
  let close: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const database = await createTestDatabase();
    const config = loadConfig({
      DATABASE_URL: database.url,
      CRIBLINE_CURSOR_SECRET: randomBytes(24).toString("hex"),
      LOG_LEVEL: "silent",
      CRIBLINE_SYNC_BODY_LIMIT: String(1024 * 1024),
      ...env,
    });
    const storage = await openStorage(config.database);
    await migrateToLatest(storage);
    const clock: TestServer["clock"] = { now: undefined };
    const ingestion = new Ingestion();
    const app = await buildApp({
      config,
      storage,
      cursors: new CursorCodec(config.cursorSecret!),
      clock: () => clock.now ?? Date.now(),
      ingestion,
      keyUsageFlushMs: options.keyUsageFlushMs,
      resolveHost: options.resolveHost,
    });
    const url = await app.listen({ port: 0, host: "127.0.0.1" });
    server = { app, url, storage, config, clock, ingestion };
    close = async () => {
      await app.close();
      await storage.close();
      await database.drop();
    };
  });
  afterAll(async () => close?.());
  return () => {
    if (server === undefined) throw new Error("server not started: call useServer() at the top of the file");
    return server;
  };
}

let tenantCounter = 0;

export async function newTenant(server: TestServer): Promise<TestTenant> {
  tenantCounter += 1;
  const slug = `t${process.pid}-${tenantCounter}-${randomBytes(3).toString("hex")}`;
  const id = await createTenant(server.storage.db, slug);
  const key = async (scopes: Scope[]) => (await issueKey(server.storage.db, slug, scopes)).key;
  return {
    slug,
    id,
    keys: {
      read: await key(["read"]),
      sync: await key(["sync"]),
      admin: await key(["admin"]),
      all: await key(["read", "sync", "admin"]),
    },
  };
}

export interface Reply<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

export async function request<T = any>(
  server: TestServer,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; rawBody?: string | Uint8Array; headers?: Record<string, string> } = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  let body: string | Uint8Array | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["content-type"] ??= "application/json";
  }
  const response = await fetch(`${server.url}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed as T };
}

export const get = <T = any>(server: TestServer, path: string, key?: string) =>
  request<T>(server, "GET", path, key === undefined ? {} : { key });

/** Syncs records and fails the test unless they were stored. */
export async function sync(server: TestServer, tenant: TestTenant, collection: string, data: unknown[]): Promise<void> {
  const reply = await request(server, "POST", `/v1/sync/${collection}`, { key: tenant.keys.sync, body: { data } });
  if (reply.status !== 200) throw new Error(`sync failed: ${reply.status} ${JSON.stringify(reply.body)}`);
}

/** Reads a whole list by following cursors; returns the pages' items in order. */
export async function readAll(
  server: TestServer,
  key: string,
  path: string,
  limits: number[] = [100],
): Promise<{ items: any[]; pages: number }> {
  const items: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const limit = limits[pages % limits.length]!;
    const sep = path.includes("?") ? "&" : "?";
    const url: string = `${path}${sep}limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
    const reply: Reply<any> = await get(server, url, key);
    if (reply.status !== 200) throw new Error(`GET ${url}: ${reply.status} ${JSON.stringify(reply.body)}`);
    items.push(...reply.body.data);
    cursor = reply.body.cursor;
    pages += 1;
    if (pages > 10_000) throw new Error("paging did not end");
  } while (cursor !== null);
  return { items, pages };
}

/**
 * Other processes' connection pools on the calling test file's database (see useServer),
 * opened before its tests and closed after them, or earlier by the test (`close`).
 */
export function useOtherPools(server: () => TestServer, count: number): { pools: Storage[]; close(): Promise<void> } {
  const pools: Storage[] = [];
  const close = async () => {
    for (const pool of pools.splice(0)) await pool.close();
  };
  beforeAll(async () => {
    for (let i = 0; i < count; i += 1) pools.push(await openStorage(server().config.database));
  });
  afterAll(close);
  return { pools, close };
}

/** The plan a cursor carries for the rest of its walk (`p` in its signed payload), if any. */
export function planOfCursor(cursor: string): string | undefined {
  return (JSON.parse(Buffer.from(cursor.split(".")[0]!, "base64url").toString("utf8")) as { p?: string }).p;
}
