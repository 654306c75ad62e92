/**
 * The client's usage reports (client/src/usage.ts) and `cribline-client export usage` against a
 * real server: rows as the raw pages have them, CSV columns flattened, flags named in errors.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { parse } from "csv-parse/sync";
import { afterAll, describe, expect, it } from "vitest";
import { CriblineClient } from "../client/src/index.js";
import { exchange, returnRecord, withdrawal } from "./support/factories.js";
import { newTenant, readAll, sync, useServer, type TestTenant } from "./support/harness.js";

const server = useServer();
const run = promisify(execFile);
const CLI = join(new URL("..", import.meta.url).pathname, "client", "dist", "cli.js");
const dir = mkdtempSync(join(tmpdir(), "cribline-usage-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const WINDOW = { createdSince: "2026-11-01T00:00:00Z", createdUntil: "2026-11-30T23:59:59.999Z" };

async function tenantWithUsage(): Promise<TestTenant> {
  const tenant = await newTenant(server());
  const at = (day: number) => `2026-11-${String(day).padStart(2, "0")}T10:00:00Z`;
  await sync(
    server(),
    tenant,
    "withdrawals",
    Array.from({ length: 30 }, (_, i) => withdrawal({ costCenterId: `cc-${i % 4}`, quantity: 1 + (i % 3), deliveredAt: at(1 + (i % 9)) })),
  );
  // cc-9 only takes back: its net quantity is negative, and stays a number in CSV.
  await sync(server(), tenant, "returns", [
    returnRecord({ costCenterId: "cc-1", deliveredAt: at(2) }),
    returnRecord({ costCenterId: "cc-9", quantity: 5, deliveredAt: at(4) }),
  ]);
  await sync(server(), tenant, "exchanges", [exchange({ costCenterId: "cc-2", deliveredAt: at(3) })]);
  return tenant;
}

async function exportUsage(tenant: TestTenant, args: string[]) {
  const env = { PATH: process.env.PATH, CRIBLINE_API_KEY: tenant.keys.read, CRIBLINE_BASE_URL: server().url };
  try {
    return { code: 0, ...(await run(process.execPath, [CLI, "export", "usage", ...args], { env })) };
  } catch (error) {
    return error as { code: number; stdout: string; stderr: string };
  }
}

describe("client.usage", () => {
  it("walks a report's rows as the API pages them", async () => {
    const tenant = await tenantWithUsage();
    const client = new CriblineClient({ baseUrl: server().url, apiKey: tenant.keys.read });
    const params = { groupBy: "costCenterId", interval: "day" as const, ...WINDOW };
    const rows = [];
    for await (const row of client.usage.list(params, { limit: 4 })) rows.push(row);
    const query = new URLSearchParams(params).toString();
    expect(rows).toEqual((await readAll(server(), tenant.keys.read, `/v1/usage?${query}`, [100])).items);
    expect(rows.reduce((n, r) => n + r.withdrawals.count, 0)).toBe(30);
    const refused = await client.usage.page({ ...params, timeZone: "Nowhere/Else" }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 400, code: "invalid_parameter", param: "timeZone" });
  });
});

describe("cribline-client export usage", () => {
  it("writes a report as CSV, a column per counter, and as NDJSON, a row a line", async () => {
    const tenant = await tenantWithUsage();
    const window = ["--since", WINDOW.createdSince, "--until", WINDOW.createdUntil];
    const csv = join(dir, "usage.csv");
    const done = await exportUsage(tenant, ["-o", csv, "--format", "csv", "--group-by", "costCenterId", "--interval", "week", ...window]);
    expect(done.code, done.stderr).toBe(0);
    const query = new URLSearchParams({ groupBy: "costCenterId", interval: "week", ...WINDOW }).toString();
    const rows = (await readAll(server(), tenant.keys.read, `/v1/usage?${query}`)).items;
    const table = parse(readFileSync(csv, "utf8")) as string[][];
    expect(table[0]).toEqual([
      "period",
      "costCenterId",
      "costCenterName",
      "withdrawals.count",
      "withdrawals.quantity",
      "returns.count",
      "returns.quantity",
      "exchanges.count",
      "exchanges.quantity",
      "netQuantity",
    ]);
    expect(table.slice(1)).toEqual(
      rows.map((r) =>
        [
          r.period,
          r.costCenterId,
          "",
          r.withdrawals.count,
          r.withdrawals.quantity,
          r.returns.count,
          r.returns.quantity,
          r.exchanges.count,
          r.exchanges.quantity,
          r.netQuantity,
        ].map(String),
      ),
    );

    const ndjson = join(dir, "usage.ndjson");
    const lines = await exportUsage(tenant, ["-o", ndjson, "--group-by", "costCenterId,productId", "--cost-center", "cc-1", ...window]);
    expect(lines.code, lines.stderr).toBe(0);
    const written = readFileSync(ndjson, "utf8")
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    const filtered = new URLSearchParams({ groupBy: "costCenterId,productId", costCenterId: "cc-1", ...WINDOW }).toString();
    expect(written).toEqual((await readAll(server(), tenant.keys.read, `/v1/usage?${filtered}`)).items);
  });

  it("names the flags in errors, and keeps report flags to usage", async () => {
    const tenant = await newTenant(server());
    const missing = await exportUsage(tenant, ["-o", join(dir, "a.csv"), "--group-by", "costCenterId", "--until", WINDOW.createdUntil]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/--since is required/);
    const zone = await exportUsage(tenant, [
      "-o",
      join(dir, "b.csv"),
      "--group-by",
      "costCenterId",
      "--time-zone",
      "Nowhere",
      "--since",
      WINDOW.createdSince,
      "--until",
      WINDOW.createdUntil,
    ]);
    expect(zone.stderr).toMatch(/--time-zone must be an IANA time zone/);
    const named = await exportUsage(tenant, [
      "-o",
      join(dir, "e.csv"),
      "--group-by",
      "costCenterId",
      "--name",
      "x",
      "--since",
      WINDOW.createdSince,
      "--until",
      WINDOW.createdUntil,
    ]);
    expect([named.code, named.stderr]).toEqual([2, expect.stringMatching(/--name is for the lists/)]);
    const noGroup = await exportUsage(tenant, ["-o", join(dir, "c.csv"), "--since", WINDOW.createdSince, "--until", WINDOW.createdUntil]);
    expect([noGroup.code, noGroup.stderr]).toEqual([2, expect.stringMatching(/--group-by/)]);
    const env = { PATH: process.env.PATH, CRIBLINE_API_KEY: tenant.keys.read, CRIBLINE_BASE_URL: server().url };
    const onList = await run(process.execPath, [CLI, "export", "withdrawals", "-o", join(dir, "d.csv"), "--group-by", "costCenterId"], {
      env,
    }).catch((e) => e);
    expect([onList.code, onList.stderr]).toEqual([2, expect.stringMatching(/--group-by is for export usage/)]);
  });
});
