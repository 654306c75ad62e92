/**
 * `cribline-client export` (client/src/cli.ts) against a real server: NDJSON and CSV (RFC 4180,
 * a header from the schema, formulas neutralised) equal to the list's pages, and --bom; a killed
 * run run again has every record once, a run that fails before writing a record leaves nothing;
 * messages name the flags typed (only where the server names the parameter) and the server not
 * reached; the key from the environment only; progress on a terminal, a summary; --help, --version.
 */
import { execFile, spawn } from "node:child_process";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { FACTORIES } from "./support/factories.js";
import { newTenant, readAll, sync, useServer, type TestTenant } from "./support/harness.js";

const server = useServer();
const run = promisify(execFile);
const ROOT = new URL("..", import.meta.url).pathname;
const CLI = join(ROOT, "client", "dist", "cli.js");

beforeAll(() => {
  // The command as it ships: the client package's build, which `npm run build` makes.
  if (!existsSync(CLI)) throw new Error("no build of the client in client/dist: run `npm run build` first");
});

/** A directory of the test's own, removed when the file's tests end. */
const workdirs: string[] = [];
const workdir = () => {
  const dir = mkdtempSync(join(tmpdir(), "cribline-export-"));
  workdirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of workdirs) rmSync(dir, { recursive: true, force: true });
});
const envFor = (tenant: TestTenant) => ({ PATH: process.env.PATH, CRIBLINE_API_KEY: tenant.keys.read, CRIBLINE_BASE_URL: server().url });

async function exportRun(tenant: TestTenant, args: string[], env: Record<string, string | undefined> = envFor(tenant)) {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, "export", ...args], { env: env as NodeJS.ProcessEnv });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("the command", () => {
  it("prints its usage with --help and -h, and the package's version with --version, on standard output", async () => {
    const version = JSON.parse(readFileSync(join(ROOT, "client", "package.json"), "utf8")).version as string;
    for (const flag of ["--help", "-h"]) {
      const { stdout, stderr } = await run(process.execPath, [CLI, flag], { env: { PATH: process.env.PATH } });
      expect(stderr).toBe("");
      expect(stdout).toMatch(/^usage: cribline-client export <list> -o FILE/);
      expect(stdout).toMatch(/CRIBLINE_API_KEY/);
    }
    const { stdout, stderr } = await run(process.execPath, [CLI, "--version"], { env: { PATH: process.env.PATH } });
    expect(stderr).toBe("");
    expect(stdout).toBe(`${version}\n`);
    // execFile rejects on a non-zero exit: reaching here means both exited 0.
  });
});

