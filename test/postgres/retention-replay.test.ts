/**
 * On PostgreSQL a retention sweep and a replay may meet: a failed delivery old enough to be
 * pruned is replayed while the sweep deletes it. The replay, acknowledged, must win: the sweep
 * waits for its row lock and then passes the row by, now pending.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeliveryLoop } from "../../src/webhooks/delivery/delivery.loop.js";
import { insertEndpoint } from "../../src/webhooks/endpoint.repository.js";
import { replayDelivery } from "../../src/webhooks/admin/replay.repository.js";
import { RetentionSweeper } from "../../src/webhooks/retention/retention.sweeper.js";
import { withdrawal } from "../support/factories.js";
import { newTenant, sync, useServer } from "../support/harness.js";
import { Receiver } from "../support/receiver.js";

const DAY = 24 * 60 * 60 * 1000;
const server = useServer();
const receiver = new Receiver();
beforeAll(() => receiver.open());
afterAll(() => receiver.close());

describe("retention beside a replay", () => {
  it("keeps a delivery that a replay makes pending while the sweep deletes it", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    const start = Date.now() - 40 * DAY;
    const endpoint = await insertEndpoint(srv.storage.db, tenant.id, receiver.url, ["withdrawal.created"], start);
    srv.clock.now = start;
    await sync(srv, tenant, "withdrawals", [withdrawal()]);
    srv.clock.now = undefined;
    receiver.answers = [410];
    const loop = new DeliveryLoop(srv.storage.db, { clock: () => start, allowPrivate: true }, (err) => {
      throw err;
    });
    expect(await loop.runOnce()).toBe(1);
    const { id } = await srv.storage.db
      .selectFrom("webhook_deliveries")
      .select("id")
      .where("tenant_id", "=", tenant.id)
      .where("status", "=", "failed")
      .executeTakeFirstOrThrow();

    const now = Date.now();
    let swept: Promise<unknown> | undefined;
    await srv.storage.db.transaction().execute(async (trx) => {
      expect(await replayDelivery(trx, tenant.id, endpoint.id, id, now)).toBe(true);
      // The sweep starts while the replay holds the row, and reaches it before the replay commits.
      swept = new RetentionSweeper(srv.storage.db, { keepDays: 30, eventKeepDays: 30, clock: () => now }).sweep();
      await sleep(500);
    });
    await swept;

    const delivery = await srv.storage.db
      .selectFrom("webhook_deliveries")
      .select(["status", "attempts"])
      .where("tenant_id", "=", tenant.id)
      .where("id", "=", id)
      .executeTakeFirst();
    expect(delivery).toEqual({ status: "pending", attempts: 0 });
    const message = await srv.storage.db.selectFrom("webhook_messages").select("id").where("tenant_id", "=", tenant.id).execute();
    expect(message).toHaveLength(1);
  });
});
