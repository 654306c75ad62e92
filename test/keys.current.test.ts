/**
 * GET /v1/key (README, "Keys over the API"): any valid key reads itself, whatever its scopes:
 * its id, name, scopes and expiry, its tenant's slug and time zone, never a secret.
 */
import { describe, expect, it } from "vitest";
import { CriblineClient } from "../client/src/index.js";
import { keyIdOf } from "../src/platform/keys.js";
import { setTenantZone } from "../src/usage/usage.repository.js";
import { get, newTenant, request, useServer } from "./support/harness.js";

const server = useServer();

describe("GET /v1/key", () => {
  it("shows the key in use and its tenant, to a key of any scope", async () => {
    const tenant = await newTenant(server());
    const made = await request(server(), "POST", "/v1/api-keys", {
      key: tenant.keys.admin,
      body: { name: "ERP bridge", scopes: ["sync"], expiresAt: "2099-01-01T00:00:00Z" },
    });
    expect(made.status).toBe(201);
    await setTenantZone(server().storage.db, tenant.id, "Europe/Lisbon");
    const reply = await get(server(), "/v1/key", made.body.key);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      id: keyIdOf(made.body.key),
      name: "ERP bridge",
      scopes: ["sync"],
      createdAt: made.body.createdAt,
      expiresAt: "2099-01-01T00:00:00.000Z",
      lastUsedAt: null,
      revokedAt: null,
      tenant: tenant.slug,
      timeZone: "Europe/Lisbon",
    });
    expect(JSON.stringify(reply.body)).not.toContain(made.body.key.slice(13));
    for (const scope of ["read", "admin"] as const)
      expect((await get(server(), "/v1/key", tenant.keys[scope])).body.scopes).toEqual([scope]);
    // The client reads the same.
    expect(await new CriblineClient({ baseUrl: server().url, apiKey: made.body.key }).currentKey()).toEqual(reply.body);
  });

  it("refuses no key and a revoked one with 401, and other methods with 405", async () => {
    const tenant = await newTenant(server());
    expect((await get(server(), "/v1/key")).status).toBe(401);
    const keyId = keyIdOf(tenant.keys.read);
    expect((await request(server(), "POST", `/v1/api-keys/${keyId}/revoke`, { key: tenant.keys.admin })).status).toBe(200);
    expect((await get(server(), "/v1/key", tenant.keys.read)).status).toBe(401);
    const post = await request(server(), "POST", "/v1/key", { key: tenant.keys.all, body: {} });
    expect([post.status, post.headers.get("allow")]).toEqual([405, "GET, HEAD"]);
  });
});
