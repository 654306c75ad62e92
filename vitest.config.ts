import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each test file has its own database; files run in parallel on the machine's cores.
    pool: "forks",
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
