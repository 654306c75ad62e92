/**
 * The delivery loop's queries stay on their indexes when the outbox grows fast on a connection
 * that first ran them while it was empty. Sessions reuse generic plans (postgres.ts); one made
 * on the empty table scanned and sorted every delivery on each poll until an autoanalyze.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStorage, type Storage } from "../../src/storage/database.js";
import { DeliveryLoop } from "../../src/webhooks/delivery/delivery.loop.js";
import { insertEndpoint } from "../../src/webhooks/endpoint.repository.js";
import { newTenant, useServer } from "../support/harness.js";
import { Receiver } from "../support/receiver.js";

const server = useServer();
const receiver = new Receiver();
let storage: Storage;
beforeAll(async () => {
  await receiver.open();
  const database = server().config.database;
  if (database.engine !== "postgres") throw new Error("a PostgreSQL test");
  // One connection: the loop's statements are prepared on the connection that runs them later.
  storage = await openStorage({ ...database, poolSize: 1 });
});
afterAll(async () => {
  await receiver.close();
  await storage.close();
});

/** Sequential scans of webhook_deliveries so far, this connection's counts flushed first. */
async function sequentialScans(): Promise<number> {
  await sql`select pg_stat_force_next_flush()`.execute(storage.db);
  await sql`select pg_stat_clear_snapshot()`.execute(storage.db);
  const { rows } = await sql<{ seq_scan: number }>`
    select seq_scan from pg_stat_user_tables where relname = 'webhook_deliveries'`.execute(storage.db);
  return Number(rows[0]!.seq_scan);
}

describe("the delivery loop's plans", () => {
  it("use the index of due deliveries after the outbox grew from empty on the same connection", { timeout: 60_000 }, async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    const now = Date.now();
    const endpoint = await insertEndpoint(srv.storage.db, tenant.id, receiver.url, ["withdrawal.created"], now);
    await sql`analyze webhook_deliveries`.execute(storage.db);
    const loop = new DeliveryLoop(storage.db, { clock: () => now, allowPrivate: true, batchSize: 50, maxPerEndpoint: 50 });
    expect(await loop.runOnce()).toBe(0); // prepared while the table is empty

    // 20,000 due deliveries arrive faster than autoanalyze looks (it wakes once a minute).
    await sql`
      insert into webhook_messages (tenant_id, id, type, created_at, payload)
      select ${tenant.id}, 'msg_' || lpad(g::text, 9, '0'), 'withdrawal.created', ${now}, '{}'
      from generate_series(1, 20000) g`.execute(srv.storage.db);
    await sql`
      insert into webhook_deliveries (tenant_id, id, endpoint_id, message_id, status, attempts, next_attempt_at, lease_until, created_at, updated_at)
      select ${tenant.id}, 'dlv_' || lpad(g::text, 9, '0'), ${endpoint.id}, 'msg_' || lpad(g::text, 9, '0'), 'pending', 0, ${now}, null, ${now}, ${now}
      from generate_series(1, 20000) g`.execute(srv.storage.db);

    const before = await sequentialScans();
    expect(await loop.runOnce()).toBe(50);
    expect(receiver.received).toHaveLength(50);
    expect(await sequentialScans()).toBe(before);
  });
});
