#!/usr/bin/env node
/**
 * CI's last step: the commands of README.md, client/README.md and docs/webhooks.md, read from
 * those files and run as written, in a fresh clone of HEAD (removed afterwards), on loopback,
 * within a time limit. The README's first command (`npm ci && npm start`) installs, builds and
 * starts the server with its default database (in the clone); its output gives the demo key.
 * Then: the README's tour and its client export line, the client README's export, the
 * webhook guide from top to bottom (its own `npm start` restarts the server), and, once the
 * server is stopped, the README's command-line block and each documented `--help`/`--version`.
 * curl runs with --fail-with-body, so an answer other than 2xx fails as a non-zero exit does.
 * The lines the guide marks `#> ...` (what a command prints, exact but for its date-times) must
 * appear in the guide's output, in order: a figure that differs fails with both texts.
 *
 * Only what a run alone knows is filled in, each placeholder as the docs write it:
 *   crib_...                   the demo key the first start printed
 *   eyJ2Ijox...                the cursor of the last answer that had one
 *   localhost:N, 127.0.0.1:N   a free port for each port N the docs name (also `--port N`)
 *   https://cribline.example.com   the local server, also the default server of the client's
 *                              export and of the webhook example (CRIBLINE_BASE_URL, CRIBLINE_API_URL)
 *   --since ... --until ...    a year ago to now
 *   /backups/                  a folder in the clone
 *   withdrawals.ndjson         one record, written by this script
 *   crib_AbCd1234              the key that `keys create` printed before it
 *   [optional] parts           included; with `[a | b]`, once with each; `bin/cribline serve`
 *                              is what `npm start` runs, so that line is left to it (but
 *                              `--help` of every command is run, serve's too)
 * Not run: what needs a machine the docs only name (PostgreSQL at db.internal, the README's
 * endpoint at erp.example.com), `npm test` and the developer commands that rewrite files.
 *
 * Usage: node scripts/docs-commands.mjs (from the repository; CI runs it after the tests).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const LIMIT_MS = 20 * 60_000;
const root = fileURLToPath(new URL("..", import.meta.url));
const work = mkdtempSync(join(tmpdir(), "cribline-docs-"));
const repo = join(work, "repo");
const children = new Set();
const state = { key: "", cursor: "", ports: new Map(), lastKey: "" };
let server;

/** The environment a reader's shell has: none of CI's database or cribline settings. */
const env = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !/^(DATABASE_URL|TEST_DATABASE_URL|PORT|HOST|CRIBLINE_.*|LOG_LEVEL)$/.test(name)),
);

function cleanUp() {
  for (const child of children) stopGroup(child, "SIGKILL");
  rmSync(work, { recursive: true, force: true });
}

/** Says what failed with the end of its output, keys and webhook secrets masked. */
function fail(message, log = "") {
  const tail = log
    .split("\n")
    .slice(-60)
    .join("\n")
    .replace(/(crib_|whsec_)[A-Za-z0-9+/=]{8,}/g, "$1***");
  console.error(`docs-commands: ${message}${log === "" ? "" : `\n--- output (last 60 lines) ---\n${tail}`}`);
  cleanUp();
  process.exit(1);
}

setTimeout(() => fail(`not done within ${LIMIT_MS / 60_000} minutes`), LIMIT_MS).unref();

function stopGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

