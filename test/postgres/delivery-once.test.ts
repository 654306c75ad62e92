/**
 * Two processes' delivery loops on one PostgreSQL database send every delivery once: a
 * delivery one takes is locked and leased, so the other skips it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeliveryLoop } from "../../src/webhooks/delivery/delivery.loop.js";
import { insertEndpoint } from "../../src/webhooks/endpoint.repository.js";
import { withdrawal } from "../support/factories.js";
import { newTenant, sync, useOtherPools, useServer } from "../support/harness.js";
import { Receiver } from "../support/receiver.js";

const server = useServer();
const { pools } = useOtherPools(server, 2);
const receiver = new Receiver();
beforeAll(() => receiver.open());
afterAll(() => receiver.close());

describe("two delivery loops on one database", () => {
  it("send each of 300 deliveries exactly once", { timeout: 60_000 }, async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    const now = Date.now();
    await insertEndpoint(srv.storage.db, tenant.id, receiver.url, ["withdrawal.created"], now);
    await insertEndpoint(srv.storage.db, tenant.id, receiver.url, ["withdrawal.created"], now);
    srv.clock.now = now;
    await sync(
      srv,
      tenant,
      "withdrawals",
      Array.from({ length: 150 }, () => withdrawal()),
    );
    srv.clock.now = undefined;

    const loops = pools.map((pool) => new DeliveryLoop(pool.db, { clock: () => now, allowPrivate: true, batchSize: 7 }));
    const taken = await Promise.all(
      loops.map(async (loop) => {
        let total = 0;
        for (let n = await loop.runOnce(); n > 0; n = await loop.runOnce()) total += n;
        return total;
      }),
    );
    expect(taken[0]! + taken[1]!).toBe(300);
    expect(Math.min(...taken), "both loops took part").toBeGreaterThan(0);
    const sent = receiver.received.map((r) => `${r.headers["webhook-id"]} ${r.headers["webhook-signature"]}`);
    expect(sent).toHaveLength(300);
    expect(new Set(sent).size).toBe(300);
    const states = await srv.storage.db
      .selectFrom("webhook_deliveries")
      .select(["status", "attempts"])
      .where("tenant_id", "=", tenant.id)
      .execute();
    expect(states.every((s) => s.status === "succeeded" && s.attempts === 1)).toBe(true);
  });
});
