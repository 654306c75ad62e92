/**
 * Authentication and scopes (README: "Keys"): every route the app registers needs a key of
 * its scope but the public ones, which is checked on the routes as registered; every endpoint
 * that needs a key also has a call here that succeeds with its scope, and every kind of
 * credential is tried against each of them over HTTP.
 */
import { describe, expect, it } from "vitest";
import { generateKey, hashKey, isWellFormedKey, keyIdOf, KEY_PREFIX, SCOPES, type Scope } from "../src/platform/keys.js";
import type { RouteScope } from "../src/platform/route-book.js";
import { revokeKey } from "../src/tenants/tenant.repository.js";
import { issueKey } from "../src/tenants/tenant.service.js";
import { expandFanouts } from "../src/webhooks/delivery/fanout.repository.js";
import { insertEndpoint } from "../src/webhooks/endpoint.repository.js";
import { FACTORIES, MASTER_COLLECTIONS, TRANSACTION_COLLECTIONS } from "./support/factories.js";
import { newTenant, readAll, request, useServer, type Reply, type TestTenant } from "./support/harness.js";

const server = useServer();
const COLLECTIONS = [...TRANSACTION_COLLECTIONS, ...MASTER_COLLECTIONS];
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

interface Endpoint {
  label: string;
  /** `key`: any valid key, whatever its scopes. */
  scope: RouteScope;
  /**
   * Sends the endpoint's request with the given headers: with a fresh valid body, and on a
   * resource of `tenant` made for the call where the path names one.
   */
  call(headers: Record<string, string>, tenant: TestTenant): Promise<Reply<any>>;
  /** What a successful answer is. */
  ok(reply: Reply<any>): void;
}

/** The scopes a key may hold and still be refused by a route of `scope` (none for `key`). */
const lacking = (scope: RouteScope): Scope[] => (scope === "key" ? [] : SCOPES.filter((s) => s !== scope));
/** A key of the tenant that a route of `scope` accepts. */
const keyOf = (tenant: TestTenant, scope: RouteScope) => tenant.keys[scope === "key" ? "read" : scope];

const isPage = (reply: Reply<any>) => expect(reply.body).toEqual({ data: expect.any(Array), cursor: null });

/** A webhook endpoint of the tenant, made directly in storage, for the admin routes that name one. */
async function webhookEndpointOf(tenant: TestTenant): Promise<string> {
  return (await insertEndpoint(server().storage.db, tenant.id, "https://93.184.216.34/hooks", ["withdrawal.created"], Date.now())).id;
}

/** An admin route on a webhook endpoint of the tenant. */
function onWebhookEndpoint(method: string, suffix: string, status: number, ok: (reply: Reply<any>) => void, body?: unknown): Endpoint {
  return {
    label: `${method} /v1/webhook-endpoints/{id}${suffix}`,
    scope: "admin",
    call: async (headers, tenant) =>
      request(server(), method, `/v1/webhook-endpoints/${await webhookEndpointOf(tenant)}${suffix}`, { headers, body }),
    ok: (reply) => {
      expect(reply.status, JSON.stringify(reply.body)).toBe(status);
      ok(reply);
    },
  };
}

const isEndpoint = (reply: Reply<any>) => expect(reply.body.id).toMatch(/^we_/);

/** The id of an event of the tenant: a synced withdrawal's. */
async function eventOf(tenant: TestTenant): Promise<string> {
  const synced = await request(server(), "POST", "/v1/sync/withdrawals", {
    key: tenant.keys.sync,
    body: { data: [FACTORIES.withdrawals!()] },
  });
  expect(synced.status).toBe(200);
  const event = await server()
    .storage.db.selectFrom("webhook_messages")
    .select("id")
    .where("tenant_id", "=", tenant.id)
    .orderBy("id", "desc")
    .executeTakeFirstOrThrow();
  return event.id;
}

