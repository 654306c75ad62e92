/** Steps that the command-line tests share: running a command to success, or to its refusal, and the data they import. */
import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "vitest";
import { lastLine, type CliResult, type Workspace } from "./cli.js";
import { withdrawal } from "./factories.js";

/** A key as `keys create` prints it, alone on its line. */
export const KEY_LINE = /^crib_[0-9A-Za-z]{38}$/;
/** The time limit of a test that starts several processes. */
export const SLOW = 90_000;

/** Fails with the process's output when it did not exit 0. */
export function expectSuccess(result: CliResult): CliResult {
  expect(result.code, `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`).toBe(0);
  return result;
}

/** Expects a refusal: a non-zero exit, a message on stderr matching `message`, and no key printed. */
export function expectRefusal(result: CliResult, message: RegExp): void {
  expect(result.code, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).not.toBe(0);
  expect(result.code).not.toBeNull();
  expect(result.stderr).toMatch(message);
  expect(result.stdout).not.toMatch(/crib_/);
}

export async function createTenant(workspace: Workspace, slug: string): Promise<void> {
  expectSuccess(await workspace.run(["tenants", "create", slug]));
}

export async function createKey(workspace: Workspace, tenant: string, scopes: string): Promise<string> {
  const result = expectSuccess(await workspace.run(["keys", "create", "--tenant", tenant, "--scopes", scopes]));
  const key = lastLine(result.stdout);
  expect(key).toMatch(KEY_LINE);
  return key;
}

export function ndjson(records: unknown[]): string {
  return records.map((r) => JSON.stringify(r)).join("\n") + "\n";
}

/** `count` withdrawals a minute apart from 2026-01-01, with ids in order. */
export function withdrawals(count: number): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) =>
    withdrawal({
      id: `w-${String(i).padStart(5, "0")}`,
      employeeId: `emp-${i % 37}`,
      quantity: 1 + (i % 4),
      deliveredAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    }),
  );
}

/** Waits until `condition` holds, checking every few milliseconds, or fails after `timeoutMs`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  for (const start = Date.now(); !(await condition()); await sleep(5)) {
    if (Date.now() - start > timeoutMs) throw new Error("condition not met in time");
  }
}
