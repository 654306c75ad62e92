/**
 * `npm test` on a machine without Debian's chromium and redis-server, where it cannot install
 * them (no apt-get): it says at once what to run, builds and runs nothing, and fails. Run in a
 * copy of package.json and scripts/ (so that nothing is built here if the check let it through)
 * with a PATH that has node and a shell, and nothing else.
 */
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The npm that runs this suite, as a script node can run. */
function npmCli(): string {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (existsSync(join(dir, "npm"))) return realpathSync(join(dir, "npm"));
  }
  throw new Error("npm is not on PATH");
}

test("npm test without chromium and redis-server, and no apt-get: the command to run, then exit 1 before any build", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cribline-test-needs-"));
  dirs.push(dir);
  cpSync(join(ROOT, "package.json"), join(dir, "package.json"));
  cpSync(join(ROOT, "scripts"), join(dir, "scripts"), { recursive: true });
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  const bin = join(dir, "bin-only-node");
  mkdirSync(bin);
  symlinkSync(process.execPath, join(bin, "node"));
  symlinkSync("/bin/sh", join(bin, "sh"));

  const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
    execFile(process.execPath, [npmCli(), "test"], { cwd: dir, env: { HOME: dir, PATH: bin } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, output: stdout + stderr });
    });
  });

  expect(result.code).toBe(1);
  expect(result.output).toContain(
    "npm test needs Debian's chromium and redis-server on PATH, and this machine has no apt-get. " +
      "Run this (or install them with your system's packages), then npm test again:\n\n" +
      `  ${process.getuid?.() === 0 ? "" : "sudo "}apt-get update && ${process.getuid?.() === 0 ? "" : "sudo "}apt-get install -y --no-install-recommends chromium redis-server\n`,
  );
  expect(result.output).not.toContain("> cribline@0.1.0 build");
  expect(result.output).not.toContain("=== tests on");
  expect(existsSync(join(dir, "dist"))).toBe(false);
}, 60_000);