/** A delivery to a webhook endpoint of the tenant: a synced withdrawal, its fan-out expanded. */
async function deliveryOf(tenant: TestTenant): Promise<{ endpointId: string; deliveryId: string }> {
  const { db } = server().storage;
  const endpointId = await webhookEndpointOf(tenant);
  const synced = await request(server(), "POST", "/v1/sync/withdrawals", {
    key: tenant.keys.sync,
    body: { data: [FACTORIES.withdrawals!()] },
  });
  expect(synced.status).toBe(200);
  await db.transaction().execute((trx) => expandFanouts(trx, tenant.id, endpointId, Date.now(), 1));
  const delivery = await db
    .selectFrom("webhook_deliveries")
    .select("id")
    .where("tenant_id", "=", tenant.id)
    .where("endpoint_id", "=", endpointId)
    .executeTakeFirstOrThrow();
  return { endpointId, deliveryId: delivery.id };
}

/**
 * Every endpoint that needs a key: the nine lists, the events and usage (read), the nine sync
 * endpoints (sync) and the webhook admin API (admin).
 */
const ENDPOINTS: Endpoint[] = [
  ...COLLECTIONS.flatMap((collection): Endpoint[] => [
    {
      label: `GET /v1/${collection}`,
      scope: "read",
      call: (headers) => request(server(), "GET", `/v1/${collection}`, { headers }),
      ok: isPage,
    },
    {
      label: `POST /v1/sync/${collection}`,
      scope: "sync",
      call: (headers) => request(server(), "POST", `/v1/sync/${collection}`, { headers, body: { data: [FACTORIES[collection]!()] } }),
      ok: (reply) => expect(reply.body).toEqual({ created: 1, updated: 0, unchanged: 0 }),
    },
  ]),
  {
    label: "GET /v1/events",
    scope: "read",
    call: (headers) => request(server(), "GET", "/v1/events", { headers }),
    ok: isPage,
  },
  {
    label: "GET /v1/key",
    scope: "key",
    call: (headers) => request(server(), "GET", "/v1/key", { headers }),
    ok: (reply) => {
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(reply.body).toMatchObject({ id: expect.stringMatching(/^crib_/), tenant: expect.any(String), timeZone: "UTC" });
    },
  },
  {
    label: "GET /v1/usage",
    scope: "read",
    call: (headers) =>
      request(server(), "GET", "/v1/usage?groupBy=costCenterId&createdSince=2026-01-01T00:00:00Z&createdUntil=2026-12-31T00:00:00Z", {
        headers,
      }),
    ok: isPage,
  },
  {
    label: "GET /v1/events/{id}",
    scope: "read",
    call: async (headers, tenant) => request(server(), "GET", `/v1/events/${await eventOf(tenant)}`, { headers }),
    ok: (reply) => {
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(reply.body).toMatchObject({ id: expect.stringMatching(/^msg_/), type: "withdrawal.created" });
    },
  },
  {
    label: "POST /v1/webhook-endpoints",
    scope: "admin",
    call: (headers) =>
      request(server(), "POST", "/v1/webhook-endpoints", {
        headers,
        body: { url: "https://93.184.216.34/hooks", events: ["withdrawal.created"] },
      }),
    ok: (reply) => {
      expect(reply.status).toBe(201);
      expect(reply.body.secret).toMatch(/^whsec_/);
    },
  },
  {
    label: "GET /v1/webhook-endpoints",
    scope: "admin",
    call: (headers) => request(server(), "GET", "/v1/webhook-endpoints", { headers }),
    ok: isPage,
  },
  onWebhookEndpoint("GET", "", 200, isEndpoint),
  onWebhookEndpoint("PATCH", "", 200, (reply) => expect(reply.body).toMatchObject({ events: ["return.created"] }), {
    events: ["return.created"],
  }),
  onWebhookEndpoint("DELETE", "", 204, (reply) => expect(reply.body).toBeUndefined()),
  onWebhookEndpoint("POST", "/disable", 200, isEndpoint),
  onWebhookEndpoint("POST", "/enable", 200, isEndpoint),
  onWebhookEndpoint("POST", "/rotate-secret", 200, isEndpoint),
  onWebhookEndpoint("GET", "/attempts", 200, isPage),
  {
    // Its test event goes to loopback, which this server refuses at once: no network, a 200 saying so.
    label: "POST /v1/webhook-endpoints/{id}/test",
    scope: "admin",
    call: async (headers, tenant) => {
      const endpointId = await webhookEndpointOf(tenant);
      await server()
        .storage.db.updateTable("webhook_endpoints")
        .set({ url: "http://127.0.0.1:9/hooks" })
        .where("tenant_id", "=", tenant.id)
        .where("id", "=", endpointId)
        .execute();
      return request(server(), "POST", `/v1/webhook-endpoints/${endpointId}/test`, { headers });
    },
    ok: (reply) => {
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(reply.body).toMatchObject({ eventType: "ping", status: "failed", error: expect.stringMatching(/^refused: /) });
    },
  },
  onWebhookEndpoint("POST", "/replay", 202, (reply) => expect(reply.body).toEqual({ replayed: 0 }), {
    since: "2026-01-01T00:00:00Z",
    until: "2026-12-31T00:00:00Z",
  }),
  {
    label: "POST /v1/webhook-endpoints/{id}/deliveries/{deliveryId}/replay",
    scope: "admin",
    call: async (headers, tenant) => {
      const { endpointId, deliveryId } = await deliveryOf(tenant);
      return request(server(), "POST", `/v1/webhook-endpoints/${endpointId}/deliveries/${deliveryId}/replay`, { headers });
    },
    ok: (reply) => {
      expect(reply.status).toBe(202);
      expect(reply.body).toEqual({ replayed: 1 });
    },
  },
  {
    label: "POST /v1/api-keys",
    scope: "admin",
    call: (headers) => request(server(), "POST", "/v1/api-keys", { headers, body: { name: "made in a test", scopes: ["read"] } }),
    ok: (reply) => {
      expect(reply.status).toBe(201);
      expect(reply.body.key).toMatch(/^crib_/);
    },
  },
  {
    label: "GET /v1/api-keys",
    scope: "admin",
    call: (headers) => request(server(), "GET", "/v1/api-keys", { headers }),
    ok: (reply) =>
      expect(reply.body).toEqual({ data: expect.arrayContaining([expect.objectContaining({ id: expect.any(String) })]), cursor: null }),
  },
  ...(["", "/revoke"] as const).map(
    (suffix): Endpoint => ({
      label: `${suffix === "" ? "GET" : "POST"} /v1/api-keys/{id}${suffix}`,
      scope: "admin",
      // A read key of the tenant, made for the call: revoking it leaves the tenant's own keys alone.
      call: async (headers, tenant) =>
        request(server(), suffix === "" ? "GET" : "POST", `/v1/api-keys/${(await keyWith(tenant, ["read"])).keyId}${suffix}`, { headers }),
      ok: (reply) => {
        expect(reply.status).toBe(200);
        expect(reply.body.id).toMatch(/^crib_/);
      },
    }),
  ),
];

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** Replaces the character at `index` by another base62 character. */
function changeCharAt(key: string, index: number, shift = 1): string {
  const current = BASE62.indexOf(key[index]!);
  const replacement = BASE62[(current + shift) % BASE62.length]!;
  return key.slice(0, index) + replacement + key.slice(index + 1);
}

