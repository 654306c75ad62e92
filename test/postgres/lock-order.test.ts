/**
 * Writers of the webhook tables side by side on PostgreSQL, as under hostile load: device
 * syncs that queue deliveries, admins disabling and enabling the endpoints, and two processes'
 * delivery loops leasing, sending and recording. Every writer takes its row locks in one
 * order (an endpoint before its deliveries, deliveries in primary-key order), so none of them
 * ever waits for another in a circle: no transaction is ever chosen as a deadlock's victim.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { DeliveryLoop } from "../../src/webhooks/delivery/delivery.loop.js";
import { device } from "../support/factories.js";
import { newTenant, request, useOtherPools, useServer, type TestTenant } from "../support/harness.js";
import { Receiver } from "../support/receiver.js";

const server = useServer({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" });
// Two processes' delivery loops, each on a pool of its own.
const { pools, close: closePools } = useOtherPools(server, 2);
const receiver = new Receiver();
beforeAll(() => receiver.open());
afterAll(() => receiver.close());

const RUN_MS = 8000;
const ENDPOINTS = 3;
/**
 * Rounds of many deliveries, whose outcomes are recorded in large groups: a group's deliveries
 * span several statements (runs of 500, 100, 20, 5, 1), the case where a lock order is easiest
 * to break.
 */
const LOOP = { batchSize: 150, maxPerEndpoint: 60, recordDelayMs: 40 };

/** Deadlocks PostgreSQL has detected in the test's database so far. */
async function deadlocks(): Promise<number> {
  const client = new pg.Client({ connectionString: (server().config.database as { url: string }).url });
  await client.connect();
  try {
    const { rows } = await client.query("select deadlocks from pg_stat_database where datname = current_database()");
    return Number(rows[0].deadlocks);
  } finally {
    await client.end();
  }
}

/** Runs `step` again and again until `until`, collecting what failed. */
async function repeat(until: number, failures: string[], step: () => Promise<string | undefined>): Promise<number> {
  let runs = 0;
  while (Date.now() < until) {
    const failed = await step();
    if (failed !== undefined) failures.push(failed);
    runs += 1;
  }
  return runs;
}

describe("webhook writers side by side", () => {
  it("syncs, disables and enables endpoints and delivers at once without a deadlock", { timeout: 60_000 }, async () => {
    const srv = server();
    const tenant: TestTenant = await newTenant(srv);
    const endpoints: string[] = [];
    for (let i = 0; i < ENDPOINTS; i += 1) {
      const created = await request(srv, "POST", "/v1/webhook-endpoints", {
        key: tenant.keys.admin,
        body: { url: `${receiver.url}?to=${i}`, events: ["device.created", "device.updated"] },
      });
      expect(created.status).toBe(201);
      endpoints.push(created.body.id);
    }
    const before = await deadlocks();
    const failures: string[] = [];
    const loops = pools.map(
      (pool) => new DeliveryLoop(pool.db, { allowPrivate: true, ...LOOP }, (err) => void failures.push(`delivery loop: ${String(err)}`)),
    );
    for (const loop of loops) loop.start(20);

    const until = Date.now() + RUN_MS;
    // Devices are master data: re-sending an id with a new name updates it, and announces that too.
    const ids = Array.from({ length: 400 }, (_, i) => `dev-lock-${i}`);
    let version = 0;
    const syncing = (offset: number) =>
      repeat(until, failures, async () => {
        version += 1;
        const data = ids.slice(offset, offset + 200).map((id) => device({ id, name: `Device ${id} v${version}` }));
        const reply = await request(srv, "POST", "/v1/sync/devices", { key: tenant.keys.sync, body: { data } });
        return reply.status === 200 ? undefined : `sync: ${reply.status} ${JSON.stringify(reply.body)}`;
      });
    const toggling = (endpoint: string) =>
      repeat(until, failures, async () => {
        for (const action of ["disable", "enable"]) {
          const reply = await request(srv, "POST", `/v1/webhook-endpoints/${endpoint}/${action}`, { key: tenant.keys.admin });
          if (reply.status !== 200) return `${action}: ${reply.status} ${JSON.stringify(reply.body)}`;
        }
        return undefined;
      });
    const runs = await Promise.all([syncing(0), syncing(200), ...endpoints.map(toggling)]);
    await Promise.all(loops.map((loop) => loop.stop()));

    expect(failures).toEqual([]);
    expect(Math.min(...runs), "every writer ran").toBeGreaterThan(2);
    expect(receiver.received.length, "deliveries were sent meanwhile").toBeGreaterThan(0);
    // Closing the pools ends their sessions, which report their statistics as they end.
    await closePools();
    expect((await deadlocks()) - before).toBe(0);
  });
});
