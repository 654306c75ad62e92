/**
 * The `cribline` command line, run as the real executable against a fresh database per
 * test (README: "Command line"): migrate, tenants and keys. Import and demo are in
 * cli.import.test.ts, serve in cli.serve.test.ts.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { parseDatabaseUrl } from "../src/platform/config.js";
import { KEY_PREFIX, keyWith } from "../src/platform/keys.js";
import { openStorage } from "../src/storage/database.js";
import { httpGet, lastLine, useCliWorkspace } from "./support/cli.js";
import { createKey, createTenant, expectRefusal, expectSuccess, KEY_LINE, SLOW } from "./support/cli-steps.js";

const workspace = useCliWorkspace();

/** The `keys list` line of the key with this id. */
async function keyListLine(keyId: string): Promise<string | undefined> {
  const result = expectSuccess(await workspace().run(["keys", "list"]));
  return result.stdout.split("\n").find((line) => line.includes(keyId));
}

describe("cribline migrate", () => {
  it("brings a new database up to date, and again without harm", async () => {
    const first = expectSuccess(await workspace().run(["migrate"]));
    expect(first.stdout).toMatch(/up to date/);
    expectSuccess(await workspace().run(["migrate"]));
  });
  it.each([["serve"], ["migrate"], ["keys", "list"]])("%s refuses a database that a newer cribline has migrated", async (...args) => {
    expectSuccess(await workspace().run(["migrate"]));
    const storage = await openStorage(parseDatabaseUrl(workspace().env.DATABASE_URL!));
    try {
      await sql`insert into kysely_migration (name, timestamp) values ('9999-from-the-future', '2030-01-01T00:00:00.000Z')`.execute(
        storage.db,
      );
    } finally {
      await storage.close();
    }
    const result = await workspace().run(args);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/schema is newer than this cribline \(it has 9999-from-the-future/);
  });
});

describe("cribline tenants create", () => {
  it("creates a tenant", async () => {
    const result = expectSuccess(await workspace().run(["tenants", "create", "acme"]));
    expect(result.stdout).toMatch(/acme/);
  });

  it("refuses a duplicate slug", async () => {
    await createTenant(workspace(), "acme");
    expectRefusal(await workspace().run(["tenants", "create", "acme"]), /"acme".*exists/);
  });

  it.each(["Acme", "a_b", "ação", "has space", "x".repeat(64)])("refuses the bad slug %j", async (slug) => {
    const result = await workspace().run(["tenants", "create", slug]);
    expectRefusal(result, /slug/);
    expect(result.stdout).not.toMatch(/created/);
  });
});

describe("cribline keys", () => {
  it("prints a new key alone on the last line of stdout", async () => {
    await createTenant(workspace(), "acme");
    const result = expectSuccess(await workspace().run(["keys", "create", "--tenant", "acme", "--scopes", "read,sync"]));
    expect(lastLine(result.stdout)).toMatch(KEY_LINE);
    expect(result.stdout.match(/crib_[0-9A-Za-z]{38}/g)).toHaveLength(1);
  });

  it("refuses scopes other than read, sync and admin, and stores no key", { timeout: SLOW }, async () => {
    await createTenant(workspace(), "acme");
    for (const scopes of ["read,write", "READ", "read;sync", "admin,", "all"]) {
      expectRefusal(await workspace().run(["keys", "create", "--tenant", "acme", "--scopes", scopes]), /scope/);
    }
    expect(await keyListLine("crib_")).toBeUndefined();
  });

  it("refuses a key for a tenant that does not exist", async () => {
    expectRefusal(await workspace().run(["keys", "create", "--tenant", "nobody", "--scopes", "read"]), /nobody/);
  });

  it("lists each key's id, tenant and scopes, never its secret", async () => {
    await createTenant(workspace(), "acme");
    await createTenant(workspace(), "beta");
    const readSync = await createKey(workspace(), "acme", "read,sync");
    const admin = await createKey(workspace(), "beta", "admin");
    const listed = expectSuccess(await workspace().run(["keys", "list"])).stdout;
    for (const [key, tenant, scopes] of [
      [readSync, "acme", "read,sync"],
      [admin, "beta", "admin"],
    ] as const) {
      const keyId = key.slice(0, "crib_".length + 8);
      const line = listed.split("\n").find((l) => l.includes(keyId));
      expect(line, listed).toBeDefined();
      expect(line).toMatch(new RegExp(`\\b${tenant}\\b`));
      expect(line).toContain(scopes);
      expect(line).toMatch(/active/);
      // Neither the whole key nor its secret part beyond the public id.
      expect(listed).not.toContain(key);
      expect(listed).not.toContain(key.slice(keyId.length, keyId.length + 12));
    }
    const onlyBeta = expectSuccess(await workspace().run(["keys", "list", "--tenant", "beta"])).stdout;
    expect(onlyBeta).not.toContain(readSync.slice(0, 13));
    expect(onlyBeta).toContain(admin.slice(0, 13));
  });

  it("names an unknown tenant given to keys list instead of listing nothing", async () => {
    await createTenant(workspace(), "acme");
    const result = await workspace().run(["keys", "list", "--tenant", "acme-typo"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/no tenant "acme-typo"/);
  });

  it("takes LOG_LEVEL set but empty as its default, and names a bad one", async () => {
    expectSuccess(await workspace().run(["keys", "list"], { LOG_LEVEL: "" }));
    const bad = await workspace().run(["keys", "list"], { LOG_LEVEL: "loud" });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/LOG_LEVEL must be one of .*, got "loud"/);
  });

  it("revokes a key by its id: the list shows it revoked and the server refuses it", { timeout: SLOW }, async () => {
    await createTenant(workspace(), "acme");
    const revoked = await createKey(workspace(), "acme", "read");
    const kept = await createKey(workspace(), "acme", "read");
    const revokedId = revoked.slice(0, 13);
    expectSuccess(await workspace().run(["keys", "revoke", revokedId]));
    expect(await keyListLine(revokedId)).toMatch(/revoked/);
    expect(await keyListLine(kept.slice(0, 13))).toMatch(/active/);
    // Again: nothing changes, as over the API.
    expect(expectSuccess(await workspace().run(["keys", "revoke", revokedId])).stdout).toMatch(`${revokedId} was already revoked at`);

    const server = await workspace().serve();
    expect((await httpGet(`${server.url}/v1/withdrawals`, revoked)).status).toBe(401);
    expect((await httpGet(`${server.url}/v1/withdrawals`, kept)).status).toBe(200);
  });

  it("revokes a key given whole, and refuses text that is neither a key id nor that key", { timeout: SLOW }, async () => {
    await createTenant(workspace(), "acme");
    const key = await createKey(workspace(), "acme", "read");
    const keyId = key.slice(0, 13);
    // Its id followed by anything else, another well-formed key with the same id, a mistyped id.
    const other = `${keyId}${"0".repeat(key.length - 13 - 6)}`;
    const sameIdOtherKey = keyWith(other.slice(KEY_PREFIX.length));
    for (const wrong of [`${keyId}-not-my-key`, sameIdOtherKey, keyId.slice(0, 12), `${keyId}x`]) {
      expectRefusal(await workspace().run(["keys", "revoke", wrong]), /no key matches the key given|neither a key id/);
      expect(await keyListLine(keyId)).toMatch(/active/);
    }
    expectSuccess(await workspace().run(["keys", "revoke", key]));
    expect(await keyListLine(keyId)).toMatch(/revoked/);
  });
});
