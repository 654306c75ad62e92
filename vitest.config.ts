import { availableParallelism } from "node:os";
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
    // Each test file has its own database, so files run in parallel, two at least: most of a
    // test's time is spent waiting on the processes it starts and on the database, and vitest's
    // default (a core fewer than the machine has) runs them one by one on two cores.
    pool: "forks",
    maxWorkers: Math.max(2, availableParallelism()),
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
