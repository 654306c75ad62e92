#!/usr/bin/env node
/**
 * `npm run build`: the server into dist/, the client into client/dist/ and the console (Vite)
 * into console/dist/, incrementally.
 *
 * `tsc -b` compiles only when a source, a tsconfig or the compiler changed, or an output is
 * missing (its .tsbuildinfo files sit beside the tsconfigs, not in the outputs, and are
 * ignored by git), so that `npm start` on a current build starts at once. What `tsc -b`
 * does not do is remove the outputs of a deleted source: this script does, so that no
 * stale module can be imported from a build.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const projects = [
  { config: "tsconfig.build.json", source: "src", output: "dist" },
  { config: "client/tsconfig.json", source: "client/src", output: "client/dist" },
];

/** The source an output was compiled from: `a/b.js`, `a/b.js.map`, `a/b.d.ts` from `a/b.ts`. */
function sourceOf(output) {
  return output.replace(/\.map$/, "").replace(/(\.d\.ts|\.js)$/, ".ts");
}

/** Deletes every file of `output` without a source in `source`; then the folders left empty. */
function prune(source, output) {
  let removed = 0;
  for (const entry of readdirSync(join(root, output), { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const rel = relative(join(root, output), path);
    if (entry.isFile() && !existsSync(join(root, source, sourceOf(rel)))) {
      rmSync(path);
      removed += 1;
    }
  }
  const dirs = readdirSync(join(root, output), { recursive: true, withFileTypes: true }).filter((e) => e.isDirectory());
  for (const dir of dirs
    .map((e) => join(e.parentPath, e.name))
    .sort()
    .reverse()) {
    if (readdirSync(dir).length === 0) rmSync(dir, { recursive: true });
  }
  return removed;
}

const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const { status } = spawnSync(process.execPath, [tsc, "-b", ...projects.map((p) => p.config)], { cwd: root, stdio: "inherit" });
for (const { source, output } of projects) {
  if (!existsSync(join(root, output))) continue;
  const removed = prune(source, output);
  if (removed > 0) console.log(`build: removed ${removed} file(s) of ${output}/ whose source is gone`);
}
if (status !== 0) process.exit(status ?? 1);

/** The newest modification time of the files at `paths` (folders searched whole). */
function newest(paths) {
  let latest = 0;
  for (const path of paths) {
    const entries = statSync(path).isDirectory()
      ? readdirSync(path, { recursive: true, withFileTypes: true })
          .filter((e) => e.isFile())
          .map((e) => join(e.parentPath, e.name))
      : [path];
    for (const file of entries) latest = Math.max(latest, statSync(file).mtimeMs);
  }
  return latest;
}

// The console: built again when a file it is made of (its sources, the zone and CSV code it shares, the
// lockfile) is newer than its page.
const page = join(root, "console", "dist", "index.html");
const inputs = [
  "console/src",
  "console/index.html",
  "console/vite.config.mjs",
  "src/platform/zone.ts",
  "client/src/csv.ts",
  "package-lock.json",
]
  .map((p) => join(root, p))
  .filter((path) => existsSync(path));
if (existsSync(join(root, "console")) && (!existsSync(page) || newest(inputs) > statSync(page).mtimeMs)) {
  const vite = join(root, "node_modules", "vite", "bin", "vite.js");
  const built = spawnSync(process.execPath, [vite, "build"], { cwd: join(root, "console"), stdio: "inherit" });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
