/**
 * Keys over the API (README: "Keys"): a key with the `admin` scope makes, lists, reads and
 * revokes its own tenant's keys under /v1/api-keys; secrets are shown once and never listed;
 * expiry and revocation hold on the next request, in every process.
 */
import { describe, expect, it } from "vitest";
import { hashKey, keyIdOf } from "../src/platform/keys.js";
import { issueKey } from "../src/tenants/tenant.service.js";
import { lastLine, useCliWorkspace } from "./support/cli.js";
import { ENGINE } from "./support/databases.js";
import { FACTORIES } from "./support/factories.js";
import { get, newTenant, readAll, request, sync, useServer, type TestTenant } from "./support/harness.js";

const FLUSH_MS = 300;
const server = useServer({}, { keyUsageFlushMs: FLUSH_MS });

const KEY_FIELDS = ["createdAt", "expiresAt", "id", "lastUsedAt", "name", "revokedAt", "scopes"];

async function createKey(tenant: TestTenant, body: unknown) {
  return request(server(), "POST", "/v1/api-keys", { key: tenant.keys.admin, body });
}

describe("creating a key", () => {
  it("answers 201 with the key, shown only there, and the key works for its scopes alone", async () => {
    const tenant = await newTenant(server());
    const reply = await createKey(tenant, { name: "nightly export", scopes: ["read"] });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(Object.keys(reply.body).sort()).toEqual([...KEY_FIELDS, "key"].sort());
    expect(reply.body).toMatchObject({ name: "nightly export", scopes: ["read"], expiresAt: null, lastUsedAt: null, revokedAt: null });
    expect(reply.body.key).toMatch(/^crib_[0-9A-Za-z]{38}$/);
    expect(reply.body.id).toBe(keyIdOf(reply.body.key));
    expect(reply.headers.get("location")).toBe(`/v1/api-keys/${reply.body.id}`);
    expect(Date.parse(reply.body.createdAt)).toBeGreaterThan(Date.now() - 60_000);
    expect((await get(server(), "/v1/withdrawals", reply.body.key)).status).toBe(200);
    expect((await request(server(), "POST", "/v1/sync/withdrawals", { key: reply.body.key, body: { data: [] } })).status).toBe(403);
    const read = await get(server(), `/v1/api-keys/${reply.body.id}`, tenant.keys.admin);
    expect(read.status).toBe(200);
    expect(read.body.key).toBeUndefined();
    expect(read.body).toEqual(Object.fromEntries(Object.entries(reply.body).filter(([field]) => field !== "key")));
  });

  it("makes admin keys that manage keys in turn, and keys with several scopes", async () => {
    const tenant = await newTenant(server());
    const admin = await createKey(tenant, { name: "admin", scopes: ["admin", "read", "sync"] });
    expect(admin.status).toBe(201);
    expect([...admin.body.scopes].sort()).toEqual(["admin", "read", "sync"]);
    const made = await request(server(), "POST", "/v1/api-keys", { key: admin.body.key, body: { name: "second", scopes: ["sync"] } });
    expect(made.status).toBe(201);
  });

  it.each([
    ["no body", undefined, "invalid_body"],
    ["no name", { scopes: ["read"] }, "invalid_body"],
    ["an empty name", { name: "", scopes: ["read"] }, "invalid_body"],
    ["a name of 101 characters", { name: "x".repeat(101), scopes: ["read"] }, "invalid_body"],
    ["no scopes", { name: "k" }, "invalid_body"],
    ["an empty list of scopes", { name: "k", scopes: [] }, "invalid_body"],
    ["an unknown scope", { name: "k", scopes: ["write"] }, "invalid_body"],
    ["a scope twice", { name: "k", scopes: ["read", "read"] }, "invalid_body"],
    ["scopes as a string", { name: "k", scopes: "read" }, "invalid_body"],
    ["an unknown field", { name: "k", scopes: ["read"], tenant: "other" }, "invalid_body"],
    ["an expiry that is not a date-time", { name: "k", scopes: ["read"], expiresAt: "tomorrow" }, "invalid_time"],
    ["an expiry without a zone", { name: "k", scopes: ["read"], expiresAt: "2099-01-01T00:00:00" }, "invalid_time"],
    ["an expiry in the past", { name: "k", scopes: ["read"], expiresAt: "2020-01-01T00:00:00Z" }, "invalid_time"],
  ])("refuses %s with 400", async (_label, body, code) => {
    const tenant = await newTenant(server());
    const reply = await createKey(tenant, body);
    expect(reply.status).toBe(400);
    expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(reply.body).toMatchObject({ status: 400, code, detail: expect.any(String) });
    // Nothing was made.
    expect((await get(server(), "/v1/api-keys", tenant.keys.admin)).body.data).toHaveLength(4);
  });
});

