/**
 * `cribline import` and `cribline demo`, run as the real executable against a fresh database
 * per test (README: "Command line").
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { parseDatabaseUrl } from "../src/platform/config.js";
import { openStorage } from "../src/storage/database.js";
import { httpGet, lastLine, readAllOver, useCliWorkspace } from "./support/cli.js";
import { createKey, createTenant, expectSuccess, KEY_LINE, ndjson, SLOW, withdrawals } from "./support/cli-steps.js";
import { withdrawal } from "./support/factories.js";

const workspace = useCliWorkspace();

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

/** The counts an import prints. */
function importCounts(stdout: string): { created: number; updated: number; unchanged: number } {
  const count = (word: string) => Number(new RegExp(`(\\d+) ${word}`).exec(stdout)?.[1] ?? NaN);
  return { created: count("created"), updated: count("updated"), unchanged: count("unchanged") };
}

describe("cribline import", () => {
  it("stores a file of 2,500 withdrawals, prints the counts, and finds them unchanged the second time", { timeout: SLOW }, async () => {
    await createTenant(workspace(), "acme");
    const records = withdrawals(2_500);
    const file = workspace().file("withdrawals.ndjson", ndjson(records));

    const first = expectSuccess(await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]));
    expect(importCounts(first.stdout)).toEqual({ created: 2_500, updated: 0, unchanged: 0 });
    // It leaves the table analysed: the planner knows about the rows it loaded.
    expect(await rowsThePlannerKnows("withdrawals")).toBeGreaterThanOrEqual(2_500);
    const again = expectSuccess(await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]));
    expect(importCounts(again.stdout)).toEqual({ created: 0, updated: 0, unchanged: 2_500 });

    const key = await createKey(workspace(), "acme", "read");
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
    await createTenant(workspace(), "acme");
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
    await createTenant(workspace(), "acme");
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
    await createTenant(workspace(), "acme");
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
    await createTenant(workspace(), "acme");
    const records = withdrawals(3);
    const file = workspace().file("windows.ndjson", "\uFEFF" + records.map((r) => JSON.stringify(r)).join("\r\n") + "\r\n");
    const result = expectSuccess(await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]));
    expect(importCounts(result.stdout)).toEqual({ created: 3, updated: 0, unchanged: 0 });
  });

  it("refuses a line longer than a sync body may be, naming it, without reading all of it", { timeout: SLOW }, async () => {
    await createTenant(workspace(), "acme");
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
    await createTenant(workspace(), "acme");
    const [one, two] = withdrawals(2);
    const latin1 = Buffer.from(JSON.stringify({ ...two, employeeName: "Jo\u00e3o" }), "latin1");
    const file = workspace().file("latin1.ndjson", Buffer.concat([Buffer.from(`${JSON.stringify(one)}\n`), latin1, Buffer.from("\n")]));
    const result = await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/^cribline: line 2 is not valid UTF-8 \(save the file as UTF-8\); nothing was stored$/m);
  });

  it("says that nothing was stored when the first batch fails", async () => {
    await createTenant(workspace(), "acme");
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
