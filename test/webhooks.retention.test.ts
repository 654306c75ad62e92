/**
 * The webhook log's retention: attempts, ended deliveries and messages that nothing will send
 * again go once older than the retention period; whatever may still be sent (pending or paused
 * deliveries, fan-outs of a disabled endpoint) stays with its message, and is sent whole when
 * its endpoint is enabled. Observed through the admin API and the receiver; the clock is injected.
 */
import type { KyselyPlugin, RootOperationNode } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/platform/config.js";
import { openStorage } from "../src/storage/database.js";
import { DeliveryLoop } from "../src/webhooks/delivery/delivery.loop.js";
import { expandFanouts } from "../src/webhooks/delivery/fanout.repository.js";
import { insertEndpoint, type NewEndpoint } from "../src/webhooks/endpoint.repository.js";
import { RetentionSweeper } from "../src/webhooks/retention/retention.sweeper.js";
import { FACTORIES, withdrawal } from "./support/factories.js";
import { newTenant, request, sync, useServer, type TestServer, type TestTenant } from "./support/harness.js";
import { Receiver } from "./support/receiver.js";

const DAY = 24 * 60 * 60 * 1000;
const server = useServer({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" });

const receiver = new Receiver();
beforeAll(() => receiver.open());
afterAll(() => receiver.close());

const clock = { now: Date.now() };

function loop(srv: TestServer) {
  return new DeliveryLoop(srv.storage.db, { clock: () => clock.now, allowPrivate: true, random: () => 0.5, timeoutMs: 2000 }, (err) => {
    throw err;
  });
}

function sweeper(srv: TestServer, keepDays = 30) {
  return new RetentionSweeper(srv.storage.db, {
    keepDays,
    eventKeepDays: keepDays,
    clock: () => clock.now,
    chunk: 2,
    firstAfterMs: 0,
    intervalMs: 10,
  });
}

async function syncAt(srv: TestServer, tenant: TestTenant, records: Record<string, unknown>[]): Promise<void> {
  srv.clock.now = clock.now;
  try {
    await sync(srv, tenant, "withdrawals", records);
  } finally {
    srv.clock.now = undefined;
  }
}

/** An endpoint on the receiver, told apart from the others by its query string. */
async function endpointOf(srv: TestServer, tenant: TestTenant, name: string): Promise<NewEndpoint> {
  return insertEndpoint(srv.storage.db, tenant.id, `${receiver.url}?to=${name}`, ["withdrawal.created"], clock.now);
}

const admin = (srv: TestServer, tenant: TestTenant, method: string, path: string) =>
  request(srv, method, `/v1/webhook-endpoints/${path}`, { key: tenant.keys.admin });

/** The record ids each endpoint received, by its name. */
function receivedBy(name: string): string[] {
  return receiver.received
    .filter((r) => r.url.endsWith(`?to=${name}`))
    .map((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id)
    .sort();
}

async function rows(srv: TestServer, tenant: TestTenant) {
  const db = srv.storage.db;
  const of = (table: "webhook_messages" | "webhook_deliveries" | "webhook_attempts" | "webhook_fanouts") =>
    db.selectFrom(table).selectAll().where("tenant_id", "=", tenant.id).execute();
  const messages = await of("webhook_messages");
  return {
    records: messages.map((m) => m.record_id).sort(),
    deliveries: (await of("webhook_deliveries")).map((d) => `${d.endpoint_id}:${d.status}`).sort(),
    attempts: (await of("webhook_attempts")).length,
    fanouts: (await of("webhook_fanouts")).map((f) => f.endpoint_id),
  };
}

describe("webhook log retention", () => {
  it("prunes what was written before the retention period and nothing will send again; keeps the rest", async () => {
    const srv = server();
    const start = clock.now;
    receiver.received.length = 0;
    receiver.answers = [];

    // Tenant A: "sent" received everything; "off" was disabled before its fan-out was expanded.
    const a = await newTenant(srv);
    const sent = await endpointOf(srv, a, "sent");
    const off = await endpointOf(srv, a, "off");
    const old = [withdrawal(), withdrawal()];
    await syncAt(srv, a, old);
    expect((await admin(srv, a, "POST", `${off.id}/disable`)).status).toBe(200);
    expect(await loop(srv).runOnce()).toBe(2);

    // Tenant B: "gone" answered 410 (its delivery failed); "paused" had its delivery made, then was disabled.
    const b = await newTenant(srv);
    const gone = await endpointOf(srv, b, "gone");
    receiver.answers = [410];
    const failed = withdrawal();
    await syncAt(srv, b, [failed]);
    expect(await loop(srv).runOnce()).toBe(1);
    const paused = await endpointOf(srv, b, "paused");
    const waiting = withdrawal();
    await syncAt(srv, b, [waiting]);
    await srv.storage.db.transaction().execute((trx) => expandFanouts(trx, b.id, paused.id, clock.now, 10));
    expect((await admin(srv, b, "POST", `${paused.id}/disable`)).status).toBe(200);

    // Twenty days later, one more record to A, delivered: it stays.
    clock.now = start + 20 * DAY;
    const recent = withdrawal();
    await syncAt(srv, a, [recent]);
    expect(await loop(srv).runOnce()).toBe(1);
    const sentAttempts = (await admin(srv, a, "GET", `${sent.id}/attempts`)).body.data as { deliveryId: string; attemptedAt: string }[];
    expect(sentAttempts).toHaveLength(3);
    const oldDelivery = sentAttempts.find((x) => Date.parse(x.attemptedAt) < start + DAY)!.deliveryId;
    const recentDelivery = sentAttempts.find((x) => Date.parse(x.attemptedAt) > start + DAY)!.deliveryId;

    expect(await rows(srv, a)).toEqual({
      records: [...old.map((r) => r.id), recent.id].sort(),
      deliveries: [`${sent.id}:succeeded`, `${sent.id}:succeeded`, `${sent.id}:succeeded`],
      attempts: 3,
      fanouts: [off.id],
    });

    // Thirty-one days after the start, with thirty days kept.
    clock.now = start + 31 * DAY;
    await sweeper(srv).sweep();

    expect(await rows(srv, a)).toEqual({
      // The old messages stay: the disabled endpoint's fan-out still names them.
      records: [...old.map((r) => r.id), recent.id].sort(),
      deliveries: [`${sent.id}:succeeded`],
      attempts: 1,
      fanouts: [off.id],
    });
    expect(await rows(srv, b)).toEqual({
      records: [waiting.id],
      deliveries: [`${paused.id}:paused`],
      attempts: 0,
      fanouts: [],
    });
    const left = (await admin(srv, a, "GET", `${sent.id}/attempts`)).body.data as { deliveryId: string }[];
    expect(left.map((x) => x.deliveryId)).toEqual([recentDelivery]);
    expect((await admin(srv, a, "POST", `${sent.id}/deliveries/${oldDelivery}/replay`)).status).toBe(404);
    expect((await admin(srv, a, "POST", `${sent.id}/deliveries/${recentDelivery}/replay`)).status).toBe(202);
    expect((await admin(srv, b, "GET", `${gone.id}/attempts`)).body.data).toEqual([]);

    // What was kept is still sent whole once its endpoint is enabled.
    receiver.received.length = 0;
    expect((await admin(srv, a, "POST", `${off.id}/enable`)).status).toBe(200);
    expect((await admin(srv, b, "POST", `${paused.id}/enable`)).status).toBe(200);
    while ((await loop(srv).runOnce()) > 0);
    expect(receivedBy("off")).toEqual(old.map((r) => r.id).sort());
    expect(receivedBy("paused")).toEqual([waiting.id]);
    expect(receivedBy("sent")).toEqual([recent.id]);
  });

  it("keeps everything written within the retention period, and prunes nothing twice", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    await endpointOf(srv, tenant, "kept");
    const records = [withdrawal(), withdrawal(), withdrawal()];
    await syncAt(srv, tenant, records);
    while ((await loop(srv).runOnce()) > 0);
    const before = await rows(srv, tenant);
    expect(before.attempts).toBe(3);

    clock.now += 29 * DAY;
    await sweeper(srv).sweep();
    expect(await rows(srv, tenant)).toEqual(before);

    clock.now += 2 * DAY;
    await sweeper(srv).sweep();
    expect(await rows(srv, tenant)).toEqual({ records: [], deliveries: [], attempts: 0, fanouts: [] });
    expect(await sweeper(srv).sweep()).toMatchObject({ attempts: 0, deliveries: 0, messages: 0 });
  });

  it("keeps the messages of a fan-out made deliveries while the sweep reads what names them", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    const late = await endpointOf(srv, tenant, "late");
    const old = withdrawal();
    await syncAt(srv, tenant, [old]);
    // Disabled before its fan-out was made deliveries, enabled again long after.
    expect((await admin(srv, tenant, "POST", `${late.id}/disable`)).status).toBe(200);
    clock.now += 40 * DAY;
    expect((await admin(srv, tenant, "POST", `${late.id}/enable`)).status).toBe(200);

    // Another process expands the fan-out right after the sweep's first read of what names the
    // old messages, fan-outs or deliveries (whichever it reads first).
    const other = await openStorage(srv.config.database);
    let expanded = false;
    const namesRead = (node: RootOperationNode) =>
      node.kind === "SelectQueryNode" && /"(message_id|message_ids)"/.test(JSON.stringify(node.selections ?? []));
    const reads = new Set<unknown>();
    const racing: KyselyPlugin = {
      transformQuery({ node, queryId }) {
        if (namesRead(node)) reads.add(queryId);
        return node;
      },
      async transformResult({ result, queryId }) {
        if (reads.has(queryId) && !expanded) {
          expanded = true;
          await other.db.transaction().execute((trx) => expandFanouts(trx, tenant.id, late.id, clock.now, 10));
        }
        return result;
      },
    };
    try {
      const sweeps = new RetentionSweeper(srv.storage.db.withPlugin(racing), {
        keepDays: 30,
        eventKeepDays: 30,
        clock: () => clock.now,
        chunk: 2,
      });
      await sweeps.sweep();
    } finally {
      await other.close();
    }
    expect(expanded).toBe(true);
    expect(await rows(srv, tenant)).toMatchObject({ records: [old.id], deliveries: [`${late.id}:pending`], fanouts: [] });
    receiver.received.length = 0;
    while ((await loop(srv).runOnce()) > 0);
    expect(receivedBy("late")).toEqual([old.id]);
  });

  it("fails a delivery whose message is gone, once and logged, instead of taking it again every lease", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    const endpoint = await endpointOf(srv, tenant, "orphan");
    await syncAt(srv, tenant, [withdrawal()]);
    await srv.storage.db.transaction().execute((trx) => expandFanouts(trx, tenant.id, endpoint.id, clock.now, 10));
    await srv.storage.db.deleteFrom("webhook_messages").where("tenant_id", "=", tenant.id).execute();
    receiver.received.length = 0;

    expect(await loop(srv).runOnce()).toBe(1);
    clock.now += 2 * 60 * 1000; // past any lease
    expect(await loop(srv).runOnce()).toBe(0);
    expect(receivedBy("orphan")).toEqual([]);
    expect((await rows(srv, tenant)).deliveries).toEqual([`${endpoint.id}:failed`]);
    const attempts = (await admin(srv, tenant, "GET", `${endpoint.id}/attempts`)).body.data as { error: string; nextAttemptAt: unknown }[];
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ nextAttemptAt: null });
    expect(attempts[0]!.error).toMatch(/no longer kept/);
  });

  it("removes fan-outs left for an endpoint that no longer exists", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    const endpoint = await endpointOf(srv, tenant, "deleted");
    const kept = await endpointOf(srv, tenant, "waiting");
    await syncAt(srv, tenant, [withdrawal()]);
    // A sync that read the endpoint just before it was deleted writes its fan-out afterwards.
    await srv.storage.db.deleteFrom("webhook_endpoints").where("tenant_id", "=", tenant.id).where("id", "=", endpoint.id).execute();
    expect((await rows(srv, tenant)).fanouts.sort()).toEqual([endpoint.id, kept.id].sort());

    expect((await sweeper(srv).sweep()).fanouts).toBeGreaterThanOrEqual(1);
    expect((await rows(srv, tenant)).fanouts).toEqual([kept.id]);
  });

  it("ends a sweep under way at its next pause when stopped; the next sweep deletes the rest", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    await endpointOf(srv, tenant, "many");
    await syncAt(
      srv,
      tenant,
      Array.from({ length: 30 }, () => withdrawal()),
    );
    while ((await loop(srv).runOnce()) > 0);
    expect((await rows(srv, tenant)).attempts).toBe(30);
    clock.now += 31 * DAY;

    const stopped = sweeper(srv);
    const sweeping = stopped.sweep();
    await stopped.stop();
    const first = await sweeping;
    expect(first.attempts).toBeLessThan(30);
    expect((await rows(srv, tenant)).attempts).toBe(30 - first.attempts);

    await sweeper(srv).sweep();
    expect(await rows(srv, tenant)).toEqual({ records: [], deliveries: [], attempts: 0, fanouts: [] });
  });

  it("sweeps once started, again after its interval, and stop waits for a sweep under way", async () => {
    const srv = server();
    const swept: unknown[] = [];
    const sweeps = new RetentionSweeper(
      srv.storage.db,
      { keepDays: 30, eventKeepDays: 30, clock: () => clock.now, firstAfterMs: 0, intervalMs: 20 },
      (pruned) => swept.push(pruned),
      (err) => {
        throw err;
      },
    );
    sweeps.start();
    const until = Date.now() + 5000;
    while (swept.length < 2 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
    await sweeps.stop();
    expect(swept.length).toBeGreaterThanOrEqual(2);
    const count = swept.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(swept).toHaveLength(count);
  });
});