async function keyWith(tenant: TestTenant, scopes: Scope[]) {
  return issueKey(server().storage.db, tenant.slug, scopes);
}

function expectUnauthorized(reply: Reply<any>): void {
  expect(reply.status).toBe(401);
  expect(reply.headers.get("www-authenticate")).toMatch(/^Bearer\b/);
  expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(reply.body).toMatchObject({ status: 401, code: "unauthorized", title: expect.any(String), detail: expect.any(String) });
}

function expectForbidden(reply: Reply<any>): void {
  expect(reply.status).toBe(403);
  expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(reply.body).toMatchObject({ status: 403, code: "forbidden", title: expect.any(String), detail: expect.any(String) });
  // A 403 is not a credential problem: no challenge to send another key.
  expect(reply.headers.get("www-authenticate")).toBeNull();
}

function expectOk(reply: Reply<any>, endpoint: Endpoint): void {
  expect(reply.status, JSON.stringify(reply.body)).toBeLessThan(300);
  endpoint.ok(reply);
}

/** Credentials that must be refused with 401, built from a tenant's valid keys. */
const REFUSED: [string, (tenant: TestTenant, endpoint: Endpoint) => Record<string, string>][] = [
  ["no Authorization header", () => ({})],
  ["an empty Authorization header", () => ({ authorization: "" })],
  ["the Basic scheme", () => ({ authorization: "Basic dXNlcjpwYXNz" })],
  ["Basic with a valid key", (t) => ({ authorization: `Basic ${t.keys.all}` })],
  ['"Bearer" alone', () => ({ authorization: "Bearer" })],
  ['"Bearer " with nothing after it', () => ({ authorization: "Bearer " })],
  ["the Token scheme with a valid key", (t) => ({ authorization: `Token ${t.keys.all}` })],
  ["a valid key without a scheme", (t) => ({ authorization: t.keys.all })],
  ["two keys in one header", (t) => ({ authorization: `Bearer ${t.keys.all} ${t.keys.all}` })],
  ["a wrong prefix", (t) => bearer(`crab_${t.keys.all.slice(KEY_PREFIX.length)}`)],
  ["no prefix", (t) => bearer(t.keys.all.slice(KEY_PREFIX.length))],
  ["an upper-case prefix", (t) => bearer(`CRIB_${t.keys.all.slice(KEY_PREFIX.length)}`)],
  ["a key one character too short", (t) => bearer(t.keys.all.slice(0, -1))],
  ["a key one character too long", (t) => bearer(`${t.keys.all}a`)],
  ["a key of only the prefix", () => bearer(KEY_PREFIX)],
  ["a changed character in the secret (bad checksum)", (t) => bearer(changeCharAt(t.keys.all, KEY_PREFIX.length + 12))],
  ["a changed character in the checksum", (t) => bearer(changeCharAt(t.keys.all, t.keys.all.length - 1))],
  ["a non-base62 character", (t) => bearer(`${t.keys.all.slice(0, 10)}-${t.keys.all.slice(11)}`)],
  ["a well-formed key that was never issued", () => bearer(generateKey().key)],
  ["a well-formed key whose hash was sent instead of the key", (t) => bearer(hashKey(t.keys.all))],
];

