/**
 * Sync throughput of this build against another revision's, side by side in one run:
 *
 *   BENCH_SYNC_BASE=<revision> npm run bench        (a section of the bench's report)
 *   npm run build && node bench/sync-base.mjs <revision>   (that section alone)
 *
 * The revision is built once into .bench-cache/base-<commit> (git archive, npm ci, npm run
 * build). Each build gets its own new database (per engine in BENCH_ENGINE), migrated by its
 * own CLI and given a year of history by its own `cribline demo` (the same generator in both,
 * so the same records), and its own `cribline serve`. One sender posts the same 1,000-record
 * batches (3 % of them synced late, as the main sync scenario's) to both servers in rounds that
 * take turns, each round the same new batches to each side, the side that goes first
 * alternating. The figure is this build's records a second over the base's, each over
 * all of its rounds (so that each pays for its own checkpoints), target at least 0.9; the
 * rounds' own ratios are shown beside it.
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { CACHE_DIR, DEFAULT_POSTGRES_URL, postgresUrlFor, syncBodies, withClient, workDatabaseName } from "./dataset.mjs";
import { integerSetting, withdrawalsOf } from "./windows.mjs";

const ROOT = resolve(import.meta.dirname, "..");
const TARGET = 0.9;

export const syncBaseSettings = {
  rounds: integerSetting("BENCH_SYNC_BASE_ROUNDS", 24),
  batches: integerSetting("BENCH_SYNC_BASE_BATCHES", 8),
  /** `cribline demo --scale` of each side's history (1 is about 40,000 transactions over a year). */
  scale: integerSetting("BENCH_SYNC_BASE_SCALE", 5),
};

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: "utf8", maxBuffer: 64 << 20, ...options });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} failed (${result.status ?? result.signal}): ${(result.stderr || result.stdout || "").trim().slice(-2000)}`,
    );
  }
  return result.stdout;
}

/** The revision's commit and a built tree of it, made once and kept in the bench cache. */
export function baseTree(revision, log) {
  const commit = run("git", ["rev-parse", "--verify", `${revision}^{commit}`], { cwd: ROOT }).trim();
  const dir = join(CACHE_DIR, `base-${commit}`);
  const done = join(dir, ".built");
  if (!existsSync(done)) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    log(`  building ${commit.slice(0, 12)} into ${dir} (git archive, npm ci, npm run build)`);
    const archive = join(dir, ".source.tar");
    run("git", ["archive", "--format=tar", "-o", archive, commit], { cwd: ROOT });
    run("tar", ["-xf", archive, "-C", dir]);
    rmSync(archive);
    run("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir });
    run("npm", ["run", "build"], { cwd: dir });
    writeFileSync(done, `${commit}\n`);
  }
  return { commit, dir };
}

function freePort() {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolvePromise(port));
    });
  });
}

/** `node bin/cribline <args>` of a tree; resolves to its stdout. */
function cli(tree, env, args) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ["bin/cribline", ...args], { cwd: tree, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (text) => (out += text));
    child.stderr.setEncoding("utf8").on("data", (text) => (err += text));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0
        ? resolvePromise(out)
        : reject(new Error(`cribline ${args[0]} in ${tree} failed (${code}): ${(err || out).trim().slice(-1000)}`)),
    );
  });
}

/**
 * One build's side: a new database migrated by its own CLI, a tenant with the demo's year of
 * history and a key of `scopes` (sync unless given), and its server listening. Resolves to its
 * URL, key and a stop().
 */
export async function startSide(name, tree, engine, postgresUrl, dir, scopes = "sync") {
  const pgName = engine === "postgres" ? workDatabaseName(`syncbase_${name}`) : undefined;
  const databaseUrl = engine === "sqlite" ? `sqlite:${join(dir, `${name}.db`)}` : postgresUrlFor(postgresUrl, pgName);
  if (pgName !== undefined) {
    await withClient(postgresUrl, async (client) => {
      await client.query(`DROP DATABASE IF EXISTS "${pgName}" WITH (FORCE)`);
      await client.query(`CREATE DATABASE "${pgName}"`);
    });
  }
  const port = await freePort();
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    CRIBLINE_CURSOR_SECRET: randomBytes(32).toString("base64url"),
    CRIBLINE_DEMO: "false",
    LOG_LEVEL: "info",
    PORT: String(port),
    HOST: "127.0.0.1",
    CRIBLINE_RATE_LIMIT_READ: "1000000000",
    CRIBLINE_RATE_LIMIT_SYNC: "1000000000",
    CRIBLINE_RATE_LIMIT_ANONYMOUS: "1000000000",
  };
  const dropDatabase = async () => {
    if (pgName !== undefined) await withClient(postgresUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${pgName}" WITH (FORCE)`));
  };
  try {
    await cli(tree, env, ["migrate"]);
    await cli(tree, env, ["demo", "--tenant", "bench", "--scale", String(syncBaseSettings.scale)]);
    const key = (await cli(tree, env, ["keys", "create", "--tenant", "bench", "--scopes", scopes])).trim().split("\n").pop();
    // Its request log goes where the bench's servers' goes: a real server logs every request.
    const devNull = openSync("/dev/null", "w");
    const child = spawn(process.execPath, ["bin/cribline", "serve"], { cwd: tree, env, stdio: ["ignore", devNull, "inherit"] });
    closeSync(devNull);
    const exited = new Promise((done) => child.once("exit", done));
    const url = `http://127.0.0.1:${port}`;
    const stop = async () => {
      child.kill("SIGTERM");
      await exited;
      await dropDatabase();
    };
    for (let waited = 0; ; waited += 100) {
      const ready = await fetch(`${url}/readyz`).then(
        (response) => response.ok,
        () => false,
      );
      if (ready) break;
      if (waited > 60_000 || child.exitCode !== null) {
        await stop();
        throw new Error(`the ${name} server did not get ready within 60 s`);
      }
      await new Promise((done) => setTimeout(done, 100));
    }
    return { name, url, key, stop };
  } catch (error) {
    await dropDatabase();
    throw error;
  }
}

