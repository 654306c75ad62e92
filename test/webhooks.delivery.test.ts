/**
 * Webhook delivery (docs/webhooks.md) against a real HTTP receiver on loopback: signed as
 * Standard Webhooks says, retried with backoff on failure (honouring Retry-After) with the
 * same webhook-id, 410 disables the endpoint, a timeout is a failed attempt, the last attempt
 * fails the delivery, private addresses are refused unless allowed, and a delivery whose
 * sender died is sent again once its lease expires. The clock is injected.
 */
import { request as httpRequest } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { Webhook } from "standardwebhooks";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeliveryLoop } from "../src/webhooks/delivery/delivery.loop.js";
import { expandFanouts } from "../src/webhooks/delivery/fanout.repository.js";
import { RETRY_DELAYS_MS } from "../src/webhooks/delivery/retry-policy.js";
import { insertEndpoint, type NewEndpoint } from "../src/webhooks/endpoint.repository.js";
import { Ingestion } from "../src/webhooks/delivery/ingestion.js";
import { isPublicAddress } from "../src/webhooks/address.js";
import { withdrawal } from "./support/factories.js";
import { get, newTenant, request, sync, useServer, type TestServer, type TestTenant } from "./support/harness.js";
import { Receiver } from "./support/receiver.js";

const server = useServer();

const receiver = new Receiver();
beforeAll(() => receiver.open());
afterAll(() => receiver.close());

/** A clock the test moves; the delivery loop reads it. */
const clock = { now: Date.now() };

function loop(srv: TestServer, options: Partial<ConstructorParameters<typeof DeliveryLoop>[1]> = {}) {
  return new DeliveryLoop(
    srv.storage.db,
    { clock: () => clock.now, allowPrivate: true, random: () => 0.5, timeoutMs: 2000, ...options },
    (err) => {
      throw err;
    },
  );
}

/** A tenant with an endpoint on the receiver; what earlier tests left pending is set aside. */
async function setup(events = ["withdrawal.created"]): Promise<{ srv: TestServer; tenant: TestTenant; endpoint: NewEndpoint }> {
  const srv = server();
  await srv.storage.db.deleteFrom("webhook_fanouts").execute();
  await srv.storage.db.updateTable("webhook_deliveries").set({ status: "failed" }).where("status", "=", "pending").execute();
  const tenant = await newTenant(srv);
  const endpoint = await insertEndpoint(srv.storage.db, tenant.id, receiver.url, events, clock.now);
  receiver.received.length = 0;
  receiver.answers = [];
  return { srv, tenant, endpoint };
}

/** Syncs withdrawals at the test's clock, so that their deliveries are due at once. */
async function syncNow(srv: TestServer, tenant: TestTenant, records: Record<string, unknown>[]): Promise<void> {
  srv.clock.now = clock.now;
  try {
    await sync(srv, tenant, "withdrawals", records);
  } finally {
    srv.clock.now = undefined;
  }
}

async function delivery(srv: TestServer, tenant: TestTenant) {
  return srv.storage.db.selectFrom("webhook_deliveries").selectAll().where("tenant_id", "=", tenant.id).executeTakeFirstOrThrow();
}

async function attempts(srv: TestServer, tenant: TestTenant) {
  return srv.storage.db.selectFrom("webhook_attempts").selectAll().where("tenant_id", "=", tenant.id).orderBy("attempted_at").execute();
}