describe("listing keys", () => {
  it("pages the tenant's keys newest first, with no secret and no hash, revoked ones too", async () => {
    const tenant = await newTenant(server());
    const made: { id: string; key: string }[] = [];
    for (let i = 0; i < 5; i += 1) made.push((await createKey(tenant, { name: `key ${i}`, scopes: ["read"] })).body);
    expect((await request(server(), "POST", `/v1/api-keys/${made[1]!.id}/revoke`, { key: tenant.keys.admin })).status).toBe(200);
    for (const limits of [[100], [2], [1, 3]]) {
      const { items, pages } = await readAll(server(), tenant.keys.admin, "/v1/api-keys", limits);
      // The four keys every test tenant starts with, and the five made here.
      expect(items).toHaveLength(9);
      expect(pages).toBeGreaterThanOrEqual(Math.ceil(9 / Math.max(...limits)));
      for (const item of items) expect(Object.keys(item).sort()).toEqual(KEY_FIELDS);
      // Newest first; the pages together are the one-page list, each key once.
      const times = items.map((item) => Date.parse(item.createdAt));
      expect(times).toEqual([...times].sort((x, y) => y - x));
      expect(new Set(items.map((item) => item.id)).size).toBe(9);
      // lastUsedAt aside: this file flushes key use every FLUSH_MS, so the admin key's may move
      // between the two reads.
      const withoutUse = (list: typeof items) => list.map((item) => ({ ...item, lastUsedAt: "not compared" }));
      if (limits[0] !== 100) {
        const whole = await readAll(server(), tenant.keys.admin, "/v1/api-keys");
        expect(withoutUse(items)).toEqual(withoutUse(whole.items));
      }
      expect(items.map((item) => item.id)).toEqual(expect.arrayContaining(made.map((m) => m.id)));
      expect(items.find((item) => item.id === made[1]!.id)?.revokedAt).toEqual(expect.any(String));
      const text = JSON.stringify(items);
      for (const key of [...made.map((m) => m.key), ...Object.values(tenant.keys)]) {
        expect(text).not.toContain(key);
        expect(text).not.toContain(hashKey(key));
      }
    }
  });

  it("shows no other tenant's keys, and refuses another tenant's cursor", async () => {
    const [a, b] = [await newTenant(server()), await newTenant(server())];
    await createKey(a, { name: "a's", scopes: ["read"] });
    const listed = await readAll(server(), b.keys.admin, "/v1/api-keys");
    expect(listed.items.map((item) => item.name)).not.toContain("a's");
    expect(listed.items).toHaveLength(4);
    const page = await get(server(), "/v1/api-keys?limit=1", a.keys.admin);
    const other = await get(server(), `/v1/api-keys?limit=1&cursor=${encodeURIComponent(page.body.cursor)}`, b.keys.admin);
    expect(other.status).toBe(400);
    expect(other.body.code).toBe("invalid_cursor");
  });
});