async function freePort() {
  const probe = createServer().listen(0, "127.0.0.1");
  await new Promise((resolve) => probe.once("listening", resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Fills the placeholders in (see the header); the ports are chosen before. */
function fill(text) {
  return text
    .replace(/crib_AbCd1234/g, () => state.lastKey)
    .replace(/crib_\.\.\./g, () => state.key)
    .replace(/eyJ2Ijox\.\.\./g, () => state.cursor)
    .replace(/(localhost|127\.0\.0\.1):(\d{4,5})/g, (_, host, port) => `${host}:${state.ports.get(port)}`)
    .replace(/--port (\d{4,5})/g, (_, port) => `--port ${state.ports.get(port)}`)
    .replace(/https:\/\/cribline\.example\.com/g, () => `http://localhost:${state.ports.get("3000")}`)
    .replace(
      /--since \.\.\. --until \.\.\./g,
      `--since ${new Date(Date.now() - 365 * 86400e3).toISOString()} --until ${new Date().toISOString()}`,
    )
    .replace(/\/backups\//g, `${repo}/backups/`);
}

async function choosePorts(text) {
  for (const [, , port] of text.matchAll(/(localhost|127\.0\.0\.1|--port) ?:?(\d{4,5})/g)) {
    if (!state.ports.has(port)) state.ports.set(port, await freePort());
  }
}

/** The server as the client's and the example's defaults name it (`http://localhost:3000`). */
const commandEnv = () => ({
  ...env,
  CRIBLINE_BASE_URL: `http://localhost:${state.ports.get("3000")}`,
  CRIBLINE_API_URL: `http://localhost:${state.ports.get("3000")}`,
});

/** Runs a shell script in its own process group (a `&` in it ends with it); resolves with its output. */
function shell(script, what, timeoutMs = 5 * 60_000) {
  const preamble = 'set -euo pipefail\ncurl() { command curl --fail-with-body "$@"; }\nset -x\n';
  const child = spawn("bash", ["-c", preamble + script], { cwd: repo, env: commandEnv(), detached: true });
  children.add(child);
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const timer = setTimeout(() => stopGroup(child, "SIGKILL"), timeoutMs);
  return new Promise((resolve) => {
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      stopGroup(child, "SIGKILL");
      children.delete(child);
      if (code !== 0) fail(`${what} failed (${signal ?? `exit ${code}`})`, output);
      for (const [, cursor] of output.matchAll(/"cursor":"([^"]+)"/g)) state.cursor = cursor;
      console.log(`ok   ${what}`);
      resolve(output);
    });
  });
}

/** Starts a documented server command in the background; resolves once it listens. */
async function start(command, what) {
  const child = spawn("bash", ["-c", command], { cwd: repo, env: { ...env, PORT: String(state.ports.get("3000")) }, detached: true });
  children.add(child);
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  child.on("close", (code) => {
    if (server === child) fail(`${what}: the server ended (exit ${code})`, output);
  });
  server = child;
  while (!/cribline listening on /.test(output)) await new Promise((resolve) => setTimeout(resolve, 250));
  console.log(`ok   ${what}`);
  return output;
}

async function stopServer() {
  const child = server;
  server = undefined;
  const closed = new Promise((resolve) => child.once("close", resolve));
  stopGroup(child, "SIGINT"); // Ctrl-C, as the guide says
  await closed;
  children.delete(child);
}

/** The text under `heading` up to the next heading of its level or above (code blocks aside). */
function section(markdown, heading) {
  const lines = markdown.split("\n");
  const at = lines.indexOf(heading);
  if (at < 0) fail(`no section "${heading}"`);
  const level = heading.indexOf(" ");
  let fenced = false;
  let end = at + 1;
  for (; end < lines.length; end += 1) {
    if (lines[end].startsWith("```")) fenced = !fenced;
    const depth = /^(#+) /.exec(lines[end])?.[1].length;
    if (!fenced && depth !== undefined && depth <= level) break;
  }
  return lines.slice(at + 1, end).join("\n");
}

const DATE_TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/;
const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Fails unless every line `#> ...` of `markdown`'s shell blocks is in `output`, in order, date-times aside. */
function checkShown(markdown, output, what) {
  let from = 0;
  const marked = shBlocks(markdown).join("\n");
  for (const [, shown] of marked.matchAll(/^#> (.*)$/gm)) {
    const found = new RegExp(fill(shown).split(DATE_TIME).map(escapeRegExp).join(DATE_TIME.source)).exec(output.slice(from));
    if (found === null) {
      // What was printed in its place: the next line that starts as it does, up to a figure.
      const start = shown.split(/\d/)[0];
      const rest = output.slice(from).split("\n");
      const printed = rest.find((line) => line.includes(start)) ?? "(no such line)";
      fail(`${what} shows\n  ${shown}\nbut the commands printed\n  ${printed}`, output);
    }
    from += found.index + found[0].length;
  }
  console.log(`ok   ${what}: what it shows as printed`);
}

const shBlocks = (markdown) => [...markdown.matchAll(/```sh\n([\s\S]*?)```/g)].map(([, body]) => body);
const inline = (markdown, pattern) => [...markdown.matchAll(/`([^`\n]+)`/g)].map(([, code]) => code).filter((code) => pattern.test(code));

/** The README's command-line block, a command a line: continuations joined, comments dropped, options in. */
function commandLines(block) {
  return block
    .split("\n")
    .map((line) => line.replace(/\s+#.*$/, ""))
    .join("\n")
    .replace(/\n\s+(?=\S)/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .flatMap(variants);
}

/** A line with its optional parts in, once for each choice of `[a | b]`. */
function variants(line) {
  const choice = /\[([^\]]*\|[^\]]*)\]/.exec(line);
  if (choice === null) return [line.replace(/\[([^\]]*)\]/g, "$1")];
  return choice[1].split(" | ").flatMap((option) => variants(line.replace(choice[0], option)));
}

// --- the run ----------------------------------------------------------------------------------

const head = spawnSync("git", ["rev-parse", "HEAD"], { cwd: root, encoding: "utf8" }).stdout.trim();
const clone = spawnSync("sh", [
  "-c",
  `git clone -q --shared --no-checkout "${root}" "${repo}" && git -C "${repo}" checkout -q --detach ${head}`,
]);
if (clone.status !== 0) fail(`git clone of ${head} failed`, String(clone.stderr));
console.log(`docs-commands: ${head.slice(0, 12)} cloned into ${repo}`);
const readme = readFileSync(join(repo, "README.md"), "utf8");
const clientReadme = readFileSync(join(repo, "client", "README.md"), "utf8");
const guide = readFileSync(join(repo, "docs", "webhooks.md"), "utf8");
await choosePorts(readme + clientReadme + guide);

// The README's first command, started as a reader starts it.
const first = shBlocks(readme)[0]
  .split("\n")[0]
  .replace(/\s+#.*$/, "");
if (first !== "npm ci && npm start") fail(`the README's first command is "${first}", not npm ci && npm start`);
const started = await start(first, "README: npm ci && npm start");
state.key = /Demo API key[^:]*: (crib_[A-Za-z0-9]+)/.exec(started)?.[1] ?? fail("no demo key in the first start's output", started);
const tryLine = /^\s*(curl .*)$/m.exec(started.slice(started.indexOf("Try:")))?.[1] ?? fail("no curl line after Try:", started);
await shell(tryLine, "the first start's Try: line");

await shell(fill(shBlocks(section(readme, "## A short tour")).join("\n")), "README: the short tour");
for (const command of inline(section(readme, "## Client"), /npx cribline-client /)) await shell(fill(command), `README: ${command}`);
for (const block of shBlocks(section(clientReadme, "## Export"))) await shell(fill(block), "client/README.md: the export");
for (const command of ["npx cribline-client --help", "npx cribline-client --version"]) await shell(command, command);

// The webhook guide, top to bottom in one shell (its blocks share variables); a block that
// starts the server stops the running one first, as the guide's Ctrl-C does.
let guideScript = "";
let guideOutput = "";
for (const block of shBlocks(guide)) {
  const command = block.split("\n")[0];
  if (/npm start$/.test(command)) {
    if (guideScript !== "") guideOutput += await shell(fill(guideScript), "docs/webhooks.md (part)");
    guideScript = "";
    await stopServer();
    await start(command, `docs/webhooks.md: ${command}`);
  } else guideScript += `${block}\n`;
}
guideOutput += await shell(fill(guideScript), "docs/webhooks.md: every other block, in order");
checkShown(guide, guideOutput, "docs/webhooks.md");
for (const command of inline(guide, /^node examples\/\S+ --(help|version)$/)) await shell(command, `docs/webhooks.md: ${command}`);
await stopServer();

// The README's command line, against the database the server left in the clone.
mkdirSync(join(repo, "backups"));
const record = { id: "wd-docs-1", deviceId: "dev-01", employeeId: "emp-0001", employeeName: "João da Silva", productId: "prd-0001" };
Object.assign(record, {
  productName: "Luva nitrílica",
  quantity: 1,
  costCenterId: "cc-1010",
  sectorId: "sec-01",
  deliveredAt: "2026-11-22T08:15:30-03:00",
});
writeFileSync(join(repo, "withdrawals.ndjson"), `${JSON.stringify(record)}\n`);
const commands = commandLines(shBlocks(section(readme, "### Command line"))[0] ?? "");
for (const command of commands.filter((line) => line !== "bin/cribline serve")) {
  const output = await shell(fill(command), `README: ${command}`);
  state.lastKey = /^(crib_[A-Za-z0-9]+)\s*$/m.exec(output.split("\n").reverse().join("\n"))?.[1] ?? state.lastKey;
}
const names = new Set(commands.map((line) => line.split(" ")[1]).filter((name) => /^[a-z]+$/.test(name)));
for (const command of ["bin/cribline --help", ...[...names].map((name) => `bin/cribline ${name} --help`)]) await shell(command, command);

cleanUp();
console.log("docs-commands: every command ran");
process.exit(0);