describe("webhook delivery", () => {
  it("sends a synced record signed as Standard Webhooks says, with data exactly as the list returns it", async () => {
    const { srv, tenant, endpoint } = await setup();
    const record = withdrawal();
    await syncNow(srv, tenant, [record]);

    expect(await loop(srv).runOnce()).toBe(1);
    expect(receiver.received).toHaveLength(1);
    const { headers, body } = receiver.received[0]!;
    expect(headers["content-type"]).toBe("application/json");
    expect(headers["webhook-id"]).toMatch(/^msg_/);
    expect(Number(headers["webhook-timestamp"])).toBe(Math.floor(clock.now / 1000));
    // The reference library also checks the timestamp against the real clock (5 minutes).
    const verified = new Webhook(endpoint.secret).verify(body, headers as Record<string, string>) as any;
    expect(verified.type).toBe("withdrawal.created");
    expect(verified.data).toEqual((await get(srv, "/v1/withdrawals", tenant.keys.read)).body.data[0]);

    expect(await delivery(srv, tenant)).toMatchObject({ status: "succeeded", attempts: 1, lease_until: null, next_attempt_at: null });
    const [logged] = await attempts(srv, tenant);
    expect(logged).toMatchObject({ status_code: 200, error: null, next_attempt_at: null, endpoint_id: endpoint.id });
    expect(await loop(srv).runOnce()).toBe(0);
  });

  it("retries after a failure with backoff, honouring Retry-After, with the same webhook-id", async () => {
    const { srv, tenant } = await setup();
    await syncNow(srv, tenant, [withdrawal()]);
    receiver.answers = [500, { status: 503, headers: { "retry-after": "600" } }, 204];

    await loop(srv).runOnce();
    let state = await delivery(srv, tenant);
    expect(state).toMatchObject({ status: "pending", attempts: 1 });
    expect(state.next_attempt_at).toBe(clock.now + RETRY_DELAYS_MS[0]!); // random 0.5: no jitter
    expect(await loop(srv).runOnce()).toBe(0); // not due yet

    clock.now += RETRY_DELAYS_MS[0]!;
    await loop(srv).runOnce();
    state = await delivery(srv, tenant);
    expect(state.next_attempt_at).toBe(clock.now + 600_000); // Retry-After beats the 5 minutes

    clock.now += 600_000;
    await loop(srv).runOnce();
    expect(await delivery(srv, tenant)).toMatchObject({ status: "succeeded", attempts: 3 });
    expect(new Set(receiver.received.map((r) => r.headers["webhook-id"])).size).toBe(1);
    expect((await attempts(srv, tenant)).map((a) => a.status_code)).toEqual([500, 503, 204]);
  });

  it("spreads retries with jitter of ±20 %", async () => {
    const { srv, tenant } = await setup();
    await syncNow(srv, tenant, [withdrawal()]);
    receiver.answers = [500];
    await loop(srv, { random: () => 0 }).runOnce();
    expect((await delivery(srv, tenant)).next_attempt_at).toBe(clock.now + RETRY_DELAYS_MS[0]! * 0.8);
  });

  it("fails the delivery after the last attempt, about three days on", async () => {
    const { srv, tenant } = await setup();
    await syncNow(srv, tenant, [withdrawal()]);
    receiver.answers = Array.from({ length: RETRY_DELAYS_MS.length + 1 }, () => 500);
    const started = clock.now;
    for (let i = 0; i <= RETRY_DELAYS_MS.length; i += 1) {
      expect(await loop(srv).runOnce()).toBe(1);
      const state = await delivery(srv, tenant);
      if (state.next_attempt_at !== null) clock.now = state.next_attempt_at;
    }
    expect(await delivery(srv, tenant)).toMatchObject({ status: "failed", attempts: RETRY_DELAYS_MS.length + 1, next_attempt_at: null });
    expect((clock.now - started) / 3_600_000).toBeGreaterThan(72);
    expect(await loop(srv).runOnce()).toBe(0);
  });

  it("disables the endpoint on 410, and sends it nothing more", async () => {
    const { srv, tenant, endpoint } = await setup();
    await syncNow(srv, tenant, [withdrawal(), withdrawal()]);
    receiver.answers = [410];
    await loop(srv, { batchSize: 1 }).runOnce();
    const stored = await srv.storage.db.selectFrom("webhook_endpoints").selectAll().where("id", "=", endpoint.id).executeTakeFirstOrThrow();
    expect(stored.disabled_at).not.toBeNull();
    expect(stored.disabled_reason).toMatch(/410/);
    expect(await loop(srv).runOnce()).toBe(0);
    expect(receiver.received).toHaveLength(1);
  });

  it("counts a receiver that does not answer in time as a failed attempt", async () => {
    const { srv, tenant } = await setup();
    await syncNow(srv, tenant, [withdrawal()]);
    receiver.answers = ["hang"];
    await loop(srv, { timeoutMs: 300 }).runOnce();
    const [logged] = await attempts(srv, tenant);
    expect(logged).toMatchObject({ status_code: null, error: "no answer within 0.3 s" });
    expect(logged!.duration_ms).toBeGreaterThanOrEqual(250);
    expect((await delivery(srv, tenant)).status).toBe("pending");
  });

  it("refuses loopback and private addresses unless allowed, without sending", async () => {
    const { srv, tenant } = await setup();
    await syncNow(srv, tenant, [withdrawal()]);
    await loop(srv, { allowPrivate: false }).runOnce();
    expect(receiver.received).toHaveLength(0);
    const [logged] = await attempts(srv, tenant);
    expect(logged!.error).toMatch(/^refused: 127\.0\.0\.1 is not a public address/);
    for (const address of [
      "127.0.0.1",
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "::1",
      "fd00::1",
      "fe80::1",
      "::ffff:10.0.0.1",
      "0.0.0.0",
    ]) {
      expect(isPublicAddress(address), address).toBe(false);
    }
    for (const address of ["93.184.216.34", "8.8.8.8", "2606:4700::1111"]) expect(isPublicAddress(address), address).toBe(true);
  });

  it("makes fan-outs deliveries only as the endpoint can take them, each message once, while failed ones wait", async () => {
    const { srv, tenant } = await setup();
    const batches = [0, 1, 2].map(() => Array.from({ length: 30 }, () => withdrawal()));
    for (const batch of batches) await syncNow(srv, tenant, batch);
    const rows = async (table: "webhook_deliveries" | "webhook_fanouts") =>
      (await srv.storage.db.selectFrom(table).select("id").where("tenant_id", "=", tenant.id).execute()).length;
    expect([await rows("webhook_fanouts"), await rows("webhook_deliveries")]).toEqual([3, 0]);
    clock.now += 10; // each batch's createdAt is a millisecond after the one before

    const small = { batchSize: 10, maxPerEndpoint: 10 };
    receiver.answers = Array.from({ length: 10 }, () => 500);
    expect(await loop(srv, small).runOnce()).toBe(10);
    // One batch became deliveries; the others wait as fan-outs until the endpoint can take more.
    expect([await rows("webhook_fanouts"), await rows("webhook_deliveries")]).toEqual([2, 30]);
    let sent = 10;
    for (let n = await loop(srv, small).runOnce(); n > 0; n = await loop(srv, small).runOnce()) sent += n;
    // The ten that failed wait for their retry (5 s on); the other 80 went meanwhile.
    expect(sent).toBe(90);
    expect([await rows("webhook_fanouts"), await rows("webhook_deliveries")]).toEqual([0, 90]);
    const ids = receiver.received.map((r) => JSON.parse(r.body).data.id as string);
    expect(new Set(ids).size).toBe(90);
    // Batch by batch, as they were synced (a round's attempts go at once, in any order).
    const sorted = (list: string[]) => [...list].sort();
    for (const [i, batch] of batches.entries()) {
      expect(sorted(ids.slice(30 * i, 30 * (i + 1))), `batch ${i}`).toEqual(sorted(batch.map((record) => record.id as string)));
    }
    clock.now += 10_000;
    expect(await loop(srv, small).runOnce()).toBe(10);
    expect(sorted(receiver.received.slice(90).map((r) => JSON.parse(r.body).data.id))).toEqual(sorted(ids.slice(0, 10)));
  });

  it("sends a delivery again, with the same webhook-id, when the process that took it died", async () => {
    const { srv, tenant, endpoint } = await setup();
    await syncNow(srv, tenant, [withdrawal()]);
    // A process takes it (makes its fan-out a delivery and leases that, as take does) and dies
    // before recording the attempt.
    await srv.storage.db.transaction().execute((trx) => expandFanouts(trx, tenant.id, endpoint.id, clock.now, 1));
    await srv.storage.db
      .updateTable("webhook_deliveries")
      .set({ lease_until: clock.now + 60_000, attempts: 1 })
      .where("tenant_id", "=", tenant.id)
      .execute();
    expect(await loop(srv).runOnce()).toBe(0); // still leased
    clock.now += 60_000;
    expect(await loop(srv).runOnce()).toBe(1);
    expect(await delivery(srv, tenant)).toMatchObject({ status: "succeeded", attempts: 2 });
    const message = await srv.storage.db
      .selectFrom("webhook_messages")
      .select("id")
      .where("tenant_id", "=", tenant.id)
      .executeTakeFirstOrThrow();
    expect(receiver.received[0]!.headers["webhook-id"]).toBe(message.id);
  });

  it.each([
    // After a full round the next is taken at once.
    { what: "takes the next round at once after a full one", count: 23, options: { batchSize: 5 } },
    // Each round may start only 5 of an endpoint's deliveries: the next comes as attempts end.
    { what: "drains an endpoint's backlog as fast as it answers", count: 40, options: { batchSize: 10, maxPerEndpoint: 5 } },
  ])("$what, without waiting for the next poll", async ({ count, options }) => {
    const { srv, tenant } = await setup();
    await syncNow(
      srv,
      tenant,
      Array.from({ length: count }, () => withdrawal()),
    );
    const running = loop(srv, options);
    running.start(3_600_000); // the next poll is an hour away
    try {
      await eventually(() => receiver.received.length === count);
      expect(new Set(receiver.received.map((r) => r.headers["webhook-id"])).size).toBe(count);
    } finally {
      await running.stop();
    }
  });

  it("sends at once when woken (sync wakes its process's loop), not at the next poll", async () => {
    const { srv, tenant } = await setup();
    const running = loop(srv);
    running.start(3_600_000);
    try {
      await sleep(50); // the first poll found nothing
      await syncNow(srv, tenant, [withdrawal()]);
      running.wake();
      await eventually(() => receiver.received.length === 1);
    } finally {
      await running.stop();
    }
  });

  it("keeps an endpoint that does not answer from holding up the others", async () => {
    const { srv, tenant } = await setup();
    const slow = new Receiver();
    await slow.open();
    slow.answers = Array.from({ length: 1000 }, () => "hang" as const);
    const slowTenant = await newTenant(srv);
    await insertEndpoint(srv.storage.db, slowTenant.id, slow.url, ["withdrawal.created"], clock.now);
    // The slow endpoint's 100 deliveries are due first.
    await syncNow(
      srv,
      slowTenant,
      Array.from({ length: 100 }, () => withdrawal()),
    );
    clock.now += 1;
    await syncNow(
      srv,
      tenant,
      Array.from({ length: 10 }, () => withdrawal()),
    );
    const running = loop(srv, { batchSize: 10, maxInFlight: 40, maxPerEndpoint: 5, timeoutMs: 60_000 });
    running.start(50);
    try {
      await eventually(() => receiver.received.length === 10);
      // No more than its share went to the slow endpoint.
      expect(slow.received.length).toBeLessThanOrEqual(5);
    } finally {
      await slow.close();
      await running.stop();
    }
  });

  it("leaves sync's commits durable after committing its own bookkeeping without waiting for the disk", async () => {
    const { srv, tenant } = await setup();
    await syncNow(srv, tenant, [withdrawal()]);
    receiver.answers = [500];
    expect(await loop(srv).runOnce()).toBe(1);
    const db = srv.storage.db;
    if (srv.storage.engine.name === "sqlite") {
      const { rows } = await sql<{ synchronous: number }>`pragma synchronous`.execute(db);
      expect(rows[0]!.synchronous).toBe(2); // FULL
    } else {
      const { rows } = await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(db);
      expect(rows[0]!.synchronous_commit).toBe("on");
    }
  });

  it("records every attempt of a busy round, whatever order they end in", async () => {
    const { srv, tenant } = await setup();
    await syncNow(
      srv,
      tenant,
      Array.from({ length: 60 }, () => withdrawal()),
    );
    receiver.answers = Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? 500 : 200));
    expect(await loop(srv, { batchSize: 60, maxPerEndpoint: 60 }).runOnce()).toBe(60);
    const logged = await attempts(srv, tenant);
    expect(logged).toHaveLength(60);
    expect(logged.filter((a) => a.status_code === 500)).toHaveLength(20);
    const states = await srv.storage.db.selectFrom("webhook_deliveries").select("status").where("tenant_id", "=", tenant.id).execute();
    expect(states.filter((d) => d.status === "pending")).toHaveLength(20);
    expect(states.filter((d) => d.status === "succeeded")).toHaveLength(40);
  });
});