describe("another tenant's keys", () => {
  it("are 404 to read and to revoke, and stay valid", async () => {
    const [a, b] = [await newTenant(server()), await newTenant(server())];
    const made = (await createKey(a, { name: "a's", scopes: ["read"] })).body;
    for (const [method, path] of [
      ["GET", `/v1/api-keys/${made.id}`],
      ["POST", `/v1/api-keys/${made.id}/revoke`],
      ["GET", `/v1/api-keys/${keyIdOf(a.keys.admin)}`],
      ["POST", `/v1/api-keys/${keyIdOf(a.keys.admin)}/revoke`],
    ] as const) {
      const reply = await request(server(), method, path, { key: b.keys.admin });
      expect(reply.status, `${method} ${path}`).toBe(404);
      expect(reply.body).toMatchObject({ status: 404, code: "not_found" });
    }
    expect((await get(server(), "/v1/withdrawals", made.key)).status).toBe(200);
    expect((await get(server(), "/v1/api-keys", a.keys.admin)).status).toBe(200);
  });

  it.each(["nope", "crib_", "crib_abcdefg", "crib_abcdefghi", "%00", "x".repeat(500)])(
    "404s an id that no key could have: %s",
    async (id) => {
      const tenant = await newTenant(server());
      const reply = await get(server(), `/v1/api-keys/${encodeURIComponent(id)}`, tenant.keys.admin);
      expect(reply.status).toBe(404);
      expect(reply.body.code).toBe("not_found");
    },
  );
});

describe("revoking a key", () => {
  it("refuses the key on its next request, keeps its first revokedAt, and takes no body", async () => {
    const tenant = await newTenant(server());
    const made = (await createKey(tenant, { name: "to revoke", scopes: ["read", "sync"] })).body;
    expect((await get(server(), "/v1/withdrawals", made.key)).status).toBe(200);
    const withBody = await request(server(), "POST", `/v1/api-keys/${made.id}/revoke`, { key: tenant.keys.admin, body: { now: true } });
    expect(withBody.status).toBe(400);
    const revoked = await request(server(), "POST", `/v1/api-keys/${made.id}/revoke`, { key: tenant.keys.admin });
    expect(revoked.status).toBe(200);
    expect(Date.parse(revoked.body.revokedAt)).toBeGreaterThan(Date.now() - 60_000);
    for (const reply of [
      await get(server(), "/v1/withdrawals", made.key),
      await request(server(), "POST", "/v1/sync/withdrawals", { key: made.key, body: { data: [] } }),
    ]) {
      expect(reply.status).toBe(401);
      expect(reply.body.detail).toBe("the API key is unknown or revoked");
    }
    const again = await request(server(), "POST", `/v1/api-keys/${made.id}/revoke`, { key: tenant.keys.admin });
    expect(again.status).toBe(200);
    expect(again.body.revokedAt).toBe(revoked.body.revokedAt);
  });

  it("lets an admin key revoke itself", async () => {
    const tenant = await newTenant(server());
    const made = (await createKey(tenant, { name: "self", scopes: ["admin"] })).body;
    expect((await request(server(), "POST", `/v1/api-keys/${made.id}/revoke`, { key: made.key })).status).toBe(200);
    expect((await get(server(), "/v1/api-keys", made.key)).status).toBe(401);
  });
});

describe("an expired key", () => {
  it("is refused with 401 saying it expired, on lists and on every other route", async () => {
    const tenant = await newTenant(server());
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const made = (await createKey(tenant, { name: "short", scopes: ["read", "admin"], expiresAt })).body;
    expect(made.expiresAt).toBe(expiresAt);
    expect((await get(server(), "/v1/withdrawals", made.key)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, Date.parse(expiresAt) - Date.now() + 50));
    for (const path of ["/v1/withdrawals", "/v1/employees?name=a", "/v1/api-keys"]) {
      const reply = await get(server(), path, made.key);
      expect(reply.status, path).toBe(401);
      expect(reply.headers.get("www-authenticate")).toMatch(/^Bearer .*invalid_token/);
      expect(reply.body.detail).toBe(`the API key expired at ${expiresAt}`);
    }
  });

  it("is refused on a list page that has rows, not only on an empty one", async () => {
    const tenant = await newTenant(server());
    await sync(server(), tenant, "employees", [FACTORIES.employees!()]);
    const { key } = await issueKey(server().storage.db, tenant.slug, ["read"], { expiresAt: Date.now() + 800 });
    expect((await get(server(), "/v1/employees", key)).body.data).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 900));
    expect((await get(server(), "/v1/employees", key)).status).toBe(401);
  });
});

