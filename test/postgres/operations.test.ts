/**
 * Operations on PostgreSQL: the database going away and coming back (through a TCP proxy the
 * test cuts and restores), and a statement that runs into the statement timeout. Neither may
 * give a 500 or need a restart.
 */
import { randomBytes } from "node:crypto";
import { createServer, connect, type Server, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../../src/app.js";
import { loadConfig } from "../../src/platform/config.js";
import { CursorCodec } from "../../src/platform/cursor.js";
import { openStorage, type Storage } from "../../src/storage/database.js";
import { createTenant, issueKey } from "../../src/tenants/tenant.service.js";
import { createTestDatabase, type TestDatabase } from "../support/databases.js";

/** A TCP proxy to PostgreSQL that can cut every connection and refuse new ones, then resume. */
class Proxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async open(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on("close", () => this.sockets.delete(socket));
        socket.on("error", () => socket.destroy());
      }
      client.pipe(upstream).pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, "127.0.0.1", resolve));
    const address = this.server.address();
    if (typeof address === "object" && address !== null) this.port = address.port;
  }

  /** Drops every connection and stops listening: the database is unreachable. */
  async cut(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}

interface Running {
  app: FastifyInstance;
  url: string;
  storage: Storage;
  key: string;
}

async function start(databaseUrl: string, env: Record<string, string> = {}): Promise<Running> {
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    CRIBLINE_CURSOR_SECRET: randomBytes(24).toString("hex"),
    LOG_LEVEL: "silent",
    ...env,
  });
  const storage = await openStorage(config.database);
  const app = await buildApp({ config, storage, cursors: new CursorCodec(config.cursorSecret!) });
  const url = await app.listen({ port: 0, host: "127.0.0.1" });
  const slug = `ops-${randomBytes(3).toString("hex")}`;
  await createTenant(storage.db, slug);
  const { key } = await issueKey(storage.db, slug, ["read"]);
  return { app, url, storage, key };
}

async function stop(running: Running): Promise<void> {
  await running.app.close();
  await running.storage.close();
}

async function get(running: Running, path: string, key?: string) {
  const response = await fetch(`${running.url}${path}`, { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } });
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    retryAfter: response.headers.get("retry-after"),
    body: (await response.json()) as any,
  };
}

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase({ migrate: true });
});
afterAll(async () => database.drop());

describe("a database that goes away and comes back", () => {
  it("makes /readyz 503 and requests 503 problems while it is gone, and all 200 again without a restart", async () => {
    const direct = new URL(database.url);
    const proxy = new Proxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    await proxy.open();
    const viaProxy = new URL(database.url);
    viaProxy.port = String(proxy.port);
    const running = await start(viaProxy.toString());
    try {
      expect((await get(running, "/readyz")).status).toBe(200);
      expect((await get(running, "/v1/withdrawals", running.key)).status).toBe(200);

      await proxy.cut();
      const ready = await get(running, "/readyz");
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({ status: 503, code: "service_unavailable" });
      expect(ready.retryAfter).toBe("1");
      const list = await get(running, "/v1/withdrawals", running.key);
      expect(list.status).toBe(503);
      expect(list.retryAfter).toBe("1");
      expect(list.type).toMatch(/^application\/problem\+json/);
      expect(list.body).toMatchObject({ code: "service_unavailable" });
      expect((await get(running, "/healthz")).status).toBe(200);

      await proxy.open();
      const deadline = Date.now() + 10_000;
      while ((await get(running, "/readyz")).status !== 200) {
        if (Date.now() > deadline) throw new Error("/readyz did not recover in 10 s");
        await sleep(100);
      }
      expect((await get(running, "/v1/withdrawals", running.key)).status).toBe(200);
    } finally {
      await stop(running);
      await proxy.cut().catch(() => undefined);
    }
  });
});

describe("the statement timeout", () => {
  it("cancels a query that waits too long and answers 503, then serves on", async () => {
    const running = await start(database.url, { DATABASE_STATEMENT_TIMEOUT_MS: "300" });
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    try {
      expect((await get(running, "/v1/withdrawals", running.key)).status).toBe(200);
      // Another session holds the table: the list query waits for it until cancelled.
      await locker.query("begin");
      await locker.query("lock table withdrawals in access exclusive mode");
      const started = Date.now();
      const blocked = await get(running, "/v1/withdrawals", running.key);
      expect(blocked.status).toBe(503);
      expect(blocked.body).toMatchObject({ code: "service_unavailable" });
      expect(Date.now() - started).toBeLessThan(5000);
      await locker.query("rollback");
      expect((await get(running, "/v1/withdrawals", running.key)).status).toBe(200);
    } finally {
      await locker.end();
      await stop(running);
    }
  });
});