describe("webhook delivery giving way to sync", () => {
  it("counts a sync as under way from its first bytes until it is answered, or its client goes", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    const body = JSON.stringify({ data: [withdrawal()] });
    expect(srv.ingestion.serving).toBe(0);

    const answered = slowSync(srv, tenant.keys.sync, body);
    await eventually(() => srv.ingestion.serving === 1);
    await sleep(100); // the body is still coming
    expect(srv.ingestion.serving).toBe(1);
    answered.finish();
    expect(await answered.status).toBe(200);
    await eventually(() => srv.ingestion.serving === 0);

    const dropped = slowSync(srv, tenant.keys.sync, body);
    await eventually(() => srv.ingestion.serving === 1);
    dropped.drop();
    await eventually(() => srv.ingestion.serving === 0);

    // A refused sync counts only until it is answered.
    expect((await request(srv, "POST", "/v1/sync/withdrawals", { key: tenant.keys.read, body: { data: [] } })).status).toBe(403);
    await eventually(() => srv.ingestion.serving === 0);
  });

  it("is busy when syncs fill most of the recent time, not for an occasional one, counting what its siblings tell", () => {
    const time = { now: 1_000 };
    const told: number[] = [];
    const here = new Ingestion(() => time.now, { tell: (share) => void told.push(share), hear: () => undefined });
    const sync = (ms: number) => {
      const end = here.begin();
      time.now += ms;
      end();
    };

    for (let i = 0; i < 20; i += 1) {
      sync(5); // 20 small syncs a second, 5 ms each
      expect(here.busy()).toBeUndefined();
      time.now += 45;
    }
    sync(100);
    expect(here.busy()).toBeUndefined(); // 100 ms is not yet most of the recent time
    sync(100);
    expect(here.busy()).toBe("here");
    // Told as syncs begin and end, at most every 50 ms: the share rose with the long syncs.
    expect(told.length).toBeGreaterThanOrEqual(20);
    expect(told.length).toBeLessThanOrEqual(2 * 20 + 4);
    expect(Math.max(...told)).toBeGreaterThan(0.5);
    const end = here.begin();
    end();
    end(); // ending twice counts once
    expect(here.serving).toBe(0);
    time.now += 150;
    expect(here.busy()).toBeUndefined(); // idle for 150 ms: no longer busy

    // A sibling busy with syncs makes the machine busy; its word fades unless it tells again.
    const relay: ((from: number, share: number) => void)[] = [];
    const there = new Ingestion(() => time.now, { tell: () => undefined, hear: (listener) => relay.push(listener) });
    const hear = (from: number, share: number) => relay.forEach((listener) => listener(from, share));
    expect(there.busy()).toBeUndefined();
    hear(1, 0.9);
    expect(there.busy()).toBe("sibling");
    time.now += 150;
    expect(there.busy()).toBeUndefined(); // 150 ms on, 0.9 has faded to 0.42
    // Two siblings at 0.3 each: together most of the machine's recent time.
    hear(1, 0.3);
    expect(there.busy()).toBeUndefined();
    hear(2, 0.3);
    expect(there.busy()).toBe("sibling");
  });

  it("starts a round at most every yieldIntervalMs while syncs are served, and at once when they end", async () => {
    const { srv, tenant } = await setup();
    await syncNow(srv, tenant, withdrawals(30));
    let ingesting: "here" | undefined = "here";
    await inRounds(srv, { ingesting: () => ingesting, yieldIntervalMs: 60_000 }, async (running) => {
      await eventually(() => receiver.received.length === 5);
      await sleep(500);
      expect(receiver.received).toHaveLength(5); // the next round waits for the interval
      ingesting = undefined;
      running.wake();
      await eventually(() => receiver.received.length === 30);
    });
  });

  it("waits siblingYieldIntervalMs instead when only a sibling process is busy with syncs", async () => {
    const { srv, tenant } = await setup();
    await syncNow(srv, tenant, withdrawals(10));
    await inRounds(srv, { ingesting: () => "sibling", yieldIntervalMs: 10, siblingYieldIntervalMs: 60_000 }, async () => {
      await eventually(() => receiver.received.length === 5);
      await sleep(300);
      expect(receiver.received).toHaveLength(5);
    });
  });

  it("stops giving way once what is due has waited longer than maxYieldLagMs", async () => {
    const { srv, tenant } = await setup();
    await syncNow(srv, tenant, withdrawals(30));
    clock.now += 11_000;
    try {
      await inRounds(srv, { ingesting: () => "here", yieldIntervalMs: 60_000, maxYieldLagMs: 10_000 }, () =>
        eventually(() => receiver.received.length === 30),
      );
    } finally {
      clock.now -= 11_000;
    }
  });
});

