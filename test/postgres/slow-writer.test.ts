/**
 * A deliberately slow sync transaction on PostgreSQL, where writers of other processes run
 * beside readers: a reader paging meanwhile loses nothing committed before its first page and
 * sees nothing twice, and createdAt still rises in the order batches commit, so a client that
 * polls newest-first down to the last record it saw misses nothing.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { findCollection } from "../../src/collections/registry.js";
import { toStoredContent } from "../../src/collections/record.js";
import { writeBatchIn } from "../../src/sync/sync.repository.js";
import { employee, withdrawal } from "../support/factories.js";
import { get, newTenant, readAll, sync, useOtherPools, useServer } from "../support/harness.js";
import type { Reply } from "../support/harness.js";

const server = useServer();
// Another process's connection pool on the same database.
const { pools } = useOtherPools(server, 1);

describe("a slow sync transaction beside readers and writers", () => {
  it("keeps paging exact and createdAt in commit order", { timeout: 60_000 }, async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    const collection = findCollection("withdrawals")!;
    const seeded = Array.from({ length: 200 }, () => withdrawal());
    await sync(srv, tenant, "withdrawals", seeded);

    // The slow batch stamps its rows, then holds its transaction open for a while.
    const slowRecords = Array.from({ length: 40 }, () => withdrawal());
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let stamped!: () => void;
    const isStamped = new Promise<void>((resolve) => (stamped = resolve));
    const other = pools[0]!;
    const slow = other.db.transaction().execute(async (trx) => {
      const outcome = await writeBatchIn(
        trx,
        collection,
        tenant.id,
        slowRecords.map((r) => toStoredContent(collection, r)),
      );
      stamped();
      await released;
      return outcome;
    });
    await isStamped;

    // Batches of the same list queue behind it; other lists commit meanwhile. The server's
    // clock runs a minute behind, as another process's may: only the order of commits may
    // decide their createdAt.
    srv.clock.now = Date.now() - 60_000;
    const queued = Array.from({ length: 3 }, () => Array.from({ length: 10 }, () => withdrawal()));
    const queuedDone = Promise.all(queued.map((batch) => sync(srv, tenant, "withdrawals", batch)));
    await sync(srv, tenant, "employees", [employee({ name: "Não Espera" })]);

    // A reader pages while the slow transaction is open, and past the moment it commits.
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const reply: Reply<any> = await get(
        srv,
        `/v1/withdrawals?limit=13${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
        tenant.keys.read,
      );
      expect(reply.status).toBe(200);
      seen.push(...reply.body.data.map((r: { id: string }) => r.id));
      cursor = reply.body.cursor;
      pages += 1;
      if (pages === 3) {
        release();
        expect((await slow).created).toHaveLength(40);
        await sleep(20);
      }
    } while (cursor !== null);
    await queuedDone;
    srv.clock.now = undefined;

    expect(new Set(seen).size, "no record twice").toBe(seen.length);
    expect(
      seeded.map((r) => r.id as string).filter((id) => !seen.includes(id)),
      "records committed before the first page",
    ).toEqual([]);

    // createdAt follows commit order: seeded < slow batch < the batches that waited for it.
    const all = (await readAll(srv, tenant.keys.read, "/v1/withdrawals")).items;
    const createdAt = new Map(all.map((r) => [r.id as string, Date.parse(r.createdAt)]));
    const times = (records: Record<string, unknown>[]) => records.map((r) => createdAt.get(r.id as string)!);
    expect(all).toHaveLength(200 + 40 + 30);
    expect(Math.min(...times(slowRecords))).toBeGreaterThan(Math.max(...times(seeded)));
    expect(Math.min(...times(queued.flat()))).toBeGreaterThan(Math.max(...times(slowRecords)));
  });
});
