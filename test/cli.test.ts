/**
 * The `cribline` command line, run as the real executable against a fresh database per
 * test (README: "Command line"): migrate, tenants, keys, import, demo and serve.
 */
import { spawn } from "node:child_process";
import { createServer, type AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { loadConfig, parseDatabaseUrl } from "../src/platform/config.js";
import { KEY_PREFIX, keyWith } from "../src/platform/keys.js";
import { openStorage } from "../src/storage/database.js";
import { Webhook } from "standardwebhooks";
import { findTenantBySlug } from "../src/tenants/tenant.repository.js";
import { insertEndpoint } from "../src/webhooks/endpoint.repository.js";
import { withdrawal } from "./support/factories.js";
import { Receiver } from "./support/receiver.js";
import { BIN, httpGet, lastLine, readAllOver, useCliWorkspace, type CliResult } from "./support/cli.js";

const workspace = useCliWorkspace();

const KEY_LINE = /^crib_[0-9A-Za-z]{38}$/;
const SLOW = 90_000;

/** Fails with the process's output when it did not exit 0. */
function expectSuccess(result: CliResult): CliResult {
  expect(result.code, `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`).toBe(0);
  return result;
}

/** Expects a refusal: a non-zero exit, a message on stderr matching `message`, and no key printed. */
function expectRefusal(result: CliResult, message: RegExp): void {
  expect(result.code, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).not.toBe(0);
  expect(result.code).not.toBeNull();
  expect(result.stderr).toMatch(message);
  expect(result.stdout).not.toMatch(/crib_/);
}

/** The rows of a table that its statistics count: 0 before it was ever analysed. */
async function rowsThePlannerKnows(table: string): Promise<number> {
  const storage = await openStorage(parseDatabaseUrl(workspace().env.DATABASE_URL!));
  try {
    if (storage.engine.name === "postgres") {
      const { rows } = await sql<{ n: number }>`select reltuples as n from pg_class where relname = ${table}`.execute(storage.db);
      return Math.max(0, Number(rows[0]?.n ?? 0));
    }
    const stats = await sql<{ n: string }>`select name as n from sqlite_master where name = 'sqlite_stat1'`.execute(storage.db);
    if (stats.rows.length === 0) return 0;
    const { rows } = await sql<{ stat: string }>`select stat from sqlite_stat1 where tbl = ${table} limit 1`.execute(storage.db);
    return Number(rows[0]?.stat.split(" ")[0] ?? 0);
  } finally {
    await storage.close();
  }
}

async function createTenant(slug: string): Promise<void> {
  expectSuccess(await workspace().run(["tenants", "create", slug]));
}

async function createKey(tenant: string, scopes: string): Promise<string> {
  const result = expectSuccess(await workspace().run(["keys", "create", "--tenant", tenant, "--scopes", scopes]));
  const key = lastLine(result.stdout);
  expect(key).toMatch(KEY_LINE);
  return key;
}

/** The `keys list` line of the key with this id. */
async function keyListLine(keyId: string): Promise<string | undefined> {
  const result = expectSuccess(await workspace().run(["keys", "list"]));
  return result.stdout.split("\n").find((line) => line.includes(keyId));
}

/** The counts an import prints. */
function importCounts(stdout: string): { created: number; updated: number; unchanged: number } {
  const count = (word: string) => Number(new RegExp(`(\\d+) ${word}`).exec(stdout)?.[1] ?? NaN);
  return { created: count("created"), updated: count("updated"), unchanged: count("unchanged") };
}

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  for (const start = Date.now(); !(await condition()); await sleep(5)) {
    if (Date.now() - start > timeoutMs) throw new Error("condition not met in time");
  }
}

function ndjson(records: unknown[]): string {
  return records.map((r) => JSON.stringify(r)).join("\n") + "\n";
}