describe.each(ENDPOINTS)("$label", (endpoint) => {
  it.each(REFUSED)("refuses %s with 401 and a Bearer challenge", async (_label, credentials) => {
    const tenant = await newTenant(server());
    expectUnauthorized(await endpoint.call(credentials(tenant, endpoint), tenant));
  });

  it("accepts a key with the route's scope", async () => {
    const tenant = await newTenant(server());
    expectOk(await endpoint.call(bearer(keyOf(tenant, endpoint.scope)), tenant), endpoint);
  });

  it("accepts the scheme name in any letter case (RFC 9110: schemes are case-insensitive)", async () => {
    const tenant = await newTenant(server());
    expectOk(await endpoint.call({ authorization: `bearer ${keyOf(tenant, endpoint.scope)}` }, tenant), endpoint);
  });

  it("refuses a key without the route's scope with 403", async () => {
    const tenant = await newTenant(server());
    for (const scope of lacking(endpoint.scope)) expectForbidden(await endpoint.call(bearer(tenant.keys[scope]), tenant));
    if (lacking(endpoint.scope).length === 0) return;
    const others = await keyWith(tenant, lacking(endpoint.scope));
    expectForbidden(await endpoint.call(bearer(others.key), tenant));
  });

  it.each<Scope[]>([
    ["read", "sync"],
    ["sync", "read"],
    ["read", "admin"],
    ["sync", "admin"],
    ["admin", "sync", "read"],
  ])("accepts a key holding the scopes %j when one of them is the route's", async (...scopes) => {
    const tenant = await newTenant(server());
    const { key } = await keyWith(tenant, scopes);
    const reply = await endpoint.call(bearer(key), tenant);
    if (endpoint.scope === "key" || scopes.includes(endpoint.scope)) expectOk(reply, endpoint);
    else expectForbidden(reply);
  });

  it("refuses a revoked key on the very next request", async () => {
    const tenant = await newTenant(server());
    const { key, keyId } = await keyWith(tenant, [endpoint.scope === "key" ? "sync" : endpoint.scope]);
    expectOk(await endpoint.call(bearer(key), tenant), endpoint);
    expect(await revokeKey(server().storage.db, keyId, Date.now())).toBe(true);
    expectUnauthorized(await endpoint.call(bearer(key), tenant));
    // The tenant's other keys are untouched.
    expectOk(await endpoint.call(bearer(keyOf(tenant, endpoint.scope)), tenant), endpoint);
  });
});

