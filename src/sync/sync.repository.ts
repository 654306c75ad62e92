/**
 * Writes one sync batch in one transaction: it is applied whole or not at all, and it is
 * durable before the answer. Content is compared in its canonical stored form.
 */
import type { Kysely, Transaction } from "kysely";
import type { Collection } from "../collections/define.js";
import { newRowValues, type StoredContent } from "../collections/record.js";
import { serializeWriters } from "../storage/engine.js";
import { fixedChunks, insertMany, QueryTemplates } from "../storage/query-template.js";
import { RECORD_COLUMNS, type Schema } from "../storage/schema.js";
import { recordMessages } from "../webhooks/outbox.js";

export interface BatchOutcome {
  created: StoredContent[];
  updated: StoredContent[];
  unchanged: number;
  /** Transactions stored with other content; when any, nothing was written. */
  conflicts: string[];
  /** Webhook deliveries queued in the same transaction. */
  deliveries: number;
}

const bodyQueries = new QueryTemplates<{ id: string; body: string; created_at: number; updated_at: number }>();
const latestQueries = new QueryTemplates<{ latest: number | string | null }>();

/** The newest createdAt of a tenant's collection (one index probe). */
async function latestCreatedAt(trx: Transaction<Schema>, table: "withdrawals", tenantId: number): Promise<number | undefined> {
  const query = latestQueries.fill(trx, `${table}:latest`, { tenantId }, (s) =>
    trx
      .selectFrom(table)
      .select((eb) => eb.fn.max("created_at").as("latest"))
      .where("tenant_id", "=", s.tenantId),
  );
  const latest = (await trx.executeQuery(query)).rows[0]?.latest;
  return latest === null || latest === undefined ? undefined : Number(latest);
}

/** What is stored of these ids: each one's body, when it was first stored and last changed. */
async function storedBodies(trx: Transaction<Schema>, table: "withdrawals", tenantId: number, ids: string[]) {
  const bodies = new Map<string, { body: string; createdAt: number; updatedAt: number }>();
  for (const part of fixedChunks(ids)) {
    const query = bodyQueries.fill(trx, `${table}:bodies:${part.length}`, [tenantId, ...part], (s) =>
      trx
        .selectFrom(table)
        .select(["id", "body", "created_at", "updated_at"])
        .where("tenant_id", "=", s[0])
        .where(
          "id",
          "in",
          part.map((_, i) => s[i + 1]),
        ),
    );
    for (const row of (await trx.executeQuery(query)).rows) {
      bodies.set(row.id, { body: row.body, createdAt: row.created_at, updatedAt: row.updated_at });
    }
  }
  return bodies;
}

/** Inserts rows given as their values in RECORD_COLUMNS order (see newRowValues). */
export async function insertRows(trx: Transaction<Schema>, collection: Collection, rows: unknown[][]): Promise<void> {
  await insertMany(trx, collection.table as "withdrawals", RECORD_COLUMNS, rows);
}

export async function writeBatch(
  db: Kysely<Schema>,
  collection: Collection,
  tenantId: number,
  contents: StoredContent[],
  clock: () => number = Date.now,
): Promise<BatchOutcome> {
  return db.transaction().execute(async (trx) => writeBatchIn(trx, collection, tenantId, contents, clock));
}

/**
 * Writes a batch inside the caller's transaction, which must not have run anything else yet.
 * `clock` gives createdAt/updatedAt; it is read as late as possible, so a reader paging
 * newest-first meets rows in the order they became visible.
 */
export async function writeBatchIn(
  trx: Transaction<Schema>,
  collection: Collection,
  tenantId: number,
  contents: StoredContent[],
  clock: () => number = Date.now,
): Promise<BatchOutcome> {
  // All record tables share one shape; see RecordTable.
  const table = collection.table as "withdrawals";
  // Batches of one tenant's list take turns, in every process: the read-then-write below
  // sees every earlier batch, and createdAt rises in the order batches commit.
  await serializeWriters(trx, table, tenantId);
  const stored = await storedBodies(
    trx,
    table,
    tenantId,
    contents.map((c) => c.id),
  );
  const outcome: BatchOutcome = { created: [], updated: [], unchanged: 0, conflicts: [], deliveries: 0 };
  for (const content of contents) {
    const body = stored.get(content.id)?.body;
    if (body === undefined) outcome.created.push(content);
    else if (body === content.body) outcome.unchanged += 1;
    else if (collection.kind === "transaction") outcome.conflicts.push(content.id);
    else outcome.updated.push(content);
  }
  if (outcome.conflicts.length > 0) return outcome;
  // Strictly later than every earlier batch of this list, even if the clock stepped back:
  // a client polling newest-first that stops at the last record it saw misses nothing.
  // And strictly later than the last change of each record it updates: processes' clocks
  // differ, and one running behind would move a record's updatedAt back.
  const latest = await latestCreatedAt(trx, table, tenantId);
  const now = Math.max(clock(), (latest ?? -Infinity) + 1, ...outcome.updated.map((c) => stored.get(c.id)!.updatedAt + 1));
  await insertRows(
    trx,
    collection,
    outcome.created.map((c) => newRowValues(c, tenantId, now)),
  );
  for (const content of outcome.updated) {
    const { id, ...columns } = content;
    await trx
      .updateTable(table)
      .set({ ...columns, updated_at: now })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", id)
      .execute();
  }
  // Announced in the same transaction: an acknowledged change is never left unannounced.
  outcome.deliveries = await recordMessages(
    trx,
    collection,
    tenantId,
    [
      ...outcome.created.map((content) => ({ change: "created" as const, content, createdAt: now })),
      ...outcome.updated.map((content) => ({ change: "updated" as const, content, createdAt: stored.get(content.id)!.createdAt })),
    ],
    now,
  );
  return outcome;
}
