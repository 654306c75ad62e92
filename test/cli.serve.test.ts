/**
 * `cribline serve`, run as the real executable against a fresh database per test (README:
 * "Command line"): the demo tenant of a first start, its settings, listening and shutdown.
 */
import { spawn } from "node:child_process";
import { createServer, type AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/platform/config.js";
import { BIN, httpGet, useCliWorkspace } from "./support/cli.js";
import { expectSuccess, SLOW, waitFor } from "./support/cli-steps.js";

const workspace = useCliWorkspace();

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
