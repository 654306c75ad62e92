/**
 * Changing a webhook endpoint in place, PATCH /v1/webhook-endpoints/{id} (docs/webhooks.md,
 * "Managing endpoints"): its URL, events and whether it is enabled change, checked as at
 * creation, while its id, secret and attempt log stay; what is sent afterwards goes to the new
 * URL, for the new events only. Deliveries go to real receivers on loopback, sent by a delivery
 * loop on the test's clock.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CriblineClient, CriblineError } from "../client/src/index.js";
import { DeliveryLoop } from "../src/webhooks/delivery/delivery.loop.js";
import { RETRY_DELAYS_MS } from "../src/webhooks/delivery/retry-policy.js";
import { employee, withdrawal } from "./support/factories.js";
import { newTenant, request, sync, useServer, type Reply, type TestServer, type TestTenant } from "./support/harness.js";
import { Receiver } from "./support/receiver.js";

/** The test's DNS for the guarded server: a name's addresses, or no such name. */
const NAMES: Record<string, string[]> = { "public.test": ["93.184.216.34"], "inside.test": ["93.184.216.34", "10.1.2.3"] };

/** A server that lets endpoints be on loopback (the receivers), and one with the default guard. */
const server = useServer({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" });
const guarded = useServer(
  {},
  {
    resolveHost: async (host) => {
      const addresses = NAMES[host];
      if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
      return addresses.map((address) => ({ address }));
    },
  },
);

const first = new Receiver();
const second = new Receiver();
beforeAll(async () => {
  await first.open();
  await second.open();
});
afterAll(async () => {
  await first.close();
  await second.close();
});

const BASE = "/v1/webhook-endpoints";
/** The test's clock: the server stamps records and endpoints with it, the loop sends by it. */
const clock = { now: Date.parse("2026-11-22T10:00:00.000Z") };

function call(tenant: TestTenant, method: string, path: string, body?: unknown, srv: TestServer = server()): Promise<Reply<any>> {
  srv.clock.now = clock.now;
  return request(srv, method, path, { key: tenant.keys.admin, body });
}

async function create(tenant: TestTenant, events: string[], url: string, srv: TestServer = server()): Promise<any> {
  const reply = await call(tenant, "POST", BASE, { url, events }, srv);
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

async function patch(tenant: TestTenant, id: string, body: unknown, srv: TestServer = server()): Promise<any> {
  const reply = await call(tenant, "PATCH", `${BASE}/${id}`, body, srv);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body;
}

async function syncAt(tenant: TestTenant, collection: string, records: Record<string, unknown>[]): Promise<void> {
  server().clock.now = clock.now;
  await sync(server(), tenant, collection, records);
}

/** A second later (a sync is stamped after the last one of its list), sends what is due, as any serving process does. */
async function deliver(): Promise<number> {
  clock.now += 1000;
  const options = { clock: () => clock.now, allowPrivate: true, random: () => 0.5, timeoutMs: 2000 };
  return new DeliveryLoop(server().storage.db, options, (err) => {
    throw err;
  }).runOnce();
}

/** A fresh tenant; deliveries that earlier tests left due are set aside so each test sees its own. */
async function tenantWithCleanSlate(): Promise<TestTenant> {
  await server().storage.db.deleteFrom("webhook_fanouts").execute();
  await server().storage.db.updateTable("webhook_deliveries").set({ status: "failed" }).where("status", "=", "pending").execute();
  for (const receiver of [first, second]) {
    receiver.received.length = 0;
    receiver.answers = [];
  }
  return newTenant(server());
}

/** The endpoint as GET shows it: the create answer without its secret. */
function withoutSecret({ secret, ...endpoint }: any): any {
  expect(secret).toMatch(/^whsec_/);
  return endpoint;
}

const seen = (receiver: Receiver) => receiver.received.map((r) => `${JSON.parse(r.body).type} ${JSON.parse(r.body).data.id}`);

function expectProblem(reply: Reply<any>, status: number, code: string): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(reply.body).toMatchObject({ type: "about:blank", status, code, title: expect.any(String), detail: expect.any(String) });
}

describe("changing a webhook endpoint's URL and events", () => {
  it("answers 200 with the endpoint as GET shows it, without its secret, and moves updatedAt", async () => {
    const tenant = await newTenant(server());
    const created = await create(tenant, ["withdrawal.created"], first.url);
    clock.now += 60_000;
    const changed = await patch(tenant, created.id, { url: second.url, events: ["employee.created", "employee.updated"] });
    const before = withoutSecret(created);
    expect(changed).toEqual({
      ...before,
      url: second.url,
      events: ["employee.created", "employee.updated"],
      updatedAt: new Date(clock.now).toISOString(),
    });
    expect((await call(tenant, "GET", `${BASE}/${created.id}`)).body).toEqual(changed);
  });

  it("changes only what it is sent, and nothing at all (not updatedAt) when that is as stored", async () => {
    const tenant = await newTenant(server());
    const created = await create(tenant, ["withdrawal.created"], first.url);
    clock.now += 60_000;
    const before = withoutSecret(created);
    expect(await patch(tenant, created.id, { events: ["withdrawal.created"], url: first.url, enabled: true })).toEqual(before);
    const moved = await patch(tenant, created.id, { url: second.url });
    expect(moved).toEqual({ ...before, url: second.url, updatedAt: new Date(clock.now).toISOString() });
  });

  it("takes the same events in another order as no change: the order they were created in stays, and updatedAt", async () => {
    const tenant = await newTenant(server());
    const created = await create(tenant, ["withdrawal.created", "employee.created", "employee.updated"], first.url);
    clock.now += 60_000;
    const before = withoutSecret(created);
    expect(await patch(tenant, created.id, { events: ["employee.updated", "withdrawal.created", "employee.created"] })).toEqual(before);
    expect((await call(tenant, "GET", `${BASE}/${created.id}`)).body).toEqual(before);
    const fewer = await patch(tenant, created.id, { events: ["employee.updated", "withdrawal.created"] });
    expect(fewer).toEqual({ ...before, events: ["employee.updated", "withdrawal.created"], updatedAt: new Date(clock.now).toISOString() });
  });

  it("sends what comes after to the new URL, only for the new events, signed with the same secret; the log stays", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant, ["withdrawal.created"], first.url);
    await syncAt(tenant, "withdrawals", [withdrawal({ id: `before-${tenant.id}` })]);
    expect(await deliver()).toBe(1);
    expect(seen(first)).toEqual([`withdrawal.created before-${tenant.id}`]);

    await patch(tenant, endpoint.id, { url: second.url, events: ["employee.created"] });
    await syncAt(tenant, "withdrawals", [withdrawal({ id: `after-${tenant.id}` })]);
    await syncAt(tenant, "employees", [employee({ id: `emp-${tenant.id}` })]);
    expect(await deliver()).toBe(1);
    expect(seen(first)).toHaveLength(1);
    expect(seen(second)).toEqual([`employee.created emp-${tenant.id}`]);

    // Signed with the secret the endpoint was created with (the reference library's signature).
    const { headers, body } = second.received[0]!;
    const signed = new Webhook(endpoint.secret).sign(
      String(headers["webhook-id"]),
      new Date(Number(headers["webhook-timestamp"]) * 1000),
      body,
    );
    expect(String(headers["webhook-signature"]).split(" ")).toEqual([signed]);

    const attempts = (await call(tenant, "GET", `${BASE}/${endpoint.id}/attempts`)).body.data;
    expect(attempts.map((a: any) => a.eventType)).toEqual(["employee.created", "withdrawal.created"]);
  });

  it("sends a delivery queued before the change to the new URL on its next attempt", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant, ["withdrawal.created"], first.url);
    await syncAt(tenant, "withdrawals", [withdrawal({ id: `queued-${tenant.id}` })]);
    first.answers = [503];
    expect(await deliver()).toBe(1);
    await patch(tenant, endpoint.id, { url: second.url, events: ["return.created"] });
    clock.now += RETRY_DELAYS_MS[0]!;
    expect(await deliver()).toBe(1);
    expect(seen(second)).toEqual([`withdrawal.created queued-${tenant.id}`]);
    const attempts = (await call(tenant, "GET", `${BASE}/${endpoint.id}/attempts`)).body.data;
    expect(attempts.map((a: any) => a.status)).toEqual(["succeeded", "failed"]);
  });
});

