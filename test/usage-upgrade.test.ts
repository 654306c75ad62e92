/**
 * A database made by the release before usage reports (migrations up to 0021) upgrades in
 * place: `0022-usage` copies every tenant's withdrawals, returns and exchanges and counts their
 * months in UTC, so reports right after the upgrade count every record stored before it.
 */
import { Migrator } from "kysely";
import { describe, expect, it } from "vitest";
import { exchanges, returns, withdrawals } from "../src/collections/registry.js";
import { newRowValues, toStoredContent } from "../src/collections/record.js";
import { parseDatabaseUrl } from "../src/platform/config.js";
import { CursorCodec } from "../src/platform/cursor.js";
import { openStorage } from "../src/storage/database.js";
import { migrateToLatest, migrationProvider } from "../src/storage/migrate.js";
import { insertRows } from "../src/sync/sync.repository.js";
import { createTenant } from "../src/tenants/tenant.service.js";
import { usagePage } from "../src/usage/usage.service.js";
import { createTestDatabase } from "./support/databases.js";
import { exchange, returnRecord, withdrawal } from "./support/factories.js";

const DAY = 86_400_000;
const START = Date.UTC(2026, 0, 1);
const codec = new CursorCodec("upgrade-test-secret-upgrade-test-secret");
const KINDS = [
  [withdrawals, withdrawal],
  [returns, returnRecord],
  [exchanges, exchange],
] as const;

describe("a database of the release before usage reports", () => {
  it("upgrades in place, every record stored before counted", async () => {
    const database = await createTestDatabase();
    try {
      const storage = await openStorage(parseDatabaseUrl(database.url));
      try {
        const migrated = await new Migrator({ db: storage.db, provider: migrationProvider(storage) }).migrateTo("0021-events-by-type");
        expect(migrated.error).toBeUndefined();
        // Two tenants, more records than the migration copies at once.
        const expected = new Map<string, number[]>();
        const tenants = [await createTenant(storage.db, "one"), await createTenant(storage.db, "two")];
        for (const tenantId of tenants) {
          for (const [k, [collection, make]] of KINDS.entries()) {
            const rows = Array.from({ length: 700 }, (_, i) => {
              const record = make({
                id: `r${k}-${i}`,
                costCenterId: `cc-${i % 3}`,
                quantity: 1 + (i % 4),
                deliveredAt: new Date(START + i * 0.4 * DAY).toISOString(),
              });
              if (tenantId === tenants[0]) {
                const key = `${new Date(START + i * 0.4 * DAY).toISOString().slice(0, 7)}|cc-${i % 3}`;
                const counts = expected.get(key) ?? [0, 0, 0, 0, 0, 0];
                counts[k * 2]! += 1;
                counts[k * 2 + 1]! += 1 + (i % 4);
                expected.set(key, counts);
              }
              return newRowValues(toStoredContent(collection, record), tenantId, Date.now());
            });
            await storage.db.transaction().execute((trx) => insertRows(trx, collection, rows));
          }
        }
        expect(await migrateToLatest(storage)).toEqual(["0022-usage"]);
        const window = "createdSince=2026-01-01T00:00:00Z&createdUntil=2026-12-31T23:59:59.999Z&limit=100";
        // From the monthly totals, and from the copies (a filter on another field).
        for (const query of [
          `groupBy=costCenterId&interval=month&${window}`,
          `groupBy=costCenterId&interval=month&sectorId=sec-1&${window}`,
        ]) {
          const page = JSON.parse(await usagePage(storage.db, codec, tenants[0]!, query)) as { data: any[]; cursor: string | null };
          expect(page.cursor).toBeNull();
          const got = new Map(
            page.data.map((r) => [
              `${r.period.slice(0, 7)}|${r.costCenterId}`,
              [r.withdrawals.count, r.withdrawals.quantity, r.returns.count, r.returns.quantity, r.exchanges.count, r.exchanges.quantity],
            ]),
          );
          expect(Object.fromEntries(got), query).toEqual(Object.fromEntries(expected));
        }
      } finally {
        await storage.close();
      }
    } finally {
      await database.drop();
    }
  });
});
