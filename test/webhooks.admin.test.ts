/**
 * The webhook admin API over HTTP (docs/webhooks.md): endpoints are created, listed with the
 * conventions of every list, read, deleted, disabled, enabled and their secret rotated; bad
 * input is a 400 with its own code; each endpoint's attempts are listed; one delivery, or the
 * failed ones of a time range, are replayed. Deliveries go to a real receiver on loopback, sent
 * by a delivery loop on the test's clock.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeliveryLoop } from "../src/webhooks/delivery/delivery.loop.js";
import { RETRY_DELAYS_MS } from "../src/webhooks/delivery/retry-policy.js";
import { EVENT_TYPES } from "../src/webhooks/events.js";
import { employee, withdrawal } from "./support/factories.js";
import { newTenant, request, sync, useServer, type Reply, type TestServer, type TestTenant } from "./support/harness.js";
import { Receiver } from "./support/receiver.js";

/** A server that lets endpoints be on loopback (the receiver), and one with the default guard. */
const server = useServer({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" });
const guarded = useServer();

const receiver = new Receiver();
const other = new Receiver();
beforeAll(async () => {
  await receiver.open();
  await other.open();
});
afterAll(async () => {
  await receiver.close();
  await other.close();
});

const BASE = "/v1/webhook-endpoints";
const HOUR = 3_600_000;
/** The test's clock: the server stamps records and endpoints with it, the loop sends by it. */
const clock = { now: Date.parse("2026-11-22T10:00:00.000Z") };

function call(tenant: TestTenant, method: string, path: string, body?: unknown, srv: TestServer = server()): Promise<Reply<any>> {
  srv.clock.now = clock.now;
  return request(srv, method, path, { key: tenant.keys.admin, body });
}

async function create(tenant: TestTenant, events = ["withdrawal.created"], url = receiver.url): Promise<any> {
  const reply = await call(tenant, "POST", BASE, { url, events });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

async function syncAt(tenant: TestTenant, collection: string, records: Record<string, unknown>[]): Promise<void> {
  server().clock.now = clock.now;
  await sync(server(), tenant, collection, records);
}

/** Sends what is due at the test's clock, as any serving process does. */
async function deliver(): Promise<number> {
  const loop = new DeliveryLoop(
    server().storage.db,
    { clock: () => clock.now, allowPrivate: true, random: () => 0.5, timeoutMs: 2000 },
    (err) => {
      throw err;
    },
  );
  return loop.runOnce();
}

/** A fresh tenant; deliveries that earlier tests left due are set aside so each test sees its own. */
async function tenantWithCleanSlate(): Promise<TestTenant> {
  await server().storage.db.deleteFrom("webhook_fanouts").execute();
  await server().storage.db.updateTable("webhook_deliveries").set({ status: "failed" }).where("status", "=", "pending").execute();
  receiver.received.length = 0;
  receiver.answers = [];
  other.received.length = 0;
  return newTenant(server());
}

function expectProblem(reply: Reply<any>, status: number, code: string): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(reply.body).toMatchObject({ type: "about:blank", status, code, title: expect.any(String), detail: expect.any(String) });
}

async function readAllPages(tenant: TestTenant, path: string, limit: number): Promise<{ items: any[]; pages: number }> {
  const items: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const query: string = `limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
    const reply = await call(tenant, "GET", `${path}${path.includes("?") ? "&" : "?"}${query}`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.data.length).toBeLessThanOrEqual(limit);
    items.push(...reply.body.data);
    cursor = reply.body.cursor;
    pages += 1;
  } while (cursor !== null);
  return { items, pages };
}

describe("creating a webhook endpoint", () => {
  it("answers 201 with the endpoint, its Location and a Standard Webhooks secret shown once", async () => {
    const tenant = await newTenant(server());
    const reply = await call(tenant, "POST", BASE, { url: receiver.url, events: ["withdrawal.created", "employee.updated"] });
    expect(reply.status).toBe(201);
    expect(reply.body).toEqual({
      id: expect.stringMatching(/^we_/),
      url: receiver.url,
      description: null,
      events: ["withdrawal.created", "employee.updated"],
      enabled: true,
      disabledReason: null,
      previousSecretExpiresAt: null,
      createdAt: new Date(clock.now).toISOString(),
      updatedAt: new Date(clock.now).toISOString(),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
    });
    expect(reply.headers.get("location")).toBe(`${BASE}/${reply.body.id}`);
    const read = await call(tenant, "GET", `${BASE}/${reply.body.id}`);
    expect(read.status).toBe(200);
    const { secret, ...withoutSecret } = reply.body;
    expect(secret).toBeDefined();
    expect(read.body).toEqual(withoutSecret);
  });

  it("takes every event type there is", async () => {
    const tenant = await newTenant(server());
    expect((await create(tenant, [...EVENT_TYPES])).events).toEqual(EVENT_TYPES);
  });

  const long = `https://example.com/${"a".repeat(2000)}`;
  const good = { url: "https://93.184.216.34/h", events: ["withdrawal.created"] };
  it.each<[string, unknown, string]>([
    ["no body", undefined, "invalid_body"],
    ["an array", [], "invalid_body"],
    ["a string", "https://example.com", "invalid_body"],
    ["an unknown field", { url: "https://93.184.216.34/h", events: ["withdrawal.created"], secret: "x" }, "invalid_body"],
    ["no url", { events: ["withdrawal.created"] }, "invalid_url"],
    ["a url that is not a string", { url: 42, events: ["withdrawal.created"] }, "invalid_url"],
    ["a relative url", { url: "/hooks", events: ["withdrawal.created"] }, "invalid_url"],
    ["a url that is not a URL", { url: "not a url", events: ["withdrawal.created"] }, "invalid_url"],
    ["an ftp url", { url: "ftp://93.184.216.34/h", events: ["withdrawal.created"] }, "invalid_url"],
    ["a url with a password", { url: "https://user:pw@93.184.216.34/h", events: ["withdrawal.created"] }, "invalid_url"],
    ["a url over 2,000 characters", { url: long, events: ["withdrawal.created"] }, "invalid_url"],
    ["a host that does not resolve", { url: "https://cribline-test.invalid/h", events: ["withdrawal.created"] }, "invalid_url"],
    ["no events", { url: "https://93.184.216.34/h" }, "unknown_event"],
    ["an empty event list", { url: "https://93.184.216.34/h", events: [] }, "unknown_event"],
    ["events that are not a list", { url: "https://93.184.216.34/h", events: "withdrawal.created" }, "unknown_event"],
    ["an unknown event type", { url: "https://93.184.216.34/h", events: ["withdrawal.deleted"] }, "unknown_event"],
    ["an update of a transaction", { url: "https://93.184.216.34/h", events: ["withdrawal.updated"] }, "unknown_event"],
    ["an event type twice", { url: "https://93.184.216.34/h", events: ["withdrawal.created", "withdrawal.created"] }, "unknown_event"],
    ["an event type that is not a string", { url: "https://93.184.216.34/h", events: [1] }, "unknown_event"],
    ["a description over 500 characters", { ...good, description: "d".repeat(501) }, "invalid_body"],
    ["a description with a line break", { ...good, description: "ERP\nsync" }, "invalid_body"],
  ])("refuses %s with a 400 that says what to fix, and stores nothing", async (_label, body, code) => {
    const tenant = await newTenant(server());
    expectProblem(await call(tenant, "POST", BASE, body), 400, code);
    expect((await call(tenant, "GET", BASE)).body).toEqual({ data: [], cursor: null });
  });

  it("names the event types it knows when it refuses one", async () => {
    const tenant = await newTenant(server());
    const reply = await call(tenant, "POST", BASE, { url: "https://93.184.216.34/h", events: ["withdrawl.created"] });
    expect(reply.body.detail).toContain('"withdrawl.created"');
    expect(reply.body.detail).toContain("training-record.created");
  });

  it("refuses a body that is not JSON with 415", async () => {
    const tenant = await newTenant(server());
    const reply = await request(server(), "POST", BASE, {
      key: tenant.keys.admin,
      rawBody: "url=https://93.184.216.34/h",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expectProblem(reply, 415, "unsupported_media_type");
  });

  it.each([
    "http://127.0.0.1:8080/h",
    "http://localhost/h",
    "http://api.localhost/h",
    "http://localhost./h",
    "http://API.Localhost./h",
    "http://10.0.0.5/h",
    "http://172.16.3.4/h",
    "http://192.168.0.10/h",
    "http://169.254.169.254/latest/meta-data",
    "http://0.0.0.0/h",
    "http://[::1]/h",
    "http://[fd12::1]/h",
    "http://[::ffff:10.0.0.1]/h",
    "http://2130706433/h", // 127.0.0.1 written as one number
  ])("refuses %s, not a public address, unless the setting allows it", async (url) => {
    const tenant = await newTenant(guarded());
    const reply = await call(tenant, "POST", BASE, { url, events: ["withdrawal.created"] }, guarded());
    expectProblem(reply, 400, "private_address");
    expect(reply.body.detail).toMatch(/not a public address/);
  });

  it("accepts a public address on the guarded server", async () => {
    const tenant = await newTenant(guarded());
    const reply = await call(tenant, "POST", BASE, { url: "https://93.184.216.34/hooks", events: ["withdrawal.created"] }, guarded());
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  });
});

describe("listing webhook endpoints", () => {
  it("pages newest first with limit and cursor, ending with cursor null, and shows no secret", async () => {
    const tenant = await newTenant(server());
    const created: string[] = [];
    for (let i = 0; i < 7; i += 1) {
      // Two share each createdAt: ties are broken by id, descending.
      clock.now += i % 2 === 0 ? 1000 : 0;
      created.push((await create(tenant)).id);
    }
    const { items, pages } = await readAllPages(tenant, BASE, 3);
    expect(pages).toBe(3);
    const expected = created.map((id, i) => ({ id, at: Math.floor(i / 2) }));
    expected.sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1));
    expect(items.map((e) => e.id)).toEqual(expected.map((e) => e.id));
    for (const item of items) expect(item).not.toHaveProperty("secret");
    expect((await call(tenant, "GET", `${BASE}?limit=7`)).body.cursor).toBeNull();
  });

  it("shows a tenant only its own endpoints", async () => {
    const [mine, theirs] = [await newTenant(server()), await newTenant(server())];
    const endpoint = await create(mine);
    expect((await call(theirs, "GET", BASE)).body).toEqual({ data: [], cursor: null });
    for (const [method, path] of [
      ["GET", `${BASE}/${endpoint.id}`],
      ["DELETE", `${BASE}/${endpoint.id}`],
      ["POST", `${BASE}/${endpoint.id}/disable`],
      ["POST", `${BASE}/${endpoint.id}/rotate-secret`],
      ["GET", `${BASE}/${endpoint.id}/attempts`],
    ] as const) {
      expectProblem(await call(theirs, method, path), 404, "not_found");
    }
    expect((await call(mine, "GET", `${BASE}/${endpoint.id}`)).body.enabled).toBe(true);
  });

  it.each(["%00", "we_a%00b", "we_%E2%80%8F", "we_%F0%9F%94%91", "we%20x", "x".repeat(101)])(
    "answers 404, never 500, for the path id %s, which no endpoint or delivery can have",
    async (bad) => {
      const tenant = await newTenant(server());
      const endpoint = await create(tenant);
      const range = { since: "2026-11-01T00:00:00Z", until: "2026-11-30T00:00:00Z" };
      for (const [method, path, body] of [
        ["GET", `${BASE}/${bad}`],
        ["DELETE", `${BASE}/${bad}`],
        ["POST", `${BASE}/${bad}/disable`],
        ["POST", `${BASE}/${bad}/enable`],
        ["POST", `${BASE}/${bad}/rotate-secret`],
        ["GET", `${BASE}/${bad}/attempts`],
        ["POST", `${BASE}/${bad}/replay`, range],
        ["POST", `${BASE}/${bad}/deliveries/dlv_x/replay`],
        ["POST", `${BASE}/${endpoint.id}/deliveries/${bad}/replay`],
      ] as const) {
        expectProblem(await call(tenant, method, path, body), 404, "not_found");
      }
      expect((await call(tenant, "GET", `${BASE}/${endpoint.id}`)).body.enabled).toBe(true);
    },
  );

  it.each<[string, string]>([
    ["limit=0", "invalid_limit"],
    ["limit=101", "invalid_limit"],
    ["limit=1e1", "invalid_limit"],
    ["limit=", "empty_parameter"],
    ["limit=1&limit=2", "repeated_parameter"],
    ["name=x", "unknown_parameter"],
    ["cursor=garbage", "invalid_cursor"],
  ])("refuses ?%s like every list", async (query, code) => {
    const tenant = await newTenant(server());
    expectProblem(await call(tenant, "GET", `${BASE}?${query}`), 400, code);
  });

  it("refuses a cursor of another tenant or of another list", async () => {
    const [mine, theirs] = [await newTenant(server()), await newTenant(server())];
    await create(mine);
    await create(mine);
    const cursor = (await call(mine, "GET", `${BASE}?limit=1`)).body.cursor as string;
    expectProblem(await call(theirs, "GET", `${BASE}?cursor=${encodeURIComponent(cursor)}`), 400, "invalid_cursor");
    await syncAt(mine, "employees", [employee(), employee()]);
    const employees = await request(server(), "GET", "/v1/employees?limit=1", { key: mine.keys.all });
    const foreign = employees.body.cursor as string;
    expectProblem(await call(mine, "GET", `${BASE}?cursor=${encodeURIComponent(foreign)}`), 400, "invalid_cursor");
  });
});

describe("changing a webhook endpoint", () => {
  it("deletes it with its fan-outs, deliveries and log: 204, then 404", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant);
    await syncAt(tenant, "withdrawals", [withdrawal()]);
    receiver.answers = [500];
    await deliver();
    await syncAt(tenant, "withdrawals", [withdrawal()]); // a fan-out not yet made deliveries
    const reply = await call(tenant, "DELETE", `${BASE}/${endpoint.id}`);
    expect(reply.status).toBe(204);
    expect(reply.body).toBeUndefined();
    expectProblem(await call(tenant, "DELETE", `${BASE}/${endpoint.id}`), 404, "not_found");
    expectProblem(await call(tenant, "GET", `${BASE}/${endpoint.id}`), 404, "not_found");
    const { db } = server().storage;
    expect(await db.selectFrom("webhook_deliveries").selectAll().where("tenant_id", "=", tenant.id).execute()).toEqual([]);
    expect(await db.selectFrom("webhook_fanouts").selectAll().where("tenant_id", "=", tenant.id).execute()).toEqual([]);
    expect(await db.selectFrom("webhook_attempts").selectAll().where("tenant_id", "=", tenant.id).execute()).toEqual([]);
    clock.now += HOUR;
    expect(await deliver()).toBe(0);
  });

  it("disables it: nothing is sent or queued for it; enabling sends what waited", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant);
    await syncAt(tenant, "withdrawals", [withdrawal({ id: `waited-${tenant.id}` })]);

    const disabled = await call(tenant, "POST", `${BASE}/${endpoint.id}/disable`);
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({ id: endpoint.id, enabled: false, disabledReason: "disabled by an admin" });
    await syncAt(tenant, "withdrawals", [withdrawal({ id: `meanwhile-${tenant.id}` })]);
    expect(await deliver()).toBe(0);
    expect(receiver.received).toHaveLength(0);

    const enabled = await call(tenant, "POST", `${BASE}/${endpoint.id}/enable`);
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null });
    expect(await deliver()).toBe(1);
    expect(receiver.received.map((r) => JSON.parse(r.body).data.id)).toEqual([`waited-${tenant.id}`]);
  });

  it("enabling sends at once also a delivery whose attempt failed after the endpoint was disabled", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant);
    await syncAt(tenant, "withdrawals", [withdrawal({ id: `in-flight-${tenant.id}` })]);
    receiver.answers = ["hang"];
    const underWay = deliver();
    while (receiver.received.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await call(tenant, "POST", `${BASE}/${endpoint.id}/disable`)).body.enabled).toBe(false);
    await underWay; // the attempt times out: its retry would be due 5 s later
    clock.now += 1000;
    expect(await deliver()).toBe(0);
    receiver.received.length = 0;

    expect((await call(tenant, "POST", `${BASE}/${endpoint.id}/enable`)).body.enabled).toBe(true);
    expect(await deliver()).toBe(1);
    expect(receiver.received.map((r) => JSON.parse(r.body).data.id)).toEqual([`in-flight-${tenant.id}`]);
  });

  it("refuses a body on disable and enable, but takes an empty object", async () => {
    const tenant = await newTenant(server());
    const endpoint = await create(tenant);
    expectProblem(await call(tenant, "POST", `${BASE}/${endpoint.id}/disable`, { reason: "x" }), 400, "invalid_body");
    expect((await call(tenant, "GET", `${BASE}/${endpoint.id}`)).body.enabled).toBe(true);
    expect((await call(tenant, "POST", `${BASE}/${endpoint.id}/disable`, {})).body.enabled).toBe(false);
    expectProblem(await call(tenant, "POST", `${BASE}/${endpoint.id}/enable`, []), 400, "invalid_body");
  });

  it("rotates the secret: both sign during the grace period, then the new one alone", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant);
    const rotated = await call(tenant, "POST", `${BASE}/${endpoint.id}/rotate-secret`, { gracePeriodSeconds: 3600 });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(endpoint.secret);
    expect(rotated.body.previousSecretExpiresAt).toBe(new Date(clock.now + HOUR).toISOString());

    await syncAt(tenant, "withdrawals", [withdrawal()]);
    await deliver();
    // Signatures computed by the reference library from each secret (its verify() would also
    // hold the timestamp to the real clock, which this test moves).
    const signatures = (secret: string, { headers, body }: (typeof receiver.received)[number]) => ({
      expected: new Webhook(secret).sign(String(headers["webhook-id"]), new Date(Number(headers["webhook-timestamp"]) * 1000), body),
      sent: String(headers["webhook-signature"]).split(" "),
    });
    const during = receiver.received[0]!;
    expect(signatures(endpoint.secret, during).sent).toHaveLength(2);
    for (const secret of [endpoint.secret, rotated.body.secret]) {
      const { expected, sent } = signatures(secret, during);
      expect(sent).toContain(expected);
    }

    clock.now += HOUR + 1;
    await syncAt(tenant, "withdrawals", [withdrawal()]);
    await deliver();
    const after = receiver.received[1]!;
    expect(signatures(rotated.body.secret, after).sent).toEqual([signatures(rotated.body.secret, after).expected]);
    expect(signatures(endpoint.secret, after).sent).not.toContain(signatures(endpoint.secret, after).expected);
  });

  it("rotates with no grace period when asked, and with a day by default", async () => {
    const tenant = await newTenant(server());
    const endpoint = await create(tenant);
    const now = (await call(tenant, "POST", `${BASE}/${endpoint.id}/rotate-secret`, { gracePeriodSeconds: 0 })).body;
    expect(now.previousSecretExpiresAt).toBeNull();
    const byDefault = (await call(tenant, "POST", `${BASE}/${endpoint.id}/rotate-secret`)).body;
    expect(byDefault.previousSecretExpiresAt).toBe(new Date(clock.now + 24 * HOUR).toISOString());
    for (const body of [{ gracePeriodSeconds: -1 }, { gracePeriodSeconds: 1.5 }, { gracePeriodSeconds: "60" }, { grace: 60 }]) {
      expectProblem(await call(tenant, "POST", `${BASE}/${endpoint.id}/rotate-secret`, body), 400, "invalid_body");
    }
  });

  it.each<[string, string]>([
    [BASE, "GET, HEAD, POST"],
    [`${BASE}/we_x`, "GET, HEAD, PATCH, DELETE"],
    [`${BASE}/we_x/disable`, "POST"],
    [`${BASE}/we_x/enable`, "POST"],
    [`${BASE}/we_x/rotate-secret`, "POST"],
    [`${BASE}/we_x/attempts`, "GET, HEAD"],
    [`${BASE}/we_x/replay`, "POST"],
    [`${BASE}/we_x/deliveries/dlv_x/replay`, "POST"],
  ])("answers other methods on %s with 405 and Allow: %s", async (path, allow) => {
    const tenant = await newTenant(server());
    for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"].filter((m) => !allow.split(", ").includes(m))) {
      const reply = await call(tenant, method, path);
      expectProblem(reply, 405, "method_not_allowed");
      expect(reply.headers.get("allow")).toBe(allow);
    }
  });
});