function withdrawals(count: number): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) =>
    withdrawal({
      id: `w-${String(i).padStart(5, "0")}`,
      employeeId: `emp-${i % 37}`,
      quantity: 1 + (i % 4),
      deliveredAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    }),
  );
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
    await createTenant("acme");
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
    await createTenant("acme");
    const result = expectSuccess(await workspace().run(["keys", "create", "--tenant", "acme", "--scopes", "read,sync"]));
    expect(lastLine(result.stdout)).toMatch(KEY_LINE);
    expect(result.stdout.match(/crib_[0-9A-Za-z]{38}/g)).toHaveLength(1);
  });

  it("refuses scopes other than read, sync and admin, and stores no key", { timeout: SLOW }, async () => {
    await createTenant("acme");
    for (const scopes of ["read,write", "READ", "read;sync", "admin,", "all"]) {
      expectRefusal(await workspace().run(["keys", "create", "--tenant", "acme", "--scopes", scopes]), /scope/);
    }
    expect(await keyListLine("crib_")).toBeUndefined();
  });

  it("refuses a key for a tenant that does not exist", async () => {
    expectRefusal(await workspace().run(["keys", "create", "--tenant", "nobody", "--scopes", "read"]), /nobody/);
  });

  it("lists each key's id, tenant and scopes, never its secret", async () => {
    await createTenant("acme");
    await createTenant("beta");
    const readSync = await createKey("acme", "read,sync");
    const admin = await createKey("beta", "admin");
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
    await createTenant("acme");
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
    await createTenant("acme");
    const revoked = await createKey("acme", "read");
    const kept = await createKey("acme", "read");
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
    await createTenant("acme");
    const key = await createKey("acme", "read");
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

describe("cribline import", () => {
  it("stores a file of 2,500 withdrawals, prints the counts, and finds them unchanged the second time", { timeout: SLOW }, async () => {
    await createTenant("acme");
    const records = withdrawals(2_500);
    const file = workspace().file("withdrawals.ndjson", ndjson(records));

    const first = expectSuccess(await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]));
    expect(importCounts(first.stdout)).toEqual({ created: 2_500, updated: 0, unchanged: 0 });
    // It leaves the table analysed: the planner knows about the rows it loaded.
    expect(await rowsThePlannerKnows("withdrawals")).toBeGreaterThanOrEqual(2_500);
    const again = expectSuccess(await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]));
    expect(importCounts(again.stdout)).toEqual({ created: 0, updated: 0, unchanged: 2_500 });

    const key = await createKey("acme", "read");
    const server = await workspace().serve();
    const items = await readAllOver(server.url, key, "/v1/withdrawals");
    expect(items).toHaveLength(2_500);
    expect(new Set(items.map((r) => r.id))).toEqual(new Set(records.map((r) => r.id)));
    const sample = records[1_234]!;
    expect(items.find((r) => r.id === sample.id)).toEqual({ ...sample, createdAt: expect.any(String) });
  });

  it.each([
    // [what, records in the file, the bad line, the bad field's override]
    ["a quantity of 0 in the second batch", 1_200, 1_150, { quantity: 0 }, "quantity"],
    ["a date without time", 5, 4, { deliveredAt: "2026-11-01" }, "deliveredAt"],
    ["an unknown field", 5, 2, { colour: "red" }, "colour"],
  ] as const)("fails on %s, naming the line and the field", { timeout: SLOW }, async (_what, count, badLine, override, field) => {
    await createTenant("acme");
    const lines = withdrawals(count).map((r) => JSON.stringify(r));
    // A blank line early on: line numbers are the file's, blank lines included.
    lines.splice(2, 0, "");
    lines[badLine - 1] = JSON.stringify({ ...withdrawal({ id: "bad-one" }), ...override });
    const file = workspace().file("bad.ndjson", lines.join("\n") + "\n");

    const result = await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]);
    expect(result.code, result.stderr).not.toBe(0);
    expect(result.code).not.toBeNull();
    const named = result.stderr.split("\n").find((l) => new RegExp(`\\bline ${badLine}\\b`).test(l) && l.includes(field));
    expect(named, result.stderr).toBeDefined();
  });

  it("keeps the batches before a bad one, as it says", { timeout: SLOW }, async () => {
    await createTenant("acme");
    const records = withdrawals(1_200);
    const lines = records.map((r) => JSON.stringify(r));
    lines[1_149] = JSON.stringify({ ...records[1_149], quantity: 0 });
    const bad = await workspace().run(["import", "withdrawals", workspace().file("bad.ndjson", lines.join("\n")), "--tenant", "acme"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(
      /the batch from line 1001 was not stored; the 1000 records before it are stored \(1000 created, 0 updated, 0 unchanged\)/,
    );
    const fixed = expectSuccess(
      await workspace().run(["import", "withdrawals", workspace().file("ok.ndjson", ndjson(records)), "--tenant", "acme"]),
    );
    expect(importCounts(fixed.stdout)).toEqual({ created: 200, updated: 0, unchanged: 1_000 });
  });

  it("names a line that is not valid JSON and stores nothing of its batch", async () => {
    await createTenant("acme");
    const records = withdrawals(6);
    const lines = records.map((r) => JSON.stringify(r));
    lines[4] = '{"id": "half-a-record",';
    const result = await workspace().run([
      "import",
      "withdrawals",
      workspace().file("broken.ndjson", lines.join("\n")),
      "--tenant",
      "acme",
    ]);
    expect(result.code, result.stdout).toBe(1);
    expect(result.stderr).toMatch(/^cribline: line 5 is not valid JSON; nothing was stored$/m);
    const fixed = expectSuccess(
      await workspace().run(["import", "withdrawals", workspace().file("ok.ndjson", ndjson(records)), "--tenant", "acme"]),
    );
    expect(importCounts(fixed.stdout)).toEqual({ created: 6, updated: 0, unchanged: 0 });
  });
});

