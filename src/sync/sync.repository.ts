/**
 * A sync batch's records in storage, inside the caller's transaction (sync.service.ts): read
 * what is stored of them, compare content in its canonical stored form, insert and update.
 */
import { recordUsage } from "../usage/usage.repository.js";
import { sql, type CompiledQuery, type Kysely, type Transaction } from "kysely";
import type { Collection } from "../collections/define.js";
import { newRowValues, type RecordChange, type StoredContent } from "../collections/record.js";
import { engineOf } from "../storage/engine.js";
import { insertMany, plannedEachTime, QueryTemplates } from "../storage/query-template.js";
import { rowsByKeys, type ByKeys } from "../storage/row-values.js";
import { RECORD_COLUMNS, type Schema } from "../storage/schema.js";

export interface BatchOutcome {
  created: StoredContent[];
  updated: StoredContent[];
  unchanged: number;
  /** Transactions stored with other content; when any, nothing was written. */
  conflicts: string[];
  /** Every record created or changed, in the batch's order of kinds (created, then updated). */
  changes: RecordChange[];
  /** The batch's createdAt (for the records it created) and updatedAt (for those it changed). */
  at: number;
}

type Latest = { latest: number | string | null; late: number | string | null };
const latestQueries = new QueryTemplates<Latest>();

/**
 * The newest createdAt of a tenant's collection: one probe of its index by createdAt, or for a
 * transaction list of each of its two (rows stored on time, and late).
 */
export function latestCreatedAtQuery(db: Kysely<Schema>, collection: Collection, tenantId: number): CompiledQuery<Latest> {
  const table = collection.table as "withdrawals";
  return latestQueries.fill(db, `${table}:latest`, { tenantId }, (s) => {
    const newest = (late: boolean | undefined) => {
      let q = db.selectFrom(table).select("created_at").where("tenant_id", "=", s.tenantId);
      if (late !== undefined) q = q.where("late_event_at", late ? "is not" : "is", null);
      return q.orderBy("created_at", "desc").limit(sql.lit(1));
    };
    // Planned each time, as the batch's look-up is (storage/row-values.ts).
    if (collection.kind !== "transaction")
      return plannedEachTime(db.selectNoFrom([newest(undefined).as("latest"), sql<null>`null`.as("late")]));
    return plannedEachTime(db.selectNoFrom([newest(false).as("latest"), newest(true).as("late")]));
  });
}

async function latestCreatedAt(trx: Transaction<Schema>, collection: Collection, tenantId: number): Promise<number | undefined> {
  const row = (await trx.executeQuery(latestCreatedAtQuery(trx, collection, tenantId))).rows[0];
  const known = [row?.latest, row?.late].filter((v) => v !== null && v !== undefined).map(Number);
  return known.length === 0 ? undefined : Math.max(...known);
}

type StoredBody = { id: string; body: string; created_at: number; updated_at: number };

/** How a batch reads what is stored of its ids: by key, a probe per id (storage/row-values.ts). */
export const storedBodiesLookup = (table: "withdrawals"): ByKeys<StoredBody> => ({
  table,
  columns: ["id", "body", "created_at", "updated_at"],
  keyColumns: ["tenant_id", "id"],
});

/** What is stored of these ids: each one's body, when it was first stored and last changed. */
async function storedBodies(trx: Transaction<Schema>, table: "withdrawals", tenantId: number, ids: string[]) {
  const bodies = new Map<string, { body: string; createdAt: number; updatedAt: number }>();
  const rows = await rowsByKeys(
    trx,
    storedBodiesLookup(table),
    ids.map((id) => [tenantId, id]),
  );
  for (const row of rows) bodies.set(row.id, { body: row.body, createdAt: row.created_at, updatedAt: row.updated_at });
  return bodies;
}

/** Inserts rows given as their values in RECORD_COLUMNS order (see newRowValues). */
export async function insertRows(trx: Transaction<Schema>, collection: Collection, rows: unknown[][]): Promise<void> {
  await insertMany(trx, collection.table as "withdrawals", RECORD_COLUMNS, rows);
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
  await engineOf(trx).serializeWriters(trx, table, tenantId);
  const stored = await storedBodies(
    trx,
    table,
    tenantId,
    contents.map((c) => c.id),
  );
  const outcome: BatchOutcome = { created: [], updated: [], unchanged: 0, conflicts: [], changes: [], at: 0 };
  /** What was stored of each record this batch changes. */
  const prior: { createdAt: number; updatedAt: number }[] = [];
  for (const content of contents) {
    const before = stored.get(content.id);
    if (before === undefined) outcome.created.push(content);
    else if (before.body === content.body) outcome.unchanged += 1;
    else if (collection.kind === "transaction") outcome.conflicts.push(content.id);
    else {
      outcome.updated.push(content);
      prior.push(before);
    }
  }
  if (outcome.conflicts.length > 0) return outcome;
  // Strictly later than every earlier batch of this list, even if the clock stepped back:
  // a client polling newest-first that stops at the last record it saw misses nothing.
  // And strictly later than the last change of each record it updates: processes' clocks
  // differ, and one running behind would move a record's updatedAt back.
  const latest = await latestCreatedAt(trx, collection, tenantId);
  const now = Math.max(clock(), (latest ?? -Infinity) + 1, ...prior.map((p) => p.updatedAt + 1));
  await insertRows(
    trx,
    collection,
    outcome.created.map((c) => newRowValues(c, tenantId, now)),
  );
  await recordUsage(trx, collection, tenantId, outcome.created);
  for (const content of outcome.updated) {
    const { id, ...columns } = content;
    // Planned each time too: a plan kept from an empty table may pick an index of the tenant's rows.
    await trx.executeQuery(
      plannedEachTime(
        trx
          .updateTable(table)
          .set({ ...columns, updated_at: now })
          .where("tenant_id", "=", tenantId)
          .where("id", "=", id),
      ),
    );
  }
  outcome.at = now;
  outcome.changes = [
    ...outcome.created.map((content): RecordChange => ({ change: "created", content, createdAt: now })),
    ...outcome.updated.map((content, i): RecordChange => ({ change: "updated", content, createdAt: prior[i]?.createdAt ?? now })),
  ];
  return outcome;
}
