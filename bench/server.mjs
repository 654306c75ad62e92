/**
 * The server under test, run by bench/run.mjs as a child process so that the load
 * generator does not share its event loop. It builds the app exactly as `cribline serve`
 * does in one process (src/server.ts: open storage, ready the schema, buildApp) from the
 * same environment (DATABASE_URL, CRIBLINE_CURSOR_SECRET, LOG_LEVEL, PORT, HOST), on SQLite
 * or PostgreSQL, and adds one route:
 *
 *   GET /bench/fixed-page  a precomputed page of 20 withdrawals, serialised with the
 *                          withdrawals list's response schema, without auth or database:
 *                          the framework's ceiling for a page of this size.
 *
 * Like every `cribline serve` process it runs the webhook delivery loop, with the same
 * options (CRIBLINE_WEBHOOKS_ALLOW_PRIVATE, which run.mjs sets: its receivers are on loopback),
 * and prunes the webhook log (CRIBLINE_WEBHOOK_RETENTION_DAYS).
 *
 * Logs go to stdout, which run.mjs points at /dev/null; the address is reported on fd 3
 * (stderr when fd 3 is not open) as one JSON line: {"url": "http://127.0.0.1:PORT"}.
 * SIGTERM closes the app, lets the delivery attempts in flight finish and closes the
 * database cleanly.
 */
import { writeSync } from "node:fs";
import { Type } from "@sinclair/typebox";
import { buildApp } from "../dist/app.js";
import { withdrawals } from "../dist/collections/registry.js";
import { toApiRecord } from "../dist/collections/record.js";
import { loadConfig } from "../dist/platform/config.js";
import { cursorCodecFor } from "../dist/platform/cursor-secret.js";
import { openStorage } from "../dist/storage/database.js";
import { ensureSchema } from "../dist/storage/migrate.js";
import { tuneRuntime } from "../dist/platform/runtime.js";
import { DeliveryLoop } from "../dist/webhooks/delivery.js";
import { Ingestion } from "../dist/webhooks/ingestion.js";
import { RetentionSweeper } from "../dist/webhooks/retention.js";

const tenantSlug = process.env.BENCH_TENANT ?? "bench";
const config = loadConfig(process.env);
// The same runtime policy as `cribline serve` (startServer), so the bench measures what ships.
tuneRuntime(config.database.engine);
if (config.cursorSecret === undefined) throw new Error("bench/server.mjs needs CRIBLINE_CURSOR_SECRET (run.mjs sets it)");

const storage = await openStorage(config.database);
// As serve does: SQLite migrates itself; a PostgreSQL schema is only checked (the bench
// migrated its cache with `cribline migrate`, as an operator would).
await ensureSchema(storage);
const cursors = await cursorCodecFor(config, storage);
// As startServer (src/server.ts): every process sends webhooks, a sync that queued
// deliveries wakes its own process's loop, and the loop gives way while syncs keep it busy.
let onDeliveryError = (err) => process.stderr.write(`bench server: webhook delivery failed: ${err}\n`);
const ingestion = new Ingestion();
const deliveries = new DeliveryLoop(storage.db, { allowPrivate: config.webhooksAllowPrivate, ingesting: () => ingestion.busy() }, (err) =>
  onDeliveryError(err),
);
const app = await buildApp({ config, storage, cursors, deliveriesQueued: () => deliveries.wake(), ingestion });
onDeliveryError = (err) => app.log.error({ err }, "webhook delivery failed");
// As startServer: the webhook log is pruned now and then (its first sweep a minute after start).
const retention =
  config.webhookRetentionDays === 0
    ? undefined
    : new RetentionSweeper(storage.db, { keepDays: config.webhookRetentionDays }, undefined, (err) =>
        app.log.error({ err }, "pruning the webhook log failed"),
      );

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

const url = await app.listen({ port: config.port, host: config.host });
report({ url, pid: process.pid });
deliveries.start();
retention?.start();

let closing = false;
process.on("SIGTERM", () => {
  if (closing) return;
  closing = true;
  Promise.all([app.close(), deliveries.stop(), retention?.stop()])
    .then(() => storage.close())
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
  const rows = await storage.db
    .selectFrom("withdrawals")
    .select(["id", "created_at", "updated_at", "body"])
    .where("tenant_id", "=", tenant.id)
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .limit(20)
    .execute();
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
