/**
 * Rate limits (README: "Rate limits"): every /v1 answer carries RateLimit-Policy and RateLimit
 * (draft-ietf-httpapi-ratelimit-headers); a key past its limit gets 429 with Retry-After until
 * the window ends; reads and syncs are counted apart; requests without a usable key are counted
 * by client address; a key's limit holds across processes that share Redis, and requests are
 * still served and limited while Redis is away.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RATE_LIMIT_DEFAULTS, loadConfig } from "../src/platform/config.js";
import { generateKey } from "../src/platform/keys.js";
import { lastLine, useCliWorkspace, type ServeProcess } from "./support/cli.js";
import { ENGINE } from "./support/databases.js";
import { FACTORIES } from "./support/factories.js";
import { get, newTenant, request, useServer, type Reply } from "./support/harness.js";
import { startRedis, type TestRedis } from "./support/redis.js";

const WINDOW = 2;
const server = useServer({
  CRIBLINE_RATE_LIMIT_READ: "5",
  CRIBLINE_RATE_LIMIT_SYNC: "2",
  CRIBLINE_RATE_LIMIT_ANONYMOUS: "4",
  CRIBLINE_RATE_LIMIT_WINDOW_SECONDS: String(WINDOW),
});

const POLICY = /^"(read|sync|anonymous)";q=(\d+);w=(\d+)$/;
const NOW = /^"(read|sync|anonymous)";r=(\d+);t=(\d+)$/;

/** The two fields of an answer, read. */
function limitOf(reply: Reply<unknown>) {
  const policy = POLICY.exec(reply.headers.get("ratelimit-policy") ?? "");
  const now = NOW.exec(reply.headers.get("ratelimit") ?? "");
  expect(policy, `RateLimit-Policy: ${reply.headers.get("ratelimit-policy")}`).not.toBeNull();
  expect(now, `RateLimit: ${reply.headers.get("ratelimit")}`).not.toBeNull();
  expect(now![1]).toBe(policy![1]);
  return { name: policy![1], quota: Number(policy![2]), window: Number(policy![3]), remaining: Number(now![2]), reset: Number(now![3]) };
}

/** Waits until a new window has begun for every bucket counted so far. */
const nextWindow = () => new Promise((resolve) => setTimeout(resolve, WINDOW * 1000 + 100));