describe("cribline import: what a file may hold", () => {
  it("takes CRLF line ends and a byte order mark before the first line", { timeout: SLOW }, async () => {
    await createTenant("acme");
    const records = withdrawals(3);
    const file = workspace().file("windows.ndjson", "\uFEFF" + records.map((r) => JSON.stringify(r)).join("\r\n") + "\r\n");
    const result = expectSuccess(await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]));
    expect(importCounts(result.stdout)).toEqual({ created: 3, updated: 0, unchanged: 0 });
  });

  it("refuses a line longer than a sync body may be, naming it, without reading all of it", { timeout: SLOW }, async () => {
    await createTenant("acme");
    const first = JSON.stringify(withdrawals(1)[0]);
    const file = workspace().file("long.ndjson", `${first}\n${"x".repeat(3 * 1024 * 1024)}\n`);
    const result = await workspace().run(["import", "withdrawals", file, "--tenant", "acme"], {
      CRIBLINE_SYNC_BODY_LIMIT: String(1024 * 1024),
    });
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/^cribline: line 2 is longer than 1048576 bytes \(CRIBLINE_SYNC_BODY_LIMIT\); nothing was stored$/m);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it("refuses a line that is not valid UTF-8, naming it, instead of storing its bytes replaced", async () => {
    await createTenant("acme");
    const [one, two] = withdrawals(2);
    const latin1 = Buffer.from(JSON.stringify({ ...two, employeeName: "Jo\u00e3o" }), "latin1");
    const file = workspace().file("latin1.ndjson", Buffer.concat([Buffer.from(`${JSON.stringify(one)}\n`), latin1, Buffer.from("\n")]));
    const result = await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/^cribline: line 2 is not valid UTF-8 \(save the file as UTF-8\); nothing was stored$/m);
  });

  it("says that nothing was stored when the first batch fails", async () => {
    await createTenant("acme");
    const [one] = withdrawals(1);
    const file = workspace().file("twice.ndjson", `${JSON.stringify(one)}\n${JSON.stringify(one)}\n`);
    const result = await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/the batch from line 1 was not stored; nothing was stored/);
  });
});

describe("cribline demo", () => {
  it("creates a demo tenant and prints a key, on its last line, that reads the demo data", { timeout: SLOW }, async () => {
    const result = expectSuccess(await workspace().run(["demo", "--tenant", "d2", "--scale", "0.01"]));
    const key = lastLine(result.stdout);
    expect(key).toMatch(KEY_LINE);
    const server = await workspace().serve();
    for (const list of ["withdrawals", "employees", "training-records"]) {
      const reply = await httpGet(`${server.url}/v1/${list}?limit=5`, key);
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(reply.body.data).toHaveLength(5);
    }
  });
});

