/**
 * The server prunes its webhook log by itself, as configured: started as `cribline serve`
 * starts it (startServer), with only the sweeper's clock and timing injected, it delivers a
 * synced record and logs the attempt; once that is older than CRIBLINE_WEBHOOK_RETENTION_DAYS
 * the attempt log no longer shows it, and with 0 it stays.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/platform/config.js";
import { startServer } from "../src/server.js";
import { createTenant, issueKey } from "../src/tenants/tenant.service.js";
import { createTestDatabase, type TestDatabase } from "./support/databases.js";
import { withdrawal } from "./support/factories.js";
import { Receiver } from "./support/receiver.js";

const DAY = 24 * 60 * 60 * 1000;
const receiver = new Receiver();
beforeAll(() => receiver.open());
afterAll(() => receiver.close());

const databases: TestDatabase[] = [];
afterAll(async () => {
  for (const database of databases) await database.drop();
});

/** A server as serve starts it, its sweeper's clock in the test's hands; runs `work`, then stops. */
async function withServer(retentionDays: string, work: (call: Call, clock: { now: number }) => Promise<void>): Promise<void> {
  const database = await createTestDatabase({ migrate: true });
  databases.push(database);
  const config = loadConfig({
    DATABASE_URL: database.url,
    CRIBLINE_CURSOR_SECRET: randomBytes(24).toString("hex"),
    CRIBLINE_DEMO: "false",
    CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true",
    CRIBLINE_WEBHOOK_RETENTION_DAYS: retentionDays,
    LOG_LEVEL: "silent",
    PORT: "0",
  });
  const clock = { now: Date.now() };
  const server = await startServer(config, {
    print: () => undefined,
    retention: { clock: () => clock.now, firstAfterMs: 0, intervalMs: 50 },
  });
  try {
    const slug = `r${randomBytes(4).toString("hex")}`;
    await createTenant(server.storage.db, slug);
    const { key } = await issueKey(server.storage.db, slug, ["read", "sync", "admin"]);
    const call: Call = async (method, path, body) => {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as any };
    };
    await work(call, clock);
  } finally {
    await server.close();
  }
}

type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

/** Polls until `done` holds or 5 s pass; returns whether it held. */
async function eventually(done: () => Promise<boolean>): Promise<boolean> {
  for (const until = Date.now() + 5000; Date.now() < until; await sleep(20)) if (await done()) return true;
  return false;
}

/** An endpoint on the receiver and one delivered withdrawal; returns the endpoint's attempts path. */
async function deliverOne(call: Call): Promise<string> {
  const endpoint = await call("POST", "/v1/webhook-endpoints", { url: receiver.url, events: ["withdrawal.created"] });
  expect(endpoint.status).toBe(201);
  expect((await call("POST", "/v1/sync/withdrawals", { data: [withdrawal()] })).status).toBe(200);
  const attempts = `/v1/webhook-endpoints/${endpoint.body.id}/attempts`;
  expect(await eventually(async () => (await call("GET", attempts)).body.data.length === 1)).toBe(true);
  return attempts;
}

describe("a server's own retention sweeps", () => {
  it("prune the attempt log once it is older than the retention period", async () => {
    await withServer("30", async (call, clock) => {
      const attempts = await deliverOne(call);
      clock.now += 29 * DAY;
      await sleep(200);
      expect((await call("GET", attempts)).body.data).toHaveLength(1);
      clock.now += 2 * DAY;
      expect(await eventually(async () => (await call("GET", attempts)).body.data.length === 0)).toBe(true);
    });
  });

  it("keep everything when the retention is 0", async () => {
    await withServer("0", async (call, clock) => {
      const attempts = await deliverOne(call);
      clock.now += 400 * DAY;
      await sleep(300);
      expect((await call("GET", attempts)).body.data).toHaveLength(1);
    });
  });
});
