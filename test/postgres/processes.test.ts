/**
 * Many cribline processes on one PostgreSQL database (issue: scale-out): separate `serve`
 * processes and `serve --workers N` share cursors, keys and records through the database
 * alone; start-up says clearly what is wrong with the database it was given.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { withdrawal } from "../support/factories.js";
import { httpGet, lastLine, readAllOver, useCliWorkspace, type ServeProcess } from "../support/cli.js";
import { createTestDatabase, postgresUrlFor } from "../support/databases.js";

/** The newest migration, by its file name (the migrator names each by its file). */
const LATEST_MIGRATION = readdirSync(new URL("../../src/storage/migrations", import.meta.url))
  .map((file) => file.replace(/\.ts$/, ""))
  .sort()
  .at(-1)!;

// serve as an operator starts it: on PostgreSQL, a worker per core.
const workspace = useCliWorkspace({ serveDefaults: true });
const SLOW = 90_000;

async function tenantWithKey(slug: string): Promise<string> {
  expect((await workspace().run(["tenants", "create", slug])).code).toBe(0);
  const created = await workspace().run(["keys", "create", "--tenant", slug, "--scopes", "read,sync"]);
  expect(created.code, created.stderr).toBe(0);
  return lastLine(created.stdout);
}

async function syncOver(base: string, key: string, data: unknown[]): Promise<void> {
  const response = await fetch(`${base}/v1/sync/withdrawals`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ data }),
  });
  expect(response.status, await response.text()).toBe(200);
}

