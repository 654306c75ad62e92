/**
 * What operators run cribline with (README: "Operating it"): Prometheus metrics on a listener
 * of their own, with the counts that known traffic should give, one scrape for the whole
 * process tree; online backups of the embedded database, restored by starting on the copy;
 * readable logs at a terminal and JSON elsewhere.
 */
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { COLLECTIONS } from "../src/collections/registry.js";
import { loadConfig } from "../src/platform/config.js";
import { BIN, freePort, lastLine, useCliWorkspace, type ServeProcess } from "./support/cli.js";
import { ENGINE } from "./support/databases.js";
import { FACTORIES } from "./support/factories.js";
import { Receiver } from "./support/receiver.js";

const workspace = useCliWorkspace();

/** The samples of a Prometheus text answer: "name{labels}" -> value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

async function setUp(extra: Record<string, string> = {}, args: string[] = []) {
  const ws = workspace();
  if (ENGINE === "sqlite") expect((await ws.run(["migrate"])).code).toBe(0);
  expect((await ws.run(["tenants", "create", "acme"])).code).toBe(0);
  const key = lastLine((await ws.run(["keys", "create", "--tenant", "acme", "--scopes", "read,sync,admin"])).stdout);
  const metricsPort = await freePort();
  const env = { CRIBLINE_METRICS_PORT: String(metricsPort), CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true", ...extra };
  const serving = await ws.serve(env, args);
  return { ws, key, serving, metrics: `http://127.0.0.1:${metricsPort}/metrics` };
}

const call = (serving: ServeProcess, key: string, method: string, path: string, body?: unknown) =>
  fetch(`${serving.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }), connection: "close" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe("metrics", () => {
  it(`count known traffic: requests, pages, sync records and webhook deliveries${ENGINE === "postgres" ? ", across serve --workers 2" : ""}`, async () => {
    const receiver = new Receiver();
    await receiver.open();
    try {
      const { key, serving, metrics } = await setUp({}, ENGINE === "postgres" ? ["--workers", "2"] : []);
      expect(
        (await call(serving, key, "POST", "/v1/webhook-endpoints", { url: receiver.url, events: ["withdrawal.created"] })).status,
      ).toBe(201);
      const batch = [FACTORIES.withdrawals!(), FACTORIES.withdrawals!(), FACTORIES.withdrawals!()];
      expect((await call(serving, key, "POST", "/v1/sync/withdrawals", { data: batch })).status).toBe(200);
      expect((await call(serving, key, "POST", "/v1/sync/withdrawals", { data: batch })).status).toBe(200);
      expect((await call(serving, key, "POST", "/v1/sync/withdrawals", { data: [{ id: "x" }, { id: "y" }] })).status).toBe(400);
      for (const query of ["", "", "?name=a", "?createdSince=2026-01-01T00:00:00Z&name=b", "?employeeId=e"]) {
        expect((await call(serving, key, "GET", `/v1/withdrawals${query}`)).status).toBe(200);
      }
      expect((await call(serving, key, "GET", "/v1/withdrawals?limit=0")).status).toBe(400);
      for (const query of ["", "?type=withdrawal.created&createdSince=2026-01-01T00:00:00Z"]) {
        expect((await call(serving, key, "GET", `/v1/events${query}`)).status).toBe(200);
      }
      for (let i = 0; i < 100 && receiver.received.length < 3; i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(receiver.received).toHaveLength(3);
      let scraped = new Map<string, number>();
      // Attempts are counted once recorded, just after they are sent.
      for (let i = 0; i < 50; i += 1) {
        scraped = samples(await (await fetch(metrics)).text());
        if (scraped.get('cribline_webhook_attempts_total{outcome="succeeded"}') === 3) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(scraped.get('cribline_http_requests_total{route="/v1/withdrawals",method="GET",status="200"}')).toBe(5);
      expect(scraped.get('cribline_http_requests_total{route="/v1/withdrawals",method="GET",status="400"}')).toBe(1);
      expect(scraped.get('cribline_http_requests_total{route="/v1/sync/withdrawals",method="POST",status="200"}')).toBe(2);
      expect(scraped.get('cribline_http_requests_total{route="/v1/webhook-endpoints",method="POST",status="201"}')).toBe(1);
      expect(scraped.get('cribline_http_request_duration_seconds_count{route="/v1/withdrawals",method="GET"}')).toBe(6);
      expect(scraped.get('cribline_list_pages_total{list="withdrawals",filter="none"}')).toBe(2);
      expect(scraped.get('cribline_list_pages_total{list="withdrawals",filter="name"}')).toBe(1);
      expect(scraped.get('cribline_list_pages_total{list="withdrawals",filter="name+window"}')).toBe(1);
      expect(scraped.get('cribline_list_pages_total{list="withdrawals",filter="relation"}')).toBe(1);
      expect(scraped.get('cribline_list_pages_total{list="events",filter="none"}')).toBe(1);
      expect(scraped.get('cribline_list_pages_total{list="events",filter="type+window"}')).toBe(1);
      expect(scraped.get('cribline_http_requests_total{route="/v1/events",method="GET",status="200"}')).toBe(2);
      expect(scraped.get('cribline_sync_batches_total{collection="withdrawals",outcome="applied"}')).toBe(2);
      expect(scraped.get('cribline_sync_batches_total{collection="withdrawals",outcome="refused"}')).toBe(1);
      expect(scraped.get('cribline_sync_records_total{collection="withdrawals",outcome="created"}')).toBe(3);
      expect(scraped.get('cribline_sync_records_total{collection="withdrawals",outcome="unchanged"}')).toBe(3);
      expect(scraped.get('cribline_sync_records_total{collection="withdrawals",outcome="refused"}')).toBe(2);
      expect(scraped.get('cribline_webhook_attempts_total{outcome="succeeded"}')).toBe(3);
      expect(scraped.get("cribline_webhook_attempt_duration_seconds_count")).toBe(3);
      expect(scraped.get("cribline_webhook_deliveries_pending")).toBe(0);
      expect(scraped.get("cribline_webhook_oldest_pending_age_seconds")).toBe(0);
      expect(scraped.get("process_cpu_user_seconds_total")).toBeGreaterThan(0);
      if (ENGINE === "postgres") {
        // A scrape that reads the backlog afresh (a second after the last) does not count its own query as waiting.
        await new Promise((resolve) => setTimeout(resolve, 1100));
        const pool = samples(await (await fetch(metrics)).text());
        expect(pool.get('cribline_db_pool_connections{state="idle"}')).toBeGreaterThanOrEqual(1);
        expect(pool.get('cribline_db_pool_connections{state="waiting"}')).toBe(0);
      }
      // Each listener answers only its own.
      expect((await fetch(`${serving.url}/metrics`)).status).toBe(404);
      const api = await fetch(metrics.replace("/metrics", "/v1/withdrawals"), { headers: { authorization: `Bearer ${key}` } });
      expect(api.status).toBe(404);
      expect((await fetch(metrics, { method: "POST" })).status).toBe(405);
    } finally {
      await receiver.close();
    }
  }, 90_000);

  it("show a backlog of pending deliveries and the age of the oldest", async () => {
    const { key, serving, metrics } = await setUp();
    // An endpoint that is never answered within the attempt's time: its deliveries stay pending.
    const port = await freePort();
    expect(
      (await call(serving, key, "POST", "/v1/webhook-endpoints", { url: `http://127.0.0.1:${port}/`, events: ["withdrawal.created"] }))
        .status,
    ).toBe(201);
    expect(
      (await call(serving, key, "POST", "/v1/sync/withdrawals", { data: [FACTORIES.withdrawals!(), FACTORIES.withdrawals!()] })).status,
    ).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const scraped = samples(await (await fetch(metrics)).text());
    expect(scraped.get("cribline_webhook_deliveries_pending")).toBe(2);
    expect(scraped.get("cribline_webhook_oldest_pending_age_seconds")).toBeGreaterThanOrEqual(1);
  }, 60_000);

  // With --workers the primary listens for the metrics; without, the one process does, after the API.
  const serveArgs = [
    { how: "serve", args: [] as string[] },
    ...(ENGINE === "postgres" ? [{ how: "serve --workers 2", args: ["--workers", "2"] }] : []),
  ];
  const within30s = (exit: Promise<unknown>) =>
    Promise.race([exit, new Promise((resolve) => setTimeout(() => resolve("still running after 30 s"), 30_000))]);

  it.each(serveArgs)(
    "stop the start of $how, naming CRIBLINE_METRICS_PORT, when another process listens there",
    async ({ args }) => {
      const blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
      try {
        const port = (blocker.address() as AddressInfo).port;
        const launched = await workspace().launch({ CRIBLINE_METRICS_PORT: String(port) }, args);
        expect(await within30s(launched.exited)).toEqual({ code: 1, signal: null });
        expect(launched.stderr()).toContain(`CRIBLINE_METRICS_PORT ${port} is in use on 127.0.0.1 (EADDRINUSE)`);
      } finally {
        await new Promise((resolve) => blocker.close(resolve));
      }
    },
    60_000,
  );

  it.each(serveArgs)(
    "close with $how on SIGTERM, the metrics listener too",
    async ({ args }) => {
      const metricsPort = await freePort();
      const serving = await workspace().serve({ CRIBLINE_METRICS_PORT: String(metricsPort) }, args);
      const metrics = `http://127.0.0.1:${metricsPort}/metrics`;
      expect((await fetch(metrics)).status).toBe(200);
      expect(await within30s(serving.stop("SIGTERM"))).toEqual({ code: 0, signal: null });
      await expect(fetch(metrics)).rejects.toThrow();
    },
    60_000,
  );

  it.each([
    [{ CRIBLINE_METRICS_PORT: "0" }, /CRIBLINE_METRICS_PORT must be a whole number from 1 to 65535/],
    [{ CRIBLINE_METRICS_PORT: "metrics" }, /CRIBLINE_METRICS_PORT must be a whole number/],
    [{ CRIBLINE_METRICS_PORT: "3000" }, /CRIBLINE_METRICS_PORT must differ from PORT \(3000\)/],
    [{ CRIBLINE_METRICS_PORT: "8080", PORT: "8080" }, /must differ from PORT/],
    [{ CRIBLINE_METRICS_HOST: "0.0.0.0" }, /CRIBLINE_METRICS_HOST needs CRIBLINE_METRICS_PORT/],
  ])("refuse the settings %j at start", (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });

  it("are off unless a port is set", () => {
    expect(loadConfig({}).metrics).toBeUndefined();
    expect(loadConfig({ CRIBLINE_METRICS_PORT: "9464" }).metrics).toEqual({ host: "127.0.0.1", port: 9464 });
  });
});

describe("backup", () => {
  if (ENGINE === "postgres") {
    it("points to pg_dump on PostgreSQL", async () => {
      const result = await workspace().run(["backup", join(workspace().dir, "copy.db")]);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/use pg_dump or a base backup/);
    });
    return;
  }

  it("copies the database while a client syncs: every batch acknowledged before it began, checked, and a server on the copy serves the same pages and old cursors", async () => {
    const ws = workspace();
    const { key, serving } = await setUp();
    for (let i = 0; i < 3; i += 1) {
      const data = Array.from({ length: 200 }, () => FACTORIES.withdrawals!());
      expect((await call(serving, key, "POST", "/v1/sync/withdrawals", { data })).status).toBe(200);
    }
    type Page = { data: { id: string }[]; cursor: string };
    const before = (await (await call(serving, key, "GET", "/v1/withdrawals?limit=50")).json()) as Page;
    const acknowledged: { ids: string[]; at: number }[] = [];
    let syncing = true;
    const writer = (async () => {
      while (syncing) {
        const data = Array.from({ length: 100 }, () => FACTORIES.withdrawals!());
        const reply = await call(serving, key, "POST", "/v1/sync/withdrawals", { data });
        if (reply.status === 200) acknowledged.push({ ids: data.map((d) => d.id as string), at: Date.now() });
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const copy = join(ws.dir, "copy.db");
    const began = Date.now();
    const result = await ws.run(["backup", copy]);
    syncing = false;
    await writer;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/integrity check ok/);
    // Every collection's table is counted, with the tenants, keys and webhook tables.
    for (const table of ["tenants", "api_keys", ...COLLECTIONS.map((c) => c.table), "webhook_endpoints", "webhook_deliveries"])
      expect(result.stdout).toMatch(new RegExp(`[:,] ${table} \\d`));
    expect((await ws.run(["backup", copy])).stderr).toMatch(/exists already/);
    const restored = await ws.serve({ DATABASE_URL: `sqlite:${copy}`, CRIBLINE_METRICS_PORT: "" });
    const ids = new Set<string>();
    let cursor: string | null = null;
    do {
      const page = (await (
        await call(restored, key, "GET", `/v1/withdrawals?limit=100${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)
      ).json()) as { data: { id: string }[]; cursor: string | null };
      for (const row of page.data) ids.add(row.id);
      cursor = page.cursor;
    } while (cursor !== null);
    const beforeBackup = acknowledged.filter((batch) => batch.at < began);
    expect(beforeBackup.length).toBeGreaterThan(0);
    for (const batch of beforeBackup) for (const id of batch.ids) expect(ids.has(id), id).toBe(true);
    // Whole batches only: a batch is in the copy entirely or not at all.
    for (const batch of acknowledged) expect(new Set(batch.ids.map((id) => ids.has(id))).size).toBe(1);
    const pageAfter = async (at: ServeProcess) =>
      (await (await call(at, key, "GET", `/v1/withdrawals?limit=50&cursor=${encodeURIComponent(before.cursor)}`)).json()) as Page;
    const [next, original] = [await pageAfter(restored), await pageAfter(serving)];
    expect(next.data).toEqual(original.data);
  }, 90_000);

  it("refuses a file that exists and a database that does not", async () => {
    const ws = workspace();
    expect((await ws.run(["migrate"])).code).toBe(0);
    const taken = ws.file("taken.db", "x");
    expect((await ws.run(["backup", taken])).stderr).toMatch(/exists already: a backup never overwrites a file/);
    const missing = await ws.run(["backup", join(ws.dir, "b.db")], { DATABASE_URL: `sqlite:${join(ws.dir, "none.db")}` });
    expect(missing.stderr).toMatch(/no database at/);
    expect(existsSync(join(ws.dir, "b.db"))).toBe(false);
  });
});

describe("logs", () => {
  /** `cribline serve` with its standard output on a terminal (script(1) gives it one), until it has answered a request. */
  async function serveOnTerminal(env: Record<string, string>): Promise<string> {
    const port = await freePort();
    const command = `${process.execPath} ${BIN} serve`;
    const child = spawn("script", ["-qfec", command, "/dev/null"], {
      cwd: workspace().dir,
      env: { PATH: process.env.PATH, ...workspace().env, ...env, PORT: String(port), LOG_LEVEL: "info" } as NodeJS.ProcessEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => (output += text));
    try {
      for (let i = 0; i < 200 && !output.includes("listening on"); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
      await fetch(`http://127.0.0.1:${port}/healthz`);
      for (let i = 0; i < 50 && !/request/.test(output.split("listening on")[1] ?? ""); i += 1)
        await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      child.kill("SIGTERM");
    }
    return output;
  }

  it("are readable lines at a terminal, JSON when piped, and the banner is the same", async () => {
    const ws = workspace();
    if (ENGINE === "sqlite") expect((await ws.run(["migrate"])).code).toBe(0);
    const onTerminal = await serveOnTerminal({});
    expect(onTerminal).toMatch(/cribline listening on http:\/\//);
    expect(onTerminal).toMatch(/INFO.*request/);
    expect(onTerminal).not.toMatch(/^\{"level"/m);
    const piped = await ws.serve({ LOG_LEVEL: "info" });
    await fetch(`${piped.url}/healthz`);
    // A query's values (a cursor, a name searched for) stay out of the log; its parameters' names do not.
    const page = await fetch(`${piped.url}/v1/withdrawals?limit=5&name=Zeferino&cursor=c3VjcmV0`, {
      headers: { "x-request-id": "log-check-1" },
    });
    expect(page.status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(piped.stdout()).toMatch(/cribline listening on http:\/\//);
    expect(piped.stdout()).toMatch(/^\{"level":30,.*"msg":"request"\}$/m);
    const line = piped
      .stdout()
      .split("\n")
      .find((text) => text.includes('"log-check-1"'));
    expect(JSON.parse(line ?? "{}")).toMatchObject({
      method: "GET",
      path: "/v1/withdrawals",
      params: ["limit", "name", "cursor"],
      status: 401,
    });
    expect(piped.stdout()).not.toMatch(/Zeferino|c3VjcmV0/);
  }, 60_000);
});
