#!/usr/bin/env node
// `cribline-client` (`npx cribline-client` in the repository): runs the compiled CLI. A file
// that exists before the build, so that `npm ci` links it before `npm run build` makes dist/.
import { existsSync } from "node:fs";

const entry = new URL("../dist/cli.js", import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write("cribline-client: no build found; run `npm run build` at the repository's root first\n");
  process.exit(1);
}
await import(entry.href);