describe("enabling and disabling an endpoint with PATCH", () => {
  it("disables it (nothing sent or queued meanwhile) and enables it again, sending what waited at once", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant, ["withdrawal.created"], first.url);
    await syncAt(tenant, "withdrawals", [withdrawal({ id: `waited-${tenant.id}` })]);
    first.answers = [503];
    expect(await deliver()).toBe(1); // its retry is due 5 s later
    expect(await patch(tenant, endpoint.id, { enabled: false })).toMatchObject({ enabled: false, disabledReason: "disabled by an admin" });
    await syncAt(tenant, "withdrawals", [withdrawal({ id: `meanwhile-${tenant.id}` })]);
    expect(await deliver()).toBe(0);

    // Enabled before its retry's time, the delivery that waited goes at once.
    expect(await patch(tenant, endpoint.id, { enabled: true })).toMatchObject({ enabled: true, disabledReason: null });
    expect(await deliver()).toBe(1);
    expect(seen(first)).toEqual([`withdrawal.created waited-${tenant.id}`, `withdrawal.created waited-${tenant.id}`]);
  });

  it("enables an endpoint a 410 disabled; the delivery that got the 410 stays failed, new events go", async () => {
    const tenant = await tenantWithCleanSlate();
    const endpoint = await create(tenant, ["withdrawal.created"], first.url);
    await syncAt(tenant, "withdrawals", [withdrawal({ id: `gone-${tenant.id}` })]);
    first.answers = [410];
    expect(await deliver()).toBe(1);
    const gone = { enabled: false, disabledReason: "the endpoint answered 410 Gone" };
    expect((await call(tenant, "GET", `${BASE}/${endpoint.id}`)).body).toMatchObject(gone);
    // Asking for what it already is changes nothing: the reason stays.
    expect(await patch(tenant, endpoint.id, { enabled: false })).toMatchObject(gone);

    await patch(tenant, endpoint.id, { url: second.url, enabled: true });
    await syncAt(tenant, "withdrawals", [withdrawal({ id: `back-${tenant.id}` })]);
    expect(await deliver()).toBe(1);
    expect(seen(second)).toEqual([`withdrawal.created back-${tenant.id}`]);
  });
});

