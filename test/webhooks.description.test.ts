/**
 * A webhook endpoint's optional description (docs/webhooks.md, "Managing endpoints"): set at
 * creation or with PATCH, removed with `null`, shown by every answer that shows the endpoint
 * (null when it has none), checked as the records' text fields are; and an endpoint stored
 * before descriptions existed reads as having none once its database is migrated in place.
 */
import { Migrator, sql } from "kysely";
import { describe, expect, it } from "vitest";
import { CriblineClient } from "../client/src/index.js";
import { parseDatabaseUrl } from "../src/platform/config.js";
import { openStorage } from "../src/storage/database.js";
import { migrationProvider } from "../src/storage/migrate.js";
import { createTenant, issueKey } from "../src/tenants/tenant.service.js";
import { lastLine, useCliWorkspace } from "./support/cli.js";
import { createTestDatabase, ENGINE } from "./support/databases.js";
import { newTenant, request, useServer, type Reply, type TestTenant } from "./support/harness.js";

const server = useServer();
const BASE = "/v1/webhook-endpoints";
const URL_ = "https://93.184.216.34/hooks";
const clock = { now: Date.parse("2026-11-22T10:00:00.000Z") };

function call(tenant: TestTenant, method: string, path: string, body?: unknown): Promise<Reply<any>> {
  server().clock.now = clock.now;
  return request(server(), method, path, { key: tenant.keys.admin, body });
}