/** The processes whose parent is `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The fields after the command name (in parentheses): state, then the parent's pid.
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) children.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return children;
}

async function until<T>(probe: () => T | Promise<T>, ok: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() - start > timeoutMs) throw new Error(`condition not met in ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await sleep(50);
  }
}

describe("separate processes on one database", () => {
  it("accept each other's cursors, see each other's writes, and refuse a revoked key at once", { timeout: SLOW }, async () => {
    const key = await tenantWithKey("acme");
    const [a, b] = await Promise.all([workspace().serve(), workspace().serve()]);
    const records = Array.from({ length: 250 }, () => withdrawal());
    await syncOver(a.url, key, records.slice(0, 150));
    await syncOver(b.url, key, records.slice(150));

    // Page by page, alternating processes, each page continuing the other's cursor.
    const servers: ServeProcess[] = [a, b];
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page === 0 || cursor !== null; page += 1) {
      const base = servers[page % 2]!.url;
      const reply = await httpGet(`${base}/v1/withdrawals?limit=40${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`, key);
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      seen.push(...reply.body.data.map((r: { id: string }) => r.id));
      cursor = reply.body.cursor;
    }
    const single = (await readAllOver(a.url, key, "/v1/withdrawals")).map((r) => r.id);
    expect(seen).toEqual(single);
    expect(new Set(seen)).toEqual(new Set(records.map((r) => r.id)));

    const revoked = await workspace().run(["keys", "revoke", key]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await httpGet(`${a.url}/v1/withdrawals`, key)).status).toBe(401);
    expect((await httpGet(`${b.url}/v1/withdrawals`, key)).status).toBe(401);
  });
});

describe("first start of several processes on one new database", () => {
  it("creates the demo tenant once, and every process serves it", { timeout: SLOW }, async () => {
    // The process that waits for the other's seed waits longer than any statement may take.
    const env = { CRIBLINE_DEMO: undefined, DATABASE_STATEMENT_TIMEOUT_MS: "100" };
    const [a, b] = await Promise.all([workspace().serve(env), workspace().serve(env)]);
    const printed = [a.stdout(), b.stdout()].map((out) => /Demo API key[^\n]*?(crib_[0-9A-Za-z]{38})\b/.exec(out)?.[1]);
    const keys = printed.filter((key) => key !== undefined);
    expect(keys, `${a.stdout()}\n---\n${b.stdout()}`).toHaveLength(1);
    for (const server of [a, b]) {
      const reply = await httpGet(`${server.url}/v1/withdrawals?limit=2`, keys[0]);
      expect(reply.status).toBe(200);
      expect(reply.body.data).toHaveLength(2);
    }
    const listed = await workspace().run(["keys", "list"]);
    expect(listed.stdout.trim().split("\n")).toHaveLength(1);
  });
});

describe("cribline serve --workers", () => {
  it("says with HOST=0.0.0.0 that it listens on every interface, beside a URL that answers", { timeout: SLOW }, async () => {
    const server = await workspace().serve({ HOST: "0.0.0.0" }, ["--workers", "2"]);
    expect(server.stdout()).toContain(
      `listening on http://127.0.0.1:${server.port} and every other interface (HOST=0.0.0.0) with 2 workers`,
    );
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    // Every worker serves the console, with its policy, from the one build.
    for (let i = 0; i < 4; i += 1) {
      const page = await fetch(`${server.url}/console/`, { headers: { connection: "close" } });
      expect([page.status, page.headers.get("content-security-policy")]).toEqual([200, expect.stringContaining("script-src 'self'")]);
    }
  });

  it("serves one port from N worker processes, replaces one that dies, and stops them all on SIGTERM", { timeout: SLOW }, async () => {
    const key = await tenantWithKey("acme");
    const server = await workspace().serve({}, ["--workers", "2"]);
    expect(server.stdout()).toMatch(/listening on http:\/\/\S+ with 2 workers/);
    const workers = childrenOf(server.pid);
    expect(workers).toHaveLength(2);

    const records = Array.from({ length: 120 }, () => withdrawal());
    await syncOver(server.url, key, records);
    // Connections are spread over the workers; every page follows the previous one's cursor.
    const items = await readAllOver(server.url, key, "/v1/withdrawals", 7);
    expect(new Set(items.map((r) => r.id))).toEqual(new Set(records.map((r) => r.id)));
    expect(items).toHaveLength(120);

    process.kill(workers[0]!, "SIGKILL");
    const replaced = await until(
      () => childrenOf(server.pid),
      (pids) => pids.length === 2 && !pids.includes(workers[0]!),
    );
    expect(replaced).toContain(workers[1]);
    await until(
      async () => (await httpGet(`${server.url}/v1/withdrawals?limit=1`, key)).status,
      (status) => status === 200,
    );
    expect(server.stderr()).toMatch(/worker \d+ exited \(SIGKILL\); starting another/);

    expect(await server.stop("SIGTERM"), server.stderr()).toEqual({ code: 0, signal: null });
    expect(replaced.filter((pid) => existsSync(`/proc/${pid}`))).toEqual([]);
  });

  it("exits with an error, not a hang, when its workers cannot start", { timeout: SLOW }, async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const result = await workspace().run(["serve", "--workers", "2"], { PORT: String(port) });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/EADDRINUSE/);
      expect(result.stderr).toMatch(/exited \(1\) before the service started/);
    } finally {
      taken.close();
    }
  });

  it("defaults to one worker per core on PostgreSQL", { timeout: SLOW }, async () => {
    const server = await workspace().serve();
    const cores = (await import("node:os")).availableParallelism();
    if (cores > 1) expect(server.stdout()).toMatch(new RegExp(`with ${cores} workers`));
    expect(childrenOf(server.pid)).toHaveLength(cores > 1 ? cores : 0);
    expect(await server.stop("SIGTERM")).toEqual({ code: 0, signal: null });
  });
});

describe("start-up on a database that is not ready", () => {
  it("gives a new database its schema at the first start: several processes at once, the demo tenant once", { timeout: SLOW }, async () => {
    const empty = await createTestDatabase();
    try {
      const env = { DATABASE_URL: empty.url, CRIBLINE_DEMO: undefined };
      const [a, b] = await Promise.all([workspace().serve(env), workspace().serve(env)]);
      const keys = [a.stdout(), b.stdout()].flatMap((out) => /Demo API key[^\n]*?(crib_[0-9A-Za-z]{38})\b/.exec(out)?.[1] ?? []);
      expect(keys, `${a.stdout()}\n---\n${b.stdout()}`).toHaveLength(1);
      for (const server of [a, b]) expect((await httpGet(`${server.url}/v1/withdrawals?limit=2`, keys[0])).status).toBe(200);
      const client = new pg.Client({ connectionString: empty.url });
      await client.connect();
      const { rows } = await client.query("select name from kysely_migration order by name");
      await client.end();
      expect(rows.map((row) => row.name).at(-1)).toBe(LATEST_MIGRATION);
      // The schema is there now: the next command only checks it.
      expect((await workspace().run(["tenants", "create", "acme"], { DATABASE_URL: empty.url })).code).toBe(0);
      for (const server of [a, b]) await server.stop();
    } finally {
      await empty.drop();
    }
  });

  it("refuses a database a release behind, naming the migration it lacks", async () => {
    const older = await createTestDatabase({ migrate: true });
    try {
      const client = new pg.Client({ connectionString: older.url });
      await client.connect();
      await client.query("delete from kysely_migration where name = '0005-messages-by-reference'");
      await client.end();
      const result = await workspace().run(["serve"], { DATABASE_URL: older.url });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/schema is not up to date \(missing 0005-messages-by-reference\): run `cribline migrate` first/);
    } finally {
      await older.drop();
    }
  });

  it("names the database it cannot reach, without its password", async () => {
    const result = await workspace().run(["serve"], { DATABASE_URL: "postgres://postgres:s3cret@127.0.0.1:1/cribline" });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("cannot use the PostgreSQL database at postgres://postgres:***@127.0.0.1:1/cribline");
    expect(result.stderr).toMatch(/ECONNREFUSED/);
    expect(result.stderr).not.toContain("s3cret");
  });

  it("says when the database does not exist", async () => {
    const result = await workspace().run(["serve"], { DATABASE_URL: postgresUrlFor("cribline_no_such_database") });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/database "cribline_no_such_database" does not exist/);
  });

  it("requires the cursor secret, which every process must share", async () => {
    const result = await workspace().run(["serve"], { CRIBLINE_CURSOR_SECRET: undefined });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/CRIBLINE_CURSOR_SECRET is required on PostgreSQL/);
  });
});
