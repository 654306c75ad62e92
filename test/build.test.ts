/**
 * `npm run build` is incremental: a second build with nothing changed writes nothing (so that
 * `npm start` on a current build starts at once), and a deleted source leaves no output
 * behind; the console (Vite) is built again only when one of its sources changed. Run on a
 * small copy of the project's layout (the real package.json, scripts/build.mjs, tsconfig
 * options and Vite config, tiny sources), so that it takes seconds
 * and never touches the dist/ other tests run.
 */
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const run = promisify(execFile);
let dir = "";

function write(path: string, text: string): void {
  mkdirSync(join(dir, path, ".."), { recursive: true });
  writeFileSync(join(dir, path), text);
}

/** `npm run build` as package.json says it, in the copy. */
async function build(): Promise<string> {
  const { stdout } = await run("npm", ["run", "--silent", "build"], { cwd: dir });
  return stdout;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cribline-build-"));
  for (const file of [
    "package.json",
    "tsconfig.json",
    "tsconfig.build.json",
    "scripts/build.mjs",
    "client/package.json",
    "client/tsconfig.json",
  ]) {
    cpSync(join(ROOT, file), join(dir, file), { recursive: true });
  }
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  write("src/main.ts", 'import { two } from "./lib/two.js";\nexport const one = two - 1;\n');
  write("src/lib/two.ts", "export const two = 2;\n");
  write("client/src/cli.ts", '#!/usr/bin/env node\nimport { name } from "./index.js";\nconsole.log(name);\n');
  write("client/src/index.ts", 'export const name = "client";\n');
  cpSync(join(ROOT, "console/vite.config.mjs"), join(dir, "console/vite.config.mjs"));
  write("console/index.html", '<!doctype html><title>x</title><script type="module" src="/src/main.ts"></script>\n');
  write("console/src/main.ts", 'document.title = "console";\n');
}, 60_000);

afterAll(() => {
  if (dir !== "") rmSync(dir, { recursive: true, force: true });
});

test("a build with nothing changed writes nothing; a deleted source's outputs go", async () => {
  await build();
  const outputs = [
    "dist/main.js",
    "dist/lib/two.js",
    "dist/lib/two.js.map",
    "client/dist/cli.js",
    "client/dist/index.d.ts",
    "console/dist/index.html",
  ];
  for (const output of outputs) expect(existsSync(join(dir, output)), output).toBe(true);
  const written = outputs.map((output) => statSync(join(dir, output)).mtimeMs);

  await build();
  expect(outputs.map((output) => statSync(join(dir, output)).mtimeMs)).toEqual(written);

  unlinkSync(join(dir, "src/lib/two.ts"));
  write("src/main.ts", "export const one = 1;\n");
  const said = await build();
  expect(existsSync(join(dir, "dist/lib"))).toBe(false);
  expect(existsSync(join(dir, "dist/main.js"))).toBe(true);
  expect(said).toContain("build: removed 2 file(s) of dist/ whose source is gone");

  // The console is built again when one of its sources changes, and only then.
  const page = statSync(join(dir, "console/dist/index.html")).mtimeMs;
  write("console/src/main.ts", 'document.title = "console 2";\n');
  await build();
  expect(statSync(join(dir, "console/dist/index.html")).mtimeMs).toBeGreaterThan(page);
}, 120_000);