describe("cribline serve sends webhooks", () => {
  const receiver = new Receiver();
  beforeAll(() => receiver.open());
  afterAll(() => receiver.close());

  /** A tenant with a sync key and an endpoint on the receiver (added in storage: no API yet). */
  async function tenantWithEndpoint(): Promise<{ key: string; secret: string }> {
    await createTenant("acme");
    const key = await createKey("acme", "sync");
    const storage = await openStorage(parseDatabaseUrl(workspace().env.DATABASE_URL!));
    try {
      const tenant = (await findTenantBySlug(storage.db, "acme"))!;
      const endpoint = await insertEndpoint(storage.db, tenant.id, receiver.url, ["withdrawal.created"], Date.now());
      return { key, secret: endpoint.secret };
    } finally {
      await storage.close();
    }
  }

  async function syncOne(base: string, key: string): Promise<string> {
    const record = withdrawal();
    const response = await fetch(`${base}/v1/sync/withdrawals`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ data: [record] }),
    });
    expect(response.status).toBe(200);
    return record.id as string;
  }

  /** Registers an endpoint on the receiver through the admin API of a running server. */
  async function createEndpoint(base: string, adminKey: string): Promise<string> {
    const response = await fetch(`${base}/v1/webhook-endpoints`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
      body: JSON.stringify({ url: receiver.url, events: ["withdrawal.created"] }),
    });
    const body = (await response.json()) as { secret: string };
    expect(response.status, JSON.stringify(body)).toBe(201);
    return body.secret;
  }

  it("delivers a synced record to a loopback endpoint when CRIBLINE_WEBHOOKS_ALLOW_PRIVATE allows it", { timeout: SLOW }, async () => {
    receiver.received.length = 0;
    await createTenant("acme");
    const key = await createKey("acme", "sync,admin");
    const server = await workspace().serve({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" });
    const secret = await createEndpoint(server.url, key);
    const id = await syncOne(server.url, key);
    await waitFor(() => receiver.received.length > 0, 10_000);
    const { headers, body } = receiver.received[0]!;
    const verified = new Webhook(secret).verify(body, headers as Record<string, string>) as { type: string; data: { id: string } };
    expect(verified).toMatchObject({ type: "withdrawal.created", data: { id } });
    expect(await server.stop("SIGTERM")).toEqual({ code: 0, signal: null });
  });

  it(
    "announces every acknowledged record after the process is killed between commit and delivery, with the same webhook-id",
    { timeout: SLOW + 60_000 },
    async () => {
      receiver.received.length = 0;
      await createTenant("acme");
      const key = await createKey("acme", "sync,admin");
      const env = { CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" };
      const first = await workspace().serve(env);
      const secret = await createEndpoint(first.url, key);
      // Until the restart the receiver takes requests and never answers: whatever the first
      // process may have begun sending before it died is not acknowledged.
      receiver.answers = Array.from({ length: 1000 }, () => "hang" as const);
      const records = withdrawals(20);
      const response = await fetch(`${first.url}/v1/sync/withdrawals`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ data: records }),
      });
      expect(response.status).toBe(200);
      expect(await first.stop("SIGKILL")).toEqual({ code: null, signal: "SIGKILL" });
      const beforeRestart = receiver.received.map((r) => r.headers["webhook-id"]);

      receiver.answers = [];
      const second = await workspace().serve(env);
      // Usually nothing was sent yet and the restart sends all at once; a delivery the dead
      // process had begun is sent again when its lease (60 s) expires.
      const answered = () => new Map(receiver.received.slice(beforeRestart.length).map((r) => [JSON.parse(r.body).data.id, r]));
      await waitFor(() => answered().size === records.length, SLOW);
      const byRecord = new Map<string, Set<string>>();
      for (const { headers, body } of receiver.received) {
        const verified = new Webhook(secret).verify(body, headers as Record<string, string>) as { data: { id: string } };
        byRecord.set(verified.data.id, (byRecord.get(verified.data.id) ?? new Set()).add(String(headers["webhook-id"])));
      }
      expect([...byRecord.keys()].sort()).toEqual(records.map((r) => r.id as string).sort());
      // Every copy of one record's event, before and after the kill, has one webhook-id.
      for (const ids of byRecord.values()) expect(ids.size).toBe(1);
      expect(await second.stop("SIGTERM")).toEqual({ code: 0, signal: null });
    },
  );

  it("announces what an import stores, like sync, and nothing when the same file is imported again", { timeout: SLOW }, async () => {
    await tenantWithEndpoint();
    const records = withdrawals(30);
    const file = workspace().file("withdrawals.ndjson", ndjson(records));
    const messages = async () => {
      const storage = await openStorage(parseDatabaseUrl(workspace().env.DATABASE_URL!));
      try {
        const rows = await storage.db.selectFrom("webhook_messages").select(["type", "record_id"]).execute();
        return rows.map((row) => `${row.type} ${row.record_id}`).sort();
      } finally {
        await storage.close();
      }
    };
    expectSuccess(await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]));
    const announced = await messages();
    expect(announced).toEqual(records.map((r) => `withdrawal.created ${r.id}`).sort());
    expectSuccess(await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]));
    expect(await messages()).toEqual(announced);
  });

  it("refuses a loopback endpoint by default, and sends it nothing", { timeout: SLOW }, async () => {
    receiver.received.length = 0;
    const { key } = await tenantWithEndpoint();
    const server = await workspace().serve();
    await syncOne(server.url, key);
    const storage = await openStorage(parseDatabaseUrl(workspace().env.DATABASE_URL!));
    try {
      let errors: (string | null)[] = [];
      await waitFor(async () => {
        errors = (await storage.db.selectFrom("webhook_attempts").select("error").execute()).map((a) => a.error);
        return errors.length > 0;
      }, 10_000);
      expect(errors[0]).toMatch(/^refused: 127\.0\.0\.1 is not a public address/);
    } finally {
      await storage.close();
    }
    expect(receiver.received).toHaveLength(0);
  });
});