describe("lastUsedAt", () => {
  const settle = () => new Promise((resolve) => setTimeout(resolve, FLUSH_MS * 3));
  const lastUsed = async (tenant: TestTenant, id: string) => (await get(server(), `/v1/api-keys/${id}`, tenant.keys.admin)).body.lastUsedAt;

  it("is the time of the key's last accepted request, written when the server flushes its notes", async () => {
    const tenant = await newTenant(server());
    const made = (await createKey(tenant, { name: "used", scopes: ["read", "sync"] })).body;
    await settle();
    expect(await lastUsed(tenant, made.id)).toBeNull();
    const before = Date.now();
    expect((await get(server(), "/v1/withdrawals", made.key)).status).toBe(200);
    expect(
      (await request(server(), "POST", "/v1/sync/withdrawals", { key: made.key, body: { data: [FACTORIES.withdrawals!()] } })).status,
    ).toBe(200);
    const after = Date.now();
    await settle();
    const used = Date.parse(await lastUsed(tenant, made.id));
    expect(used).toBeGreaterThanOrEqual(before);
    expect(used).toBeLessThanOrEqual(after);
    // A refused request is no use of the key.
    expect((await get(server(), "/v1/withdrawals?limit=0", made.key)).status).toBe(400);
    expect((await get(server(), "/v1/webhook-endpoints", made.key)).status).toBe(403);
    await settle();
    expect(Date.parse(await lastUsed(tenant, made.id))).toBe(used);
  });
});

describe("the command line", () => {
  const workspace = useCliWorkspace();

  it("names a key and sets its expiry, and another process refuses a key revoked over the API", async () => {
    const ws = workspace();
    expect((await ws.run(["migrate"])).code).toBe(0);
    expect((await ws.run(["tenants", "create", "acme"])).code).toBe(0);
    const created = await ws.run([
      "keys",
      "create",
      "--tenant",
      "acme",
      "--scopes",
      "admin,read",
      "--name",
      "ops",
      "--expires",
      "2099-01-01T00:00:00Z",
    ]);
    expect(created.code, created.stderr).toBe(0);
    const admin = lastLine(created.stdout);
    const listed = await ws.run(["keys", "list", "--tenant", "acme"]);
    expect(listed.stdout).toContain("ops");
    expect(listed.stdout).toContain("2099-01-01T00:00:00.000Z");
    for (const [args, message] of [
      [["--expires", "yesterday"], /--expires/],
      [["--expires", "2020-01-01T00:00:00Z"], /future/],
      [["--name", ""], /--name/],
    ] as const) {
      const refused = await ws.run(["keys", "create", "--tenant", "acme", "--scopes", "read", ...args]);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(message);
    }
    // One process serves a SQLite database (a second serve is refused): there, both are the one server.
    const one = await ws.serve();
    const two = ENGINE === "postgres" ? await ws.serve() : one;
    const made = await fetch(`${one.url}/v1/api-keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "device", scopes: ["read"] }),
    }).then((r) => r.json() as Promise<{ id: string; key: string }>);
    const read = (base: string) => fetch(`${base}/v1/withdrawals`, { headers: { authorization: `Bearer ${made.key}` } });
    expect((await read(two.url)).status).toBe(200);
    const revoked = await fetch(`${one.url}/v1/api-keys/${made.id}/revoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}` },
    });
    expect(revoked.status).toBe(200);
    expect((await read(two.url)).status).toBe(401);
    expect((await read(one.url)).status).toBe(401);
  }, 60_000);
});

describe("methods a keys path does not have", () => {
  it.each([
    ["PUT", "/v1/api-keys", "GET, HEAD, POST"],
    ["DELETE", "/v1/api-keys", "GET, HEAD, POST"],
    ["PATCH", "/v1/api-keys/crib_abcdefgh", "GET, HEAD"],
    ["DELETE", "/v1/api-keys/crib_abcdefgh", "GET, HEAD"],
    ["POST", "/v1/api-keys/crib_abcdefgh", "GET, HEAD"],
    ["GET", "/v1/api-keys/crib_abcdefgh/revoke", "POST"],
  ])("answer %s %s with 405 and Allow: %s", async (method, path, allow) => {
    const tenant = await newTenant(server());
    const reply = await request(server(), method, path, { key: tenant.keys.admin });
    expect(reply.status).toBe(405);
    expect(reply.headers.get("allow")).toBe(allow);
    expect(reply.body).toMatchObject({ status: 405, code: "method_not_allowed" });
  });
});