describe("CRIBLINE_WEBHOOK_RETENTION_DAYS", () => {
  const base = { CRIBLINE_CURSOR_SECRET: "x".repeat(32) };
  it.each([
    [undefined, 30],
    ["0", 0],
    ["7", 7],
    ["365", 365],
  ])("%s keeps the log %s days (0: for ever)", (raw, days) => {
    const env = raw === undefined ? base : { ...base, CRIBLINE_WEBHOOK_RETENTION_DAYS: raw };
    expect(loadConfig(env).webhookRetentionDays).toBe(days);
  });

  it.each(["6", "1", "-1", "30d", "2.5", "99999"])("refuses %s with a clear message", (raw) => {
    expect(() => loadConfig({ ...base, CRIBLINE_WEBHOOK_RETENTION_DAYS: raw })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, CRIBLINE_WEBHOOK_RETENTION_DAYS: raw })).toThrow(/CRIBLINE_WEBHOOK_RETENTION_DAYS/);
  });
});

describe("event retention", () => {
  const kept = (srv: TestServer, tenant: TestTenant) =>
    srv.storage.db.selectFrom("webhook_messages").select("record_id").where("tenant_id", "=", tenant.id).orderBy("id").execute();

  it("prunes a tenant's events older than their own period, whatever the webhook log's, when it has no endpoint", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    const [old, recent] = [withdrawal(), withdrawal()];
    clock.now = Date.now() - 10 * DAY;
    await syncAt(srv, tenant, [old]);
    clock.now += 9 * DAY;
    await syncAt(srv, tenant, [recent]);
    clock.now += DAY;
    const sweep = (keepDays: number, eventKeepDays: number) =>
      new RetentionSweeper(srv.storage.db, { keepDays, eventKeepDays, clock: () => clock.now, chunk: 1 }).sweep();
    expect((await sweep(30, 0)).messages).toBe(0);
    expect((await sweep(0, 30)).messages).toBe(0);
    const pruned = await sweep(0, 7);
    expect(pruned.messages).toBe(1);
    expect((await kept(srv, tenant)).map((m) => m.record_id)).toEqual([recent.id]);
    // Its record stays: only the event goes.
    const listed = await request(srv, "GET", "/v1/withdrawals", { key: tenant.keys.read });
    expect(listed.body.data.map((r: { id: string }) => r.id).sort()).toEqual([old.id, recent.id].sort());
  });

  it("keeps an expired event only while a delivery the webhook log keeps names it", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    clock.now = Date.now() - 10 * DAY;
    const endpoint = await endpointOf(srv, tenant, "events-kept");
    const [taken, returned] = [withdrawal(), FACTORIES.returns!()];
    await syncAt(srv, tenant, [taken]);
    srv.clock.now = clock.now;
    try {
      await sync(srv, tenant, "returns", [returned]);
    } finally {
      srv.clock.now = undefined;
    }
    clock.now += 10 * DAY;
    const sweep = (keepDays: number, eventKeepDays: number) =>
      new RetentionSweeper(srv.storage.db, { keepDays, eventKeepDays, clock: () => clock.now, chunk: 5 }).sweep();
    // The return's event, which no endpoint took, goes at the events' cut-off, whatever the
    // webhook log's (here: kept for ever); the withdrawal's waits to be sent, as a fan-out.
    expect((await sweep(0, 7)).messages).toBe(1);
    expect((await kept(srv, tenant)).map((m) => m.record_id)).toEqual([taken.id]);
    expect((await sweep(7, 7)).messages).toBe(0);
    // Sent: its delivery stays in a log kept for ever, and so does its event (for a replay).
    const { db } = srv.storage;
    await db.transaction().execute((trx) => expandFanouts(trx, tenant.id, endpoint.id, clock.now, 1));
    await db
      .updateTable("webhook_deliveries")
      .set({ status: "succeeded", updated_at: clock.now - 10 * DAY })
      .where("tenant_id", "=", tenant.id)
      .execute();
    expect((await sweep(0, 7)).messages).toBe(0);
    expect(await kept(srv, tenant)).toHaveLength(1);
    // Once the log lets the delivery go, the event goes with it.
    const pruned = await sweep(7, 7);
    expect([pruned.deliveries, pruned.messages]).toEqual([1, 1]);
    expect(await kept(srv, tenant)).toEqual([]);
  });
});

describe("CRIBLINE_EVENT_RETENTION_DAYS", () => {
  const base = { CRIBLINE_CURSOR_SECRET: "x".repeat(32) };
  it.each([
    [undefined, 30],
    ["0", 0],
    ["1", 1],
    ["400", 400],
  ])("%s keeps events %s days (0: for ever)", (raw, days) => {
    const env = raw === undefined ? base : { ...base, CRIBLINE_EVENT_RETENTION_DAYS: raw };
    expect(loadConfig(env).eventRetentionDays).toBe(days);
  });

  it.each(["-1", "30d", "2.5", "99999", " 7"])("refuses %j with a clear message", (raw) => {
    expect(() => loadConfig({ ...base, CRIBLINE_EVENT_RETENTION_DAYS: raw })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, CRIBLINE_EVENT_RETENTION_DAYS: raw })).toThrow(/CRIBLINE_EVENT_RETENTION_DAYS/);
  });
});