/** Posts the bodies one after another; resolves to the records, the seconds and the slowest batch's ms. */
async function send(side, bodies) {
  const started = performance.now();
  let slowest = 0;
  let records = 0;
  for (const body of bodies) {
    const sent = performance.now();
    const response = await fetch(`${side.url}/v1/sync/withdrawals`, {
      method: "POST",
      headers: { authorization: `Bearer ${side.key}`, "content-type": "application/json" },
      body: body.text,
    });
    const answer = await response.text();
    if (response.status !== 200) throw new Error(`${side.name}: sync answered ${response.status}: ${answer.slice(0, 300)}`);
    slowest = Math.max(slowest, performance.now() - sent);
    records += body.size;
  }
  return { records, seconds: (performance.now() - started) / 1000, slowest };
}

/** The comparison on one engine: a line of the report and the missed targets. */
async function compareOn(engine, base, postgresUrl, log) {
  const { rounds, batches, scale } = syncBaseSettings;
  const dir = mkdtempSync(join(tmpdir(), "cribline-sync-base-"));
  const sides = [];
  try {
    log(`  ${engine}: each build makes its database (cribline demo --scale ${scale}) and serves it`);
    sides.push(await startSide("this", ROOT, engine, postgresUrl, dir));
    sides.push(await startSide("base", base.dir, engine, postgresUrl, dir));
    const [current, older] = sides;
    // Real combinations of device, employee and product, as the window matrix's records.
    const templates = [];
    for (const { record } of withdrawalsOf(2_000, Date.now())) {
      const { id: _id, deliveredAt: _at, ...template } = record;
      templates.push(template);
    }
    const stamp = randomBytes(4).toString("hex");
    const bodiesOf = (first, count) => syncBodies(templates, { count, stamp, first }).map((text) => ({ text, size: 1000 }));
    // A warm-up for each (not timed): a server's first batches compile its statements.
    const warmup = bodiesOf(0, 2);
    await send(current, warmup);
    await send(older, warmup);
    const totals = { this: { records: 0, seconds: 0, slowest: 0 }, base: { records: 0, seconds: 0, slowest: 0 } };
    const ratios = [];
    for (let round = 0; round < rounds; round += 1) {
      // Both sides get the same new batches in a round (each its own database).
      const bodies = bodiesOf(2 + round * batches, batches);
      const results = {};
      for (const side of round % 2 === 0 ? [current, older] : [older, current]) results[side.name] = await send(side, bodies);
      ratios.push(results.base.seconds / results.this.seconds);
      for (const name of ["this", "base"]) {
        totals[name].records += results[name].records;
        totals[name].seconds += results[name].seconds;
        totals[name].slowest = Math.max(totals[name].slowest, results[name].slowest);
      }
    }
    const rate = (name) => totals[name].records / totals[name].seconds;
    const ratio = rate("this") / rate("base");
    const short = base.commit.slice(0, 12);
    const line =
      `  ${engine}: this build ${Math.round(rate("this")).toLocaleString("en")} records/s, ${short} ${Math.round(rate("base")).toLocaleString("en")} ` +
      `(${rounds} rounds of ${batches} batches of 1,000 each, over \`cribline demo --scale ${scale}\`): ${ratio.toFixed(2)}x (target >= ${TARGET}); ` +
      `the rounds' ratios ${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}; ` +
      `slowest batch ${totals.this.slowest.toFixed(0)} ms against ${totals.base.slowest.toFixed(0)}`;
    return { line, missed: ratio >= TARGET ? [] : [`${engine} sync against ${short}: ${ratio.toFixed(2)}x`] };
  } finally {
    for (const side of sides) await side.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The section of the report: its lines and missed targets, an engine that failed said as such. */
export async function syncAgainstBase(revision, engines, { postgresUrl = DEFAULT_POSTGRES_URL, log = console.log } = {}) {
  const lines = [`Sync, 1 sender, this build against ${revision}:`];
  const missed = [];
  let base;
  try {
    base = baseTree(revision, log);
  } catch (error) {
    lines.push(`  not measured: ${revision} could not be built (${error.message})`);
    missed.push(`sync against ${revision}: not measured`);
    return { lines, missed };
  }
  for (const engine of engines) {
    try {
      const result = await compareOn(engine, base, postgresUrl, log);
      lines.push(result.line);
      missed.push(...result.missed);
    } catch (error) {
      log(`sync against ${revision}, ${engine}: ${error.stack ?? error}`);
      lines.push(`  ${engine}: not measured (${error.message})`);
      missed.push(`${engine} sync against ${revision}: not measured`);
    }
  }
  return { lines, missed };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const revision = process.argv[2];
  if (revision === undefined) {
    console.error("usage: node bench/sync-base.mjs <revision>   (BENCH_ENGINE=all|sqlite|postgres)");
    process.exit(2);
  }
  const engine = process.env.BENCH_ENGINE || "all";
  if (!["all", "sqlite", "postgres"].includes(engine)) throw new Error(`BENCH_ENGINE must be all, sqlite or postgres, got "${engine}"`);
  const engines = engine === "all" ? ["sqlite", "postgres"] : [engine];
  const { lines, missed } = await syncAgainstBase(revision, engines, {
    postgresUrl: process.env.BENCH_POSTGRES_URL || DEFAULT_POSTGRES_URL,
  });
  for (const line of lines) console.log(line);
  console.log(missed.length === 0 ? "All targets met." : `MISSED: ${missed.join("; ")}`);
}
