import { defineConfig } from "vitest/config";

// test/postgres/ holds what only PostgreSQL has (several processes on one database, a
// database that goes away and comes back, statement timeouts); it runs with the PostgreSQL
// suite (TEST_DATABASE_URL=postgres://...). Everything else runs on both engines.
const postgres = process.env.TEST_DATABASE_URL?.startsWith("postgres") === true;

export default defineConfig({
  test: {
    include: ["test/*.test.ts", ...(postgres ? ["test/postgres/*.test.ts"] : [])],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each test file has its own database; files run in parallel on the machine's cores.
    pool: "forks",
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