const withdrawals = (count: number) => Array.from({ length: count }, () => withdrawal());

/** Runs `work` while a loop taking rounds of 5 (5 per endpoint) polls every 10 ms with `options`. */
async function inRounds(
  srv: TestServer,
  options: Partial<ConstructorParameters<typeof DeliveryLoop>[1]>,
  work: (running: DeliveryLoop) => Promise<void>,
): Promise<void> {
  const running = loop(srv, { batchSize: 5, maxPerEndpoint: 5, ...options });
  running.start(10);
  try {
    await work(running);
  } finally {
    await running.stop();
  }
}

/** A sync of `body` that stops after its first 20 bytes until `finish()`, or whose client goes away (`drop()`). */
function slowSync(srv: TestServer, key: string, body: string) {
  const req = httpRequest(new URL("/v1/sync/withdrawals", srv.url), {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) },
  });
  const status = new Promise<number>((resolve, reject) => {
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on("error", reject);
  });
  req.write(body.slice(0, 20));
  return {
    status,
    finish: () => req.end(body.slice(20)),
    drop: () => {
      status.catch(() => undefined);
      req.destroy();
    },
  };
}

/** Waits for a condition that a background loop makes true (10 s at most). */
async function eventually(condition: () => boolean): Promise<void> {
  for (const started = Date.now(); !condition(); await sleep(10)) {
    if (Date.now() - started > 10_000) throw new Error("condition not met in 10 s");
  }
}