describe("export", () => {
  it("writes a list as NDJSON, every record once, in the list's order, and says so", async () => {
    const tenant = await newTenant(server());
    await sync(
      server(),
      tenant,
      "withdrawals",
      Array.from({ length: 250 }, () => FACTORIES.withdrawals!()),
    );
    const out = join(workdir(), "w.ndjson");
    const result = await exportRun(tenant, ["withdrawals", "-o", out, "--limit", "40"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe(`exported withdrawals to ${out}: 250 records in 7 pages, ${/(\d+\.\d) s/.exec(result.stderr)![1]} s\n`);
    const lines = readFileSync(out, "utf8")
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines).toEqual((await readAll(server(), tenant.keys.read, "/v1/withdrawals")).items);
    // Run again: nothing to do.
    expect((await exportRun(tenant, ["withdrawals", "-o", out])).stderr).toMatch(/is complete already: 250 records/);
  });

  it("writes CSV that a CSV parser reads back as the records, with a header from the schema and formulas made text", async () => {
    const tenant = await newTenant(server());
    const names = ['=HYPERLINK("http://evil")', "+1+2", "-3", "@SUM(A1)", 'Ana "the boss", Souza', "Souza, Ana", "Zé"];
    await sync(
      server(),
      tenant,
      "employees",
      names.map((name) => FACTORIES.employees!({ name })),
    );
    const out = join(workdir(), "e.csv");
    const result = await exportRun(tenant, ["employees", "-o", out, "--format", "csv"]);
    expect(result.code, result.stderr).toBe(0);
    const text = readFileSync(out, "utf8");
    const document = (await (await fetch(`${server().url}/v1/openapi.json`)).json()) as {
      components: { schemas: { Employee: { properties: object } } };
    };
    const header = Object.keys(document.components.schemas.Employee.properties);
    expect(text.split("\r\n")[0]).toBe(header.join(","));
    const rows = parse(text, { columns: true }) as Record<string, string>[];
    const items = (await readAll(server(), tenant.keys.read, "/v1/employees")).items;
    expect(rows).toHaveLength(items.length);
    rows.forEach((row, i) => {
      for (const field of header) {
        const value = items[i][field];
        const cell = value === null ? "" : String(value);
        expect(row[field], field).toBe(/^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell);
      }
    });
  });

  it("goes on where a killed run stopped: every record once, no gap", async () => {
    const tenant = await newTenant(server());
    for (let batch = 0; batch < 4; batch += 1) {
      await sync(
        server(),
        tenant,
        "withdrawals",
        Array.from({ length: 1000 }, () => FACTORIES.withdrawals!()),
      );
    }
    const out = join(workdir(), "w.csv");
    const state = `${out}.export-state.json`;
    const child = spawn(process.execPath, [CLI, "export", "withdrawals", "-o", out, "--format", "csv", "--limit", "5"], {
      env: envFor(tenant) as NodeJS.ProcessEnv,
      stdio: "ignore",
    });
    // The state: a line of JSON a page, the last one whole (the kill may cut the one after it short).
    const lastState = () =>
      readFileSync(state, "utf8")
        .split("\n")
        .flatMap((line) => {
          try {
            return [JSON.parse(line)];
          } catch {
            return [];
          }
        })
        .at(-1);
    for (let i = 0; i < 400; i += 1) {
      if (existsSync(state) && lastState()?.pages >= 20) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));
    const killed = lastState();
    expect(killed.done).toBe(false);
    expect(killed.records).toBeGreaterThan(0);
    expect(killed.records).toBeLessThan(4000);
    // A page half written when the kill came: cut off on resume.
    appendFileSync(out, "half,a,row");
    const resumed = await exportRun(tenant, ["withdrawals", "-o", out, "--format", "csv", "--limit", "5"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(new RegExp(`^resumed after ${killed.records} records and finished withdrawals to .*: 4000 records`));
    const ids = (parse(readFileSync(out, "utf8"), { columns: true }) as { id: string }[]).map((row) => row.id);
    expect(ids).toHaveLength(4000);
    expect(ids).toEqual((await readAll(server(), tenant.keys.read, "/v1/withdrawals")).items.map((item) => item.id));
  }, 60_000);

  it("takes the key from CRIBLINE_API_KEY only, and never overwrites a file it did not write", async () => {
    const tenant = await newTenant(server());
    const dir = workdir();
    const onCommandLine = await exportRun(tenant, ["withdrawals", "-o", join(dir, "a"), "--key", tenant.keys.read]);
    expect(onCommandLine.code).toBe(2);
    expect(onCommandLine.stderr).toMatch(/CRIBLINE_API_KEY, never from the command line/);
    const missing = await exportRun(tenant, ["withdrawals", "-o", join(dir, "b")], {
      PATH: process.env.PATH,
      CRIBLINE_BASE_URL: server().url,
    });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/set CRIBLINE_API_KEY/);
    const other = join(dir, "mine.txt");
    writeFileSync(other, "keep me");
    expect((await exportRun(tenant, ["withdrawals", "-o", other])).stderr).toMatch(/exists and is no export of this command/);
    expect(readFileSync(other, "utf8")).toBe("keep me");
    expect((await exportRun(tenant, ["nothing", "-o", join(dir, "c")])).stderr).toMatch(/no list "nothing"/);
    const denied = await exportRun(tenant, ["withdrawals", "-o", join(dir, "d")], {
      ...envFor(tenant),
      CRIBLINE_API_KEY: tenant.keys.sync,
    });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/403 forbidden/);
  });

  it("leaves nothing behind when it fails before writing a record, so the corrected command runs", async () => {
    const tenant = await newTenant(server());
    await sync(server(), tenant, "withdrawals", [FACTORIES.withdrawals!({ deliveredAt: "2026-11-02T10:00:00Z" })]);
    const out = join(workdir(), "window.csv");
    const bad = await exportRun(tenant, ["withdrawals", "-o", out, "--format", "csv", "--since", "2026-11-01"]);
    expect(bad.code).toBe(1);
    expect(existsSync(out)).toBe(false);
    expect(existsSync(`${out}.export-state.json`)).toBe(false);
    const good = await exportRun(tenant, ["withdrawals", "-o", out, "--format", "csv", "--since", "2026-11-01T00:00:00Z"]);
    expect(good.code, good.stderr).toBe(0);
    expect(good.stderr).toMatch(/: 1 records in 1 pages/);
    // Another command on the same file: refused, saying how to start over.
    const other = await exportRun(tenant, ["withdrawals", "-o", out, "--format", "csv"]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain(`delete ${out} and ${out}.export-state.json to start over`);
  });

  it("names the flags typed, not the API's parameters", async () => {
    const tenant = await newTenant(server());
    const dir = workdir();
    const since = await exportRun(tenant, ["withdrawals", "-o", join(dir, "a"), "--since", "2026-11-01"]);
    expect(since.stderr).toMatch(/^cribline-client: 400 invalid_time: --since must be .*; got "2026-11-01" \(request /);
    const window = await exportRun(tenant, [
      "withdrawals",
      "-o",
      join(dir, "b"),
      "--since",
      "2026-11-02T00:00:00Z",
      "--until",
      "2026-11-01T00:00:00Z",
    ]);
    expect(window.stderr).toContain("--since must be earlier than or equal to --until");
    const limit = await exportRun(tenant, ["withdrawals", "-o", join(dir, "c"), "--limit", "500"]);
    expect(limit.stderr).toMatch(/400 invalid_limit: --limit must be/);
    for (const result of [since, window, limit]) expect(result.stderr).not.toMatch(/createdSince|createdUntil|[^-]limit must/);
  });

  it("renames only the parameter the problem names, not the same word in the detail's prose", async () => {
    const tenant = await newTenant(server());
    // Problems of the server's shape whose prose says "name" and "limit", from a stub of its own.
    const details: Record<string, string> = {
      createdSince: 'createdSince must have an offset, not a zone name, and no limit; got "x"',
      name: 'parameter "name" must be a prefix of the name, within the limit of 200 characters',
    };
    const stub = createHttpServer((req, res) => {
      const param = Object.keys(details).find((p) => new URL(req.url!, "http://stub").searchParams.has(p))!;
      res.writeHead(400, { "content-type": "application/problem+json" });
      res.end(JSON.stringify({ type: "about:blank", status: 400, title: "t", detail: details[param], code: "invalid_parameter", param }));
    });
    await new Promise<void>((resolve) => stub.listen(0, "127.0.0.1", resolve));
    const env = { ...envFor(tenant), CRIBLINE_BASE_URL: `http://127.0.0.1:${(stub.address() as { port: number }).port}` };
    const said = async (...args: string[]) => (await exportRun(tenant, ["withdrawals", "-o", join(workdir(), "x"), ...args], env)).stderr;
    onTestFinished(() => void stub.close());
    expect(await said("--since", "x")).toContain('--since must have an offset, not a zone name, and no limit; got "x"');
    expect(await said("--name", "x")).toContain('parameter "--name" must be a prefix of the name, within the limit of 200');
  });

  it("names the server it could not reach, and why", async () => {
    const tenant = await newTenant(server());
    const dir = workdir();
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(closed.address() as { port: number }).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const unreachable = await exportRun(tenant, ["withdrawals", "-o", join(dir, "d"), "--format", "csv"], {
      ...envFor(tenant),
      CRIBLINE_BASE_URL: url,
    });
    expect(unreachable.code).toBe(1);
    // After the client's retries (up to 15 s of backoff).
    expect(unreachable.stderr).toContain(`could not reach ${url}: ECONNREFUSED`);
  }, 60_000);

  it("writes a byte-order mark before the CSV with --bom, for spreadsheets that need one to read UTF-8", async () => {
    const tenant = await newTenant(server());
    await sync(server(), tenant, "employees", [FACTORIES.employees!({ name: "João Gonçalves" })]);
    const dir = workdir();
    const out = join(dir, "bom.csv");
    const result = await exportRun(tenant, ["employees", "-o", out, "--format", "csv", "--bom"]);
    expect(result.code, result.stderr).toBe(0);
    const bytes = readFileSync(out);
    expect([...bytes.subarray(0, 5)]).toEqual([0xef, 0xbb, 0xbf, ..."id"].map((c) => (typeof c === "string" ? c.charCodeAt(0) : c)));
    expect((parse(bytes, { bom: true, columns: true }) as { name: string }[]).map((row) => row.name)).toEqual(["João Gonçalves"]);
    // Without it, none; and NDJSON takes none.
    const plain = join(dir, "plain.csv");
    expect((await exportRun(tenant, ["employees", "-o", plain, "--format", "csv"])).code).toBe(0);
    expect(readFileSync(plain, "utf8").startsWith("id,")).toBe(true);
    const ndjson = await exportRun(tenant, ["employees", "-o", join(dir, "e.ndjson"), "--bom"]);
    expect(ndjson.code).toBe(2);
    expect(ndjson.stderr).toMatch(/--bom is for --format csv/);
  });

  it("shows progress on a terminal", async () => {
    const tenant = await newTenant(server());
    await sync(
      server(),
      tenant,
      "withdrawals",
      Array.from({ length: 60 }, () => FACTORIES.withdrawals!()),
    );
    const out = join(workdir(), "t.ndjson");
    const command = `${process.execPath} ${CLI} export withdrawals -o ${out} --limit 20`;
    const { stdout } = await run("script", ["-qfec", command, "/dev/null"], { env: envFor(tenant) as NodeJS.ProcessEnv });
    expect(stdout).toMatch(/60 records, 3 pages, [\d,]+ records\/s, \d+\.\d s/);
    expect(stdout).toMatch(/exported withdrawals to .*: 60 records in 3 pages/);
  });
});
