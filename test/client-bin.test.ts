/**
 * The client's command as the READMEs give it, `npx cribline-client`, runs from the repository
 * after `npm ci` and the build: client/ is a workspace of the root package, so npm links its
 * bin into node_modules/.bin (`--no-install` keeps npx off the registry should it not).
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const run = promisify(execFile);

test("npx cribline-client --help and --version run the client's CLI", async () => {
  const help = await run("npx", ["--no-install", "cribline-client", "--help"], { cwd: ROOT });
  expect(help.stdout).toContain("usage: cribline-client export <list> -o FILE");
  const version = await run("npx", ["--no-install", "cribline-client", "--version"], { cwd: ROOT });
  const { version: expected } = JSON.parse(readFileSync(new URL("../client/package.json", import.meta.url), "utf8")) as { version: string };
  expect(version.stdout.trim()).toContain(expected);
}, 60_000);
