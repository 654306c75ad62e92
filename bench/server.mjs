/**
 * The server under test, run by bench/run.mjs as a child process so that the load
 * generator does not share its event loop. It is a `cribline serve` process in one process,
 * made by the same runtime factory (src/runtime.ts: the memory policy, open storage, ready the
 * schema, buildApp, the webhook delivery loop and the webhook log's retention sweeper) from the
 * same environment (DATABASE_URL, CRIBLINE_CURSOR_SECRET, LOG_LEVEL, PORT, HOST,
 * CRIBLINE_WEBHOOKS_ALLOW_PRIVATE, which run.mjs sets: its receivers are on loopback), on
 * SQLite or PostgreSQL, and adds one route:
 *
 *   GET /bench/fixed-page  a precomputed page of 20 withdrawals, serialised with the
 *                          withdrawals list's response schema, without auth or database:
 *                          the framework's ceiling for a page of this size.
 *
 * With BENCH_SWEEP=on (bench/events.mjs) the retention sweep runs when the bench asks, not on
 * the runtime's timer, so that the bench knows when pruning starts and ends:
 *
 *   POST /bench/sweep      one sweep of the webhook log and the events, as the runtime's
 *                          sweeper makes it (the same class and retention settings); answers
 *                          when it is over, with what it deleted and the seconds it took.
 *
 * Logs go to stdout, which run.mjs points at /dev/null; the address is reported on fd 3
 * (stderr when fd 3 is not open) as one JSON line: {"url": "http://127.0.0.1:PORT"}.
 * SIGTERM closes the app, lets the delivery attempts in flight finish and closes the
 * database cleanly.
 */
import { writeSync } from "node:fs";
import { Type } from "@sinclair/typebox";
import { withdrawals } from "../dist/collections/registry.js";
import { toApiRecord } from "../dist/collections/record.js";
import { loadConfig } from "../dist/platform/config.js";
import { CursorCodec } from "../dist/platform/cursor.js";
import { createRuntime } from "../dist/runtime.js";
import { RetentionSweeper } from "../dist/webhooks/retention/retention.sweeper.js";

const tenantSlug = process.env.BENCH_TENANT ?? "bench";
const config = loadConfig(process.env);
if (config.cursorSecret === undefined) throw new Error("bench/server.mjs needs CRIBLINE_CURSOR_SECRET (run.mjs sets it)");
// The bench's database is made by `cribline demo` and, on PostgreSQL, migrated by `cribline
// migrate`, as an operator would: serve only readies it (migrates SQLite, checks PostgreSQL).
const benchSweep = process.env.BENCH_SWEEP === "on";
// The longest delay a timer takes (about 24 days): the runtime's own sweeps never come during a run.
const retention = benchSweep ? { firstAfterMs: 2 ** 31 - 1 } : undefined;
const runtime = await createRuntime(config, { seedDemo: false, retention });
const { app, storage } = runtime;
// The app signs cursors with the configured secret; the precomputed page's is signed alike.
const cursors = new CursorCodec(config.cursorSecret);

// The same shape as the withdrawals list's 200 response (src/lists/list.routes.ts, pageSchema).
const FixedPage = Type.Object(
  {
    data: Type.Array(Type.Ref(withdrawals.item), { description: "At most `limit` items." }),
    cursor: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);
const fixedPage = await precomputedPage();
app.get("/bench/fixed-page", { schema: { hide: true, response: { 200: FixedPage } } }, async () => fixedPage);
const sweeper = benchSweep
  ? new RetentionSweeper(storage.db, { keepDays: config.webhookRetentionDays, eventKeepDays: config.eventRetentionDays })
  : undefined;
if (sweeper !== undefined) {
  app.post("/bench/sweep", { schema: { hide: true } }, async () => {
    const started = performance.now();
    const pruned = await sweeper.sweep();
    return { pruned, seconds: (performance.now() - started) / 1000 };
  });
}

const url = await runtime.listen();
report({ url, pid: process.pid });

let closing = false;
process.on("SIGTERM", () => {
  if (closing) return;
  closing = true;
  // A sweep under way ends at its next pause, before the database closes.
  Promise.resolve(sweeper?.stop())
    .then(() => runtime.close())
    .then(
      () => process.exit(0),
      (error) => {
        process.stderr.write(`bench server: shutdown failed: ${error}\n`);
        process.exit(1);
      },
    );
});

/** The bench tenant's real first page of withdrawals, as the API returns it, with a real cursor. */
async function precomputedPage() {
  const tenant = await storage.db.selectFrom("tenants").select("id").where("slug", "=", tenantSlug).executeTakeFirst();
  if (tenant === undefined) throw new Error(`no tenant "${tenantSlug}"`);
  // A withdrawal's rows are indexed by createdAt in two parts, on time and late: the first
  // page is the newest 20 of both, as the list's own query merges them.
  const newest = (late) =>
    storage.db
      .selectFrom("withdrawals")
      .select(["id", "created_at", "updated_at", "body"])
      .where("tenant_id", "=", tenant.id)
      .where("late_event_at", late ? "is not" : "is", null)
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(20)
      .execute();
  const rows = [...(await newest(false)), ...(await newest(true))]
    .sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? 1 : -1))
    .slice(0, 20);
  const last = rows[rows.length - 1];
  return {
    data: rows.map((row) => toApiRecord(withdrawals, row)),
    cursor: last === undefined ? null : cursors.encode(tenant.id, "withdrawals", "[]", { key: last.created_at, id: last.id }),
  };
}

function report(message) {
  const line = `${JSON.stringify(message)}\n`;
  try {
    writeSync(3, line);
  } catch {
    process.stderr.write(line);
  }
}
