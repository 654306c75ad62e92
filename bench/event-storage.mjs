// What an event costs in storage, per engine: the bytes of `webhook_messages` and its indexes
// for each event, after syncing 50,000 withdrawals (an event that refers to its record) and
// 20,000 employees (an event that keeps a copy of the record) into a new database. Needs
// `npm run build`; PostgreSQL at BENCH_POSTGRES_URL (a database is made and dropped).
// Usage: node bench/event-storage.mjs
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { DEFAULT_POSTGRES_URL, postgresUrlFor } from "./dataset.mjs";

const dist = new URL("../dist/", import.meta.url);
const { openStorage } = await import(new URL("storage/database.js", dist).href);
const { parseDatabaseUrl } = await import(new URL("platform/config.js", dist).href);
const { migrateToLatest } = await import(new URL("storage/migrate.js", dist).href);
const { createTenant } = await import(new URL("tenants/tenant.service.js", dist).href);
const { syncBatch } = await import(new URL("sync/sync.service.js", dist).href);
const { findCollection } = await import(new URL("collections/registry.js", dist).href);

const SIZE = {
  sqlite: "select sum(pgsize) as n from dbstat where name in ('webhook_messages', 'webhook_messages_type')",
  postgres: "select pg_total_relation_size('webhook_messages') as n",
};

const withdrawal = (b, i) => ({
  id: `wd-${b}-${i}`,
  deviceId: "dev-01",
  employeeId: `emp-${i % 300}`,
  employeeName: "João da Silva",
  productId: "prd-0001",
  productName: "Luva nitrílica",
  quantity: 2,
  costCenterId: "cc-1010",
  sectorId: "sec-01",
  deliveredAt: new Date(Date.now() - 60_000).toISOString(),
});
const employee = (b, i) => ({
  id: `emp-${b}-${i}`,
  name: "Maria Aparecida dos Santos",
  registration: `R-${b}-${i}`,
  sectorId: "sec-01",
  costCenterId: "cc-1010",
  active: true,
});

/** Bytes per event of `collection`, for `count` of them synced in batches of 1,000. */
async function perEvent(storage, collection, make, count) {
  const size = async () => {
    if (storage.engine.name === "postgres") await storage.db.executeQuery({ sql: "vacuum analyze webhook_messages", parameters: [] });
    return Number((await storage.db.executeQuery({ sql: SIZE[storage.engine.name], parameters: [] })).rows[0].n);
  };
  const tenantId = await createTenant(storage.db, `size-${collection}`);
  const before = await size();
  for (let b = 0; b < count / 1000; b += 1) {
    await syncBatch(storage.db, findCollection(collection), tenantId, { data: Array.from({ length: 1000 }, (_, i) => make(b, i)) });
  }
  return (await size()) - before;
}

async function measure(url) {
  const storage = await openStorage(parseDatabaseUrl(url));
  try {
    await migrateToLatest(storage);
    const transaction = (await perEvent(storage, "withdrawals", withdrawal, 50_000)) / 50_000;
    const master = (await perEvent(storage, "employees", employee, 20_000)) / 20_000;
    console.log(
      `${storage.engine.name.padEnd(8)}  a transaction's event: ${transaction.toFixed(0)} bytes   a master-data event: ${master.toFixed(0)} bytes`,
    );
  } finally {
    await storage.close();
  }
}

const folder = mkdtempSync(join(tmpdir(), "cribline-event-storage-"));
try {
  await measure(`sqlite:${join(folder, "events.db")}`);
} finally {
  rmSync(folder, { recursive: true, force: true });
}
const base = process.env.BENCH_POSTGRES_URL || DEFAULT_POSTGRES_URL;
const name = `cribline_event_storage_${process.pid}`;
const admin = new pg.Client({ connectionString: base });
await admin.connect();
try {
  await admin.query(`create database ${name}`);
  await measure(postgresUrlFor(base, name));
} finally {
  await admin.query(`drop database if exists ${name}`);
  await admin.end();
}
