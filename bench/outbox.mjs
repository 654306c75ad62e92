// What the webhook outbox costs sync, in process (no HTTP, no delivery loop): batches of 1,000
// withdrawals into a new SQLite database holding 100,000 already, with no endpoint and with
// three. Needs `npm run build`. Usage: node bench/outbox.mjs [batches]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dist = new URL("../dist/", import.meta.url);
const { openStorage } = await import(new URL("storage/database.js", dist).href);
const { migrateToLatest } = await import(new URL("storage/migrate.js", dist).href);
const { createTenant } = await import(new URL("tenants/tenant.service.js", dist).href);
const { insertEndpoint } = await import(new URL("webhooks/endpoint.repository.js", dist).href);
const { syncBatch } = await import(new URL("sync/sync.service.js", dist).href);
const { findCollection } = await import(new URL("collections/registry.js", dist).href);

const withdrawals = findCollection("withdrawals");
const batches = Number(process.argv[2] ?? 30);
let sequence = 0;

function batch() {
  return {
    data: Array.from({ length: 1000 }, () => {
      sequence += 1;
      return {
        id: `wd-${sequence}`,
        deviceId: "dev-1",
        employeeId: `emp-${sequence % 500}`,
        employeeName: "João da Silva",
        productId: "prd-1",
        productName: "Luva nitrílica",
        quantity: 1,
        costCenterId: "cc-1",
        sectorId: "sec-1",
        deliveredAt: new Date(Date.now() - sequence * 1000).toISOString(),
      };
    }),
  };
}

/** Records per second over `batches` batches, with `endpoints` endpoints taking withdrawals. */
async function measure(endpoints) {
  const dir = mkdtempSync(join(tmpdir(), "cribline-outbox-"));
  const storage = await openStorage({ engine: "sqlite", path: join(dir, "cribline.db") });
  try {
    await migrateToLatest(storage);
    const tenant = await createTenant(storage.db, "bench");
    for (let i = 0; i < endpoints; i += 1) {
      await insertEndpoint(storage.db, tenant, `https://203.0.113.${i + 1}/hooks`, ["withdrawal.created"], Date.now());
    }
    for (let i = 0; i < 100; i += 1) await syncBatch(storage.db, withdrawals, tenant, batch());
    const started = performance.now();
    for (let i = 0; i < batches; i += 1) await syncBatch(storage.db, withdrawals, tenant, batch());
    return Math.round((batches * 1000) / ((performance.now() - started) / 1000));
  } finally {
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

for (let round = 1; round <= 2; round += 1) {
  const none = await measure(0);
  const three = await measure(3);
  console.log(`round ${round}: no endpoint ${none} records/s, three endpoints ${three} records/s, ratio ${(three / none).toFixed(2)}`);
}