async function create(tenant: TestTenant, extra: Record<string, unknown> = {}): Promise<any> {
  const reply = await call(tenant, "POST", BASE, { url: URL_, events: ["withdrawal.created"], ...extra });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

async function patch(tenant: TestTenant, id: string, body: unknown): Promise<any> {
  const reply = await call(tenant, "PATCH", `${BASE}/${id}`, body);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body;
}

/** The endpoint as GET shows it: the create answer without its secret. */
function withoutSecret({ secret, ...endpoint }: any): any {
  expect(secret).toMatch(/^whsec_/);
  return endpoint;
}

const read = async (tenant: TestTenant, id: string) => (await call(tenant, "GET", `${BASE}/${id}`)).body;

/** 500 UTF-16 code units in 250 characters: the limit counts code units, as every text field's does. */
const LONGEST = "😀".repeat(250);

describe("an endpoint's description", () => {
  it("is set at creation and shown by the create answer, GET, the list and PATCH", async () => {
    const tenant = await newTenant(server());
    const created = await create(tenant, { description: "ERP production – sync of withdrawals" });
    expect(created).toMatchObject({ description: "ERP production – sync of withdrawals", secret: expect.stringMatching(/^whsec_/) });
    expect(await read(tenant, created.id)).toMatchObject({ description: "ERP production – sync of withdrawals" });
    expect((await call(tenant, "GET", BASE)).body.data.map((e: any) => e.description)).toEqual(["ERP production – sync of withdrawals"]);
    expect(await patch(tenant, created.id, { events: ["return.created"] })).toMatchObject({
      description: "ERP production – sync of withdrawals",
      events: ["return.created"],
    });
  });

  it("is null on an endpoint created without one, or with null", async () => {
    const tenant = await newTenant(server());
    const without = await create(tenant);
    const withNull = await create(tenant, { description: null });
    for (const endpoint of [without, withNull]) {
      expect(endpoint).toHaveProperty("description", null);
      expect(await read(tenant, endpoint.id)).toHaveProperty("description", null);
    }
    expect((await call(tenant, "GET", BASE)).body.data.map((e: any) => e.description)).toEqual([null, null]);
  });

  it("changes with PATCH (updatedAt too), changes nothing when sent as stored, and is removed with null", async () => {
    const tenant = await newTenant(server());
    const created = withoutSecret(await create(tenant, { description: "old" }));
    clock.now += 60_000;
    const changed = await patch(tenant, created.id, { description: "new" });
    expect(changed).toEqual({ ...created, description: "new", updatedAt: new Date(clock.now).toISOString() });
    expect(await read(tenant, created.id)).toEqual(changed);

    clock.now += 60_000;
    expect(await patch(tenant, created.id, { description: "new" })).toEqual(changed);

    const cleared = await patch(tenant, created.id, { description: null });
    expect(cleared).toEqual({ ...changed, description: null, updatedAt: new Date(clock.now).toISOString() });
    expect(await read(tenant, created.id)).toEqual(cleared);
    expect((await call(tenant, "GET", BASE)).body.data).toEqual([cleared]);

    // Set again on an endpoint that had none.
    expect((await patch(tenant, created.id, { description: LONGEST })).description).toBe(LONGEST);
  });

  it.each<[string, unknown]>([
    ["over 500 UTF-16 code units", `${LONGEST}x`],
    ["empty", ""],
    ["with NUL", "ERP\u0000"],
    ["with a line break", "ERP\nsync"],
    ["with a tab", "ERP\tsync"],
    ["with DEL", "ERP\u007f"],
    ["with a lone surrogate", "ERP\ud800"],
    ["a number", 42],
    ["a list", ["ERP"]],
  ])("refuses a description %s with 400 invalid_body naming the field, at creation and in PATCH", async (_label, description) => {
    const tenant = await newTenant(server());
    const expectRefused = (reply: Reply<any>) => {
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(reply.body).toMatchObject({ code: "invalid_body", status: 400 });
      expect(reply.body.detail).toMatch(/^"description" must be text of 1 to 500 characters .*without control characters, or null/);
    };
    expectRefused(await call(tenant, "POST", BASE, { url: URL_, events: ["withdrawal.created"], description }));
    expect((await call(tenant, "GET", BASE)).body.data).toEqual([]);

    const endpoint = withoutSecret(await create(tenant, { description: "kept" }));
    expectRefused(await call(tenant, "PATCH", `${BASE}/${endpoint.id}`, { description }));
    expectRefused(await call(tenant, "PATCH", `${BASE}/${endpoint.id}`, { enabled: false, description }));
    expect(await read(tenant, endpoint.id)).toEqual(endpoint);
  });

  it("is set and removed by the client's webhookEndpoints.update", async () => {
    const tenant = await newTenant(server());
    const endpoint = await create(tenant);
    const client = new CriblineClient({ baseUrl: server().url, apiKey: tenant.keys.admin });
    expect(await client.webhookEndpoints.update(endpoint.id, { description: "from the client" })).toMatchObject({
      description: "from the client",
    });
    expect((await client.webhookEndpoints.update(endpoint.id, { description: null })).description).toBeNull();
  });
});

describe("a database made before descriptions", () => {
  const workspace = useCliWorkspace();

  it("is migrated in place: its endpoints keep everything and read as having no description, which PATCH then sets", async () => {
    const older = await createTestDatabase();
    try {
      const storage = await openStorage(parseDatabaseUrl(older.url));
      let key: string;
      try {
        // The schema of the release before this migration, and an endpoint as that release stored it.
        const migrated = await new Migrator({ db: storage.db, provider: migrationProvider(storage) }).migrateTo("0018-drop-late-171-days");
        expect(migrated.error).toBeUndefined();
        const tenantId = await createTenant(storage.db, "acme");
        key = (await issueKey(storage.db, "acme", ["admin"])).key;
        await sql`insert into webhook_endpoints (tenant_id, id, url, events, secret, created_at, updated_at)
          values (${tenantId}, 'we_before', 'https://93.184.216.34/old', 'withdrawal.created employee.updated', 'whsec_x', 1000, 2000)`.execute(
          storage.db,
        );
      } finally {
        await storage.close();
      }
      const env = { DATABASE_URL: older.url };
      if (ENGINE === "postgres") {
        // PostgreSQL serves only an up-to-date schema; the operator migrates it.
        expect((await workspace().run(["serve"], env)).stderr).toMatch(/missing 0019-webhook-endpoint-descriptions/);
      }
      const migrate = await workspace().run(["migrate"], env);
      expect(migrate.code, migrate.stderr).toBe(0);
      expect(lastLine(migrate.stdout)).toMatch(
        /^applied 0019-webhook-endpoint-descriptions(, [0-9]{4}-[a-z-]+)*; database schema is up to date$/,
      );

      const serving = await workspace().serve(env);
      const get = async () =>
        (await fetch(`${serving.url}${BASE}/we_before`, { headers: { authorization: `Bearer ${key}` } })).json() as Promise<any>;
      expect(await get()).toEqual({
        id: "we_before",
        url: "https://93.184.216.34/old",
        description: null,
        events: ["withdrawal.created", "employee.updated"],
        enabled: true,
        disabledReason: null,
        previousSecretExpiresAt: null,
        createdAt: "1970-01-01T00:00:01.000Z",
        updatedAt: "1970-01-01T00:00:02.000Z",
      });
      const patched = await fetch(`${serving.url}${BASE}/we_before`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ description: "from before" }),
      });
      expect(patched.status).toBe(200);
      expect(await get()).toMatchObject({ id: "we_before", description: "from before", url: "https://93.184.216.34/old" });
    } finally {
      await older.drop();
    }
  });
});
