/**
 * The export command (client/dist/cli.js) interrupted and run again, against a real server
 * behind a pass-through proxy that counts the pages asked for and can hold one unanswered: the
 * state is kept after every page, so a run killed while waiting for a page goes on from that
 * page (not from page 0), and the file ends with every record once.
 */
import { execFile, spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FACTORIES } from "./support/factories.js";
import { newTenant, readAll, sync, useServer, type TestTenant } from "./support/harness.js";

const server = useServer();
const run = promisify(execFile);
const CLI = join(new URL("..", import.meta.url).pathname, "client", "dist", "cli.js");

/** In front of the server: counts list requests (and whether each had a cursor), and can hold or refuse the Nth. */
class Proxy {
  url = "";
  pages: { cursor: boolean }[] = [];
  holdAt: number | undefined;
  refuse = false;
  held: Promise<void> = Promise.resolve();
  private onHeld = () => {};
  private readonly http: Server = createServer(async (req, res) => {
    const url = new URL(req.url!, "http://proxy");
    if (url.pathname.startsWith("/v1/withdrawals")) {
      this.pages.push({ cursor: url.searchParams.has("cursor") });
      if (this.pages.length === this.holdAt) {
        if (!this.refuse) return this.onHeld();
        res.writeHead(403, { "content-type": "application/problem+json", "x-request-id": "proxy" });
        return res.end(JSON.stringify({ type: "about:blank", status: 403, title: "Forbidden", detail: "revoked", code: "forbidden" }));
      }
    }
    const answer = await fetch(`${server().url}${req.url}`, { headers: { authorization: req.headers.authorization ?? "" } });
    res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" });
    res.end(await answer.text());
  });

  async open(): Promise<void> {
    await new Promise<void>((resolve) => this.http.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.http.address() as { port: number }).port}`;
  }
  /** From now on, counts afresh and holds the `at`-th list request (1-based) unanswered, or refuses it with a 403. */
  hold(at: number | undefined, refuse = false): void {
    this.pages = [];
    this.holdAt = at;
    this.refuse = refuse;
    this.held = new Promise((resolve) => (this.onHeld = resolve));
  }
  close(): void {
    this.http.closeAllConnections();
    this.http.close();
  }
}

const proxy = new Proxy();
const dir = mkdtempSync(join(tmpdir(), "cribline-export-resume-"));
beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error("no build of the client in client/dist: run `npm run build` first");
  await proxy.open();
});
afterAll(() => {
  proxy.close();
  rmSync(dir, { recursive: true, force: true });
});

const envFor = (tenant: TestTenant) => ({ PATH: process.env.PATH, CRIBLINE_API_KEY: tenant.keys.read, CRIBLINE_BASE_URL: proxy.url });

async function withdrawals(count: number): Promise<TestTenant> {
  const tenant = await newTenant(server());
  await sync(
    server(),
    tenant,
    "withdrawals",
    Array.from({ length: count }, () => FACTORIES.withdrawals!()),
  );
  return tenant;
}

/** Starts an export and kills it (SIGKILL) while it waits for its `at`-th page. */
async function killWhileWaitingFor(at: number, tenant: TestTenant, args: string[]): Promise<void> {
  proxy.hold(at);
  const child = spawn(process.execPath, [CLI, "export", "withdrawals", ...args], { env: envFor(tenant), stdio: "ignore" });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  await Promise.race([proxy.held, exited]);
  child.kill("SIGKILL");
  await exited;
}

describe("an interrupted export", () => {
  it("goes on from the page it was waiting for, not from page 0: the state is kept after every page", async () => {
    const tenant = await withdrawals(300);
    const out = join(dir, "every-page.csv");
    const args = ["-o", out, "--format", "csv", "--limit", "10"];
    // Twelve pages written quickly, then killed while the 13th is asked for.
    await killWhileWaitingFor(13, tenant, args);
    proxy.hold(undefined);
    const { stderr } = await run(process.execPath, [CLI, "export", "withdrawals", ...args], { env: envFor(tenant) });
    expect(stderr).toMatch(/^resumed after 120 records and finished withdrawals to .*: 300 records in 30 pages/);
    expect(proxy.pages).toHaveLength(18);
    expect(proxy.pages[0]).toEqual({ cursor: true });
    const ids = readFileSync(out, "utf8")
      .trimEnd()
      .split("\r\n")
      .slice(1)
      .map((line) => line.split(",")[0]);
    expect(ids).toEqual((await readAll(server(), tenant.keys.read, "/v1/withdrawals")).items.map((item) => item.id));
  });

  it("passes over a state line that a kill cut short, and over records written after the last whole state", async () => {
    const tenant = await withdrawals(100);
    const out = join(dir, "torn.ndjson");
    const args = ["-o", out, "--limit", "10"];
    await killWhileWaitingFor(4, tenant, args);
    // What a kill in the middle of writing a page and its state could leave behind.
    appendFileSync(out, '{"id":"half a rec');
    appendFileSync(`${out}.export-state.json`, '{"list":"withdrawals","format":"ndj');
    proxy.hold(undefined);
    const { stderr } = await run(process.execPath, [CLI, "export", "withdrawals", ...args], { env: envFor(tenant) });
    expect(stderr).toMatch(/^resumed after 30 records and finished withdrawals to .*: 100 records in 10 pages/);
    expect(proxy.pages).toHaveLength(7);
    const items = readFileSync(out, "utf8")
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(items).toEqual((await readAll(server(), tenant.keys.read, "/v1/withdrawals")).items);
  });

  it("that failed after writing records keeps them and says how to go on or start over", async () => {
    const tenant = await withdrawals(100);
    const out = join(dir, "refused.ndjson");
    const args = ["-o", out, "--limit", "10"];
    proxy.hold(5, true);
    const failed = await run(process.execPath, [CLI, "export", "withdrawals", ...args], { env: envFor(tenant) }).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain("403 forbidden: revoked (request proxy)");
    expect(failed.stderr).toContain(
      `${out} holds the first 40 records: run the same command again to go on, or delete ${out} and ${out}.export-state.json to start over`,
    );
    proxy.hold(undefined);
    const { stderr } = await run(process.execPath, [CLI, "export", "withdrawals", ...args], { env: envFor(tenant) });
    expect(stderr).toMatch(/^resumed after 40 records and finished withdrawals to .*: 100 records in 10 pages/);
  });
});
