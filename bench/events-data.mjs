/**
 * The events section's database and server (bench/events.mjs). The database is made for the
 * run on each engine: `cribline
 * migrate` and `cribline demo --tenant bench --scale BENCH_EVENTS_SCALE` through bin/cribline, as
 * an operator would, then rows of `webhook_messages` written straight into it, shaped as
 * recordEvents (dist/webhooks/outbox.repository.js) writes them, with ids made by newId at
 * their time:
 *
 * - expired: BENCH_EVENTS_EXPIRED `withdrawal.created` events (1,000,000), spread evenly over
 *   the year before the retention period began (31 to 396 days ago), each naming one of the
 *   tenant's withdrawals, payload null: a tenant whose events were kept a year before the
 *   30-day retention came in, all of them now for the sweeper;
 * - recent: an event for every record the demo stored in the last 29 days, at its createdAt
 *   (a transaction's with payload null, a master record's with its JSON), and about ten
 *   updates of every master record over those days (`employee.updated`..., with their JSON);
 *   29, not 30, days, so that none of them expires before the sweep.
 *
 * PostgreSQL's database is then vacuumed and analysed, as one in service is. The server is
 * bench/server.mjs with BENCH_SWEEP=on: its sweeps come when the bench asks (POST /bench/sweep).
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { COLLECTIONS, withdrawals } from "../dist/collections/registry.js";
import { toApiJson } from "../dist/collections/record.js";
import { mulberry32 } from "../dist/demo/demo.data.js";
import { eventType, messagePayload } from "../dist/webhooks/events.js";
import { MESSAGE_ID_PREFIX, newId } from "../dist/webhooks/ids.js";
import { BENCH_TENANT, postgresUrlFor, serverEnv, withClient, workDatabaseName } from "./dataset.mjs";

const ROOT = resolve(import.meta.dirname, "..");
const DAY = 86_400_000;
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const COLUMNS = "tenant_id, id, type, created_at, record_id, payload";
/** Master-data updates per record over the recent days, on average. */
const UPDATES_PER_MASTER = 10;

/** `node bin/cribline <args>` on `databaseUrl`; resolves to its stdout's last line. */
function cribline(args, env) {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ["bin/cribline", ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (text) => (out += text));
    child.stderr.setEncoding("utf8").on("data", (text) => (err += text));
    child.on("error", fail);
    child.on("exit", (code) =>
      code === 0
        ? done(out.trim().split("\n").pop())
        : fail(new Error(`cribline ${args[0]} failed (${code}): ${(err || out).trim().slice(-1000)}`)),
    );
  });
}

/**
 * Both engines' statements, as `all(sql, params)` with `?` placeholders, and a bulk insert of
 * event rows.
 */