describe("refusing a change", () => {
  it.each<[string, unknown, string]>([
    ["no body", undefined, "invalid_body"],
    ["an empty object", {}, "invalid_body"],
    ["an array", [], "invalid_body"],
    ["an unknown field", { events: ["return.created"], secret: "whsec_x" }, "invalid_body"],
    ["a field of another case", { URL: "https://93.184.216.34/h" }, "invalid_body"],
    ["a description over 500 characters", { description: "d".repeat(501) }, "invalid_body"],
    ["a description with a control character", { description: "ERP\u0007" }, "invalid_body"],
    ["an empty description", { description: "" }, "invalid_body"],
    ["enabled that is not a boolean", { enabled: "true" }, "invalid_body"],
    ["a null url", { url: null }, "invalid_url"],
    ["a relative url", { url: "/hooks" }, "invalid_url"],
    ["an ftp url", { url: "ftp://93.184.216.34/h" }, "invalid_url"],
    ["a url with a password", { url: "https://user:pw@93.184.216.34/h" }, "invalid_url"],
    ["an empty event list", { events: [] }, "unknown_event"],
    ["an unknown event type", { events: ["withdrawal.deleted"] }, "unknown_event"],
    ["an event type twice", { events: ["return.created", "return.created"] }, "unknown_event"],
    ["a good url with an unknown event type", { url: "https://93.184.216.34/h", events: ["x"] }, "unknown_event"],
  ])("refuses %s with a 400 and changes nothing", async (_label, body, code) => {
    const tenant = await newTenant(server());
    const endpoint = withoutSecret(await create(tenant, ["withdrawal.created"], first.url));
    clock.now += 1000;
    expectProblem(await call(tenant, "PATCH", `${BASE}/${endpoint.id}`, body), 400, code);
    expect((await call(tenant, "GET", `${BASE}/${endpoint.id}`)).body).toEqual(endpoint);
  });

  it.each<[string, string]>([
    ["http://10.0.0.5/h", "private_address"],
    ["http://[::1]:8080/h", "private_address"],
    ["http://localhost/h", "private_address"],
    ["https://inside.test/h", "private_address"],
    ["https://nowhere.test/h", "invalid_url"],
  ])("refuses the URL %s as creation does (%s), names resolved", async (url, code) => {
    const tenant = await newTenant(guarded());
    const endpoint = withoutSecret(await create(tenant, ["withdrawal.created"], "https://public.test/h", guarded()));
    expectProblem(await call(tenant, "PATCH", `${BASE}/${endpoint.id}`, { url }, guarded()), 400, code);
    expect((await call(tenant, "GET", `${BASE}/${endpoint.id}`, undefined, guarded())).body).toEqual(endpoint);
  });

  it("takes a public URL on the guarded server", async () => {
    const tenant = await newTenant(guarded());
    const endpoint = await create(tenant, ["withdrawal.created"], "https://public.test/h", guarded());
    expect((await patch(tenant, endpoint.id, { url: "https://93.184.216.34/other" }, guarded())).url).toBe("https://93.184.216.34/other");
  });

  it("answers 404 for another tenant's endpoint and for an unknown one, and leaves them alone", async () => {
    const [mine, theirs] = [await newTenant(server()), await newTenant(server())];
    const endpoint = withoutSecret(await create(mine, ["withdrawal.created"], first.url));
    expectProblem(await call(theirs, "PATCH", `${BASE}/${endpoint.id}`, { enabled: false }), 404, "not_found");
    expectProblem(await call(mine, "PATCH", `${BASE}/we_missing`, { enabled: false }), 404, "not_found");
    expectProblem(await call(mine, "PATCH", `${BASE}/we%00x`, { enabled: false }), 404, "not_found");
    expect((await call(mine, "GET", `${BASE}/${endpoint.id}`)).body).toEqual(endpoint);
  });

  it("refuses a body that is not JSON with 415", async () => {
    const tenant = await newTenant(server());
    const endpoint = await create(tenant, ["withdrawal.created"], first.url);
    const reply = await request(server(), "PATCH", `${BASE}/${endpoint.id}`, {
      key: tenant.keys.admin,
      rawBody: "enabled=false",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expectProblem(reply, 415, "unsupported_media_type");
  });
});

describe("the client", () => {
  it("changes an endpoint with webhookEndpoints.update, and throws the API's error code", async () => {
    const tenant = await newTenant(server());
    const endpoint = await create(tenant, ["withdrawal.created"], first.url);
    server().clock.now = clock.now;
    const client = new CriblineClient({ baseUrl: server().url, apiKey: tenant.keys.admin });
    const changed = await client.webhookEndpoints.update(endpoint.id, { events: ["return.created"], enabled: false });
    expect(changed).toMatchObject({ id: endpoint.id, events: ["return.created"], enabled: false });
    expect(changed).not.toHaveProperty("secret");
    const refused = await client.webhookEndpoints.update(endpoint.id, { events: ["return.deleted" as "return.created"] }).catch((e) => e);
    expect(refused).toBeInstanceOf(CriblineError);
    expect(refused).toMatchObject({ status: 400, code: "unknown_event" });
  });
});