describe("the attempt log", () => {
  it("lists each attempt newest first with its outcome, response code, duration and next retry", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant);
    await syncAt(tenant, "withdrawals", [withdrawal()]);
    receiver.answers = [503, 200];
    await deliver();
    const firstAt = clock.now;
    clock.now += RETRY_DELAYS_MS[0]!;
    await deliver();

    const { items, pages } = await readAllPages(tenant, `${BASE}/${endpoint.id}/attempts`, 1);
    expect(pages).toBe(2);
    const webhookId = receiver.received[0]!.headers["webhook-id"];
    expect(items).toEqual([
      {
        id: expect.stringMatching(/^att_/),
        deliveryId: expect.stringMatching(/^dlv_/),
        webhookId,
        eventType: "withdrawal.created",
        attemptedAt: expect.any(String),
        status: "succeeded",
        responseCode: 200,
        durationMs: expect.any(Number),
        error: null,
        nextAttemptAt: null,
      },
      {
        id: expect.stringMatching(/^att_/),
        deliveryId: items[0].deliveryId,
        webhookId,
        eventType: "withdrawal.created",
        attemptedAt: expect.any(String),
        status: "failed",
        responseCode: 503,
        durationMs: expect.any(Number),
        error: "HTTP 503",
        nextAttemptAt: new Date(firstAt + RETRY_DELAYS_MS[0]!).toISOString(),
      },
    ]);
    expect(Date.parse(items[0].attemptedAt)).toBeGreaterThan(Date.parse(items[1].attemptedAt));
  });

  it("keeps the attempts of one outcome, or of a time window, and binds a cursor to them", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant);
    await syncAt(tenant, "withdrawals", [withdrawal()]);
    receiver.answers = [503, 200];
    await deliver();
    const failedAt = clock.now;
    clock.now += RETRY_DELAYS_MS[0]!;
    await deliver();
    const attempts = `${BASE}/${endpoint.id}/attempts`;
    const statuses = async (query: string) => (await call(tenant, "GET", `${attempts}?${query}`)).body.data.map((a: any) => a.responseCode);
    expect(await statuses("status=failed")).toEqual([503]);
    expect(await statuses("status=succeeded")).toEqual([200]);
    const at = (ms: number) => new Date(ms).toISOString();
    expect(await statuses(`attemptedSince=${at(failedAt + 1)}`)).toEqual([200]);
    expect(await statuses(`attemptedUntil=${at(failedAt + 1)}`)).toEqual([503]);
    expect(await statuses(`status=failed&attemptedSince=${at(failedAt + 1)}`)).toEqual([]);
    const { items } = await readAllPages(tenant, `${attempts}?status=failed`, 1);
    expect(items.map((a: any) => a.status)).toEqual(["failed"]);
    const cursor = (await call(tenant, "GET", `${attempts}?limit=1`)).body.cursor as string;
    expectProblem(await call(tenant, "GET", `${attempts}?status=failed&cursor=${encodeURIComponent(cursor)}`), 400, "invalid_cursor");
  });

  it("records a receiver that never answered with no response code", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant, ["employee.created"]);
    await syncAt(tenant, "employees", [employee()]);
    receiver.answers = ["hang"];
    await new DeliveryLoop(server().storage.db, { clock: () => clock.now, allowPrivate: true, timeoutMs: 200 }).runOnce();
    const [attempt] = (await call(tenant, "GET", `${BASE}/${endpoint.id}/attempts`)).body.data;
    expect(attempt).toMatchObject({ status: "failed", responseCode: null, error: "no answer within 0.2 s", eventType: "employee.created" });
    expect(attempt.nextAttemptAt).not.toBeNull();
  });

  it("refuses bad paging parameters and another endpoint's cursor", async () => {
    const tenant = await tenantWithCleanSlate();
    const [a, b] = [await create(tenant), await create(tenant)];
    await syncAt(tenant, "withdrawals", [withdrawal(), withdrawal()]);
    await deliver();
    const cursor = (await call(tenant, "GET", `${BASE}/${a.id}/attempts?limit=1`)).body.cursor as string;
    expect(cursor).toEqual(expect.any(String));
    expectProblem(await call(tenant, "GET", `${BASE}/${b.id}/attempts?cursor=${encodeURIComponent(cursor)}`), 400, "invalid_cursor");
    expectProblem(await call(tenant, "GET", `${BASE}/${a.id}/attempts?limit=0`), 400, "invalid_limit");
    expectProblem(await call(tenant, "GET", `${BASE}/${a.id}/attempts?colour=red`), 400, "unknown_parameter");
    expectProblem(await call(tenant, "GET", `${BASE}/${a.id}/attempts?status=retried`), 400, "invalid_parameter");
    const reversed = await call(
      tenant,
      "GET",
      `${BASE}/${a.id}/attempts?attemptedSince=2026-11-02T00:00:00Z&attemptedUntil=2026-11-01T00:00:00Z`,
    );
    expectProblem(reversed, 400, "invalid_time_window");
    expect(reversed.body.param).toBe("attemptedSince");
    expectProblem(await call(tenant, "GET", `${BASE}/we_missing/attempts`), 404, "not_found");
  });
});