function expectLimited(reply: Reply<any>) {
  expect(reply.status).toBe(429);
  expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(reply.headers.get("x-request-id")).toEqual(expect.any(String));
  expect(reply.body).toMatchObject({ status: 429, code: "rate_limited", title: "Too many requests", detail: expect.any(String) });
  const retryAfter = Number(reply.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(WINDOW);
  const limit = limitOf(reply);
  expect(limit.remaining).toBe(0);
  expect(limit.reset).toBe(retryAfter);
  return limit;
}

describe("the RateLimit fields", () => {
  it("are on every /v1 answer, and count a key's requests down", async () => {
    await nextWindow();
    const tenant = await newTenant(server());
    const seen = [];
    for (let i = 0; i < 3; i += 1) seen.push(limitOf(await get(server(), "/v1/withdrawals", tenant.keys.read)));
    expect(seen.map((s) => [s.name, s.quota, s.window, s.remaining])).toEqual([
      ["read", 5, WINDOW, 4],
      ["read", 5, WINDOW, 3],
      ["read", 5, WINDOW, 2],
    ]);
    for (const s of seen) expect(s.reset).toBeLessThanOrEqual(WINDOW);
    // Errors too: a 400, a 403, a 404 of an unknown path, a 405, the OpenAPI document.
    for (const reply of [
      await get(server(), "/v1/withdrawals?limit=0", tenant.keys.read),
      await get(server(), "/v1/webhook-endpoints", tenant.keys.read),
    ])
      expect(limitOf(reply).name).toBe("read");
    for (const reply of [
      await get(server(), "/v1/nothing-here"),
      await request(server(), "DELETE", "/v1/withdrawals"),
      await get(server(), "/v1/openapi.json"),
    ])
      expect(limitOf(reply).name).toBe("anonymous");
    // The health checks are counted by address too; the reference page is not.
    expect(limitOf(await get(server(), "/healthz")).name).toBe("anonymous");
    expect((await get(server(), "/docs")).headers.get("ratelimit")).toBeNull();
  });
});

describe("a key past its limit", () => {
  it("gets 429 with Retry-After until its window ends, then its full quota again; other keys are not touched", async () => {
    await nextWindow();
    const tenant = await newTenant(server());
    for (let i = 0; i < 5; i += 1) expect((await get(server(), "/v1/withdrawals", tenant.keys.read)).status).toBe(200);
    const limited = expectLimited(await get(server(), "/v1/withdrawals", tenant.keys.read));
    expect(limited).toMatchObject({ name: "read", quota: 5 });
    // Every route of the key is a read but sync: the admin key is another key, with its own count.
    expectLimited(await get(server(), "/v1/employees", tenant.keys.read));
    expect((await get(server(), "/v1/webhook-endpoints", tenant.keys.admin)).status).toBe(200);
    expect((await get(server(), "/v1/withdrawals", tenant.keys.all)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, limited.reset * 1000 + 100));
    const again = await get(server(), "/v1/withdrawals", tenant.keys.read);
    expect(again.status).toBe(200);
    expect(limitOf(again).remaining).toBe(4);
  });

  it("counts syncs apart from reads", async () => {
    await nextWindow();
    const tenant = await newTenant(server());
    const syncOnce = () =>
      request(server(), "POST", "/v1/sync/withdrawals", { key: tenant.keys.all, body: { data: [FACTORIES.withdrawals!()] } });
    for (let i = 0; i < 5; i += 1) expect((await get(server(), "/v1/withdrawals", tenant.keys.all)).status).toBe(200);
    expectLimited(await get(server(), "/v1/withdrawals", tenant.keys.all));
    const first = await syncOnce();
    expect(first.status).toBe(200);
    expect(limitOf(first)).toMatchObject({ name: "sync", quota: 2, remaining: 1 });
    expect((await syncOnce()).status).toBe(200);
    const refused = await syncOnce();
    expect(expectLimited(refused).name).toBe("sync");
    expect(refused.body.detail).toMatch(/sync requests/);
  });
});

describe("requests without a usable key", () => {
  it("are counted by client address, and so are keys refused with 401", async () => {
    await nextWindow();
    // Two requests without a key, two with keys that were never issued: four 401s...
    for (const headers of [{}, { authorization: "Bearer nonsense" }] as Record<string, string>[])
      expect((await request(server(), "GET", "/v1/withdrawals", { headers })).status).toBe(401);
    for (let i = 0; i < 2; i += 1) expect((await get(server(), "/v1/withdrawals", generateKey().key)).status).toBe(401);
    // ...and the address is refused before its next key is looked up, whatever the key.
    const tenant = await newTenant(server());
    expect(expectLimited(await get(server(), "/v1/withdrawals", generateKey().key)).name).toBe("anonymous");
    expectLimited(await get(server(), "/v1/withdrawals"));
    expectLimited(await get(server(), "/v1/withdrawals", tenant.keys.read));
    await nextWindow();
    expect((await get(server(), "/v1/withdrawals", tenant.keys.read)).status).toBe(200);
  });
});

describe("settings", () => {
  it.each([
    ["CRIBLINE_RATE_LIMIT_READ", "0", /CRIBLINE_RATE_LIMIT_READ must be a whole number from 1/],
    ["CRIBLINE_RATE_LIMIT_SYNC", "lots", /CRIBLINE_RATE_LIMIT_SYNC must be a whole number/],
    ["CRIBLINE_RATE_LIMIT_ANONYMOUS", "-1", /CRIBLINE_RATE_LIMIT_ANONYMOUS must be a whole number/],
    ["CRIBLINE_RATE_LIMIT_WINDOW_SECONDS", "3601", /CRIBLINE_RATE_LIMIT_WINDOW_SECONDS must be a whole number from 1 to 3600/],
    ["CRIBLINE_REDIS_URL", "http://127.0.0.1:6379", /CRIBLINE_REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL/],
  ])("refuse %s=%s at start", (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(message);
  });

  it("default to limits that one client reading page after page stays under", () => {
    const { rateLimits } = loadConfig({});
    expect(rateLimits).toMatchObject({ ...RATE_LIMIT_DEFAULTS, redisUrl: undefined });
  });
});

describe("across processes", () => {
  const workspace = useCliWorkspace();
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => redis?.stop());

  async function setUp(extra: Record<string, string>, args: string[] = []) {
    const ws = workspace();
    if (ENGINE === "sqlite") expect((await ws.run(["migrate"])).code).toBe(0);
    expect((await ws.run(["tenants", "create", "acme"])).code).toBe(0);
    const key = lastLine((await ws.run(["keys", "create", "--tenant", "acme", "--scopes", "read"])).stdout);
    const env = { CRIBLINE_RATE_LIMIT_READ: "6", CRIBLINE_RATE_LIMIT_WINDOW_SECONDS: "30", ...extra };
    return { ws, key, env, args };
  }
  const read = (process: ServeProcess, key: string) =>
    fetch(`${process.url}/v1/withdrawals`, { headers: { authorization: `Bearer ${key}` } });

  it("share one key's limit through Redis", async () => {
    const { ws, key, env } = await setUp({ CRIBLINE_REDIS_URL: redis.url });
    // One process serves a SQLite database: there, the second serves a backup of it, which holds the same key.
    const copy = `sqlite:${ws.dir}/copy.db`;
    if (ENGINE === "sqlite") expect((await ws.run(["backup", `${ws.dir}/copy.db`])).code).toBe(0);
    const servers = [await ws.serve(env), await ws.serve(ENGINE === "sqlite" ? { ...env, DATABASE_URL: copy } : env)];
    const statuses = [];
    for (let i = 0; i < 8; i += 1) statuses.push((await read(servers[i % 2]!, key)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
  }, 60_000);

  it("take a tenant's own limit from the command line", async () => {
    const { ws, key, env } = await setUp({ CRIBLINE_REDIS_URL: redis.url });
    const set = await ws.run(["limits", "set", "--tenant", "acme", "--read", "3"], env);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/acme\tread 3\tsync 1000 \(default\)/);
    expect((await ws.run(["limits", "set", "--tenant", "acme", "--read", "0"], env)).code).not.toBe(0);
    expect((await ws.run(["limits", "set", "--tenant", "nobody", "--read", "3"], env)).stderr).toMatch(/no tenant "nobody"/);
    expect((await ws.run(["limits", "show"], env)).stdout).toMatch(/^acme\tread 3\t/m);
    const serving = await ws.serve(env);
    const reply = await read(serving, key);
    expect(reply.headers.get("ratelimit-policy")).toBe('"read";q=3;w=30');
    const back = await ws.run(["limits", "set", "--tenant", "acme", "--read", "default"], env);
    expect(back.stdout).toMatch(/read 6 \(default\)/);
  }, 60_000);

  it("refuse to start when Redis is configured but unreachable", async () => {
    const { ws, env } = await setUp({});
    const launched = await ws.launch({ ...env, CRIBLINE_REDIS_URL: "redis://127.0.0.1:1" });
    const { code } = await launched.exited;
    expect(code).not.toBe(0);
    expect(launched.stderr()).toMatch(/CRIBLINE_REDIS_URL: cannot reach Redis at 127\.0\.0\.1:1/);
  }, 60_000);

  it("keep serving, limited by each process, while Redis is away, and say so once", async () => {
    const { ws, key, env } = await setUp({ CRIBLINE_REDIS_URL: redis.url, LOG_LEVEL: "info" });
    // One process (on PostgreSQL, serve runs one per core): its own count is the whole count.
    const serving = await ws.serve(env, ["--workers", "1"]);
    expect((await read(serving, key)).status).toBe(200);
    await redis.stop();
    try {
      const statuses = [];
      for (let i = 0; i < 9; i += 1) statuses.push((await read(serving, key)).status);
      // The process counts on its own from when Redis went: six more, then 429s.
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429, 429]);
    } finally {
      await redis.start();
    }
    // Back: counted in Redis again, where this window had one request.
    // The warning when Redis went says "until it is back" too: wait for the line that says it is.
    const backLine = "is back; counts are shared again";
    for (let i = 0; i < 50 && !serving.stdout().includes(backLine); i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const log = serving.stdout();
    if (!log.includes(backLine)) throw new Error(`no word of Redis coming back in the log:\n${log}\n${serving.stderr()}`);
    const reply = await read(serving, key);
    expect(log.match(/Redis at 127\.0\.0\.1:\d+ is unreachable/g)).toHaveLength(1);
    expect(log.match(/is back; counts are shared again/g)).toHaveLength(1);
    expect(reply.status).toBe(200);
  }, 60_000);

  it(
    ENGINE === "postgres"
      ? "share one key's limit among the workers of serve --workers 2 without Redis"
      : "count in the one process of serve without Redis",
    async () => {
      const { ws, key, env } = await setUp({});
      const serving = await ws.serve(env, ENGINE === "postgres" ? ["--workers", "2"] : []);
      const statuses = [];
      // Over separate connections, so that both workers take some.
      for (let i = 0; i < 10; i += 1)
        statuses.push(
          (await fetch(`${serving.url}/v1/withdrawals`, { headers: { authorization: `Bearer ${key}`, connection: "close" } })).status,
        );
      expect(statuses.filter((s) => s === 200)).toHaveLength(6);
      expect(statuses.slice(6)).toEqual([429, 429, 429, 429]);
    },
    60_000,
  );
});