describe("every route the app registers", () => {
  /** The routes that need no key: health, the OpenAPI document, the reference page and the console's files. */
  const isPublic = (url: string) =>
    ["/healthz", "/readyz", "/v1/openapi.json", "/docs", "/console"].includes(url) ||
    url.startsWith("/docs/") ||
    url.startsWith("/console/");
  const routes = () => server().app.routeBook.routes.filter((route) => !route.refuses);
  const keyed = () => routes().filter((route) => route.scope !== undefined);
  /** The path as the OpenAPI document and the labels above write it. */
  const documented = (url: string) => url.replace(/:(\w+)/g, "{$1}");

  it("needs a key unless it is one of the public routes", () => {
    expect(keyed().length).toBeGreaterThan(30);
    for (const route of routes()) if (route.scope === undefined) expect(isPublic(route.url), `${route.method} ${route.url}`).toBe(true);
  });

  it("answers 401 without a key and 403 to every key without its scope", async () => {
    const tenant = await newTenant(server());
    const others = async (scope: RouteScope) =>
      lacking(scope).length === 0 ? [] : [...lacking(scope).map((s) => tenant.keys[s]), (await keyWith(tenant, lacking(scope))).key];
    for (const { method, url, scope } of keyed()) {
      const label = `${method} ${url} (${scope})`;
      const path = url.replace(/:\w+/g, "x");
      const anonymous = await request(server(), method, path);
      expect([anonymous.status, anonymous.headers.get("www-authenticate")], label).toEqual([401, expect.stringMatching(/^Bearer\b/)]);
      for (const key of await others(scope!)) {
        const refused = await request(server(), method, path, { key });
        expect(refused.status, label).toBe(403);
        if (method !== "HEAD") expectForbidden(refused);
      }
    }
  });

  it("each has a call above that succeeds with its scope", () => {
    const labels = new Set(ENDPOINTS.map((endpoint) => endpoint.label));
    for (const { method, url } of keyed())
      if (method !== "HEAD") expect(labels, `${method} ${url}`).toContain(`${method} ${documented(url)}`);
  });
});

describe("a refused request has no effect", () => {
  it.each(COLLECTIONS)("stores nothing that was sent to /v1/sync/%s without a valid sync key", async (collection) => {
    const tenant = await newTenant(server());
    const send = (headers: Record<string, string>) =>
      request(server(), "POST", `/v1/sync/${collection}`, { headers, body: { data: [FACTORIES[collection]!()] } });
    expect((await send({})).status).toBe(401);
    expect((await send(bearer(generateKey().key))).status).toBe(401);
    expect((await send(bearer(tenant.keys.read))).status).toBe(403);
    expect((await send(bearer(tenant.keys.admin))).status).toBe(403);
    expect((await readAll(server(), tenant.keys.read, `/v1/${collection}`)).items).toEqual([]);
  });

  it.each(COLLECTIONS)("checks the key of /v1/sync/%s before the body", async (collection) => {
    const tenant = await newTenant(server());
    const path = `/v1/sync/${collection}`;
    const notJson = { rawBody: "{not json", headers: { "content-type": "application/json" } };
    expectUnauthorized(await request(server(), "POST", path, notJson));
    expectForbidden(await request(server(), "POST", path, { ...notJson, headers: { ...notJson.headers, ...bearer(tenant.keys.read) } }));
    const wrongType = { rawBody: "hello", headers: { "content-type": "text/plain" } };
    expectUnauthorized(await request(server(), "POST", path, wrongType));
  });
});