/**
 * Makes every due delivery fail for good (each attempt answered 500, to the last); returns the
 * webhook-id of each record sent.
 */
async function failEverything(): Promise<Map<string, string>> {
  receiver.answers = Array.from({ length: 100 }, () => 500);
  for (let i = 0; i <= RETRY_DELAYS_MS.length; i += 1) {
    await deliver();
    clock.now += 25 * HOUR;
  }
  const sent = new Map(receiver.received.map((r) => [JSON.parse(r.body).data.id as string, String(r.headers["webhook-id"])]));
  receiver.answers = [];
  receiver.received.length = 0;
  return sent;
}

describe("replaying deliveries", () => {
  it("replays one failed delivery with the same webhook-id and a fresh retry schedule", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant);
    await syncAt(tenant, "withdrawals", [withdrawal()]);
    await deliver();
    const webhookId = receiver.received[0]!.headers["webhook-id"];
    receiver.received.length = 0;
    await call(tenant, "POST", `${BASE}/${endpoint.id}/disable`);
    await call(tenant, "POST", `${BASE}/${endpoint.id}/enable`);
    const [attempt] = (await call(tenant, "GET", `${BASE}/${endpoint.id}/attempts`)).body.data;

    // Even a delivery that succeeded can be sent again (the receiver lost it).
    const reply = await call(tenant, "POST", `${BASE}/${endpoint.id}/deliveries/${attempt.deliveryId}/replay`);
    expect(reply.status).toBe(202);
    expect(reply.body).toEqual({ replayed: 1 });
    receiver.answers = [500];
    expect(await deliver()).toBe(1);
    clock.now += RETRY_DELAYS_MS[0]!;
    expect(await deliver()).toBe(1);
    expect(receiver.received.map((r) => r.headers["webhook-id"])).toEqual([webhookId, webhookId]);
  });

  it("keeps a replay accepted while the last attempt is under way: the attempt's failure does not undo it", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant);
    const record = withdrawal();
    await syncAt(tenant, "withdrawals", [record]);
    receiver.answers = RETRY_DELAYS_MS.map(() => 500);
    for (const delay of RETRY_DELAYS_MS) {
      expect(await deliver()).toBe(1);
      clock.now += delay * 1.5;
    }
    const [attempt] = (await call(tenant, "GET", `${BASE}/${endpoint.id}/attempts`)).body.data;

    // The last attempt hangs (then times out); the replay comes while it is under way.
    receiver.received.length = 0;
    receiver.answers = ["hang"];
    const last = deliver();
    while (receiver.received.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await call(tenant, "POST", `${BASE}/${endpoint.id}/deliveries/${attempt.deliveryId}/replay`)).status).toBe(202);
    expect(await last).toBe(1);

    receiver.received.length = 0;
    expect(await deliver()).toBe(1);
    expect(receiver.received.map((r) => JSON.parse(r.body).data.id)).toEqual([record.id]);
    const attempts = (await call(tenant, "GET", `${BASE}/${endpoint.id}/attempts?limit=100`)).body.data;
    expect(attempts).toHaveLength(RETRY_DELAYS_MS.length + 2);
    expect(attempts[0]).toMatchObject({ status: "succeeded", responseCode: 200 });
  });

  it("replays the failed deliveries of a time range, and only those", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant);
    const start = clock.now;
    const ids: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      ids.push(`range-${tenant.id}-${i}`);
      await syncAt(tenant, "withdrawals", [withdrawal({ id: ids[i] })]);
      clock.now += HOUR;
    }
    const webhookIds = await failEverything();
    // The third succeeds when replayed alone first: it is no longer failed.
    const third = (await readAllPages(tenant, `${BASE}/${endpoint.id}/attempts`, 100)).items.find(
      (a) => a.webhookId === webhookIds.get(ids[2]!),
    );
    expect(third).toBeDefined();
    await call(tenant, "POST", `${BASE}/${endpoint.id}/deliveries/${third.deliveryId}/replay`);
    await deliver();
    receiver.received.length = 0;

    const range = { since: new Date(start + HOUR).toISOString(), until: new Date(start + 3 * HOUR).toISOString() };
    const reply = await call(tenant, "POST", `${BASE}/${endpoint.id}/replay`, range);
    expect(reply.status).toBe(202);
    expect(reply.body).toEqual({ replayed: 2 });
    expect(await deliver()).toBe(2);
    expect(receiver.received.map((r) => JSON.parse(r.body).data.id).sort()).toEqual([ids[1], ids[3]].sort());
    expect((await call(tenant, "POST", `${BASE}/${endpoint.id}/replay`, range)).body).toEqual({ replayed: 0 });
  });

  it("refuses a bad range, a delivery it does not have, and a disabled endpoint", async () => {
    const tenant = await newTenant(server());
    const endpoint = await create(tenant);
    const replay = (body: unknown) => call(tenant, "POST", `${BASE}/${endpoint.id}/replay`, body);
    expectProblem(await replay(undefined), 400, "invalid_body");
    expectProblem(await replay({ since: "2026-11-22T00:00:00Z" }), 400, "invalid_body");
    expectProblem(await replay({ since: "2026-11-22", until: "2026-11-23T00:00:00Z" }), 400, "invalid_time");
    expectProblem(await replay({ since: "2026-11-23T00:00:00Z", until: "2026-11-22T00:00:00Z" }), 400, "invalid_time_window");
    expectProblem(await replay({ since: "2026-11-22T00:00:00Z", until: "2026-11-23T00:00:00Z", status: "failed" }), 400, "invalid_body");
    expectProblem(await call(tenant, "POST", `${BASE}/${endpoint.id}/deliveries/dlv_missing/replay`), 404, "not_found");
    expectProblem(
      await call(tenant, "POST", `${BASE}/we_missing/replay`, { since: "2026-11-22T00:00:00Z", until: "2026-11-23T00:00:00Z" }),
      404,
      "not_found",
    );

    await call(tenant, "POST", `${BASE}/${endpoint.id}/disable`);
    const disabled = await replay({ since: "2026-11-22T00:00:00Z", until: "2026-11-23T00:00:00Z" });
    expectProblem(disabled, 409, "conflict");
    expect(disabled.body.detail).toMatch(/enable it/);
  });
});