async function connect(engine, databaseUrl) {
  if (engine === "sqlite") {
    const db = new Database(databaseUrl.slice("sqlite:".length));
    const insert = db.prepare(`INSERT INTO webhook_messages (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`);
    return {
      all: async (text, params = []) => db.prepare(text).all(...params),
      insert: async (rows) => db.transaction(() => rows.forEach((row) => insert.run(...row)))(),
      close: async () => db.close(),
    };
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const numbered = (text) => {
    let n = 0;
    return text.replace(/\?/g, () => `$${++n}`);
  };
  return {
    all: async (text, params = []) => (await client.query(numbered(text), params)).rows,
    // Arrays of a column each: one statement per 20,000 rows.
    async insert(rows) {
      for (let at = 0; at < rows.length; at += 20_000) {
        const part = rows.slice(at, at + 20_000);
        await client.query(
          `INSERT INTO webhook_messages (${COLUMNS}) SELECT * FROM unnest($1::int4[], $2::text[], $3::text[], $4::int8[], $5::text[], $6::text[])`,
          [0, 1, 2, 3, 4, 5].map((c) => part.map((row) => row[c])),
        );
      }
    },
    close: () => client.end(),
  };
}

/** The events of the records stored since `from`, and the master records' updates until `now`. */
async function recentEvents(db, tenantId, from, now) {
  const random = mulberry32(51);
  const rows = [];
  for (const collection of COLLECTIONS) {
    const records = await db.all(`SELECT id, body, created_at, updated_at FROM ${collection.table} WHERE tenant_id = ?`, [tenantId]);
    const master = collection.kind === "master";
    const event = (change, record, at) => {
      const type = eventType(collection, change);
      const payload = master
        ? messagePayload(type, at, toApiJson(collection, { ...record, created_at: Number(record.created_at), updated_at: at }))
        : null;
      rows.push([tenantId, newId(MESSAGE_ID_PREFIX, at), type, at, record.id, payload]);
    };
    for (const record of records) {
      const createdAt = Number(record.created_at);
      if (createdAt >= from) event("created", record, createdAt);
      if (master) for (let i = 0; i < UPDATES_PER_MASTER; i += 1) event("updated", record, from + Math.floor(random() * (now - from)));
    }
  }
  return rows;
}

/** `count` withdrawal.created events spread evenly over the year before `before`, naming the tenant's withdrawals in turn. */
async function expiredEvents(db, tenantId, count, before) {
  const ids = (await db.all(`SELECT id FROM ${withdrawals.table} WHERE tenant_id = ? ORDER BY created_at, id`, [tenantId])).map(
    (r) => r.id,
  );
  const rows = new Array(count);
  const from = before - 365 * DAY;
  for (let i = 0; i < count; i += 1) {
    const at = from + Math.floor((i * 365 * DAY) / count);
    rows[i] = [tenantId, newId(MESSAGE_ID_PREFIX, at), withdrawals.singular + ".created", at, ids[i % ids.length], null];
  }
  return rows;
}

/**
 * bench/server.mjs with its sweep route, on `databaseUrl` (its fixed page the tenant's); resolves
 * once it listens, with its url and a stop().
 */
export function startServer(databaseUrl, cursorSecret, tenant = BENCH_TENANT) {
  const devNull = openSync("/dev/null", "w");
  // As run.mjs's servers, with the sweep on request.
  const env = { ...serverEnv(databaseUrl, cursorSecret, tenant), BENCH_SWEEP: "on" };
  const child = spawn(process.execPath, [join(ROOT, "bench", "server.mjs")], {
    cwd: ROOT,
    env,
    stdio: ["ignore", devNull, "inherit", "pipe"],
  });
  const exited = new Promise((done) => child.once("exit", (code, signal) => done(code ?? signal)));
  return new Promise((done, fail) => {
    let text = "";
    child.stdio[3].setEncoding("utf8").on("data", (chunk) => {
      text += chunk;
      if (!text.includes("\n")) return;
      const stop = async () => {
        child.kill("SIGTERM");
        if ((await Promise.race([exited, sleep(20_000).then(() => "timeout")])) === "timeout") child.kill("SIGKILL");
      };
      done({ url: JSON.parse(text.slice(0, text.indexOf("\n"))).url, stop });
    });
    void exited.then((how) => fail(new Error(`the bench server exited before listening (${how})`)));
  });
}

/**
 * A new database on `engine` with the demo tenant and its events; resolves to its URL, the
 * tenant's id and key, the demo's summary, what was written, and a drop().
 */
export async function eventsDatabase(engine, { postgresUrl, scale, expired, log }) {
  const started = performance.now();
  let databaseUrl;
  let drop;
  if (engine === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "cribline-events-"));
    databaseUrl = `sqlite:${join(dir, "events.db")}`;
    drop = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const name = workDatabaseName("events");
    databaseUrl = postgresUrlFor(postgresUrl, name);
    drop = () => withClient(postgresUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    await drop();
    await withClient(postgresUrl, (client) => client.query(`CREATE DATABASE "${name}"`));
  }
  try {
    const env = {
      ...process.env,
      DATABASE_URL: databaseUrl,
      CRIBLINE_DEMO: "false",
      CRIBLINE_CURSOR_SECRET: randomBytes(32).toString("hex"),
    };
    await cribline(["migrate"], env);
    const key = await cribline(["demo", "--tenant", BENCH_TENANT, "--scale", String(scale)], env);
    const demoSeconds = (performance.now() - started) / 1000;
    const db = await connect(engine, databaseUrl);
    try {
      const [{ id: tenantId }] = await db.all("SELECT id FROM tenants WHERE slug = ?", [BENCH_TENANT]);
      const now = Date.now();
      const rows = [
        ...(await recentEvents(db, tenantId, now - 29 * DAY, now)),
        ...(await expiredEvents(db, tenantId, expired, now - 31 * DAY)),
      ];
      const recent = rows.length - expired;
      // In id order, as events are written: each index grows at its end.
      rows.sort((a, b) => (a[1] < b[1] ? -1 : 1));
      const filled = performance.now();
      await db.insert(rows);
      if (engine === "postgres") await db.all("VACUUM (ANALYZE)");
      const types = await db.all(
        "SELECT type, count(*) AS n FROM webhook_messages WHERE tenant_id = ? AND created_at >= ? GROUP BY type ORDER BY n DESC",
        [tenantId, now - 29 * DAY],
      );
      const counts = await db.all(`SELECT count(*) AS n FROM ${withdrawals.table} WHERE tenant_id = ?`, [tenantId]);
      // The deep page starts halfway down the recent events, newest first.
      const [deep] = await db.all(
        "SELECT id, created_at FROM webhook_messages WHERE tenant_id = ? AND created_at >= ? ORDER BY id DESC LIMIT 1 OFFSET ?",
        [tenantId, now - 29 * DAY, Math.floor(recent / 2)],
      );
      // A withdrawals page as deep, which the deep events page is judged against.
      const [deepWithdrawal] = await db.all(
        `SELECT id, created_at FROM ${withdrawals.table} WHERE tenant_id = ? ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?`,
        [tenantId, Math.floor(recent / 2)],
      );
      const templates = await db.all(
        `SELECT body FROM ${withdrawals.table} WHERE tenant_id = ? ORDER BY created_at DESC, id DESC LIMIT 2000`,
        [tenantId],
      );
      log(
        `  ${engine}: demo --scale ${scale} in ${demoSeconds.toFixed(0)} s; ${rows.length.toLocaleString("en")} events written in ` +
          `${((performance.now() - filled) / 1000).toFixed(0)} s${engine === "postgres" ? " (and VACUUM (ANALYZE))" : ""}`,
      );
      return {
        databaseUrl,
        key,
        tenantId,
        withdrawals: Number(counts[0].n),
        expired,
        recent,
        deep: { offset: Math.floor(recent / 2), position: { key: Number(deep.created_at), id: deep.id } },
        deepWithdrawal: { key: Number(deepWithdrawal.created_at), id: deepWithdrawal.id },
        recentTypes: types.map((t) => `${t.type} ${Number(t.n).toLocaleString("en")}`).join(", "),
        templates: templates.map((t) => JSON.parse(t.body)),
        drop,
      };
    } finally {
      await db.close();
    }
  } catch (error) {
    await drop();
    throw error;
  }
}

/** How many of the tenant's events were written before `before`: none, once the sweeper is done. */
export async function eventsBefore(engine, databaseUrl, tenantId, before) {
  const db = await connect(engine, databaseUrl);
  try {
    const [row] = await db.all("SELECT count(*) AS n FROM webhook_messages WHERE tenant_id = ? AND created_at < ?", [tenantId, before]);
    return Number(row.n);
  } finally {
    await db.close();
  }
}
