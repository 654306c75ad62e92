/**
 * A database made by the release before the time window's rebuild (migrations up to 0019)
 * upgrades in place: the same pages before and after `migrateToLatest`, each exactly the
 * records of its window, and a cursor made before the upgrade (carrying a plan of that release)
 * goes on after it.
 */
import { Migrator } from "kysely";
import { describe, expect, it } from "vitest";
import { withdrawals } from "../src/collections/registry.js";
import { newRowValues, toStoredContent } from "../src/collections/record.js";
import { sortKey } from "../src/collections/sort-key.js";
import { listPage } from "../src/lists/list.service.js";
import { parseListQuery } from "../src/lists/list.query.js";
import { parseDatabaseUrl } from "../src/platform/config.js";
import { CursorCodec } from "../src/platform/cursor.js";
import { hashKey } from "../src/platform/keys.js";
import { openStorage, type Storage } from "../src/storage/database.js";
import { migrateToLatest, migrationProvider } from "../src/storage/migrate.js";
import { insertRows } from "../src/sync/sync.repository.js";
import { createTenant, issueKey } from "../src/tenants/tenant.service.js";
import { createTestDatabase } from "./support/databases.js";
import { withdrawal } from "./support/factories.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const START = Date.UTC(2025, 9, 1);
const iso = (ms: number) => new Date(ms).toISOString();
const codec = new CursorCodec("upgrade-test-secret-upgrade-test-secret");

/** Records over 400 days: every tenth stored days to months late, every thirteenth a little early, the rest on time. */
const RECORDS = Array.from({ length: 600 }, (_, i) => {
  const event = START + Math.floor((i * 400 * DAY) / 600);
  const createdAt = i % 10 === 0 ? event + (3 + (i % 90)) * DAY : i % 13 === 0 ? event - 2 * HOUR : event + 60_000;
  return { id: `up-${String(i).padStart(4, "0")}`, name: ["Ana", "Bruno", "ana b", "Carla"][i % 4]!, event, createdAt };
});

const WINDOWS = [
  `createdSince=${iso(START + 30 * DAY)}&createdUntil=${iso(START + 45 * DAY)}`,
  `createdSince=${iso(START + 20 * DAY)}&createdUntil=${iso(START + 320 * DAY)}`,
  `createdSince=${iso(START + 100 * DAY)}`,
  `createdUntil=${iso(START + 50 * DAY)}`,
  `name=an&createdSince=${iso(START + 60 * DAY)}&createdUntil=${iso(START + 80 * DAY)}`,
  `name=an&createdSince=${iso(START + 10 * DAY)}`,
];

function expected(query: string): string[] {
  const q = parseListQuery(withdrawals, query);
  const rows = RECORDS.filter((r) => (q.since === undefined || r.event >= q.since) && (q.until === undefined || r.event <= q.until));
  if (q.name === undefined) return rows.sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1)).map((r) => r.id);
  return rows
    .filter((r) => sortKey(r.name).startsWith(sortKey(q.name!)))
    .sort((a, b) => (sortKey(a.name) < sortKey(b.name) ? -1 : sortKey(a.name) > sortKey(b.name) ? 1 : a.id < b.id ? -1 : 1))
    .map((r) => r.id);
}

/** Every page of the window at `limit`, from `cursor` on, as the list service serves them. */
async function walk(storage: Storage, key: string, query: string, limit: number, cursor: string | null = null) {
  const reader = { keyHash: hashKey(key), tenantOfKey: () => Promise.reject(new Error("the key is good")) };
  const pages: { ids: string[]; cursor: string | null }[] = [];
  do {
    const text = await listPage(
      storage.db,
      codec,
      withdrawals,
      reader,
      `limit=${limit}&${query}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
    );
    const page = JSON.parse(text) as { data: { id: string }[]; cursor: string | null };
    pages.push({ ids: page.data.map((r) => r.id), cursor: page.cursor });
    cursor = page.cursor;
  } while (cursor !== null);
  return pages;
}

describe("a database of the release before the window's rebuild", () => {
  it("upgrades in place and reads the same pages, and its cursors go on", async () => {
    const database = await createTestDatabase();
    try {
      const storage = await openStorage(parseDatabaseUrl(database.url));
      try {
        const migrated = await new Migrator({ db: storage.db, provider: migrationProvider(storage) }).migrateTo(
          "0019-webhook-endpoint-descriptions",
        );
        expect(migrated.error).toBeUndefined();
        const tenantId = await createTenant(storage.db, "upgrade");
        const key = (await issueKey(storage.db, "upgrade", ["read"])).key;
        const rows = [...RECORDS]
          .sort((a, b) => a.createdAt - b.createdAt)
          .map((r) =>
            newRowValues(
              toStoredContent(withdrawals, withdrawal({ id: r.id, employeeName: r.name, deliveredAt: iso(r.event) })),
              tenantId,
              r.createdAt,
            ),
          );
        await storage.db.transaction().execute((trx) => insertRows(trx, withdrawals, rows));

        const before = await Promise.all(WINDOWS.map((query) => walk(storage, key, query, 5)));
        // A cursor of the release before, carrying a plan of its own, at each window's third page.
        const carried = WINDOWS.map((query, w) => {
          const opened = codec.decode(before[w]![1]!.cursor!, withdrawals.name, parseListQuery(withdrawals, query).filterKey);
          if (!opened.ok) throw new Error(`cursor of ${query}: ${opened.reason}`);
          return codec.encode(
            tenantId,
            withdrawals.name,
            parseListQuery(withdrawals, query).filterKey,
            opened.position,
            "late:-8640000000000000,1",
          );
        });

        expect(await migrateToLatest(storage)).toEqual(["0020-window-indexes-without-names", "0021-events-by-type", "0022-usage"]);
        for (const [w, query] of WINDOWS.entries()) {
          const after = await walk(storage, key, query, 5);
          expect(after, query).toEqual(before[w]);
          expect(
            after.flatMap((page) => page.ids),
            query,
          ).toEqual(expected(query));
          const goneOn = await walk(storage, key, query, 5, carried[w]!);
          expect(
            goneOn.flatMap((page) => page.ids),
            query,
          ).toEqual(before[w]!.slice(2).flatMap((page) => page.ids));
        }
      } finally {
        await storage.close();
      }
    } finally {
      await database.drop();
    }
  });
});
