#!/usr/bin/env node
/**
 * `npm test`: the whole suite on SQLite, then the same suite on PostgreSQL when one is
 * reachable. Arguments are passed to vitest (`npm test -- test/sync.test.ts`).
 *
 * PostgreSQL: TEST_DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres; each test
 * file makes its own database there and drops it. When none is reachable the PostgreSQL
 * run is skipped, and said so on the last line; CRIBLINE_TEST_REQUIRE_POSTGRES=1 (set by
 * CI) makes that a failure instead.
 */
import { spawnSync } from "node:child_process";
import pg from "pg";

const DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/postgres";
const args = process.argv.slice(2);
const given = process.env.TEST_DATABASE_URL;
const postgresUrl = given === undefined || given === "" ? DEFAULT_URL : given;
const requirePostgres = process.env.CRIBLINE_TEST_REQUIRE_POSTGRES === "1";

function vitest(label, env) {
  console.log(`\n=== tests on ${label} ===\n`);
  const { status } = spawnSync(process.execPath, ["node_modules/vitest/vitest.mjs", "run", ...args], {
    stdio: "inherit",
    env: { ...process.env, ...env },
  });
  return status === 0;
}

async function reachable(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query("select 1");
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message || error.code || error.name : String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

const results = [];
const sqliteEnv = { TEST_DATABASE_URL: "" };
delete process.env.TEST_DATABASE_URL;
results.push(["SQLite", vitest("SQLite", sqliteEnv)]);

const unreachable = await reachable(postgresUrl);
const shown = postgresUrl.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");
if (unreachable === undefined) {
  results.push(["PostgreSQL", vitest(`PostgreSQL (${shown})`, { TEST_DATABASE_URL: postgresUrl })]);
}

console.log("");
for (const [label, ok] of results) console.log(`${label}: ${ok ? "passed" : "FAILED"}`);
if (unreachable !== undefined) {
  console.log(`PostgreSQL: SKIPPED, ${shown} is not reachable (${unreachable}); set TEST_DATABASE_URL to run it`);
}
const failed = results.some(([, ok]) => !ok) || (unreachable !== undefined && requirePostgres);
if (unreachable !== undefined && requirePostgres) console.log("CRIBLINE_TEST_REQUIRE_POSTGRES=1: a skipped PostgreSQL run fails");
process.exit(failed ? 1 : 0);
