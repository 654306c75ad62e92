/**
 * The demo tenant: a year of realistic activity, written with its historical `createdAt`
 * (as if it had been synced over that year), so paging, windows and late syncs all show.
 */
import type { Kysely, Transaction } from "kysely";
import { COLLECTIONS } from "../collections/registry.js";
import { newRowValues, toStoredContent } from "../collections/record.js";
import { insertRows } from "../sync/sync.repository.js";
import { recordUsage } from "../usage/usage.repository.js";
import type { Storage } from "../storage/database.js";
import { engineOf } from "../storage/engine.js";
import type { Schema } from "../storage/schema.js";
import { countTenants } from "../tenants/tenant.repository.js";
import { createTenant, issueKey } from "../tenants/tenant.service.js";
import { generateDemoData } from "./demo.data.js";

export interface DemoResult {
  key: string;
  summary: string;
}

const ROWS_PER_INSERT = 500;

/**
 * Creates the tenant, its data and its key in one transaction: a start stopped half-way
 * leaves nothing behind, so the next start seeds the demo again and prints its key.
 */
export async function seedDemo(
  db: Kysely<Schema>,
  options: { slug: string; scale: number; now?: number; progress?: (line: string) => void },
): Promise<DemoResult> {
  return db.transaction().execute(async (trx) => seedIn(trx, options));
}

async function seedIn(
  trx: Transaction<Schema>,
  options: { slug: string; scale: number; now?: number; progress?: (line: string) => void },
): Promise<DemoResult> {
  const data = generateDemoData({ now: options.now ?? Date.now(), scale: options.scale });
  const tenantId = await createTenant(trx, options.slug);
  const counts: string[] = [];
  for (const collection of COLLECTIONS) {
    const items = data[collection.name];
    for (let i = 0; i < items.length; i += ROWS_PER_INSERT) {
      const part = items.slice(i, i + ROWS_PER_INSERT);
      const contents = part.map(({ record }) => toStoredContent(collection, record));
      await insertRows(
        trx,
        collection,
        contents.map((content, j) => newRowValues(content, tenantId, part[j]?.createdAt ?? 0)),
      );
      await recordUsage(trx, collection, tenantId, contents);
    }
    counts.push(`${items.length} ${collection.name}`);
    options.progress?.(`demo: ${items.length} ${collection.name}`);
  }
  const { key } = await issueKey(trx, options.slug, ["read", "sync", "admin"]);
  return { key, summary: counts.join(", ") };
}

/** On the first start of an empty database, creates the demo tenant; otherwise nothing. */
export async function seedDemoOnFirstStart(storage: Storage): Promise<DemoResult | undefined> {
  if ((await countTenants(storage.db)) > 0) return undefined;
  // Processes starting together on one new database: one seeds, the others wait for it, however
  // long that takes, and see its tenant.
  return storage.db.transaction().execute(async (trx) => {
    await engineOf(trx).untimed(trx);
    await engineOf(trx).serializeWriters(trx, "demo-seed", 0);
    if ((await countTenants(trx)) > 0) return undefined;
    return seedIn(trx, { slug: "demo", scale: 1 });
  });
}