describe("the lists' key checks on a tenant with records", () => {
  // A list finds its tenant from the key inside the page query (src/lists/list.service.ts),
  // so these run where that query finds rows: a key that may not read gets none of them,
  // and a 401 or 403 comes before any 400.
  const VALID = ["", "?limit=1"];
  const BAD = ["?limit=0", "?colour=red", "?cursor=junk", "?limit=1&cursor=FOREIGN"];

  it.each(COLLECTIONS)("/v1/%s answers 401 and 403 before anything else, and 200 or 400 to a read key", async (collection) => {
    const tenant = await newTenant(server());
    const other = await newTenant(server());
    for (const owner of [tenant, other]) {
      const body = { data: [FACTORIES[collection]!(), FACTORIES[collection]!()] };
      expect((await request(server(), "POST", `/v1/sync/${collection}`, { key: owner.keys.sync, body })).status).toBe(200);
    }
    const foreign = (await request(server(), "GET", `/v1/${collection}?limit=1`, { key: other.keys.read })).body.cursor;
    expect(foreign).toEqual(expect.any(String));
    const revoked = await keyWith(tenant, ["read", "sync"]);
    expect(await revokeKey(server().storage.db, revoked.keyId, Date.now())).toBe(true);
    const withoutRead = [tenant.keys.sync, tenant.keys.admin, (await keyWith(tenant, ["sync", "admin"])).key];
    for (const query of [...VALID, ...BAD]) {
      const path = `/v1/${collection}${query.replace("FOREIGN", encodeURIComponent(foreign))}`;
      for (const key of [revoked.key, generateKey().key]) expectUnauthorized(await request(server(), "GET", path, { key }));
      for (const key of withoutRead) expectForbidden(await request(server(), "GET", path, { key }));
      const read = await request(server(), "GET", path, { key: tenant.keys.read });
      if (VALID.includes(query)) expect(read.body.data.length, path).toBeGreaterThan(0);
      else expect([read.status, read.body.code], path).toEqual([400, expect.any(String)]);
    }
  });
});

describe("scopes across the two kinds of endpoint", () => {
  it.each(COLLECTIONS)("a sync key cannot read /v1/%s and a read key cannot sync it", async (collection) => {
    const tenant = await newTenant(server());
    expectForbidden(await request(server(), "GET", `/v1/${collection}`, { key: tenant.keys.sync }));
    expectForbidden(
      await request(server(), "POST", `/v1/sync/${collection}`, { key: tenant.keys.read, body: { data: [FACTORIES[collection]!()] } }),
    );
    expectForbidden(await request(server(), "GET", `/v1/${collection}`, { key: tenant.keys.admin }));
  });

  it("a key with read and sync syncs a record and then reads it back", async () => {
    const tenant = await newTenant(server());
    const { key } = await keyWith(tenant, ["read", "sync"]);
    for (const collection of COLLECTIONS) {
      const record = FACTORIES[collection]!();
      const synced = await request(server(), "POST", `/v1/sync/${collection}`, { key, body: { data: [record] } });
      expect(synced.status).toBe(200);
      const listed = await request(server(), "GET", `/v1/${collection}`, { key });
      expect(listed.status).toBe(200);
      expect(listed.body.data.map((r: { id: string }) => r.id)).toEqual([record.id]);
    }
  });
});