describe("cribline serve", () => {
  it("on a new database, creates the demo tenant once and prints a key and a curl line that works", { timeout: SLOW }, async () => {
    const first = await workspace().serve({ CRIBLINE_DEMO: undefined });
    const printed = first.stdout();
    const key = /Demo API key[^\n]*?(crib_[0-9A-Za-z]{38})\b/.exec(printed)?.[1];
    expect(key, printed).toBeDefined();
    const curl = /curl [^\n]*-H "Authorization: Bearer (crib_[0-9A-Za-z]{38})" "(http[^"]+)"/.exec(printed);
    expect(curl, printed).not.toBeNull();
    expect(curl![1]).toBe(key);
    const reply = await httpGet(curl![2]!, curl![1]);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.data.length).toBeGreaterThan(0);
    expect((await first.stop()).code).toBe(0);

    const second = await workspace().serve({ CRIBLINE_DEMO: undefined });
    expect(second.stdout()).not.toMatch(/crib_|demo/i);
    expect((await httpGet(`${second.url}/healthz`)).status).toBe(200);
    expect((await second.stop()).code).toBe(0);
    const keys = expectSuccess(await workspace().run(["keys", "list"]))
      .stdout.trim()
      .split("\n");
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(/\bdemo\b/);
    // The first key still works after the restart.
    const third = await workspace().serve();
    expect((await httpGet(`${third.url}/v1/withdrawals?limit=1`, key)).status).toBe(200);
  });

  it("still gives a working demo key after a first start stopped while it creates the demo data", { timeout: SLOW }, async () => {
    // Ctrl-C or a supervisor's SIGTERM during the first start (the demo data takes about a second).
    const first = await workspace().launch({ CRIBLINE_DEMO: undefined });
    await waitFor(() => workspace().writerStarted());
    await sleep(300);
    await first.stop("SIGTERM");

    const second = await workspace().serve({ CRIBLINE_DEMO: undefined });
    const printed = first.stdout() + second.stdout();
    const key = /Demo API key[^\n]*?(crib_[0-9A-Za-z]{38})\b/.exec(printed)?.[1];
    expect(key, `a demo key printed by either start:\n${printed}`).toBeDefined();
    const reply = await httpGet(`${second.url}/v1/withdrawals?limit=1`, key);
    expect(reply.status).toBe(200);
    expect(reply.body.data).toHaveLength(1);
  });

  it("does not create the demo tenant with CRIBLINE_DEMO=false", { timeout: SLOW }, async () => {
    const server = await workspace().serve();
    expect(server.stdout()).not.toMatch(/crib_/);
    await server.stop();
    expect(expectSuccess(await workspace().run(["keys", "list"])).stdout.trim()).toBe("");
  });

  it("answers on the port it was given and shuts down cleanly on SIGTERM", { timeout: SLOW }, async () => {
    const server = await workspace().serve();
    expect(server.url).toContain(`:${server.port}`);
    expect((await httpGet(`${server.url}/healthz`)).status).toBe(200);
    const exit = await server.stop("SIGTERM");
    expect(exit, server.stderr()).toEqual({ code: 0, signal: null });
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });

  it("shuts down cleanly on a SIGTERM sent as soon as it says it is listening", { timeout: SLOW }, async () => {
    // Once it announces that it listens, a supervisor may stop it at any moment. The timing
    // window is short, so try a few starts.
    for (let attempt = 1; attempt <= 6; attempt += 1) {
      const server = await workspace().serve();
      expect(await server.stop("SIGTERM"), `start ${attempt}: ${server.stderr()}`).toEqual({ code: 0, signal: null });
    }
  });

  it("refuses --workers above 1 on SQLite, which one process serves", async () => {
    const result = await workspace().run(["serve", "--workers", "2"], { DATABASE_URL: `sqlite:${workspace().dir}/w.db` });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/--workers above 1 needs PostgreSQL/);
  });

  it.each(["0", "two", "1.5", "-1"])("refuses --workers %s", async (workers) => {
    const result = await workspace().run(["serve", "--workers", workers]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/--workers.*whole number from 1/);
  });

  it("serve refuses a webhook retention shorter than a week, with a clear message", async () => {
    const result = await workspace().run(["serve"], { CRIBLINE_WEBHOOK_RETENTION_DAYS: "3" });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/CRIBLINE_WEBHOOK_RETENTION_DAYS must be 0 \(keep for ever\) or at least 7 days, got "3"/);
  });

  it.each([
    [{ DATABASE_POOL_SIZE: "abc" }, /DATABASE_POOL_SIZE must be a whole number from 1 to 1000, got "abc"/],
    [{ DATABASE_STATEMENT_TIMEOUT_MS: "-5" }, /DATABASE_STATEMENT_TIMEOUT_MS must be a whole number from 100/],
    // The default database, DATABASE_URL unset (empty counts as unset).
    [{ DATABASE_URL: "", DATABASE_POOL_SIZE: "0" }, /DATABASE_POOL_SIZE must be a whole number from 1 to 1000, got "0"/],
    [{ DATABASE_URL: "", DATABASE_STATEMENT_TIMEOUT_MS: "soon" }, /DATABASE_STATEMENT_TIMEOUT_MS must be a whole number from 100/],
  ])("serve refuses the database setting %j on either engine, naming it", async (env, message) => {
    const result = await workspace().run(["serve"], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
  });

  it("serve names HOST when it cannot listen on that address, and PORT when another process listens there", async () => {
    // An address of the documentation range (RFC 5737), no machine's own.
    const foreign = await workspace().run(["serve"], { HOST: "203.0.113.7" });
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toMatch(/HOST must be an address of this machine to listen on, got "203\.0\.113\.7" \(EADDRNOTAVAIL\)/);
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    try {
      const port = (blocker.address() as AddressInfo).port;
      const taken = await workspace().run(["serve"], { PORT: String(port) });
      expect(taken.code).toBe(1);
      expect(taken.stderr).toContain(`PORT ${port} is in use on 127.0.0.1 (EADDRINUSE)`);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it("serve with HOST=0.0.0.0 says it listens on every interface, and prints a URL that answers", async () => {
    const server = await workspace().serve({ HOST: "0.0.0.0" });
    expect(server.stdout()).toContain(`listening on http://127.0.0.1:${server.port} and every other interface (HOST=0.0.0.0)`);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it("openapi stops quietly, with status 0, when its reader closes the pipe early (`cribline openapi | head`)", async () => {
    const env = Object.fromEntries(Object.entries({ PATH: process.env.PATH, ...workspace().env }).filter(([, v]) => v !== undefined));
    const child = spawn(process.execPath, [BIN, "openapi"], { cwd: workspace().dir, env, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
    // The reader takes the first chunk and goes away, as `head` does.
    child.stdout.once("data", () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  });

  it.each([["CRIBLINE_DEMO"], ["CRIBLINE_WEBHOOKS_ALLOW_PRIVATE"]])(
    "serve refuses a flag %s other than true, false, 1 or 0",
    async (name) => {
      const result = await workspace().run(["serve"], { [name]: "yes" });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`${name} must be true or false (or 1 or 0), got "yes"`);
      const read = (value: string) => loadConfig({ [name]: value })[name === "CRIBLINE_DEMO" ? "demoOnFirstStart" : "webhooksAllowPrivate"];
      expect([read("true"), read("1"), read("false"), read("0")]).toEqual([true, true, false, false]);
    },
  );

  it.each([["serve"], ["migrate"]])("%s refuses a DATABASE_URL it does not support, with a clear message", async (command) => {
    const result = await workspace().run([command], { DATABASE_URL: "mysql://x" });
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stderr).toMatch(/DATABASE_URL/);
    expect(result.stderr).toMatch(/sqlite|postgres/);
  });
});