describe("tenants and events", () => {
  it("sends each endpoint only its own tenant's events, of the types it took", async () => {
    const a = await tenantWithCleanSlate();
    const b = await newTenant(server());
    await create(a, ["withdrawal.created", "employee.updated"], receiver.url);
    await create(b, ["employee.created"], other.url);
    const changed = employee({ id: `emp-${a.id}` });
    await syncAt(a, "withdrawals", [withdrawal({ id: `wd-a-${a.id}` })]);
    await syncAt(a, "employees", [changed]);
    await syncAt(a, "employees", [{ ...changed, name: "Renamed" }]);
    await syncAt(b, "withdrawals", [withdrawal({ id: `wd-b-${b.id}` })]);
    await syncAt(b, "employees", [employee({ id: `emp-b-${b.id}` })]);
    // A change is stamped after the last one of its list (here 1 ms after the clock): due then.
    clock.now += 1000;
    await deliver();
    const seen = (r: Receiver) => r.received.map((m) => `${JSON.parse(m.body).type} ${JSON.parse(m.body).data.id}`).sort();
    expect(seen(receiver)).toEqual([`employee.updated emp-${a.id}`, `withdrawal.created wd-a-${a.id}`]);
    expect(seen(other)).toEqual([`employee.created emp-b-${b.id}`]);
  });
});