describe("endpoints that need no key", () => {
  it.each(["/healthz", "/readyz", "/v1/openapi.json", "/docs"])("GET %s answers 200 without a key, and with a junk one", async (path) => {
    const variants: Record<string, string>[] = [{}, { authorization: "Bearer crib_nonsense" }, { authorization: "Basic Zm9vOmJhcg==" }];
    for (const headers of variants) {
      const reply = await request(server(), "GET", path, { headers });
      expect(reply.status, `${path} ${JSON.stringify(headers)}`).toBe(200);
    }
  });

  it.each(["/healthz", "/readyz", "/v1/openapi.json", "/docs"])(
    "answers other methods on %s with 405 and Allow: GET, HEAD",
    async (path) => {
      for (const method of ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
        const reply = await request(server(), method, path);
        expect(reply.status, `${method} ${path}`).toBe(405);
        expect(reply.headers.get("allow"), `${method} ${path}`).toBe("GET, HEAD");
        expect(reply.body).toMatchObject({ status: 405, code: "method_not_allowed", detail: `${path} allows GET, HEAD` });
      }
    },
  );

  it("serves an OpenAPI document that declares bearer auth on the keyed routes", async () => {
    const reply = await request(server(), "GET", "/v1/openapi.json");
    expect(reply.body.openapi).toMatch(/^3\./);
    expect(reply.body.components.securitySchemes.apiKey).toMatchObject({ type: "http", scheme: "bearer" });
    for (const collection of COLLECTIONS) {
      expect(reply.body.paths[`/v1/${collection}`].get.security).toEqual([{ apiKey: [] }]);
      expect(reply.body.paths[`/v1/sync/${collection}`].post.security).toEqual([{ apiKey: [] }]);
    }
  });
});

describe("key format", () => {
  it("generates keys with the crib_ prefix that pass the well-formedness check", () => {
    for (let i = 0; i < 200; i += 1) {
      const { key, keyId, hash } = generateKey();
      expect(key.startsWith(KEY_PREFIX)).toBe(true);
      expect(key).toMatch(/^crib_[0-9A-Za-z]+$/);
      expect(isWellFormedKey(key)).toBe(true);
      expect(key.startsWith(keyId)).toBe(true);
      expect(hash).toBe(hashKey(key));
      expect(hash).not.toContain(key.slice(KEY_PREFIX.length));
    }
  });

  it("carries at least 128 random bits: 22 or more base62 characters beyond prefix and checksum", () => {
    const { key } = generateKey();
    // 22 base62 characters are 130.9 bits; the checksum takes at most 6 characters (CRC-32).
    expect(key.length - KEY_PREFIX.length - 6).toBeGreaterThanOrEqual(22);
  });

  it("generates distinct keys and distinct key ids", () => {
    const keys = Array.from({ length: 5000 }, () => generateKey());
    expect(new Set(keys.map((k) => k.key)).size).toBe(keys.length);
    expect(new Set(keys.map((k) => k.keyId)).size).toBe(keys.length);
  });

  it("refuses every single-character change of a valid key", () => {
    const { key } = generateKey();
    for (let index = KEY_PREFIX.length; index < key.length; index += 1) {
      for (const shift of [1, 17, 61]) {
        const changed = changeCharAt(key, index, shift);
        expect(isWellFormedKey(changed), changed).toBe(false);
      }
    }
    for (let index = 0; index < KEY_PREFIX.length; index += 1) {
      expect(isWellFormedKey(key.slice(0, index) + "x" + key.slice(index + 1))).toBe(false);
    }
  });

  it.each(["", "crib_", "crib_abc", " crib_x", "bearer", "crib_" + "a".repeat(38), "crib_" + "a".repeat(200)])(
    "refuses the malformed key %j",
    (key) => {
      expect(isWellFormedKey(key)).toBe(false);
    },
  );

  it("stores an issued key only as a hash", async () => {
    const tenant = await newTenant(server());
    const issued = await keyWith(tenant, ["read", "sync"]);
    const rows = await server().storage.db.selectFrom("api_keys").selectAll().where("key_id", "=", keyIdOf(issued.key)).execute();
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row.hash).not.toBe(issued.key);
    expect(row.hash).toBe(hashKey(issued.key));
    expect(row.hash).toMatch(/^[0-9a-f]{64}$/);
    // Nothing stored holds the secret: the key id is public, the rest of the key is not.
    const secret = issued.key.slice(issued.keyId.length);
    for (const value of Object.values(row)) expect(String(value)).not.toContain(secret);
    const everyRow = await server().storage.db.selectFrom("api_keys").selectAll().execute();
    for (const other of everyRow) for (const value of Object.values(other)) expect(String(value)).not.toContain(secret);
  });
});
